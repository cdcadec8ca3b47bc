//! The library's error: an engine error or a bad argument gfortran (or the program) passed.

use gaspar::coarray::{stat, CoError};

/// Why a coarray statement failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CafError {
    /// The coarray engine reported it.
    #[error("{0}")]
    Engine(#[from] CoError),
    /// A descriptor, vector subscript or reference chain was malformed.
    #[error("bad array descriptor: {0}")]
    Descriptor(String),
    /// An argument was out of range (image index, token, lock index...).
    #[error("{0}")]
    Argument(String),
    /// gfortran asked for something this library does not do.
    #[error("not supported by libcaf_gaspar ({abi} ABI): {0}", abi = crate::abi::GFORTRAN_ABI)]
    Unsupported(String),
}

impl CafError {
    /// True when another image ended the job (ERROR STOP, a crash): this image ends too,
    /// quietly and whatever STAT= says, as error termination of any image ends them all.
    pub(crate) fn is_job_aborted(&self) -> bool {
        matches!(
            self,
            CafError::Engine(CoError::Runtime(gaspar::Error::JobAborted { .. }))
        )
    }

    /// The STAT= value Fortran sees (non-zero; the engine's code for errors the standard
    /// names no constant for).
    pub(crate) fn stat(&self) -> i32 {
        match self {
            CafError::Engine(e) => e.stat(),
            _ => stat::OTHER_ERROR,
        }
    }
}
