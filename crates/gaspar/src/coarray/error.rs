//! The errors of coarray statements and the stat codes Fortran gets for them.

use crate::error::{Collective, Error};

use super::Image;

/// Stat codes as gfortran 12's `ISO_FORTRAN_ENV` defines them (measured with a compiled
/// program), and the codes this layer gives where Fortran names none.
pub mod stat {
    /// `STAT_LOCKED`: a lock statement on a lock this image holds.
    ///
    /// ```
    /// use gaspar::coarray::{stat, CoError};
    /// assert_eq!(CoError::Locked.stat(), stat::LOCKED);
    /// ```
    pub const LOCKED: i32 = 1;
    /// `STAT_LOCKED_OTHER_IMAGE`: an unlock of a lock another image holds.
    ///
    /// ```
    /// use gaspar::coarray::{stat, CoError};
    /// assert_eq!(CoError::LockedOtherImage { holder: 2 }.stat(), stat::LOCKED_OTHER_IMAGE);
    /// ```
    pub const LOCKED_OTHER_IMAGE: i32 = 2;
    /// The code of an unlock of a lock nobody holds. gfortran 12's `STAT_UNLOCKED` is 0
    /// (indistinguishable from success), so this layer reports 3, the next free code.
    ///
    /// ```
    /// use gaspar::coarray::{stat, CoError};
    /// assert_eq!(CoError::Unlocked.stat(), stat::UNLOCKED);
    /// ```
    pub const UNLOCKED: i32 = 3;
    /// Any other error (bad arguments, an unsupported conversion, the runtime's errors).
    ///
    /// ```
    /// use gaspar::coarray::{stat, CoError};
    /// assert_eq!(CoError::invalid("sync images", "image 3 twice").stat(), stat::OTHER_ERROR);
    /// ```
    pub const OTHER_ERROR: i32 = 4;
    /// `STAT_STOPPED_IMAGE`: an image the statement involves has stopped.
    ///
    /// ```
    /// use gaspar::coarray::{stat, CoError};
    /// assert_eq!(CoError::StoppedImage { image: 2 }.stat(), stat::STOPPED_IMAGE);
    /// ```
    pub const STOPPED_IMAGE: i32 = 6000;
    /// `STAT_FAILED_IMAGE`: an image the statement involves has failed.
    ///
    /// ```
    /// use gaspar::coarray::{stat, CoError};
    /// assert_eq!(CoError::FailedImage { image: 2 }.stat(), stat::FAILED_IMAGE);
    /// ```
    pub const FAILED_IMAGE: i32 = 6001;
}

/// An error of a coarray statement: [`stat`](CoError::stat) is the code Fortran's `STAT=`
/// receives, the message (one line) what `ERRMSG=` receives.
///
/// ```
/// use gaspar::coarray::{CoError, Coarrays};
/// let mut co = Coarrays::init()?;
/// let err = co.sync_images(Some(&[co.num_images() + 1])).unwrap_err();
/// assert!(matches!(err, CoError::ImageOutOfRange { .. }));
/// println!("ERRMSG={err}, STAT={}", err.stat());
/// co.finalize()?;
/// # Ok::<(), CoError>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CoError {
    /// An image number outside `1..=num_images` of the current team.
    #[error("image {image} is out of range: the current team has {num_images} images")]
    ImageOutOfRange {
        /// The image asked for.
        image: i64,
        /// Images in the current team.
        num_images: u32,
    },
    /// An image the statement waits for has stopped (normal termination).
    #[error("image {image} has stopped")]
    StoppedImage {
        /// The image (of the initial team).
        image: Image,
    },
    /// An image the statement waits for has failed.
    #[error("image {image} has failed")]
    FailedImage {
        /// The image (of the initial team).
        image: Image,
    },
    /// A lock statement on a lock this image already holds.
    #[error("the lock is already locked by this image")]
    Locked,
    /// An unlock of a lock another image holds.
    #[error("the lock is locked by image {holder}, not by this image")]
    LockedOtherImage {
        /// The image that holds it (of the initial team).
        holder: Image,
    },
    /// An unlock of a lock nobody holds.
    #[error("the lock is not locked")]
    Unlocked,
    /// Something this implementation does not do (yet); the message says what.
    #[error("not supported: {what}")]
    Unsupported {
        /// What was asked for.
        what: String,
    },
    /// An argument no valid statement has.
    #[error("{call}: {reason}")]
    Invalid {
        /// The statement.
        call: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// Images made different collective statements, or allocated different sizes: every
    /// image in the statement gets this error, naming one whose statement differs.
    #[error("mismatched collective: image {image} {statement} while image {other_image} {other_statement}")]
    MismatchedStatement {
        /// This image (of the initial team).
        image: Image,
        /// What it did, in words (`allocated 40 bytes`).
        statement: String,
        /// An image (of the initial team) that did otherwise.
        other_image: Image,
        /// What that image did.
        other_statement: String,
    },
    /// An error of the runtime below (transfer out of bounds, a heap too small, ...).
    #[error(transparent)]
    Runtime(Error),
}

