//! The transport's side of `gaspar run`: the job's segments as the launcher creates and
//! watches them (its processes are the [`launcher`](crate::launcher)'s business).

use std::os::fd::{OwnedFd, RawFd};
use std::sync::atomic::Ordering;

use super::layout::{self, state, Layout, ABORTED_BY_LAUNCHER};
use super::segment::{self, Mapping};
use crate::error::{Error, Result};

/// The job's segments and the descriptors the ranks inherit. Dropping them empties the
/// segment files: a process that still holds a descriptor (a daemon a rank started) keeps
/// an empty file, not the job's memory.
pub(crate) struct JobSegments {
    fds: Vec<OwnedFd>,
    segments: Vec<Mapping>,
}

impl JobSegments {
    /// Creates the segments of a job of `procs` ranks, each with a starter memory and a
    /// heap of the given lengths.
    pub(crate) fn create(
        job: &str,
        procs: u32,
        starter_len: u64,
        heap_len: u64,
    ) -> Result<JobSegments> {
        let layout = &Layout::new(procs, starter_len, heap_len).ok_or(Error::LengthOverflow {
            what: "segment size",
        })?;
        let mut made = JobSegments {
            fds: Vec::new(),
            segments: Vec::new(),
        };
        for rank in 0..procs {
            let (seg, fd) = Mapping::create(job, rank, procs, layout)?;
            made.fds.push(fd);
            made.segments.push(seg);
        }
        Ok(made)
    }

    /// Frees the job's memory whoever still holds a descriptor. The launcher's own mappings
    /// must not be touched afterwards.
    pub(crate) fn empty(&self) {
        for fd in &self.fds {
            let _ = nix::unistd::ftruncate(fd, 0);
        }
    }

    /// Aborts the job on behalf of the launcher (unless a rank aborted it first) and wakes
    /// every rank, so that each finds out.
    pub(crate) fn abort_all(&self) {
        for seg in &self.segments {
            let _ = seg.header().abort.0.compare_exchange(
                0,
                ABORTED_BY_LAUNCHER,
                Ordering::AcqRel,
                Ordering::Relaxed,
            );
        }
        self.wake_all();
    }

    /// Wakes every rank sleeping in a wait, so that it looks at the abort flag and at the
    /// states of the ranks it waits for.
    pub(crate) fn wake_all(&self) {
        for seg in &self.segments {
            seg.header().ring_every_bell();
        }
    }

    /// The job's abort word (0 while the job is not being aborted).
    fn abort_word(&self) -> u64 {
        self.segments
            .first()
            .map_or(0, |seg| seg.header().abort.0.load(Ordering::Acquire))
    }

    /// Whether the job is being aborted (by a rank or by the launcher).
    pub(crate) fn aborted(&self) -> bool {
        self.abort_word() != 0
    }

    /// The rank that called abort, if one did (rather than the launcher), and whether it
    /// ended the job on purpose after saying why itself (a Fortran ERROR STOP).
    pub(crate) fn aborted_by(&self) -> Option<(u32, bool)> {
        let word = self.abort_word();
        if word == 0 {
            return None;
        }
        layout::aborting_rank(word).map(|rank| (rank, word & layout::ENDED_ON_PURPOSE != 0))
    }

    /// Whether `rank` has attached to the job and not yet finalized or exited.
    pub(crate) fn attached(&self, rank: u32) -> bool {
        self.segments[rank as usize]
            .header()
            .state
            .load(Ordering::Acquire)
            == state::ATTACHED
    }

    /// Whether `rank` asked that its death be reported to the others instead of ending
    /// the job.
    pub(crate) fn reports_failure(&self, rank: u32) -> bool {
        self.segments[rank as usize]
            .header()
            .reports_failure
            .load(Ordering::Acquire)
            != 0
    }

    /// Records that `rank`'s process ended, unless it finalized first. Such an exit is
    /// counted in every rank's departures first, so that a rank that sees the exit
    /// recorded finds its count moved (and one that finds its count unchanged knows no
    /// rank's state needs a look).
    pub(crate) fn record_exit(&self, rank: u32) {
        let header = self.segments[rank as usize].header();
        // The process has ended: nothing but this call changes its state now.
        let now = header.state.load(Ordering::Acquire);
        if now != state::FINALIZED && now != state::EXITED {
            for seg in &self.segments {
                seg.header().departures.0.fetch_add(1, Ordering::Release);
            }
        }
        header.record_exit();
    }

    /// The descriptors of the segments, in rank order, for the ranks to inherit.
    pub(crate) fn raw_fds(&self) -> Vec<RawFd> {
        segment::raw(&self.fds)
    }
}

impl Drop for JobSegments {
    fn drop(&mut self) {
        self.segments.clear();
        self.empty();
    }
}
