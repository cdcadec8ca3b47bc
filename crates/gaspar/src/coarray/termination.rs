//! Termination: stop (normal), error stop, fail image, and what images know of the
//! images that stopped or failed.
//!
//! An image that stops or fails first announces it in every image's control block, so
//! that `image_status`, `stopped_images` and `failed_images` answer from local memory.
//! A normal stop is the termination barrier of the runtime's finalize: an image waiting
//! in a sync for an image that stopped gets [`CoError::StoppedImage`].
//!
//! The job's exit status (`gaspar run`): `stop n` everywhere gives n; an `error stop n`
//! gives n on every transport, whichever image the others' exits are reaped after (the
//! stopping image marks the job ended on purpose in the shared state before it exits,
//! the others end quietly, and the launcher takes that image's status and adds no line;
//! under MPI it is `MPI_Abort(n)`); a `fail image` leaves the job to the others, and
//! the job then succeeds if they end normally (the standard makes a failed image a
//! condition the others handle through STAT=, not an error termination; libcaf_single
//! also exits 0), while a crashed image still fails it. A statement error without STAT=
//! ends the job with status 1 and one line from the first image to find it.

use std::io::Write;

use crate::transport::AtomicOp as WordOp;

use super::error::{stat, CoError, CoResult};
use super::{control_atomic, Coarrays, ControlWord, Image, GONE};

/// What an image announced in the control block.
const RUNNING: u64 = 0;
const STOPPED: u64 = 1;
const FAILED: u64 = 2;

impl Coarrays {
    /// Counts a departure in the transport (see [`World::departures`]) and an
    /// announcement in every image's control block (see [`ControlWord::Announcements`]),
    /// writes `status` into this image's word there, then sets [`GONE`] in this image's
    /// signal word there: in that order, so that an image that saw the status (in a sync)
    /// finds the counts non-zero in its next collective, and an image whose sync saw the
    /// bit finds the status.
    ///
    /// [`World::departures`]: crate::world::World::departures
    fn announce(&self, status: u64) {
        let me = self.rt.rank();
        self.rt.note_departure();
        for rank in 0..self.rt.procs() {
            let _ = self.control_op(rank, ControlWord::Announcements, WordOp::Add(1));
            let _ = self.control_op(rank, ControlWord::Status(me), WordOp::Store(status));
            let _ = self.control_op(rank, ControlWord::Signals(me), WordOp::Or(GONE));
        }
    }

    /// Tells every image that this one stopped, once every image has taken in the
    /// messages this one sent without waiting for them (a co_broadcast's source leaves
    /// the others the value and goes on): an image that found this one stopped before it
    /// took in the value would report the broadcast failed.
    pub(crate) fn announce_stopped(&self) {
        self.wait_until_messages_taken();
        self.announce(STOPPED);
    }

    /// Waits until each other image has taken in this image's one-way messages, or has
    /// stopped or failed itself (it never will then).
    fn wait_until_messages_taken(&self) {
        let me = self.rt.rank();
        for rank in (0..self.rt.procs()).filter(|&r| r != me) {
            let taken = || Ok(self.rt.sent_messages_taken(rank)?);
            // An image that is gone (the wait's error) or the job's end: nothing to wait for.
            let _ = self.wait_for_image(rank, taken);
        }
    }

    /// `stop code` (and the program's normal end, code 0): completes this image's puts,
    /// waits for every image to stop (the termination barrier), and ends the process
    /// with exit status `code`.
    ///
    /// When an image has failed, the runtime's termination barrier cannot complete: the
    /// image then waits until every other image stopped or failed, and ends without it.
    ///
    /// ```no_run
    /// fn main() -> gaspar::coarray::CoResult<()> {
    ///     let mut co = gaspar::coarray::Coarrays::init()?;
    ///     co.sync_all()?;
    ///     co.stop(0) // `stop`: waits for every image, then exits with status 0
    /// }
    /// ```
    pub fn stop(mut self, code: i32) -> ! {
        let _ = std::io::stdout().flush();
        let completed = self.complete_puts();
        self.announce_stopped();
        if self.any_failed() {
            self.wait_for_the_others_to_end();
            let _ = self.rt.finalize_alone();
            std::process::exit(code)
        }
        let finalized = completed.and_then(|()| Ok(self.rt.finalize()?));
        if let Err(e) = finalized {
            // An image that failed meanwhile is reported by the launcher already, and an
            // image that ended the job (error stop) has said why.
            let said = matches!(
                e,
                CoError::FailedImage { .. } | CoError::Runtime(crate::Error::JobAborted { .. })
            );
            if !said {
                crate::error::report(&format!("gaspar: stop: {e}"));
            }
            std::process::exit(if code == 0 { 1 } else { code });
        }
        std::process::exit(code)
    }

    /// Whether the job is being ended (an image's error stop, or the launcher): every
    /// image ends then, whatever its statement's STAT= asks.
    ///
    /// ```
    /// let co = gaspar::coarray::Coarrays::init()?;
    /// assert!(!co.job_aborted());
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn job_aborted(&self) -> bool {
        self.rt.job_aborted()
    }

