//! How every wait of gaspar passes its time: it polls, then sleeps until woken.
//!
//! Every wait (barrier, allgather, start-up, finalize, locks, mutexes, message channels,
//! `wait_until`) goes through a transport's `wait` (the shm barrier through the same
//! `ShmTransport::wait_for`), which first spends a [`Patience`] budget polling its
//! condition (and more while nobody else needs the core, below), then sleeps (on `shm`: a
//! futex on a doorbell of the watched segment, see
//! `shm::layout::Bell`), and ends with an error when the job aborts or the awaited rank
//! is gone.
//!
//! The budget follows the competitive-spinning principle (Karlin, Li, Manasse and Owicki,
//! SOSP 1991): polling for about as long as sleeping and being woken costs, then
//! sleeping, wastes at most a small constant factor over the best choice in hindsight.
//! That cost is measured when the transport starts, on the machine the job runs on, and
//! followed as the job's own sleeps report their wake-ups.
//!
//! When more of the job's ranks are awake on this host than they have cores, the
//! awaited rank may need this very core to make progress: the polling phase then yields
//! the core after every poll instead of spinning on it ([`Crowding`]). On `shm` that is
//! a live fact: the ranks keep a count of those awake in the segments they share
//! ([`RanksAwake`]; a rank leaves it while it sleeps on a futex), and a poll reads it
//! with each clock read; two ranks that answer each other while the others sleep in a
//! barrier spin on their cores, and yield again as soon as the sleepers wake.
//!
//! When the budget is spent, a wait sleeps, unless the job's ranks fit their cores and
//! no thread of the machine waits for a core: then it polls on, asking again once per
//! budget ([`Patience::keeps_polling`]), as MPI libraries poll whenever a job is not
//! oversubscribed, but leaving the core within a budget of anybody else needing it.
//!
//! Where nothing can wake a sleeper (`mpi`: MPI offers nothing to sleep on until a
//! window's memory changes), a wait keeps polling, each poll an MPI call that drives MPI's
//! progress, spinning or yielding its core as on `shm`, and sleeps only once it has
//! waited long, each sleep a small fraction of the time already waited
//! (`Patience::poll_progressing`, with the `mpi` feature): a wait then oversleeps its
//! condition by at most that fraction, and a rank that waits long costs its core a poll
//! per sleep. It sleeps on its rank's doorbell in the host's shared window where there is
//! one, so that another rank of the host whose one-sided operation on this rank's memory
//! needs this rank's MPI progress can wake it (the mpi transport's `Host::wake`).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::thread::futex;

use super::cpu_quota::usable_cores;
#[cfg(feature = "mpi")]
use super::shm::layout::{sleep_round, Bell, Doorbell};
use crate::config;
use crate::error::Result;

/// Polls between two readings of the clock while spinning (a clock read costs as much as
/// a few dozen polls of a cached word).
const POLLS_PER_CLOCK_READ: u32 = 16;

/// The shortest sleep of a wait that polls with progress (see
/// [`Patience::poll_progressing`]); what it really lasts (timer slack, a VM's timer) is
/// measured at start-up.
#[cfg(feature = "mpi")]
const SHORTEST_SLEEP: Duration = Duration::from_micros(1);
/// The most a sleep of a wait that polls with progress may add to the time the wait has
/// already lasted, as a fraction 1/`OVERSLEEP_DIVISOR` (or the shortest real sleep, when
/// that is longer): a long wait notices its condition at most that fraction late.
#[cfg(feature = "mpi")]
const OVERSLEEP_DIVISOR: u32 = 16;
/// The longest sleep of a wait that polls with progress: what a rank that waits long
/// costs its core is one poll per sleep (reached after 16 ms of waiting).
#[cfg(feature = "mpi")]
const LONGEST_SLEEP: Duration = Duration::from_millis(1);
/// The timer slack (ns) of a thread while it sleeps in such a wait: Linux's default,
/// 50 us, would stretch every short sleep to 50 us.
#[cfg(feature = "mpi")]
const SHORT_TIMER_SLACK_NS: u64 = 1_000;

/// How the waits of a transport sleep once their patience runs out.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Sleep {
    /// On a futex, until a writer wakes them (`shm`).
    Futex,
    /// Between polls that drive MPI's progress, once the wait has lasted long, each
    /// sleep a fraction of the time waited ([`Patience::poll_progressing`]; `mpi`).
    #[cfg(feature = "mpi")]
    Progressing,
}

