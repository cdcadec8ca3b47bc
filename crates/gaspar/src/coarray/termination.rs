//! Termination: stop (normal), error stop, fail image, and what images know of the
//! images that stopped or failed.
//!
//! An image that stops or fails first announces it in every image's control block, so
//! that `image_status`, `stopped_images` and `failed_images` answer from local memory.
//! A normal stop is the termination barrier of the runtime's finalize: an image waiting
//! in a sync for an image that stopped gets [`CoError::StoppedImage`].

use std::io::Write;

use crate::transport::AtomicOp as WordOp;

use super::error::{stat, CoError, CoResult};
use super::{Coarrays, ControlWord, Image};

/// What an image announced in the control block.
const RUNNING: u64 = 0;
const STOPPED: u64 = 1;
const FAILED: u64 = 2;

impl Coarrays {
    /// Writes `status` into this image's word of every image's control block.
    fn announce(&self, status: u64) {
        let me = self.rt.rank();
        for rank in 0..self.rt.procs() {
            if let Ok(ga) = self.control_ga(rank, ControlWord::Status(me)) {
                let _ = self.word_op(ga, WordOp::Store(status));
            }
        }
    }

    /// `stop code` (and the program's normal end, code 0): completes this image's puts,
    /// waits for every image to stop (the termination barrier), and ends the process
    /// with exit status `code`.
    pub fn stop(mut self, code: i32) -> ! {
        let _ = std::io::stdout().flush();
        let completed = self.complete_puts();
        self.announce(STOPPED);
        let finalized = completed.and_then(|()| Ok(self.rt.finalize()?));
        if let Err(e) = finalized {
            crate::error::report(&format!("gaspar: stop: {e}"));
            std::process::exit(if code == 0 { 1 } else { code });
        }
        std::process::exit(code)
    }

    /// `error stop code`: ends every image of the job at once; this process exits with
    /// status `code` (1 when `code` is 0), and the launcher stops the others.
    pub fn error_stop(mut self, code: i32) -> ! {
        let _ = std::io::stdout().flush();
        let _ = self.complete_puts();
        self.announce(FAILED);
        std::process::exit(if code == 0 { 1 } else { code })
    }

    /// `fail image`: this image stops working at once. Images see it as failed in
    /// [`image_status`](Self::image_status); the job then ends as when a rank dies
    /// (survivors do not carry on yet: that needs the launcher to report a dead rank to a
    /// job that opts in).
    pub fn fail_image(self) -> ! {
        let _ = std::io::stdout().flush();
        self.announce(FAILED);
        crate::error::report(&format!(
            "gaspar: image {} failed (fail image)",
            self.this_image()
        ));
        std::process::exit(1)
    }

    /// `image_status(image)`: 0 while it runs, [`stat::STOPPED_IMAGE`] once it stopped,
    /// [`stat::FAILED_IMAGE`] once it failed.
    pub fn image_status(&self, image: Image) -> CoResult<i32> {
        let rank = self.team.rank_of(image)?;
        Ok(match self.status_of(rank)? {
            RUNNING => 0,
            STOPPED => stat::STOPPED_IMAGE,
            _ => stat::FAILED_IMAGE,
        })
    }

    /// Waits until `ready()` holds, woken by writes to this image's memory; ends with
    /// [`CoError::StoppedImage`] / [`CoError::FailedImage`] when image `rank` (whose
    /// action `ready` waits for) announces that it stopped or failed first.
    pub(crate) fn wait_for_image(
        &self,
        rank: u32,
        mut ready: impl FnMut() -> CoResult<bool>,
    ) -> CoResult<()> {
        let mut gone = None;
        let waited = self.rt.wait(self.rt.rank(), Some(rank), || {
            if ready().map_err(runtime)? {
                return Ok(true);
            }
            let status = self.status_of(rank).map_err(runtime)?;
            // What the image did before it announced is visible now: look once more.
            if status != RUNNING && !ready().map_err(runtime)? {
                gone = Some(status);
                return Ok(true);
            }
            Ok(false)
        });
        waited?;
        match gone {
            None => Ok(()),
            Some(status) => Err(self.gone_error(rank, status)),
        }
    }

    fn gone_error(&self, rank: u32, status: u64) -> CoError {
        let image = self.team.image_of(rank).unwrap_or(rank + 1);
        if status == STOPPED {
            CoError::StoppedImage { image }
        } else {
            CoError::FailedImage { image }
        }
    }

    fn status_of(&self, rank: u32) -> CoResult<u64> {
        let ga = self.control_ga(self.rt.rank(), ControlWord::Status(rank))?;
        self.word_op(ga, WordOp::Load)
    }

    fn images_with(&self, status: u64) -> Vec<Image> {
        self.team
            .ranks()
            .iter()
            .filter(|&&r| self.status_of(r).is_ok_and(|s| s == status))
            .filter_map(|&r| self.team.image_of(r))
            .collect()
    }

    /// `failed_images()`: the images of the current team known to have failed, ascending.
    pub fn failed_images(&self) -> Vec<Image> {
        self.images_with(FAILED)
    }

    /// `stopped_images()`: the images of the current team known to have stopped, ascending.
    pub fn stopped_images(&self) -> Vec<Image> {
        self.images_with(STOPPED)
    }
}

/// A coarray error inside a runtime wait (which carries the runtime's errors): the
/// runtime error it wraps, or an invalid-argument error with its message.
fn runtime(e: CoError) -> crate::Error {
    match e {
        CoError::Runtime(inner) => inner,
        other => crate::Error::InvalidArgument {
            call: "coarray wait",
            reason: other.to_string(),
        },
    }
}
