//! A thread that drives MPI's progress while the rank's own thread computes.
//!
//! One-sided operations of some MPI components complete only while the *target* makes
//! MPI calls: OpenMPI 4.1's osc/ucx over TCP (the component for jobs across hosts) leaves
//! another rank's get waiting until this rank next calls MPI, so a rank computing for
//! 200 ms delayed a neighbour's read of one element by 208 ms (the `darray_progress`
//! example, two hosts). MPICH completes them only inside the target's MPI calls on one
//! host too. This thread makes a progress call (`MPI_Iprobe` on the transport's
//! communicator: a probe only looks) every poll interval and sleeps in between, so such an
//! operation waits at most about one interval. (A probe on a one-rank communicator of the
//! thread's own, as here until 2026-11-29, is answered by MPICH without driving its
//! progress: a compare-and-swap on a rank computing for a second waited the whole
//! second.) MPICH's own progress thread (`MPIR_CVAR_ASYNC_PROGRESS`), which gaspar switched
//! on before, spins: 2 ranks on 2 cores then ran a rank's 0.40 s of computing in 0.81 s
//! (`examples/imbalance.rs`, AMD EPYC VM), 0.40 s with this thread.
//!
//! `GASPAR_MPI_PROGRESS` chooses: `auto` (the default) runs the thread when the job spans
//! hosts or the library is MPICH (and the user did not switch MPICH's own thread on),
//! and MPI runs at MPI_THREAD_MULTIPLE; `off` never; a number of microseconds runs it with
//! that interval on any job.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mpi::ffi;

use super::constant;
use crate::config::MPI_PROGRESS;
use crate::error::{Error, Result};

/// The interval of `auto`: a remote access waits at most about this long for a target
/// that computes, and the thread costs its rank one short MPI call per interval.
const AUTO_INTERVAL: Duration = Duration::from_micros(100);

/// What `GASPAR_MPI_PROGRESS` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Choice {
    /// A thread when the job spans hosts.
    Auto,
    /// No thread.
    Off,
    /// A thread polling at this interval, on any job.
    Every(Duration),
}

impl Choice {
    /// Reads `GASPAR_MPI_PROGRESS`.
    pub(crate) fn from_env() -> Result<Choice> {
        Choice::parse(&MPI_PROGRESS.raw())
    }

    fn parse(text: &str) -> Result<Choice> {
        match text.trim() {
            "auto" => Ok(Choice::Auto),
            "off" => Ok(Choice::Off),
            other => match other.parse::<u64>() {
                Ok(us) if us > 0 => Ok(Choice::Every(Duration::from_micros(us))),
                _ => Err(Error::Environment(format!(
                    "{}={text:?} is not auto, off or a positive number of microseconds",
                    MPI_PROGRESS.name
                ))),
            },
        }
    }

    /// The interval to poll at, if a thread should run: `target_needs_help` is whether
    /// one-sided operations need the target's progress here (the job spans hosts, or the
    /// library is MPICH without its own progress thread).
    pub(crate) fn interval(self, target_needs_help: bool) -> Option<Duration> {
        match self {
            Choice::Auto if target_needs_help => Some(AUTO_INTERVAL),
            Choice::Auto | Choice::Off => None,
            Choice::Every(interval) => Some(interval),
        }
    }
}

/// The running thread; [`stop`](Self::stop) ends it (before MPI is finalized).
pub(crate) struct ProgressThread {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The communicator handle, moved into the thread.
struct Comm(ffi::MPI_Comm);
// SAFETY: the communicator handle is usable from any thread at MPI_THREAD_MULTIPLE (the
// only level at which the thread starts), and its owner frees it only after `stop`.
unsafe impl Send for Comm {}

impl ProgressThread {
    /// Starts the thread, polling every `interval` with a probe on `comm` (the transport's
    /// communicator: a probe only looks, and no rank need agree on starting it).
    ///
    /// # Safety
    /// MPI is initialized, at MPI_THREAD_MULTIPLE; `comm` lives until [`stop`](Self::stop)
    /// returned.
    pub(crate) unsafe fn start(interval: Duration, comm: ffi::MPI_Comm) -> Result<ProgressThread> {
        let stop = Arc::new(AtomicBool::new(false));
        let (stopping, moved) = (Arc::clone(&stop), Comm(comm));
        let thread = std::thread::Builder::new()
            .name("gaspar-mpi-progress".into())
            .spawn(move || {
                let moved = moved;
                while !stopping.load(Ordering::Acquire) {
                    let mut flag: c_int = 0;
                    // SAFETY: MPI runs at MPI_THREAD_MULTIPLE; the communicator lives
                    // until `stop` joined this thread; MPI_Iprobe writes one int.
                    unsafe {
                        ffi::MPI_Iprobe(
                            ffi::RSMPI_ANY_SOURCE,
                            ffi::RSMPI_ANY_TAG,
                            moved.0,
                            &mut flag,
                            constant::status_ignore(),
                        )
                    };
                    std::thread::sleep(interval);
                }
            })
            .map_err(|e| Error::invalid("mpi progress thread", e.to_string()))?;
        Ok(ProgressThread {
            stop,
            thread: Some(thread),
        })
    }

    /// Ends the thread. Before the communicator is freed and MPI finalized.
    pub(crate) fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_reads_auto_off_or_microseconds() {
        assert_eq!(Choice::parse("auto").unwrap(), Choice::Auto);
        assert_eq!(Choice::parse(" off ").unwrap(), Choice::Off);
        assert_eq!(
            Choice::parse("250").unwrap(),
            Choice::Every(Duration::from_micros(250))
        );
        for bad in ["0", "-5", "fast", ""] {
            let message = Choice::parse(bad).unwrap_err().to_string();
            assert!(message.contains("GASPAR_MPI_PROGRESS"), "{message}");
        }
        assert_eq!(Choice::Auto.interval(true), Some(AUTO_INTERVAL));
        assert_eq!(Choice::Auto.interval(false), None);
        assert_eq!(Choice::Off.interval(true), None);
        assert_eq!(
            Choice::Every(Duration::from_micros(7)).interval(false),
            Some(Duration::from_micros(7))
        );
    }
}