/// How long a wait polls before it sleeps, and how.
#[derive(Debug)]
pub(crate) struct Patience {
    /// Time a wait polls its condition before it sleeps: as `GASPAR_SPIN_LIMIT` says, as
    /// `gaspar run` measured it, or measured here when a wait first needs it (a process
    /// without the launcher is a job of one rank, whose waits are for its own threads:
    /// most never wait, and measuring would start a thread, after which glibc's malloc
    /// locks its arena for good; see [`WAKE_UP_NS`](super::shm::env::WAKE_UP_NS)).
    budget: std::sync::OnceLock<Duration>,
    /// How this process's waits sleep (what the budget is measured for).
    sleep: Sleep,
    /// Whether the budget was measured (and may follow what waits observe later).
    measured: bool,
    /// The wake-ups this process's sleeps actually took (a moving average, in ns): on a
    /// loaded machine a woken rank may wait for a core much longer than the start-up
    /// measurement, and the budget follows.
    observed_wake_up: AtomicU64,
}

/// Whether the job's ranks on this host outnumber their cores: then a poll yields its core
/// between two looks at its condition (the awaited rank may need this very core), else it
/// spins. Decided anew before each clock read of a poll.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Crowding<'a> {
    /// Decided once at start-up (`mpi`, where the library gives the ranks of a host no
    /// shared memory to count in, or once that memory is freed at finalize).
    #[cfg(feature = "mpi")]
    Fixed(bool),
    /// Decided by the count of the ranks awake right now, against the cores they may run
    /// on (`shm`; `mpi` in a shared-memory window of the host's ranks).
    Live {
        /// The job's count.
        awake: RanksAwake<'a>,
        /// The cores of the job's ranks on this host.
        cores: JobCores,
    },
}

/// The cores of a job's ranks on one host, counted two ways.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct JobCores {
    /// In the union of the ranks' affinity masks: what the machine's run queue is weighed
    /// against (other programs' threads wait for these cores, not for a quota).
    pub(crate) in_masks: usize,
    /// Those the ranks may keep busy at once: `in_masks`, fewer under a control group's
    /// CPU quota ([`usable_cores`]); what the ranks awake are weighed against.
    pub(crate) usable: usize,
}

impl JobCores {
    /// The cores of ranks whose affinity masks' union is `union`, under this process's
    /// CPU quota (every rank of a host is taken to run in the same control group).
    pub(crate) fn of_masks(union: &[u64; AFFINITY_WORDS]) -> JobCores {
        let in_masks = cores_in(union);
        JobCores {
            in_masks,
            usable: usable_cores(in_masks),
        }
    }

    /// `cores` cores, under no quota.
    #[cfg(test)]
    pub(crate) const fn unlimited(cores: usize) -> JobCores {
        JobCores {
            in_masks: cores,
            usable: cores,
        }
    }
}

impl<'a> Crowding<'a> {
    /// Counts the calling rank out of the live count until the guard is dropped (it is
    /// about to sleep); nothing for a decision fixed at start-up.
    #[cfg(feature = "mpi")]
    pub(crate) fn asleep(&self) -> Option<Asleep<'a>> {
        match *self {
            Crowding::Fixed(_) => None,
            Crowding::Live { awake, .. } => Some(awake.asleep()),
        }
    }

    /// The cores in the affinity masks of the job's ranks on this host, where known.
    fn cores_in_masks(&self) -> Option<usize> {
        match *self {
            #[cfg(feature = "mpi")]
            Crowding::Fixed(_) => None,
            Crowding::Live { cores, .. } => Some(cores.in_masks),
        }
    }

    /// Whether a poll should yield its core now.
    #[inline]
    pub(crate) fn now(&self) -> bool {
        match *self {
            #[cfg(feature = "mpi")]
            Crowding::Fixed(crowded) => crowded,
            Crowding::Live { awake, cores } => outnumber(awake.count(), cores.usable),
        }
    }
}

/// Whether `awake` ranks outnumber `cores` (a count that a rank's death left below zero
/// counts as none).
fn outnumber(awake: i64, cores: usize) -> bool {
    awake > i64::try_from(cores).unwrap_or(i64::MAX)
}

