//! STAT= and ERRMSG= as the standard says: on success STAT= becomes 0 and ERRMSG= is left
//! alone; on an error with STAT= present, STAT= gets the code and ERRMSG= the message,
//! truncated or blank-padded to its length; on an error without STAT=, one line naming the
//! image and the statement, then the whole job ends with a non-zero status.

use std::ffi::{c_char, c_int};

use crate::error::CafError;

/// The optional STAT= and ERRMSG= arguments of one call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StatArgs {
    stat: *mut c_int,
    errmsg: *mut c_char,
    errmsg_len: usize,
}

/// What the caller must do after a failed statement.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The program asked for STAT=: it has been set; return to Fortran.
    Reported,
    /// No STAT=: the job must end after printing this line.
    Fatal(String),
}

impl StatArgs {
    /// Arguments as gfortran passes them (each may be null / 0).
    ///
    /// # Safety
    /// `stat` is null or writable; `errmsg` is null or `errmsg_len` writable bytes; both
    /// stay valid for the call that received them.
    pub(crate) unsafe fn new(stat: *mut c_int, errmsg: *mut c_char, errmsg_len: usize) -> Self {
        StatArgs {
            stat,
            errmsg,
            errmsg_len,
        }
    }

    /// STAT= without ERRMSG= (the transfer and atomic calls).
    ///
    /// # Safety
    /// As [`StatArgs::new`].
    pub(crate) unsafe fn stat_only(stat: *mut c_int) -> Self {
        // SAFETY: forwarded from the caller; no errmsg.
        unsafe { StatArgs::new(stat, std::ptr::null_mut(), 0) }
    }

    /// Sets STAT= to 0 (success).
    pub(crate) fn success(&self) {
        if !self.stat.is_null() {
            // SAFETY: non-null STAT= is writable for the call (constructor's contract).
            unsafe { *self.stat = 0 };
        }
    }

    /// Records an error of `statement` on `image`: sets STAT= and ERRMSG= when present,
    /// otherwise returns the line to print before ending the job.
    pub(crate) fn failure(&self, image: u32, statement: &str, error: &CafError) -> Outcome {
        self.failure_code(image, statement, error.stat(), &error.to_string())
    }

    /// As [`StatArgs::failure`] with an explicit code and message.
    pub(crate) fn failure_code(
        &self,
        image: u32,
        statement: &str,
        code: i32,
        message: &str,
    ) -> Outcome {
        if self.stat.is_null() {
            return Outcome::Fatal(format!("image {image}: {statement}: {message}"));
        }
        // SAFETY: non-null STAT= is writable for the call (constructor's contract).
        unsafe { *self.stat = code };
        if !self.errmsg.is_null() && self.errmsg_len > 0 {
            // SAFETY: ERRMSG= holds `errmsg_len` writable bytes (constructor's contract).
            let out = unsafe {
                std::slice::from_raw_parts_mut(self.errmsg.cast::<u8>(), self.errmsg_len)
            };
            blank_padded(out, message);
        }
        Outcome::Reported
    }
}

/// Copies `message` into `out`, truncated to its length or padded with blanks (Fortran
/// character assignment).
pub(crate) fn blank_padded(out: &mut [u8], message: &str) {
    let bytes = message.as_bytes();
    let n = bytes.len().min(out.len());
    out[..n].copy_from_slice(&bytes[..n]);
    out[n..].fill(b' ');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err() -> CafError {
        CafError::Argument("image 7 out of range".into())
    }

    #[test]
    fn success_sets_stat_zero_and_leaves_errmsg() {
        let mut stat: c_int = 42;
        let mut msg = *b"unchanged";
        // SAFETY: both point to live locals of the given sizes.
        let args = unsafe { StatArgs::new(&mut stat, msg.as_mut_ptr().cast(), msg.len()) };
        args.success();
        assert_eq!(stat, 0);
        assert_eq!(&msg, b"unchanged");
    }

    #[test]
    fn failure_with_stat_sets_code_and_pads_errmsg() {
        let mut stat: c_int = 0;
        let mut msg = [b'x'; 24];
        // SAFETY: both point to live locals of the given sizes.
        let args = unsafe { StatArgs::new(&mut stat, msg.as_mut_ptr().cast(), msg.len()) };
        assert_eq!(args.failure(2, "sync all", &err()), Outcome::Reported);
        assert_eq!(stat, gaspar::coarray::stat::OTHER_ERROR);
        assert_eq!(&msg, b"image 7 out of range    ");
    }

    #[test]
    fn failure_truncates_a_long_message() {
        let mut stat: c_int = 0;
        let mut msg = [b' '; 5];
        // SAFETY: both point to live locals of the given sizes.
        let args = unsafe { StatArgs::new(&mut stat, msg.as_mut_ptr().cast(), msg.len()) };
        args.failure_code(1, "lock", 6001, "image 3 has failed");
        assert_eq!(stat, 6001);
        assert_eq!(&msg, b"image");
    }

    #[test]
    fn failure_without_stat_is_fatal_with_one_line() {
        // SAFETY: null STAT= and ERRMSG=.
        let args = unsafe { StatArgs::new(std::ptr::null_mut(), std::ptr::null_mut(), 0) };
        assert_eq!(
            args.failure(3, "SYNC IMAGES", &err()),
            Outcome::Fatal("image 3: SYNC IMAGES: image 7 out of range".into())
        );
    }

    #[test]
    fn stat_without_errmsg_sets_only_stat() {
        let mut stat: c_int = 0;
        // SAFETY: a live local.
        let args = unsafe { StatArgs::stat_only(&mut stat) };
        args.failure_code(1, "event wait", 6000, "stopped");
        assert_eq!(stat, 6000);
    }
}
