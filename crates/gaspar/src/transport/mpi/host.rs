//! The ranks a rank shares its host with: whether they outnumber the cores they may run
//! on, and how many of them are awake right now, counted in a word of an MPI
//! shared-memory window on the host's communicator (`MPI_Win_allocate_shared`). A wait
//! decides from that count, before each look at the clock, whether it spins or yields its
//! core, as on `shm` ([`Crowding::Live`]): two ranks that answer each other while the
//! others sleep in a barrier spin on their cores, and yield again when the others wake.
//!
//! When the host's ranks are the whole job, the window also holds what the `shm`
//! transport's barrier runs on (`transport::barrier`: each rank's slots, the doorbell its
//! barrier waits sleep on, its words of an allgather), and the job's barriers and
//! allgathers run there as on `shm`, without MPI: a wait polls its flag, then sleeps on a
//! futex in the window's memory (shared between the host's processes, so the futex is a
//! shared one) until the rank that sets the flag rings.
//!
//! The same doorbell wakes a rank asleep in any wait when another rank of the host is
//! about to make a one-sided operation on its memory that completes only in the sleeper's
//! MPI calls ([`Host::wake`]): the sleeper then polls, driving MPI's progress, instead of
//! answering at its next timed wake-up.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use mpi::ffi;

use super::{check, constant};
use crate::error::Result;
use crate::transport::barrier::{self, Flag, Slot};
use crate::transport::shm::layout::{self, Doorbell, Padded, MAX_ROUNDS};
use crate::transport::wait::{
    affinity_mask, progress_interval, Crowding, JobCores, Patience, RanksAwake, TimedBell,
    AFFINITY_WORDS,
};

/// What each host rank allocates in the window (all atomics: any bytes are valid, and
/// zeroed ones are the start).
#[repr(C)]
struct HostWords {
    /// In host rank 0's: the count of the host's ranks awake.
    awake: Padded,
    /// Where this rank's waits sleep: rung by the barrier's signals to it and by other
    /// ranks of the host that need its MPI progress ([`Host::wake`]).
    bell: Doorbell,
    /// The barrier's slots: `barrier[k][e % 2]` is written by this rank's source k in
    /// barrier number e (see `transport::barrier`).
    barrier: [[Slot<AtomicU64>; 2]; MAX_ROUNDS],
    /// This rank's word of the allgather in barrier number e, in `exchange[e % 2]`.
    exchange: [Padded; 2],
    /// This rank's contribution to a small collective run in barrier number e, in
    /// `payload[e % 2]` (see [`Host::exchange_payload`]).
    payload: [Payload; 2],
}

/// The most bytes a rank contributes to a collective that runs in the window.
pub(super) const PAYLOAD_BYTES: usize = 512;

/// A rank's contribution to a small collective, as words (the window is shared memory
/// that other processes read: touched only through atomics).
#[repr(C, align(64))]
struct Payload([AtomicU64; PAYLOAD_BYTES / 8]);

impl Payload {
    /// Stores `bytes` (at most [`PAYLOAD_BYTES`]) from the first word on.
    fn store(&self, bytes: &[u8]) {
        for (word, chunk) in self.0.iter().zip(bytes.chunks(8)) {
            let mut padded = [0u8; 8];
            padded[..chunk.len()].copy_from_slice(chunk);
            word.store(u64::from_ne_bytes(padded), Ordering::Relaxed);
        }
    }