/// The count of a job's ranks that are awake (attached and not asleep in a wait), in a
/// word every rank of the host shares: a rank joins it when it starts, leaves it when it
/// finalizes, and leaves it for as long as one of its waits sleeps on a futex (only the
/// sleeping path pays, and it already pays system calls). Threads of a rank besides the
/// one that waits are not counted (as they were not when the decision was made once at
/// start-up from the job's size); several threads of a rank asleep at once each leave.
///
/// The count decides only whether polls spin or yield, never whether a wait ends: a wrong
/// count makes waits slower, never hangs one. A rank killed while awake stays counted
/// (waits yield more, as they always did before the count); one killed while asleep has
/// already left. A rank killed between two of its updates cannot leave it half done:
/// each update is one atomic add.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RanksAwake<'a>(pub(crate) &'a AtomicU64);

impl<'a> RanksAwake<'a> {
    /// The ranks awake now (may be momentarily off by the updates in flight).
    #[inline]
    pub(crate) fn count(&self) -> i64 {
        self.0.load(Ordering::Relaxed) as i64
    }

    /// Counts this rank as awake (it started).
    pub(crate) fn join(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts this rank out (it finalized).
    pub(crate) fn leave(&self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }

    /// Counts the calling thread's rank out until the guard is dropped (it is about to
    /// sleep, and wakes when the guard goes).
    pub(crate) fn asleep(self) -> Asleep<'a> {
        self.leave();
        Asleep(self)
    }
}

/// A rank counted out of [`RanksAwake`] while it sleeps; counted back in on drop.
#[must_use = "the rank is counted back in when this is dropped"]
pub(crate) struct Asleep<'a>(RanksAwake<'a>);

impl Drop for Asleep<'_> {
    fn drop(&mut self) {
        self.0.join();
    }
}

/// `GASPAR_SPIN_LIMIT`: the budget the user set, `None` for `auto` (measured).
pub(crate) fn set_spin_limit() -> Result<Option<Duration>> {
    if config::SPIN_LIMIT.is_auto() {
        return Ok(None);
    }
    Ok(Some(Duration::from_nanos(config::SPIN_LIMIT.number()?)))
}

