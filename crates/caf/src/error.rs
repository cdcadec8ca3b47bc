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
    /// A coindex's TEAM= or TEAM_NUMBER= names no active team (STAT= 1, as GCC's
    /// libraries and tests have it).
    #[error("{0}")]
    NoActiveTeam(String),
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

    /// The STAT= value Fortran sees (non-zero): the engine's, which is ISO_FORTRAN_ENV's
    /// constant where one is named and non-zero (gfortran 12's STAT_UNLOCKED is 0, so an
    /// unlock of an unlocked lock gets the engine's own code).
    pub(crate) fn stat(&self) -> i32 {
        match self {
            CafError::Engine(e) => e.stat(),
            CafError::NoActiveTeam(_) => 1,
            _ => stat::OTHER_ERROR,
        }
    }
}

/// Writes `line` and a newline to stderr in one `write()`, so that the lines of several
/// images never mix (`eprintln!` writes the pieces of its format one by one).
pub(crate) fn say(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_codes_follow_iso_fortran_env() {
        assert_eq!(
            CafError::Engine(CoError::Unlocked).stat(),
            gaspar::coarray::stat::UNLOCKED
        );
        assert_eq!(CafError::Engine(CoError::Locked).stat(), 1);
        assert_eq!(
            CafError::Engine(CoError::StoppedImage { image: 2 }).stat(),
            6000
        );
        assert_eq!(
            CafError::Engine(CoError::FailedImage { image: 2 }).stat(),
            6001
        );
        assert_eq!(
            CafError::Argument("x".into()).stat(),
            gaspar::coarray::stat::OTHER_ERROR
        );
    }
}
