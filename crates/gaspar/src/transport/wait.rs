//! How every wait of gaspar passes its time: it polls briefly, then sleeps until woken.
//!
//! Every wait (barrier, allgather, start-up, finalize, locks, mutexes, message channels,
//! `wait_until`) goes through a transport's `wait` (the shm barrier through the same
//! `ShmTransport::wait_for`), which first spends at most a [`Patience`] budget polling its
//! condition, then sleeps (on `shm`: a futex on a doorbell of the watched segment, see
//! `shm::layout::Bell`), and ends with an error when the job aborts or the awaited rank
//! is gone.
//!
//! The budget follows the competitive-spinning principle (Karlin, Li, Manasse and Owicki,
//! SOSP 1991): polling for about as long as sleeping and being woken costs, then
//! sleeping, wastes at most a small constant factor over the best choice in hindsight.
//! That cost is measured when the transport starts, on the machine the job runs on, and
//! followed as the job's own sleeps report their wake-ups. When the job has more ranks
//! than this process has cores, the awaited rank may need this very core to make
//! progress: the polling phase then yields the core after every poll instead of spinning
//! on it.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::thread::futex;

use crate::config;
use crate::error::Result;

/// Polls between two readings of the clock while spinning (a clock read costs as much as
/// a few dozen polls of a cached word).
const POLLS_PER_CLOCK_READ: u32 = 16;

/// How long a wait polls before it sleeps, and how.
#[derive(Debug)]
pub(crate) struct Patience {
    /// Time a wait polls its condition before it sleeps, as measured at start-up (or as
    /// `GASPAR_SPIN_LIMIT` says).
    budget: Duration,
    /// Whether the budget was measured (and may follow what waits observe later).
    measured: bool,
    /// The wake-ups this process's sleeps actually took (a moving average, in ns): on a
    /// loaded machine a woken rank may wait for a core much longer than the start-up
    /// measurement, and the budget follows.
    observed_wake_up: AtomicU64,
    /// The job has more ranks than this process has cores: yield between polls.
    yield_core: bool,
}

impl Patience {
    /// The patience of this process as a rank of a job of `procs` ranks, measured once.
    pub(crate) fn of_process(procs: u32) -> Result<&'static Patience> {
        static MEASURED: std::sync::OnceLock<Patience> = std::sync::OnceLock::new();
        if let Some(patience) = MEASURED.get() {
            return Ok(patience);
        }
        let patience = Patience::for_job(procs)?;
        Ok(MEASURED.get_or_init(|| patience))
    }

    /// The current budget: the start-up measurement, or twice the wake-ups observed since
    /// when they take longer (a wait for a rank that was asleep lasts its wake-up, and a
    /// budget below that would keep two ranks taking turns sleeping).
    fn budget(&self) -> Duration {
        if !self.measured {
            return self.budget;
        }
        let observed = Duration::from_nanos(2 * self.observed_wake_up.load(Ordering::Relaxed));
        self.budget.max(observed)
    }

    /// Records that a sleep ended `latency_ns` after the bell rang.
    pub(crate) fn woken_after(&self, latency_ns: u64) {
        let average = self.observed_wake_up.load(Ordering::Relaxed);
        let next = average - average / 8 + latency_ns / 8;
        self.observed_wake_up.store(next, Ordering::Relaxed);
    }

    /// The patience of a rank of a job of `procs` ranks on this machine: the budget from
    /// `GASPAR_SPIN_LIMIT` (`auto`: measured), yielding when ranks outnumber cores.
    fn for_job(procs: u32) -> Result<Patience> {
        let raw = config::SPIN_LIMIT.raw();
        let measured = raw.trim() == "auto";
        let budget = if measured {
            measured_sleep_and_wake_up()
        } else {
            Duration::from_nanos(config::SPIN_LIMIT.number()?)
        };
        let cores = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))
            .map(|set| {
                (0..nix::sched::CpuSet::count())
                    .filter(|&c| set.is_set(c).unwrap_or(false))
                    .count()
            })
            .unwrap_or(1)
            .max(1);
        let patience = Patience {
            budget,
            measured,
            observed_wake_up: AtomicU64::new(0),
            yield_core: procs as usize > cores,
        };
        tracing::debug!(?patience, cores, "waits");
        Ok(patience)
    }

    /// Polls `ready` until it holds (`Ok(true)`) or the budget is spent (`Ok(false)`).
    /// The clock is first read after a few polls: most waits of a busy job end sooner,
    /// and a clock read costs as much as the fastest barrier.
    #[inline]
    pub(crate) fn poll(&self, mut ready: impl FnMut() -> Result<bool>) -> Result<bool> {
        if ready()? {
            return Ok(true);
        }
        let mut deadline: Option<Instant> = None;
        loop {
            if self.yield_core {
                std::thread::yield_now();
                if ready()? {
                    return Ok(true);
                }
            } else {
                for _ in 0..POLLS_PER_CLOCK_READ {
                    std::hint::spin_loop();
                    if ready()? {
                        return Ok(true);
                    }
                }
            }
            let now = Instant::now();
            if now >= *deadline.get_or_insert_with(|| now + self.budget()) {
                return Ok(false);
            }
        }
    }

    /// A wait with no sleep to fall back on (a transport whose memory cannot be watched by
    /// a futex): polls within the budget, then keeps polling with the core yielded
    /// between polls.
    #[cfg(feature = "mpi")]
    pub(crate) fn poll_forever(&self, mut ready: impl FnMut() -> Result<bool>) -> Result<()> {
        if self.poll(&mut ready)? {
            return Ok(());
        }
        loop {
            std::thread::yield_now();
            if ready()? {
                return Ok(());
            }
        }
    }
}

/// The time one sleep on a futex and the wake-up by another thread take here, counted
/// for both sides of a wait: a rank that was asleep must first be woken before it can
/// make the condition hold, so a wait right after such a sleep lasts one wake-up more
/// (with half a round trip, two ranks that once slept would keep taking turns sleeping).
/// The median of a few ping-pongs between two threads of this process, each side sleeping
/// until the other wakes it.
fn measured_sleep_and_wake_up() -> Duration {
    const SAMPLES: u32 = 15;
    let word = AtomicU32::new(0);
    let sleep_until = |value: u32| {
        loop {
            let now = word.load(Ordering::Acquire);
            if now == value {
                return;
            }
            // EAGAIN (the word moved on) and EINTR both mean: look again.
            let _ = futex::wait(&word, futex::Flags::PRIVATE, now, None);
        }
    };
    let set = |value: u32| {
        word.store(value, Ordering::Release);
        let _ = futex::wake(&word, futex::Flags::PRIVATE, 1);
    };
    let mut samples = Vec::with_capacity(SAMPLES as usize);
    let measured = std::thread::scope(|s| {
        let pong = std::thread::Builder::new().spawn_scoped(s, || {
            for k in 0..SAMPLES {
                sleep_until(2 * k + 1);
                set(2 * k + 2);
            }
        });
        if pong.is_err() {
            return false;
        }
        for k in 0..SAMPLES {
            let start = Instant::now();
            set(2 * k + 1);
            sleep_until(2 * k + 2);
            samples.push(start.elapsed());
        }
        true
    });
    if !measured {
        // No second thread to measure with: a sleep costs at least a system call and a
        // context switch, which the yield in `poll` approximates from below.
        return Duration::ZERO;
    }
    samples.sort();
    samples[samples.len() / 2]
}