impl Patience {
    /// The patience of this process, measured once; `sleep` says how its waits sleep.
    pub(crate) fn of_process(sleep: Sleep) -> Result<&'static Patience> {
        static MEASURED: std::sync::OnceLock<Patience> = std::sync::OnceLock::new();
        if let Some(patience) = MEASURED.get() {
            return Ok(patience);
        }
        let patience = Patience::for_job(sleep)?;
        Ok(MEASURED.get_or_init(|| patience))
    }

    /// The current budget of a wait whose rank has a core of its own: the start-up
    /// measurement, or twice the wake-ups observed since when they take longer (a wait for
    /// a rank that was asleep lasts its wake-up, and a budget below that would keep two
    /// ranks taking turns sleeping).
    pub(crate) fn budget(&self) -> Duration {
        let budget = self.measured_budget();
        if !self.measured {
            return budget;
        }
        let observed = Duration::from_nanos(2 * self.observed_wake_up.load(Ordering::Relaxed));
        budget.max(observed)
    }

    /// The budget of a wait that starts now: [`budget`](Self::budget), or the start-up
    /// measurement alone while `crowding` says that the ranks awake outnumber their cores.
    /// A wake-up observed then lasted as long as it did because the ranks were waiting for
    /// a core (under a CPU quota, for the group's next period: 2-9 ms were seen), and
    /// polling longer would take that very core (the quota's time) from the rank being
    /// waited for. Followed there, one such wake-up made a budget longer than the waits
    /// themselves, after which the rank never slept again, so never observed a short
    /// wake-up again: it polled away up to half of a one-core quota for the rest of the
    /// job (`tests/cpu_quota.rs`; 3 ranks, 100 rounds of 2 ms of work: 43-129 ms of CPU
    /// in 8 of 107 jobs, against 6-20 ms in most others). GNU OpenMP's waits shorten
    /// their spinning in the same way when its threads outnumber the processors.
    fn budget_for(&self, crowding: &Crowding<'_>) -> Duration {
        if crowding.now() {
            self.measured_budget()
        } else {
            self.budget()
        }
    }

    /// The start-up measurement (or the budget the user set).
    pub(crate) fn measured_budget(&self) -> Duration {
        *self.budget.get_or_init(|| match self.sleep {
            Sleep::Futex => measured_sleep_and_wake_up(),
            #[cfg(feature = "mpi")]
            Sleep::Progressing => 2 * measured_short_sleep(),
        })
    }

    /// Whether a wait whose budget is spent goes on polling (for another budget, after
    /// which it asks again) rather than sleeps: when the budget is measured (`auto`; a
    /// budget the user set is kept to), the job's ranks awake fit their cores (`crowding`),
    /// and every runnable thread of the machine has a core
    /// ([`run_queue`](super::run_queue)). A rank that polls then takes a core nobody else
    /// wants, as MPI libraries' waits do whenever a job is not oversubscribed, and leaves
    /// it within a budget of another program (another job, a test running beside it)
    /// wanting it.
    ///
    /// Why not sleep: on the AMD EPYC VM we measured, a busy rank ran its loop of short
    /// coarray statements 10-20 % slower once its partner slept than while the partner
    /// polled (gfortran 16, 8-byte puts and gets in rounds of 20 000: 4.9-5.2 ns polling
    /// through the round, 5.6-5.8 sleeping at once, and the rounds alternated between the
    /// two with the budget alone), although the sleeper asked nothing of it.
    pub(crate) fn keeps_polling(&self, crowding: &Crowding<'_>) -> bool {
        self.measured
            && !crowding.now()
            && super::run_queue::every_runnable_thread_has_a_core(crowding.cores_in_masks())
    }

    /// Records that a sleep ended `latency_ns` after the bell rang.
    pub(crate) fn woken_after(&self, latency_ns: u64) {
        let average = self.observed_wake_up.load(Ordering::Relaxed);
        let next = average - average / 8 + latency_ns / 8;
        self.observed_wake_up.store(next, Ordering::Relaxed);
    }

    /// The patience of a rank on this machine: the budget from `GASPAR_SPIN_LIMIT`
    /// (`auto`: measured for `sleep`).
    fn for_job(sleep: Sleep) -> Result<Patience> {
        let set = set_spin_limit()?;
        let measured = set.is_none();
        let budget = std::sync::OnceLock::new();
        if let Some(limit) = set {
            let _ = budget.set(limit);
        } else if let (Sleep::Futex, Some(launcher)) = (sleep, wake_up_from_launcher()) {
            let _ = budget.set(launcher);
        }
        let patience = Patience {
            budget,
            sleep,
            measured,
            observed_wake_up: AtomicU64::new(0),
        };
        tracing::debug!(?patience, "waits");
        Ok(patience)
    }

    /// Polls `ready` until it holds (`Ok(true)`) or the budget is spent (`Ok(false)`),
    /// spinning, or yielding the core between polls while `crowding` says so (looked at
    /// once per clock read). The clock is first read after a few polls: most waits of a
    /// busy job end sooner, and a clock read costs as much as the fastest barrier.
    ///
    /// Spinning, the budget is the competitive rule's (and follows the wake-ups observed);
    /// yielding, each poll already gives the core to whoever needs it, and the budget, the
    /// start-up measurement alone, only bounds how long a rank keeps coming back before it
    /// sleeps ([`budget_for`](Self::budget_for): decided at the wait's first clock read).
    #[inline]
    pub(crate) fn poll(
        &self,
        crowding: &Crowding<'_>,
        ready: impl FnMut() -> Result<bool>,
    ) -> Result<bool> {
        self.poll_and(crowding, ready, || {})
    }

    /// [`poll`](Self::poll), calling `at_clock_read` at each clock read (`mpi`: to drive
    /// MPI's progress now and then, rather than at every poll).
    #[inline]
    pub(crate) fn poll_and(
        &self,
        crowding: &Crowding<'_>,
        mut ready: impl FnMut() -> Result<bool>,
        mut at_clock_read: impl FnMut(),
    ) -> Result<bool> {
        if ready()? {
            return Ok(true);
        }
        let mut deadline: Option<Instant> = None;
        loop {
            if crowding.now() {
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
            at_clock_read();
            let now = Instant::now();
            if now >= *deadline.get_or_insert_with(|| now + self.budget_for(crowding)) {
                return Ok(false);
            }
        }
    }

    /// A wait with nothing to wake it when its condition holds (`mpi`: a window's memory
    /// cannot be watched by a futex), which drives MPI's progress with `progress` at each
    /// clock read and after each sleep (on `bell`, where given, which other ranks ring
    /// when they need this rank's progress): polls as [`poll`](Self::poll) does for the budget (spinning, or yielding the core while `crowding` says that the
    /// host's ranks awake outnumber its cores), then goes on polling with sleeps in
    /// between, each at most 1/[`OVERSLEEP_DIVISOR`] of the time waited so far (or the
    /// shortest sleep the timer gives) and at most [`LONGEST_SLEEP`]; while it sleeps,
    /// the rank is counted out of the ranks awake.
    ///
    /// The budget is twice the shortest real sleep (the competitive rule: a wait that
    /// then sleeps has lost at most about as much as it polled). So a wait neither takes
    /// a core from the rank it waits for (it yields while they share one) nor sleeps much
    /// past the moment its condition holds: a short wait (a ping-pong's, a barrier's in
    /// a busy loop) never sleeps, and a long one (a rank in a barrier while two others
    /// exchange signals) sleeps, leaving the cores to the ranks that work, which then
    /// spin. A wait polls on past the budget, never sleeping, while
    /// [`keeps_polling`](Self::keeps_polling) says that nobody else needs its core, and
    /// polls again when it says so after a sleep.
    /// (Backing off from 1 us whatever the wait had lasted, with the crowding fixed at
    /// start-up, as gaspar did before, made a ping-pong round trip 2.7-11x OpenMPI's at
    /// 2-8 ranks on 2 cores.)
    #[cfg(feature = "mpi")]
    pub(crate) fn poll_progressing(
        &self,
        crowding: &Crowding<'_>,
        bell: Option<&Doorbell>,
        mut ready: impl FnMut() -> Result<bool>,
        mut progress: impl FnMut(),
    ) -> Result<()> {
        let start = Instant::now();
        while !self.poll_and(crowding, &mut ready, &mut progress)? {
            if !self.keeps_polling(crowding)
                && self.sleep_progressing(start, crowding, bell, &mut ready, &mut progress)?
            {
                return Ok(());
            }
        }
        Ok(())
    }

    /// The sleeping half of [`poll_progressing`](Self::poll_progressing), for a wait that
    /// began at `start`: `Ok(true)` once `ready`, `Ok(false)` when after a sleep
    /// [`keeps_polling`](Self::keeps_polling) says that the wait may poll again (a wait
    /// that slept for good once a thread was briefly runnable beyond the cores answered
    /// MPICH's one-sided operations on its rank only at its sleeps' ends), or when a ring
    /// of `bell` (the rank's own, where it has one) ended the sleep: another rank wants
    /// this one's progress for an operation on its memory, which reaches it while it polls.
    #[cfg(feature = "mpi")]
    fn sleep_progressing(
        &self,
        start: Instant,
        crowding: &Crowding<'_>,
        bell: Option<&Doorbell>,
        mut ready: impl FnMut() -> Result<bool>,
        mut progress: impl FnMut(),
    ) -> Result<bool> {
        let _slack = ShortTimerSlack::set();
        let _sleeping = super::mpi::sleeping_wait();
        loop {
            let timeout = progress_interval(start.elapsed());
            let asleep = crowding.asleep();
            let (done, rung) = match bell {
                Some(bell) => {
                    let round = TimedBell {
                        bell,
                        timeout: Some(timeout),
                    }
                    .round(&mut ready)?;
                    (round.done, round.rang)
                }
                None => {
                    std::thread::sleep(timeout);
                    (false, false)
                }
            };
            drop(asleep);
            if done {
                return Ok(true);
            }
            progress();
            if ready()? {
                return Ok(true);
            }
            if rung || self.keeps_polling(crowding) {
                return Ok(false);
            }
        }
    }
}