    /// Whether an image of the job has failed.
    fn any_failed(&self) -> bool {
        (0..self.rt.procs()).any(|r| self.has_failed(r))
    }

    /// Whether job rank `rank` failed: announced it, or its process ended without
    /// finalizing.
    fn has_failed(&self, rank: u32) -> bool {
        self.status_of(rank).is_ok_and(|s| s == FAILED)
            || self.rt.rank_failed(rank).unwrap_or(false)
    }

    /// Waits until every other image of the job announced that it stopped or has failed.
    fn wait_for_the_others_to_end(&self) {
        let me = self.rt.rank();
        for rank in (0..self.rt.procs()).filter(|&r| r != me) {
            let ended = || Ok(self.status_of(rank)? != RUNNING || self.has_failed(rank));
            // An error means the image is gone: nothing left to wait for.
            let _ = self.wait_for_image(rank, ended);
        }
    }

    /// `error stop code`: ends every image of the job at once, and the job's exit status
    /// is `code` (1 when `code` is 0). The others learn it as an aborted job (not as a
    /// failed image) and end without a message of their own; under `gaspar run` the
    /// launcher exits with this image's status and adds no line, under MPI this is
    /// `MPI_Abort` with the code. When the job is being ended already (another image's
    /// error stop came first), this image just ends.
    ///
    /// ```no_run
    /// let co = gaspar::coarray::Coarrays::init()?;
    /// if std::env::var_os("INPUT").is_none() {
    ///     co.error_stop(2); // ends every image; the job's status is 2
    /// }
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn error_stop(self, code: i32) -> ! {
        self.end_the_job(code, None)
    }

    /// As [`error_stop`](Self::error_stop) for an error the program did not handle (no
    /// STAT=): prints `line` unless another image ended the job first, so that when
    /// several images find the same failed image at once the job says it once.
    ///
    /// ```no_run
    /// let mut co = gaspar::coarray::Coarrays::init()?;
    /// if let Err(e) = co.sync_all() {
    ///     co.error_stop_saying(e.stat(), &format!("sync all: {e}"));
    /// }
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn error_stop_saying(self, code: i32, line: &str) -> ! {
        self.end_the_job(code, Some(line))
    }

    fn end_the_job(mut self, code: i32, line: Option<&str>) -> ! {
        let _ = std::io::stdout().flush();
        if self.rt.job_aborted() {
            std::process::exit(1)
        }
        let _ = self.complete_puts();
        self.rt.end_job(if code == 0 { 1 } else { code }, line)
    }

    /// `fail image`: this image stops working at once, as if it had failed. Under
    /// `gaspar run` the other images go on: their syncs and collectives with it end with
    /// [`CoError::FailedImage`], and [`image_status`](Self::image_status) and
    /// [`failed_images`](Self::failed_images) report it; the process leaves without
    /// finalizing and with status 0, which tells the launcher it was the program's doing
    /// (a crash still fails the job). Nothing is printed: a survivor that cannot go on
    /// names the image, and the launcher reports it at the end. Under MPI (no fault
    /// tolerance) the job ends with status 1 and a line saying so.
    ///
    /// ```no_run
    /// use gaspar::coarray::{stat, Coarrays};
    /// let mut co = Coarrays::init()?; // under `gaspar run -n 2`
    /// if co.this_image() == 2 {
    ///     co.fail_image();
    /// }
    /// // Image 1: the sync with image 2 reports it failed.
    /// let err = co.sync_images(Some(&[2])).unwrap_err();
    /// assert_eq!(err.stat(), stat::FAILED_IMAGE);
    /// assert_eq!(co.failed_images(), [2]);
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn fail_image(self) -> ! {
        let _ = std::io::stdout().flush();
        if !self.rt.report_failure_instead_of_abort(true) {
            crate::error::report(&format!(
                "gaspar: image {} failed (FAIL IMAGE); this transport cannot go on without \
                 it, the job ends",
                self.this_image()
            ));
            self.rt.end_job(1, None)
        }
        self.announce(FAILED);
        std::process::exit(0)
    }

    /// `image_status(image)`: 0 while it runs, [`stat::STOPPED_IMAGE`] once it stopped,
    /// [`stat::FAILED_IMAGE`] once it failed.
    ///
    /// ```
    /// let co = gaspar::coarray::Coarrays::init()?;
    /// assert_eq!(co.image_status(co.this_image())?, 0); // running
    /// assert!(co.image_status(co.num_images() + 1).is_err());
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn image_status(&self, image: Image) -> CoResult<i32> {
        let rank = self.team.rank_of(image)?;
        if self.has_failed(rank) {
            return Ok(stat::FAILED_IMAGE);
        }
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
        ready: impl FnMut() -> CoResult<bool>,
    ) -> CoResult<()> {
        self.wait_on(self.rt.rank(), rank, ready)
    }