    /// Loads `out.len()` bytes (at most [`PAYLOAD_BYTES`]) from the first word on.
    fn load(&self, out: &mut [u8]) {
        for (word, chunk) in self.0.iter().zip(out.chunks_mut(8)) {
            let bytes = word.load(Ordering::Relaxed).to_ne_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

/// The alignment of [`HostWords`], which the libraries do not promise for a rank's part of
/// a shared window (OpenMPI's osc/sm returns bases 8 bytes past a cache line).
const WORDS_ALIGN: usize = std::mem::align_of::<HostWords>();
/// The bytes each host rank allocates: its words and room to align them.
const WORDS_BYTES: usize = std::mem::size_of::<HostWords>() + WORDS_ALIGN;

/// This rank's host: its communicator, the cores its ranks may run on, the count of
/// those awake, and (when they are the whole job) its barriers.
pub(super) struct Host {
    /// The host's ranks (`MPI_Comm_split_type` with `MPI_COMM_TYPE_SHARED`).
    comm: ffi::MPI_Comm,
    /// The window holding the count and the barriers' words (`win_null` when the library
    /// could not make one).
    win: ffi::MPI_Win,
    /// Every host rank's words, in the window, by host rank (empty without a window).
    words: Box<[*const HostWords]>,
    /// This rank's host rank.
    host_rank: u32,
    /// The host rank of each rank of the job (by its rank in the transport's
    /// communicator), [`OFF_HOST`] for the ranks of other hosts.
    host_ranks: Box<[u32]>,
    /// The host's ranks are the job's, in the same order, and have the window: the job's
    /// barriers and allgathers run in it.
    whole_job: bool,
    /// The job has ranks on other hosts too.
    spans_hosts: bool,
    /// The host's ranks outnumber the cores they may keep busy (see [`JobCores`]).
    crowded: bool,
    /// The cores of the host's ranks.
    cores: JobCores,
    /// Barriers (each an allgather) run in the window so far.
    barriers: AtomicU64,
    /// The window was freed (at finalize): waits no longer read the count.
    released: AtomicBool,
    /// One-sided operations on this rank's memory may need its MPI progress, which a rank
    /// asleep in a barrier then drives now and then (see
    /// [`wait_for_flag`](Self::wait_for_flag)); true until the transport says otherwise
    /// ([`set_sleeps_drive_progress`](Self::set_sleeps_drive_progress)).
    sleeps_drive_progress: AtomicBool,
}

/// In [`Host::host_ranks`]: the rank runs on another host.
const OFF_HOST: u32 = u32::MAX;

// SAFETY: `words` point into a window that lives until `release`, after which they are
// never read (`released`); the MPI handles are usable from any thread at
// MPI_THREAD_MULTIPLE, and below it every caller checks the thread first.
unsafe impl Send for Host {}
// SAFETY: as above; the words are only touched through atomics.
unsafe impl Sync for Host {}

impl Host {
    /// Joins the host's count (and its barriers, when the host's ranks are the whole job).
    /// Collective over `comm`.
    ///
    /// # Safety
    /// `comm` is a live communicator.
    pub(super) unsafe fn join(comm: ffi::MPI_Comm) -> Result<Host> {
        let mine = affinity_mask();
        let mut union = [0u64; AFFINITY_WORDS];
        let (mut host, mut ranks, mut host_rank, mut procs): (ffi::MPI_Comm, c_int, c_int, c_int) =
            (constant::comm_null(), 0, 0, 0);
        // SAFETY: `comm` is live (caller's contract); every out-pointer is a valid local;
        // both masks hold AFFINITY_WORDS u64s.
        unsafe {
            check("MPI_Comm_size", ffi::MPI_Comm_size(comm, &mut procs))?;
            check(
                "MPI_Comm_split_type",
                ffi::MPI_Comm_split_type(
                    comm,
                    ffi::RSMPI_COMM_TYPE_SHARED,
                    0,
                    constant::info_null(),
                    &mut host,
                ),
            )?;
            check("MPI_Comm_size", ffi::MPI_Comm_size(host, &mut ranks))?;
            check("MPI_Comm_rank", ffi::MPI_Comm_rank(host, &mut host_rank))?;
            check(
                "MPI_Allreduce",
                ffi::MPI_Allreduce(
                    mine.as_ptr().cast(),
                    union.as_mut_ptr().cast(),
                    AFFINITY_WORDS as c_int,
                    constant::uint64(),
                    constant::bor(),
                    host,
                ),
            )?;
        }
        let cores = JobCores::of_masks(&union);
        // SAFETY: `comm` is live (caller's contract), `host` was just split from it.
        let host_ranks = unsafe { host_ranks(comm, host, procs)? };
        // SAFETY: `host` is live and was just made by this call.
        let (win, words) = unsafe { shared_words(host, host_rank, ranks)? };
        // With the key 0 of every rank, the split keeps `comm`'s order: when the host has
        // all of the job's ranks, host rank r is rank r.
        let whole_job = ranks == procs && !words.is_empty();
        Ok(Host {
            comm: host,
            win,
            words,
            host_rank: host_rank as u32,
            host_ranks,
            whole_job,
            spans_hosts: ranks < procs,
            crowded: ranks as usize > cores.usable,
            cores,
            barriers: AtomicU64::new(0),
            released: AtomicBool::new(false),
            sleeps_drive_progress: AtomicBool::new(true),
        })
    }

    /// Says whether a rank asleep in a barrier must wake now and then to drive MPI's
    /// progress: not when nothing one-sided on this rank needs it (Open MPI on one host,
    /// where every access is a copy through the shared window or osc/sm's own), so that
    /// the sleep lasts until the barrier rings it. Under a one-core quota, the wake-ups
    /// of a 2 ms wait (one per sixteenth of the time waited) took a quarter of the CPU the
    /// computing rank got (`tests/cpu_quota.rs`, 57-62 ms of 204 ms in two CI runs).
    pub(super) fn set_sleeps_drive_progress(&self, drive: bool) {
        self.sleeps_drive_progress.store(drive, Ordering::Relaxed);
    }

    /// Wakes `rank` (of the job) if one of its waits sleeps and it runs on this host, so
    /// that it drives MPI's progress: called before one-sided operations on its memory
    /// that complete only in its MPI calls. A rank woken so polls for a budget before it
    /// sleeps again ([`wait_for_flag`](Self::wait_for_flag), `Patience::poll_progressing`),
    /// long enough for the operation that follows the ring to reach it. Without it, such
    /// an operation on a rank asleep in a wait waited for the rank's next timed wake-up
    /// (up to 1 ms) or its progress thread's next probe (every 100 us): 4 MPICH ranks on 2
    /// cores, rank 0 putting 8 bytes to rank 1 while ranks 1-3 waited in a barrier, took
    /// from 1 to 270 us per put from one run to the next, depending on which of the
    /// waiting ranks kept polling (`op_loop addr-put` with `GASPAR_MPI_DIRECT=off`).
    pub(super) fn wake(&self, rank: u32) {
        let Some(&host_rank) = self.host_ranks.get(rank as usize) else {
            return;
        };
        if host_rank == OFF_HOST || host_rank == self.host_rank {
            return;
        }
        if let Some(words) = self.words(host_rank) {
            layout::ring_if_asleep(&words.bell);
        }
    }

    /// The doorbell of this rank's waits, while the window lives: a wait that sleeps
    /// there is woken by [`wake`](Self::wake) as well as by the timer.
    pub(super) fn own_bell(&self) -> Option<&Doorbell> {
        self.words(self.host_rank).map(|words| &words.bell)
    }

    /// The cores of the host's ranks.
    pub(super) fn cores(&self) -> JobCores {
        self.cores
    }

    /// Whether the host's ranks outnumber their cores (fixed at start-up).
    pub(super) fn crowded(&self) -> bool {
        self.crowded
    }

    /// The words of host rank `rank`, while the window lives (a wait's look at the count;
    /// the barrier checks once, see [`Host::exchange`]).
    #[inline]
    fn words(&self, rank: u32) -> Option<&HostWords> {
        if self.released.load(Ordering::Acquire) {
            return None;
        }
        // SAFETY: the words live in the window until `release`, which was not called
        // (checked just above); they are only touched through atomics.
        self.words
            .get(rank as usize)
            .map(|&words| unsafe { &*words })
    }

    /// How a wait decides between spinning and yielding: from the live count, or from
    /// the start-up fact when there is no count (or no longer).
    #[inline]
    pub(super) fn crowding(&self) -> Crowding<'_> {
        match self.words(0) {
            Some(words) => Crowding::Live {
                awake: RanksAwake(&words.awake.0),
                cores: self.cores,
            },
            None => Crowding::Fixed(self.crowded),
        }
    }

    /// Whether the job has ranks on other hosts (for the progress thread's `auto`).
    pub(super) fn spans_hosts(&self) -> bool {
        self.spans_hosts
    }

    /// Whether the job's barriers and allgathers run in the window (the host's ranks are
    /// the job's, and the window lives).
    #[inline]
    pub(super) fn runs_collectives(&self) -> bool {
        self.whole_job && !self.released.load(Ordering::Acquire)
    }

    /// The job's next allgather, in the window: every rank passes `value`, and `out[r]`,
    /// when given, receives rank r's. Returns whether every rank passed the same value, or
    /// `None` when the job's collectives do not run in the window (see
    /// [`Host::runs_collectives`]): the caller then runs them in MPI. A barrier as well: no rank returns before every rank
    /// has called it, and what a rank wrote before its call is visible to every rank after
    /// theirs. `progress` drives MPI's progress; a wait that sleeps calls it at least every
    /// millisecond, so that a one-sided operation that needs this rank's help completes.
    /// The caller holds the rank's collectives' lock.
    pub(super) fn exchange(
        &self,
        patience: &Patience,
        value: u64,
        out: Option<&mut [u64]>,
        progress: &dyn Fn(),
    ) -> Result<Option<bool>> {
        self.exchange_payload(patience, value, &[], out, progress)
    }

    /// [`exchange`](Self::exchange) that also publishes `payload` (at most
    /// [`PAYLOAD_BYTES`]), which every rank reads with [`payload_of`](Self::payload_of)
    /// after its call and before its next one: the data of a small collective travels
    /// with the barrier that agrees on the call.
    pub(super) fn exchange_payload(
        &self,
        patience: &Patience,
        value: u64,
        payload: &[u8],
        out: Option<&mut [u64]>,
        progress: &dyn Fn(),
    ) -> Result<Option<bool>> {
        if !self.runs_collectives() {
            return Ok(None);
        }
        debug_assert!(payload.len() <= PAYLOAD_BYTES);
        let at = |rank: u32| -> &HostWords {
            // SAFETY: the window lives (checked above): only `release` frees it, which
            // finalize calls with the collectives' lock held, as the caller holds it now;
            // every rank of the job has words (`whole_job`), only touched through atomics.
            unsafe { &*self.words[rank as usize] }
        };
        let own = at(self.host_rank);
        let epoch = self.barriers.load(Ordering::Relaxed) + 1;
        self.barriers.store(epoch, Ordering::Relaxed);
        let parity = (epoch % 2) as usize;
        // Read by the others after this barrier, and not written again before the one
        // after the next (which this rank passes only after every rank has entered the
        // next one, hence has read it).
        own.exchange[parity].0.store(value, Ordering::Relaxed);
        own.payload[parity].store(payload);
        let procs = self.words.len() as u32;
        let arrival = barrier::barrier(
            barrier::Algorithm::for_job(procs),
            self.host_rank,
            procs,
            epoch,
            false,
            value,
            |rank, k, parity| &at(rank).barrier[k][parity],
            |partner| {
                fence(Ordering::SeqCst);
                layout::ring_if_asleep(&at(partner).bell);
            },
            |flag, _, epoch| self.wait_for_flag(patience, &own.bell, flag, epoch, progress),
        )?;
        if let Some(out) = out {
            for (rank, word) in out.iter_mut().enumerate() {
                *word = at(rank as u32).exchange[parity].0.load(Ordering::Relaxed);
            }
        }
        Ok(Some(arrival.same_call))
    }

    /// Rank `rank`'s payload of the last [`exchange_payload`](Self::exchange_payload)
    /// into `out` (its length: at most [`PAYLOAD_BYTES`]). Valid from the return of that
    /// call until this rank's next exchange: a rank writes that parity's payload again
    /// only in the exchange after next, which it enters only after every rank has entered
    /// the next one. The caller holds the rank's collectives' lock.
    pub(super) fn payload_of(&self, rank: u32, out: &mut [u8]) {
        debug_assert!(self.runs_collectives() && out.len() <= PAYLOAD_BYTES);
        let parity = (self.barriers.load(Ordering::Relaxed) % 2) as usize;
        // SAFETY: as in `exchange_payload`: the window lives while the caller holds the
        // collectives' lock, and every rank of the job has words.
        let words = unsafe { &*self.words[rank as usize] };
        words.payload[parity].load(out);
    }

    /// Waits until `flag` says barrier `epoch` (see [`barrier::arrived`]) and returns its
    /// value: polls it in `patience` (calling `progress` at each clock read; on while
    /// [`Patience::keeps_polling`] says so), then sleeps
    /// on `bell` (this rank's) until a signal rings it, waking at least every
    /// [`progress_interval`] of the time waited to call `progress` where one-sided
    /// operations need it (`sleeps_drive_progress`), and polls again after a wake-up that
    /// did not end the wait once [`Patience::keeps_polling`] says so, or, where one-sided
    /// operations need it, after a ring (another rank's [`wake`](Self::wake)). While it
    /// sleeps the rank is counted out of the ranks awake.
    fn wait_for_flag(
        &self,
        patience: &Patience,
        bell: &Doorbell,
        flag: &AtomicU64,
        epoch: u64,
        progress: &dyn Fn(),
    ) -> Result<u64> {
        let mut seen = 0;
        let mut ready = || {
            seen = flag.load_acquire();
            Ok(barrier::arrived(seen, epoch))
        };
        let crowding = self.crowding();
        let start = Instant::now();
        let drive_progress = self.sleeps_drive_progress.load(Ordering::Relaxed);
        loop {
            loop {
                if patience.poll_and(&crowding, &mut ready, progress)? {
                    return Ok(seen);
                }
                if !patience.keeps_polling(&crowding) {
                    break;
                }
            }
            let _sleeping = super::progress::sleeping_wait();
            loop {
                let timed = TimedBell {
                    bell,
                    timeout: drive_progress.then(|| progress_interval(start.elapsed())),
                };
                let asleep = crowding.asleep();
                let round = timed.round(&mut ready)?;
                drop(asleep);
                if round.done {
                    return Ok(seen);
                }
                if round.woken {
                    let rung_at = bell.rung_at.load(Ordering::Relaxed);
                    patience.woken_after(layout::monotonic_ns().saturating_sub(rung_at));
                }
                progress();
                // Woken without the flag: polls again when a ring woke it where other
                // ranks' one-sided operations need this rank's progress (the ring may be
                // theirs: `wake`; elsewhere it is a barrier signal for a later round, and
                // the wait sleeps on) or once the machine has a core for it. (Staying
                // asleep for the rest of the wait, as before 2026-11-30, left a rank whose
                // barrier began while a thread was briefly runnable beyond the cores
                // answering MPICH's one-sided operations only at its timed wake-ups and
                // the progress thread's ticks: 84-172 us per put from another rank,
                // against 0.7 us.)
                if (round.rang && drive_progress) || patience.keeps_polling(&crowding) {
                    break;
                }
            }
        }
    }

    /// Leaves the count and frees the window and the host's communicator. Collective
    /// over the host's ranks (called once, by finalize, when every rank of the job is
    /// there).
    pub(super) fn release(&self) -> Result<()> {
        let count = self.words(0).map(|words| RanksAwake(&words.awake.0));
        if self.released.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let (mut win, mut comm) = (self.win, self.comm);
        // SAFETY: the handles are this value's own and not used after this (`released`);
        // MPI_Win_free waits for every host rank, so none still reads the window.
        unsafe {
            if let Some(count) = count {
                count.leave();
                check("MPI_Win_free", ffi::MPI_Win_free(&mut win))?;
            }
            check("MPI_Comm_free", ffi::MPI_Comm_free(&mut comm))
        }
    }
}

/// The host rank of each rank of `comm` (`procs` ranks) in `host`, a communicator split
/// from it, or [`OFF_HOST`].
///
/// # Safety
/// `comm` and `host` are live communicators.
unsafe fn host_ranks(comm: ffi::MPI_Comm, host: ffi::MPI_Comm, procs: c_int) -> Result<Box<[u32]>> {
    let ranks: Vec<c_int> = (0..procs).collect();
    let mut translated: Vec<c_int> = vec![0; ranks.len()];
    // SAFETY: both communicators are live (caller's contract); the rank arrays hold
    // `procs` ints each; the groups made here are freed before returning; the null group
    // is a constant of the library's.
    unsafe {
        let (mut job_group, mut host_group) = (ffi::RSMPI_GROUP_NULL, ffi::RSMPI_GROUP_NULL);
        check("MPI_Comm_group", ffi::MPI_Comm_group(comm, &mut job_group))?;
        check("MPI_Comm_group", ffi::MPI_Comm_group(host, &mut host_group))?;
        check(
            "MPI_Group_translate_ranks",
            ffi::MPI_Group_translate_ranks(
                job_group,
                procs,
                ranks.as_ptr(),
                host_group,
                translated.as_mut_ptr(),
            ),
        )?;
        check("MPI_Group_free", ffi::MPI_Group_free(&mut job_group))?;
        check("MPI_Group_free", ffi::MPI_Group_free(&mut host_group))?;
    }
    // SAFETY: a constant of the library's.
    let undefined = unsafe { ffi::RSMPI_UNDEFINED };
    Ok(translated
        .into_iter()
        .map(|rank| match rank {
            _ if rank == undefined => OFF_HOST,
            _ => u32::try_from(rank).unwrap_or(OFF_HOST),
        })
        .collect())
}

/// Every host rank's [`HostWords`] in a window each allocates its part of, zeroed by their
/// owners, and this rank joined to the count: the window and the words by host rank
/// (empty, and `win_null`, when the library cannot allocate shared memory on this
/// communicator or cannot show a rank another's part). Collective over `host`.
///
/// # Safety
/// `host` is a live communicator of `ranks` ranks that share memory.
unsafe fn shared_words(
    host: ffi::MPI_Comm,
    host_rank: c_int,
    ranks: c_int,
) -> Result<(ffi::MPI_Win, Box<[*const HostWords]>)> {
    let mut win = constant::win_null();
    let mut mine: *mut c_void = std::ptr::null_mut();
    // SAFETY: out-pointers to locals; errors are returned on `host` while the window is
    // made (MPI's default for communicators is fatal), and every rank makes the same
    // decision from the same collective result below.
    unsafe {
        ffi::MPI_Comm_set_errhandler(host, constant::errors_return());
        let allocated = ffi::MPI_Win_allocate_shared(
            WORDS_BYTES as ffi::MPI_Aint,
            1,
            constant::info_null(),
            host,
            (&mut mine as *mut *mut c_void).cast(),
            &mut win,
        );
        let mut words: Vec<*const HostWords> = Vec::with_capacity(ranks as usize);
        if allocated == 0 {
            for rank in 0..ranks {
                let mut base: *mut c_void = std::ptr::null_mut();
                let (mut len, mut unit): (ffi::MPI_Aint, c_int) = (0, 0);
                if ffi::MPI_Win_shared_query(
                    win,
                    rank,
                    &mut len,
                    &mut unit,
                    (&mut base as *mut *mut c_void).cast(),
                ) != 0
                    || base.is_null()
                {
                    break;
                }
                let pad = (base as usize).wrapping_neg() % WORDS_ALIGN;
                if (len as usize) < pad + std::mem::size_of::<HostWords>() {
                    break;
                }
                words.push(base.cast::<u8>().add(pad).cast());
            }
        }
        ffi::MPI_Comm_set_errhandler(host, constant::errors_are_fatal());
        let usable = words.len() == ranks as usize;
        // Every rank must agree before any touches the words: a rank that found them
        // unusable frees the window with the others.
        let (mine_ok, mut all_ok): (c_int, c_int) = (c_int::from(usable), 0);
        check(
            "MPI_Allreduce",
            ffi::MPI_Allreduce(
                (&mine_ok as *const c_int).cast(),
                (&mut all_ok as *mut c_int).cast(),
                1,
                ffi::RSMPI_INT32_T,
                ffi::RSMPI_MIN,
                host,
            ),
        )?;
        if all_ok == 0 {
            if allocated == 0 {
                check("MPI_Win_free", ffi::MPI_Win_free(&mut win))?;
            }
            return Ok((constant::win_null(), Box::default()));
        }
        // This rank's words, inside its own part (checked above), which no other rank
        // touches before the barrier below.
        std::ptr::write_bytes(
            words[host_rank as usize].cast_mut().cast::<u8>(),
            0,
            std::mem::size_of::<HostWords>(),
        );
        // The zeros before any rank joins the count or signals.
        check("MPI_Barrier", ffi::MPI_Barrier(host))?;
        RanksAwake(&(*words[0]).awake.0).join();
        Ok((win, words.into_boxed_slice()))
    }
}