/// A doorbell whose sleeps end after `timeout` at the latest (when there is one), so that
/// a rank asleep in a wait still drives MPI's progress now and then (see
/// [`Patience::poll_progressing`] and the mpi transport's barrier).
#[cfg(feature = "mpi")]
pub(crate) struct TimedBell<'a> {
    pub(crate) bell: &'a Doorbell,
    pub(crate) timeout: Option<Duration>,
}

/// What one [`TimedBell::round`] saw.
#[cfg(feature = "mpi")]
pub(crate) struct Round {
    /// The condition held.
    pub(crate) done: bool,
    /// A ring's futex wake-up ended the sleep.
    pub(crate) woken: bool,
    /// The bell rang during the round, whether the ring woke the sleeper or came just
    /// before it slept.
    pub(crate) rang: bool,
}

#[cfg(feature = "mpi")]
impl TimedBell<'_> {
    /// One round of a sleeping wait ([`sleep_round`]) on this bell.
    pub(crate) fn round(&self, ready: impl FnOnce() -> Result<bool>) -> Result<Round> {
        let before = self.seq();
        let (done, woken) =
            sleep_round(self, || std::sync::atomic::fence(Ordering::SeqCst), ready)?;
        Ok(Round {
            done,
            woken,
            rang: self.seq() != before,
        })
    }
}

