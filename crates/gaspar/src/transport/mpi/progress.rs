//! A thread that drives MPI's progress while the rank's own thread computes.
//!
//! One-sided operations of some MPI components complete only while the *target* makes
//! MPI calls: OpenMPI 4.1's osc/ucx over TCP (the component for jobs across hosts) leaves
//! another rank's get waiting until this rank next calls MPI, so a rank computing for
//! 200 ms delayed a neighbour's read of one element by 208 ms (the `darray_progress`
//! example, two hosts). This thread makes a progress call (`MPI_Iprobe` on a
//! communicator of its own, on which nothing is ever sent) every poll interval and sleeps
//! in between, so such an operation waits at most about one interval. MPICH has a
//! progress thread of its own (`MPIR_CVAR_ASYNC_PROGRESS`, which gaspar switches on).
//!
//! `GASPAR_MPI_PROGRESS` chooses: `auto` (the default) runs the thread when the job spans
//! hosts and MPI runs at MPI_THREAD_MULTIPLE, `off` never, a number of microseconds runs
//! it with that interval on any job.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mpi::ffi;

use super::{check, constant};
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

    /// The interval to poll at, if a thread should run: `spans_hosts` is whether the
    /// job's ranks are on more than one host.
    pub(crate) fn interval(self, spans_hosts: bool) -> Option<Duration> {
        match self {
            Choice::Auto if spans_hosts => Some(AUTO_INTERVAL),
            Choice::Auto | Choice::Off => None,
            Choice::Every(interval) => Some(interval),
        }
    }
}

/// The running thread; [`stop`](Self::stop) ends it (before MPI is finalized).
pub(crate) struct ProgressThread {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The thread's own communicator, freed once the thread ended.
    comm: ffi::MPI_Comm,
}

// SAFETY: the communicator handle is usable from any thread at MPI_THREAD_MULTIPLE (the
// only level at which the thread starts); it is freed once, by `stop`, after the thread
// that used it ended.
unsafe impl Send for ProgressThread {}
// SAFETY: as above; `stop` takes `&mut self`.
unsafe impl Sync for ProgressThread {}

/// The communicator handle, moved into the thread.
struct Comm(ffi::MPI_Comm);
// SAFETY: as for `ProgressThread`.
unsafe impl Send for Comm {}

impl ProgressThread {
    /// Starts the thread on a duplicate of MPI_COMM_SELF (so that ranks need not agree
    /// on starting it), polling every `interval`.
    ///
    /// # Safety
    /// MPI is initialized, at MPI_THREAD_MULTIPLE.
    pub(crate) unsafe fn start(interval: Duration) -> Result<ProgressThread> {
        let mut own = constant::comm_null();
        // SAFETY: MPI is initialized (caller's contract); `own` is a valid out-pointer.
        check("MPI_Comm_dup", unsafe {
            ffi::MPI_Comm_dup(ffi::RSMPI_COMM_SELF, &mut own)
        })?;
        let stop = Arc::new(AtomicBool::new(false));
        let (stopping, moved) = (Arc::clone(&stop), Comm(own));
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
            comm: own,
        })
    }

    /// Ends the thread and frees its communicator. Before MPI_Finalize.
    pub(crate) fn stop(&mut self) -> Result<()> {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
            // SAFETY: the only user of the communicator ended; it is freed once (the
            // thread handle is taken).
            check("MPI_Comm_free", unsafe {
                ffi::MPI_Comm_free(&mut self.comm)
            })?;
        }
        Ok(())
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
