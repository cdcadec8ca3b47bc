//! A thread that drives MPI's progress while the rank's own thread computes.
//!
//! One-sided operations of some MPI components complete only while the *target* makes
//! MPI calls: OpenMPI 4.1's osc/ucx over TCP (the component for jobs across hosts) leaves
//! another rank's get waiting until this rank next calls MPI, so a rank computing for
//! 200 ms delayed a neighbour's read of one element by 208 ms (the `darray_progress`
//! example, two hosts). MPICH completes them only inside the target's MPI calls on one
//! host too. This thread makes a progress call (`MPI_Iprobe` on the transport's
//! communicator: a probe only looks) every poll interval and sleeps in between, so such an
//! operation waits at most about one interval; while the rank calls MPI itself (and none of
//! its waits sleeps), the thread skips its probe and sleeps longer ([`note_rank_call`],
//! [`in_blocking_call`], [`sleeping_wait`], [`backed_off`]). (A probe on a one-rank
//! communicator of the thread's own, as here until 2026-11-29, is answered by MPICH without
//! driving its progress: a compare-and-swap on a rank computing for a second waited the
//! whole second.) MPICH's own progress thread (`MPIR_CVAR_ASYNC_PROGRESS`), which gaspar
//! switched on before, spins: 2 ranks on 2 cores then ran a rank's 0.40 s of computing in
//! 0.81 s (`examples/imbalance.rs`, AMD EPYC VM), 0.40 s with this thread.
//!
//! `GASPAR_MPI_PROGRESS` chooses: `auto` (the default) runs the thread when the job spans
//! hosts or the library is MPICH (and the user did not switch MPICH's own thread on),
//! and MPI runs at MPI_THREAD_MULTIPLE; `off` never; a number of microseconds runs it with
//! that interval on any job. On one host, where every transfer, atomic and accumulate on
//! starter memory and the heap is a copy or a processor atomic through the shared window
//! (`GASPAR_MPI_DIRECT`), MPICH needs the target's progress only for registered memory:
//! `auto` then starts the thread at the rank's first registration ([`Need`]).

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
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

    /// The interval to poll at from the start, and the one to start polling at with the
    /// rank's first registration of memory, for what the job needs of it.
    pub(crate) fn schedule(self, need: Need) -> (Option<Duration>, Option<Duration>) {
        match (self, need) {
            (Choice::Every(interval), _) => (Some(interval), None),
            (Choice::Off, _) | (Choice::Auto, Need::Never) => (None, None),
            (Choice::Auto, Need::Now) => (Some(AUTO_INTERVAL), None),
            (Choice::Auto, Need::AtFirstRegistration) => (None, Some(AUTO_INTERVAL)),
        }
    }
}

/// When one-sided operations on this rank's memory need its MPI progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    /// Never (Open MPI's osc/sm on one host).
    Never,
    /// From the start (the job spans hosts; MPICH with some transfers MPI calls).
    Now,
    /// Once memory is registered (MPICH on one host, everything else copies and
    /// processor atomics: accesses to a dynamic window remain MPI calls).
    AtFirstRegistration,
}

/// What the rank's own threads tell the progress thread, alone in its cache line: the
/// thread writes it once per interval, and nothing the rank's calls read should move with
/// it.
static RANK_CALLS: RankCalls = RankCalls {
    called: AtomicBool::new(false),
    blocking: AtomicU32::new(0),
    sleeping: AtomicU32::new(0),
};

#[repr(align(64))]
struct RankCalls {
    /// Whether the rank made an MPI call since the progress thread last looked
    /// ([`note_rank_call`]).
    called: AtomicBool,
    /// The rank's blocking collective calls under way ([`in_blocking_call`]).
    blocking: AtomicU32,
    /// The rank's waits in their sleeping phase ([`sleeping_wait`]).
    sleeping: AtomicU32,
}

/// The rank's thread is inside a blocking MPI collective (a barrier, an allgather, a team's
/// collective) while this lives: the progress thread skips its probes meanwhile. Such a
/// call drives MPI's progress itself for as long as it waits for the other ranks, and a
/// probe beside it only contends for MPICH's lock (2 MPICH ranks on two hosts, 8-byte puts
/// to a rank waiting in the job's `MPI_Barrier`: see `ANNOUNCES_CALLS` in the transport
/// for the figures).
pub(crate) fn in_blocking_call() -> Counted {
    // The call drove progress until it ended.
    Counted::enter(&RANK_CALLS.blocking, true)
}

/// One of the rank's waits sleeps between its looks while this lives: the progress
/// thread then probes every interval whatever the rank's calls say. Such a wait drives
/// MPI's progress only when it wakes (up to 1 ms apart), and its calls then would hold
/// the thread off: a rank asleep in a barrier of an oversubscribed host would answer
/// one-sided operations on its memory every millisecond instead of every interval.
pub(crate) fn sleeping_wait() -> Counted {
    Counted::enter(&RANK_CALLS.sleeping, false)
}