#[cfg(feature = "mpi")]
impl Bell for TimedBell<'_> {
    fn seq(&self) -> u32 {
        self.bell.seq()
    }
    fn raise(&self) {
        self.bell.raise()
    }
    fn is_raised(&self) -> bool {
        self.bell.is_raised()
    }
    fn lower(&self) -> bool {
        self.bell.lower()
    }
    fn sleep(&self, seq: u32) -> bool {
        let timeout = self.timeout.map(|timeout| futex::Timespec {
            tv_sec: timeout.as_secs() as _,
            tv_nsec: timeout.subsec_nanos() as _,
        });
        // Ok: a ring woke it; EAGAIN (rung since `seq`: the caller sees the word moved),
        // EINTR and ETIMEDOUT: look again.
        futex::wait(&self.bell.seq, futex::Flags::empty(), seq, timeout.as_ref()).is_ok()
    }
    fn ring(&self) {
        self.bell.ring()
    }
}

/// How long a wait that polls with progress and has lasted `waited` may go without a
/// poll: 1/[`OVERSLEEP_DIVISOR`] of that, between [`SHORTEST_SLEEP`] and [`LONGEST_SLEEP`].
#[cfg(feature = "mpi")]
pub(crate) fn progress_interval(waited: Duration) -> Duration {
    (waited / OVERSLEEP_DIVISOR).clamp(SHORTEST_SLEEP, LONGEST_SLEEP)
}

/// The calling thread's timer slack lowered to [`SHORT_TIMER_SLACK_NS`] while it lives,
/// then restored. Best effort: a thread whose slack cannot be read keeps it.
#[cfg(feature = "mpi")]
struct ShortTimerSlack {
    previous: Option<u64>,
}

#[cfg(feature = "mpi")]
impl ShortTimerSlack {
    fn set() -> ShortTimerSlack {
        use nix::sys::prctl;
        let previous = prctl::get_timerslack()
            .ok()
            .and_then(|ns| u64::try_from(ns).ok())
            .filter(|&ns| {
                ns > SHORT_TIMER_SLACK_NS && prctl::set_timerslack(SHORT_TIMER_SLACK_NS).is_ok()
            });
        ShortTimerSlack { previous }
    }
}

#[cfg(feature = "mpi")]
impl Drop for ShortTimerSlack {
    fn drop(&mut self) {
        if let Some(ns) = self.previous {
            let _ = nix::sys::prctl::set_timerslack(ns);
        }
    }
}

/// Words of an affinity mask: [`nix::sched::CpuSet::count`] bits.
pub(crate) const AFFINITY_WORDS: usize = 16;

/// The cores this process may run on (its affinity mask), one bit per core; core 0 only
/// when the mask cannot be read.
pub(crate) fn affinity_mask() -> [u64; AFFINITY_WORDS] {
    let mut mask = [0u64; AFFINITY_WORDS];
    match nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)) {
        Ok(set) => {
            let cores = nix::sched::CpuSet::count().min(64 * AFFINITY_WORDS);
            for core in (0..cores).filter(|&c| set.is_set(c).unwrap_or(false)) {
                mask[core / 64] |= 1 << (core % 64);
            }
        }
        Err(_) => mask[0] = 1,
    }
    mask
}

/// How many cores a mask from [`affinity_mask`] (or a union of several) holds, at least 1.
pub(crate) fn cores_in(mask: &[u64; AFFINITY_WORDS]) -> usize {
    (mask.iter().map(|w| w.count_ones() as usize).sum::<usize>()).max(1)
}

/// How long the shortest sleep of a wait that polls with progress really takes here (the
/// median of a few), timer slack lowered as in such a wait: such a wait sleeps only once
/// it has waited [`OVERSLEEP_DIVISOR`] times as long.
#[cfg(feature = "mpi")]
fn measured_short_sleep() -> Duration {
    const SAMPLES: usize = 9;
    let _slack = ShortTimerSlack::set();
    let mut samples: Vec<Duration> = (0..SAMPLES)
        .map(|_| {
            let start = Instant::now();
            std::thread::sleep(SHORTEST_SLEEP);
            start.elapsed()
        })
        .collect();
    samples.sort();
    samples[SAMPLES / 2]
}