impl CoError {
    /// The (non-zero) stat code of this error.
    ///
    /// ```
    /// use gaspar::coarray::{stat, CoError};
    /// let gone = CoError::from(gaspar::Error::RankGone { rank: 1, finalized: true });
    /// assert!(matches!(gone, CoError::StoppedImage { image: 2 }));
    /// assert_eq!(gone.stat(), stat::STOPPED_IMAGE);
    /// ```
    pub fn stat(&self) -> i32 {
        match self {
            CoError::StoppedImage { .. } => stat::STOPPED_IMAGE,
            CoError::FailedImage { .. } => stat::FAILED_IMAGE,
            CoError::Locked => stat::LOCKED,
            CoError::LockedOtherImage { .. } => stat::LOCKED_OTHER_IMAGE,
            CoError::Unlocked => stat::UNLOCKED,
            CoError::ImageOutOfRange { .. }
            | CoError::Unsupported { .. }
            | CoError::Invalid { .. }
            | CoError::MismatchedStatement { .. }
            | CoError::Runtime(_) => stat::OTHER_ERROR,
        }
    }

    /// [`CoError::Invalid`]: `call` was given an argument no valid call has.
    ///
    /// ```
    /// use gaspar::coarray::CoError;
    /// let e = CoError::invalid("form team", "team number 0");
    /// assert!(matches!(e, CoError::Invalid { call: "form team", .. }));
    /// ```
    pub fn invalid(call: &'static str, reason: impl Into<String>) -> CoError {
        CoError::Invalid {
            call,
            reason: reason.into(),
        }
    }

    pub(crate) fn unsupported(what: impl Into<String>) -> CoError {
        CoError::Unsupported { what: what.into() }
    }
}

/// What an image did in a collective the others disagreed with, as a coarray program's
/// reader knows it (the runtime names its calls: `alloc(40)`).
fn statement(call: Collective) -> String {
    match call {
        Collective::Alloc { len } => format!("allocated {len} bytes"),
        Collective::Free { .. } => "deallocated a coarray".to_owned(),
        Collective::Barrier => "entered a barrier".to_owned(),
        Collective::Finalize => "ended".to_owned(),
        other => format!("called {other}"),
    }
}

/// A rank that left while this image waited for it becomes a stopped (it finalized) or
/// failed (it exited otherwise) image; a mismatched collective names images and
/// statements; every other runtime error keeps its message.
///
/// ```
/// use gaspar::{coarray::CoError, error::Collective, Error};
/// let e = CoError::from(Error::MismatchedCollective {
///     rank: 0,
///     call: Collective::Alloc { len: 40 },
///     other_rank: 1,
///     other_call: Collective::Alloc { len: 80 },
/// });
/// assert_eq!(
///     e.to_string(),
///     "mismatched collective: image 1 allocated 40 bytes while image 2 allocated 80 bytes"
/// );
/// ```
impl From<Error> for CoError {
    fn from(e: Error) -> CoError {
        match e {
            Error::RankGone {
                rank,
                finalized: true,
            } => CoError::StoppedImage { image: rank + 1 },
            Error::RankGone {
                rank,
                finalized: false,
            } => CoError::FailedImage { image: rank + 1 },
            Error::MismatchedCollective {
                rank,
                call,
                other_rank,
                other_call,
            } => CoError::MismatchedStatement {
                image: rank + 1,
                statement: statement(call),
                other_image: other_rank + 1,
                other_statement: statement(other_call),
            },
            other => CoError::Runtime(other),
        }
    }
}

/// Result of a coarray statement.
///
/// ```
/// use gaspar::coarray::{CoResult, Coarrays};
/// fn images() -> CoResult<u32> {
///     let co = Coarrays::init()?;
///     let n = co.num_images();
///     co.finalize()?;
///     Ok(n)
/// }
/// assert_eq!(images()?, 1);
/// # Ok::<(), gaspar::coarray::CoError>(())
/// ```
pub type CoResult<T> = std::result::Result<T, CoError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_has_a_non_zero_stat_and_gone_ranks_become_images() {
        let stopped = CoError::from(Error::RankGone {
            rank: 2,
            finalized: true,
        });
        assert!(matches!(stopped, CoError::StoppedImage { image: 3 }));
        assert_eq!(stopped.stat(), 6000);
        let failed = CoError::from(Error::RankGone {
            rank: 0,
            finalized: false,
        });
        assert_eq!(failed.stat(), 6001);
        assert_eq!(failed.to_string(), "image 1 has failed");
        assert_eq!(CoError::Locked.stat(), 1);
        assert_eq!(CoError::LockedOtherImage { holder: 2 }.stat(), 2);
        assert_eq!(CoError::Unlocked.stat(), 3);
        assert_eq!(CoError::invalid("sync images", "x").stat(), 4);
    }
}