/// One of [`RankCalls`]' counts raised while this lives ([`in_blocking_call`],
/// [`sleeping_wait`]), noting a call of the rank when it ends if `noted`.
#[must_use = "the count is lowered again when this is dropped"]
pub(crate) struct Counted {
    count: &'static AtomicU32,
    noted: bool,
}

impl Counted {
    fn enter(count: &'static AtomicU32, noted: bool) -> Counted {
        count.fetch_add(1, Ordering::Relaxed);
        Counted { count, noted }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::Relaxed);
        if self.noted {
            note_rank_call();
        }
    }
}

/// Notes that one of the rank's own threads made an MPI call (each poll of a wait, each
/// flush and call checked for errors, and each transfer and atomic of the fast paths where
/// a thread runs: `ANNOUNCES_CALLS` in the transport). The progress thread skips its probe
/// for an interval in which the rank called MPI itself: MPICH runs every call under one global lock, and a
/// probe from the thread while the rank's loop of puts and flushes holds it waited for the
/// lock, was woken at each of the loop's unlocks and lost it again, runnable far more
/// than its ticks suggest (two such threads in state R in 28 % of samples, 2 ranks on 2
/// cores, MPICH 4.0.2), so that the machine looked oversubscribed to a rank waiting in a
/// barrier, which slept instead of polling. A rank that calls MPI drives progress itself
/// (every blocking call does, and a transfer is followed by a flush), and a rank that
/// stops calling gets the thread's probe a few intervals later ([`backed_off`]).
///
/// One store (no load first: a load and a branch cost more than the cache miss the
/// thread's write causes once per interval).
#[inline(always)]
pub(crate) fn note_rank_call() {
    RANK_CALLS.called.store(true, Ordering::Relaxed);
}

/// The most the thread's sleep grows, as a multiple of its interval, while the rank calls
/// MPI itself.
const LONGEST_PAUSE_IN_INTERVALS: u32 = 10;

/// The thread's next sleep after `pause`, in which the rank called MPI itself: twice as
/// long, up to [`LONGEST_PAUSE_IN_INTERVALS`] intervals. A wake-up costs the rank even when
/// the thread then only looks at the mark: 2 MPICH ranks on 2 cores, one putting to the
/// other, which polled in a barrier, took 2.2-4.0 us per put with the thread waking every
/// 100 us and 1.4-1.5 with it asleep (AMD EPYC VM: a timer's wake-up on a busy vCPU is
/// dear). A rank that stops calling MPI then gets its first probe at most twice that many
/// intervals later (a call just before a long pause is seen at the pause's end, which
/// then pauses again), and one per interval from then on.
fn backed_off(pause: Duration, interval: Duration) -> Duration {
    (pause * 2).min(interval * LONGEST_PAUSE_IN_INTERVALS)
}

/// Whether the rank calls MPI itself, so that the thread need not probe: no wait of the
/// rank sleeps, and it is inside a blocking collective or noted a call since the last
/// look (the mark is taken either way).
fn rank_is_calling() -> bool {
    let called = RANK_CALLS.called.load(Ordering::Relaxed)
        && RANK_CALLS.called.swap(false, Ordering::Relaxed);
    RANK_CALLS.sleeping.load(Ordering::Relaxed) == 0
        && (called || RANK_CALLS.blocking.load(Ordering::Relaxed) > 0)
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
    /// Starts the thread, probing every `interval` on `comm` (the transport's communicator:
    /// a probe only looks, and no rank need agree on starting it), less often while the
    /// rank calls MPI itself ([`rank_is_calling`], [`backed_off`]).
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
                let mut pause = interval;
                while !stopping.load(Ordering::Acquire) {
                    // `stop` unparks it: a pause of up to ten intervals must not delay
                    // finalize (an early or spurious wake-up only looks sooner).
                    std::thread::park_timeout(pause);
                    if stopping.load(Ordering::Acquire) {
                        break;
                    }
                    if rank_is_calling() {
                        pause = backed_off(pause, interval);
                        continue;
                    }
                    pause = interval;
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
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_doubles_while_the_rank_calls_mpi_up_to_ten_intervals() {
        let interval = Duration::from_micros(100);
        let mut pause = interval;
        let mut pauses = Vec::new();
        for _ in 0..6 {
            pause = backed_off(pause, interval);
            pauses.push(pause.as_micros());
        }
        assert_eq!(pauses, [200, 400, 800, 1000, 1000, 1000]);
    }

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
        assert_eq!(
            Choice::Auto.schedule(Need::Now),
            (Some(AUTO_INTERVAL), None)
        );
        assert_eq!(Choice::Auto.schedule(Need::Never), (None, None));
        assert_eq!(
            Choice::Auto.schedule(Need::AtFirstRegistration),
            (None, Some(AUTO_INTERVAL))
        );
        assert_eq!(Choice::Off.schedule(Need::Now), (None, None));
        let every = Duration::from_micros(7);
        for need in [Need::Never, Need::AtFirstRegistration] {
            assert_eq!(Choice::Every(every).schedule(need), (Some(every), None));
        }
    }
}