/// [`measured_sleep_and_wake_up`] as `gaspar run` measured it for this rank
/// ([`WAKE_UP_NS`](super::shm::env::WAKE_UP_NS)), so that the rank never starts a thread.
fn wake_up_from_launcher() -> Option<Duration> {
    let ns = std::env::var(super::shm::env::WAKE_UP_NS).ok()?;
    ns.parse().ok().map(Duration::from_nanos)
}

/// The time one sleep on a futex and the wake-up by another thread take here, counted
/// for both sides of a wait: a rank that was asleep must first be woken before it can
/// make the condition hold, so a wait right after such a sleep lasts one wake-up more
/// (with half a round trip, two ranks that once slept would keep taking turns sleeping).
/// The median of a few ping-pongs between two threads of this process, each side sleeping
/// until the other wakes it, on two different cores when the process may use two: left to
/// the scheduler, the threads share a core in some runs and not in others, and a wake-up on
/// the same core (a context switch) costs a fraction of one from another core, which is
/// what a rank waiting for a rank on another core pays (the median round trip was 3.8 or
/// 32-37 us by chance on the AMD EPYC VM of 2026-11-29, where the job's ranks were woken
/// across its two cores).
pub(crate) fn measured_sleep_and_wake_up() -> Duration {
    const SAMPLES: u32 = 15;
    // The word's value when the ping side could not start: the pong side stops waiting.
    const ABANDONED: u32 = u32::MAX;
    let word = AtomicU32::new(0);
    // Whether `value` came (false: abandoned).
    let sleep_until = |value: u32| loop {
        let now = word.load(Ordering::Acquire);
        if now == value || now == ABANDONED {
            return now == value;
        }
        // EAGAIN (the word moved on) and EINTR both mean: look again.
        let _ = futex::wait(&word, futex::Flags::PRIVATE, now, None);
    };
    let set = |value: u32| {
        word.store(value, Ordering::Release);
        let _ = futex::wake(&word, futex::Flags::PRIVATE, 1);
    };
    let [ping_core, pong_core] = two_cores();
    // Both sides are threads of their own, so the calling thread's affinity (which the
    // launcher's ranks inherit) is never changed. The pong side starts first: it only
    // answers, so if the ping side cannot start, nothing but `ABANDONED` is ever written.
    let measured = std::thread::scope(|s| {
        std::thread::Builder::new()
            .spawn_scoped(s, || {
                pin_to(pong_core);
                for k in 0..SAMPLES {
                    if !sleep_until(2 * k + 1) {
                        return;
                    }
                    set(2 * k + 2);
                }
            })
            .ok()?;
        let ping = std::thread::Builder::new().spawn_scoped(s, || {
            pin_to(ping_core);
            let mut samples = Vec::with_capacity(SAMPLES as usize);
            for k in 0..SAMPLES {
                let start = Instant::now();
                set(2 * k + 1);
                sleep_until(2 * k + 2);
                samples.push(start.elapsed());
            }
            samples
        });
        match ping {
            Ok(ping) => ping.join().ok(),
            Err(_) => {
                set(ABANDONED);
                None
            }
        }
    });
    let Some(mut samples) = measured else {
        // No second thread to measure with: a sleep costs at least a system call and a
        // context switch, which the yield in `poll` approximates from below.
        return Duration::ZERO;
    };
    samples.sort();
    samples[samples.len() / 2]
}

/// The first two cores of this process's affinity mask (both the same when it has one).
fn two_cores() -> [Option<usize>; 2] {
    let mask = affinity_mask();
    let mut cores = (0..64 * AFFINITY_WORDS).filter(|&c| mask[c / 64] & (1 << (c % 64)) != 0);
    match (cores.next(), cores.next()) {
        (Some(a), Some(b)) => [Some(a), Some(b)],
        _ => [None, None],
    }
}