    /// [`wait_for_image`](Self::wait_for_image) for a `ready` that looks at memory of
    /// image `watched` (woken by writes there; the status is read there too, since an
    /// announcement rings the bell of the memory it writes).
    pub(crate) fn wait_on(
        &self,
        watched: u32,
        rank: u32,
        mut ready: impl FnMut() -> CoResult<bool>,
    ) -> CoResult<()> {
        let mut gone = None;
        let waited = self.rt.wait(watched, Some(rank), || {
            if ready().map_err(runtime)? {
                return Ok(true);
            }
            // While no image left the job, the status needs no look (see
            // `images_running_for`): a poll costs what the bare wait's does.
            let status = match self.rt.departures() {
                Some(0) => RUNNING,
                _ => self.status_at(watched, rank).map_err(runtime)?,
            };
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

    /// The error for a wait on job rank `rank` that ended because `rank` announced that
    /// it stopped or failed.
    pub(crate) fn announced_gone(&self, rank: u32) -> CoError {
        match self.status_of(rank) {
            Ok(status) => self.gone_error(rank, status),
            Err(e) => e,
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

    /// Fails with [`CoError::StoppedImage`] / [`CoError::FailedImage`] when an image of
    /// the current team has announced that it stopped or failed: a collective statement
    /// (allocate, deallocate, co_*) needs every image, and an image that stopped waits in
    /// the runtime's finalize barrier, where the collective must not meet it.
    ///
    /// Every call of a collective asks, so while no image left it costs one load of one
    /// word: the transport's count of departures (stops and failures announced, and
    /// processes that ended, which the launcher counts: a crash announces nothing), or
    /// where the transport keeps none (MPI, where a process that ends ends the job) this
    /// image's count of announcements. Only when the count moved does it look at each
    /// member.
    #[inline]
    pub(crate) fn all_images_running(&self) -> CoResult<()> {
        self.images_running_for(None)
    }

    /// [`all_images_running`](Self::all_images_running) for a statement that needs
    /// every image to run (`None`) or, of the images that stopped, only job rank
    /// `needed` (a one-way co_broadcast's source, on an image that receives): a failed
    /// image fails it either way.
    #[inline]
    pub(crate) fn images_running_for(&self, needed: Option<u32>) -> CoResult<()> {
        let quiet = match self.rt.departures() {
            Some(departures) => departures == 0,
            None => control_atomic(&self.rt, self.announcements, WordOp::Load)? == 0,
        };
        if quiet {
            return Ok(());
        }
        self.check_each_member(needed)
    }

    /// The rest of [`images_running_for`](Self::images_running_for), once an image may
    /// have left: a look at each member.
    #[inline(never)]
    fn check_each_member(&self, needed: Option<u32>) -> CoResult<()> {
        let announced = control_atomic(&self.rt, self.announcements, WordOp::Load)? != 0;
        for &rank in self.team.ranks() {
            let status = if self.rt.rank_failed(rank).unwrap_or(false) {
                FAILED
            } else if announced {
                self.status_of(rank)?
            } else {
                RUNNING
            };
            let needs_it = status == FAILED || needed.is_none_or(|r| r == rank);
            if status != RUNNING && needs_it {
                return Err(self.gone_error(rank, status));
            }
        }
        Ok(())
    }

    /// When every other image of the job has stopped or failed: the error naming one.
    pub(crate) fn no_other_image_running(&self) -> Option<CoError> {
        let me = self.rt.rank();
        let mut last = None;
        for rank in (0..self.rt.procs()).filter(|&r| r != me) {
            let status = if self.has_failed(rank) {
                FAILED
            } else {
                self.status_of(rank).unwrap_or(RUNNING)
            };
            if status == RUNNING {
                return None;
            }
            last = Some((rank, status));
        }
        last.map(|(rank, status)| self.gone_error(rank, status))
    }

    fn status_of(&self, rank: u32) -> CoResult<u64> {
        self.status_at(self.rt.rank(), rank)
    }

    /// The status `rank` announced, as the control block of `holder` records it.
    fn status_at(&self, holder: u32, rank: u32) -> CoResult<u64> {
        self.control_op(holder, ControlWord::Status(rank), WordOp::Load)
    }

    fn images_with(&self, status: u64) -> Vec<Image> {
        self.team
            .ranks()
            .iter()
            .filter(|&&r| {
                let failed = self.has_failed(r);
                if status == FAILED {
                    failed
                } else {
                    !failed && self.status_of(r).is_ok_and(|s| s == status)
                }
            })
            .filter_map(|&r| self.team.image_of(r))
            .collect()
    }

    /// `failed_images()`: the images of the current team known to have failed, ascending.
    ///
    /// ```
    /// let co = gaspar::coarray::Coarrays::init()?;
    /// assert!(co.failed_images().is_empty());
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn failed_images(&self) -> Vec<Image> {
        self.images_with(FAILED)
    }

    /// `stopped_images()`: the images of the current team known to have stopped, ascending.
    ///
    /// ```
    /// let co = gaspar::coarray::Coarrays::init()?;
    /// assert!(co.stopped_images().is_empty());
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
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