/// Keeps the calling thread on `core` (nothing for `None`, or when the kernel refuses).
fn pin_to(core: Option<usize>) {
    let Some(core) = core else { return };
    let mut set = nix::sched::CpuSet::new();
    if set.set(core).is_ok() {
        let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measuring_a_wake_up_leaves_the_callers_affinity_as_it_was() {
        let before = affinity_mask();
        assert!(measured_sleep_and_wake_up() > Duration::ZERO);
        assert_eq!(affinity_mask(), before, "the launcher's ranks inherit it");
    }

    #[test]
    fn ranks_outnumber_cores_only_when_more_are_awake() {
        assert!(!outnumber(2, 2), "as many ranks awake as cores: spin");
        assert!(!outnumber(1, 2));
        assert!(outnumber(3, 2), "more ranks awake than cores: yield");
        assert!(!outnumber(-1, 2), "a count below zero is no rank awake");
    }

    #[test]
    fn a_rank_asleep_leaves_the_count_and_the_crowd_until_it_wakes() {
        let word = AtomicU64::new(0);
        let awake = RanksAwake(&word);
        for _ in 0..3 {
            awake.join();
        }
        let crowding = Crowding::Live {
            awake,
            cores: JobCores::unlimited(2),
        };
        assert_eq!(awake.count(), 3);
        assert!(crowding.now(), "three ranks awake on two cores yield");
        {
            let _asleep = awake.asleep();
            assert_eq!(awake.count(), 2);
            assert!(!crowding.now(), "two ranks awake on two cores spin");
        }
        assert_eq!(awake.count(), 3, "a woken rank is counted again");
        assert!(crowding.now());
        awake.leave();
        assert!(!crowding.now(), "a rank that finalized is counted out");
    }

    /// A patience with a budget measured (`auto`) or set by the user.
    fn patience(measured: bool) -> Patience {
        Patience {
            budget: std::sync::OnceLock::from(Duration::from_micros(30)),
            sleep: Sleep::Futex,
            measured,
            observed_wake_up: AtomicU64::new(0),
        }
    }

    #[test]
    fn a_budget_the_user_set_or_a_crowded_job_never_polls_past_the_budget() {
        let word = AtomicU64::new(3);
        let crowded = Crowding::Live {
            awake: RanksAwake(&word),
            cores: JobCores::unlimited(2),
        };
        assert!(!patience(true).keeps_polling(&crowded));
        let fitting = Crowding::Live {
            awake: RanksAwake(&word),
            cores: JobCores::unlimited(3),
        };
        assert!(!patience(false).keeps_polling(&fitting));
    }

    #[test]
    fn slow_wake_ups_lengthen_the_budget_only_of_ranks_that_fit_their_cores() {
        let patience = patience(true);
        // Two wake-ups of 9 ms, as under a CPU quota whose period had run out.
        patience.woken_after(9_000_000);
        patience.woken_after(9_000_000);
        let followed = patience.budget();
        assert!(followed > Duration::from_millis(4), "{followed:?}");
        let (three, one) = (AtomicU64::new(3), AtomicU64::new(1));
        let crowded = Crowding::Live {
            awake: RanksAwake(&three),
            cores: JobCores::unlimited(2),
        };
        assert_eq!(patience.budget_for(&crowded), Duration::from_micros(30));
        let fitting = Crowding::Live {
            awake: RanksAwake(&one),
            cores: JobCores::unlimited(2),
        };
        assert_eq!(patience.budget_for(&fitting), followed);
    }

    #[test]
    fn a_wait_past_its_budget_leaves_the_core_to_a_machine_with_threads_waiting_for_one() {
        let one = AtomicU64::new(1);
        let fitting = Crowding::Live {
            awake: RanksAwake(&one),
            cores: JobCores::unlimited(2),
        };
        let patience = patience(true);
        let cores = nix::unistd::sysconf(nix::unistd::SysconfVar::_NPROCESSORS_ONLN)
            .expect("the cores online")
            .expect("a count") as usize;
        let stop = std::sync::atomic::AtomicBool::new(false);
        // A spinning thread on every core and one more, besides this one: threads wait
        // for a core whatever else the machine runs.
        let left = std::thread::scope(|scope| {
            for _ in 0..=cores {
                scope.spawn(|| {
                    while !stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                });
            }
            // The kernel counts a thread from its start, and the last answer may be kept
            // for a millisecond: ask until the answer changes, for at most 10 s.
            let asked = Instant::now();
            let left = loop {
                if !patience.keeps_polling(&fitting) {
                    break true;
                }
                if asked.elapsed() > Duration::from_secs(10) {
                    break false;
                }
                std::thread::yield_now();
            };
            stop.store(true, Ordering::Relaxed);
            left
        });
        assert!(
            left,
            "{} spinning threads on {cores} cores, and the wait polled on",
            cores + 1
        );
    }
}
