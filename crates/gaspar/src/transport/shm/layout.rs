//! What a rank's shared segment holds, and where.
//!
//! ```text
//! 0                  channels_offset          starter_offset       heap_offset
//! | Header (control) | collective channels    | starter memory     | symmetric heap     |
//! ```
//! The header is written by the launcher (sizes, magic) and by ranks (state, barrier and
//! exchange words, the registration table). Every field is an atomic, so any bit pattern
//! is a valid header and a zero-filled segment is a valid empty one. The collective
//! channels are the transport's scratch area for team collectives (what pSync and pWrk
//! are to SHMEM): one inbox per sending rank (its notes, see `notes`, and its chunk
//! slots) and one acknowledgement word per receiving rank (see `channel`); no global
//! address reaches them.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use rustix::thread::futex;

use crate::addr::REGISTRATION_SLOTS;
use crate::transport::barrier::Slot;
use crate::transport::seqlock::RegionEntry;
use crate::transport::wait::{RanksAwake, AFFINITY_WORDS};

/// "gaspar02" in little-endian: marks an initialized segment of this layout.
pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"gaspar02");
/// Enough dissemination rounds for the 65 536 ranks a global address can name (and
/// slots for the all-to-all barrier's sources).
pub(crate) const MAX_ROUNDS: usize = 17;
const _: () = {
    use crate::transport::barrier::{Algorithm, ALL_TO_ALL};
    assert!(Algorithm::AllToAll.slots(ALL_TO_ALL) <= MAX_ROUNDS);
    assert!(Algorithm::Dissemination.slots(1 << 16) <= MAX_ROUNDS);
};
const PAGE: u64 = 4096;
/// The heap starts on a 64 KiB boundary so that large allocations are well aligned.
const HEAP_ALIGN: u64 = 64 * 1024;

/// A rank's lifecycle, as the launcher sees it.
pub(crate) mod state {
    /// Segment made by the launcher; the program has not attached (may not be gaspar).
    pub(crate) const CREATED: u64 = 0;
    /// The rank called init.
    pub(crate) const ATTACHED: u64 = 1;
    /// The rank finalized.
    pub(crate) const FINALIZED: u64 = 2;
    /// The process ended (recorded by the launcher, whatever state it was in).
    pub(crate) const EXITED: u64 = 3;
}

/// Value of [`Header::abort`] set by the launcher (a rank sets 1 + its rank).
pub(crate) const ABORTED_BY_LAUNCHER: u64 = u64::MAX;

/// Flag of [`Header::abort`] (with 1 + rank) when the rank ended the job on purpose and
/// has said why itself (a Fortran ERROR STOP): the job's status is that rank's, and the
/// launcher adds no line.
pub(crate) const ENDED_ON_PURPOSE: u64 = 1 << 62;

/// The rank that aborted the job, from a non-zero [`Header::abort`] word (`None`: the
/// launcher did).
pub(crate) fn aborting_rank(word: u64) -> Option<u32> {
    (word != ABORTED_BY_LAUNCHER).then(|| ((word & !ENDED_ON_PURPOSE) - 1) as u32)
}

/// One word on its own cache line, so that ranks spinning on neighbouring words do not
/// steal each other's line.
#[repr(C, align(64))]
pub(crate) struct Padded(pub(crate) AtomicU64);

/// Where waits on a segment's memory sleep: a futex word that moves on each time the bell
/// rings, and a flag that sleepers raise, so that a writer rings only when somebody
/// sleeps (a wait that never sleeps costs its writers no system call) and only the first
/// writer after a sleeper raised it.
#[repr(C, align(64))]
pub(crate) struct Doorbell {
    /// The futex word.
    pub(crate) seq: AtomicU32,
    /// Non-zero when a thread (of any rank) sleeps on `seq`, or is about to.
    pub(crate) asleep: AtomicU32,
    /// When the bell last rang ([`monotonic_ns`]), so that a woken sleeper can tell how
    /// long its wake-up took.
    pub(crate) rung_at: AtomicU64,
}

/// Nanoseconds of the monotonic clock, which every process of the machine shares (0 if
/// the clock cannot be read, which Linux never refuses for CLOCK_MONOTONIC).
///
/// Read through the C library, not rustix's own vDSO parser: that one crashes every
/// program run under valgrind (rustix issue 1559), and users of an HPC runtime debug
/// with `gaspar run -n 2 valgrind prog`.
pub(crate) fn monotonic_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).map_or(0, |now| {
        (now.tv_sec() as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(now.tv_nsec() as u64)
    })
}

impl Doorbell {
    /// Wakes every thread sleeping on this bell. The futex operations are the shared
    /// (non-private) ones: the word lies at different addresses in different processes.
    #[cold]
    #[inline(never)]
    pub(crate) fn ring(&self) {
        self.rung_at.store(monotonic_ns(), Ordering::Relaxed);
        self.seq.fetch_add(1, Ordering::Release);
        let _ = futex::wake(&self.seq, futex::Flags::empty(), i32::MAX as u32);
    }
}

impl Bell for Doorbell {
    #[inline]
    fn seq(&self) -> u32 {
        self.seq.load(Ordering::Acquire)
    }
    #[inline]
    fn raise(&self) {
        self.asleep.store(1, Ordering::SeqCst);
    }
    /// Sequentially consistent: after an atomic, this load and the atomic are the
    /// writer's half of the handshake (on x86 a plain load either way).
    #[inline(always)]
    fn is_raised(&self) -> bool {
        self.asleep.load(Ordering::SeqCst) != 0
    }
    #[inline]
    fn lower(&self) -> bool {
        self.asleep.swap(0, Ordering::SeqCst) != 0
    }
    fn sleep(&self, seq: u32) -> bool {
        // Returns at once (EAGAIN) when the bell rang since `seq` was read, and with
        // EINTR after a signal: the caller looks again either way.
        futex::wait(&self.seq, futex::Flags::empty(), seq, None).is_ok()
    }
    fn ring(&self) {
        Doorbell::ring(self)
    }
}

/// The doorbell protocol, over any atomics: a [`Doorbell`] in a segment (with a futex),
/// or loom's atomics in the model check.
///
/// A sleeper and a writer never miss each other: the sleeper raises `asleep` and then
/// looks at its condition; the writer writes and then looks at `asleep`. With a
/// store-load barrier between the two steps on both sides (`fence`; a writer's may be
/// its sequentially consistent read-modify-write, see `Writers::Atomics`), at least one of
/// them sees the other's first step. The sleeper reads the futex word before it raises
/// the flag: a writer that lowers the flag after that read rings, which moves the word
/// on and makes the sleep return at once.
pub(crate) trait Bell {
    /// The futex word.
    fn seq(&self) -> u32;
    /// Says that a thread sleeps (or is about to).
    fn raise(&self);
    /// Whether a thread said so.
    fn is_raised(&self) -> bool;
    /// Takes the flag down; whether it was up.
    fn lower(&self) -> bool;
    /// Sleeps while the futex word is `seq`; whether a ring ended the sleep.
    fn sleep(&self, seq: u32) -> bool;
    /// Moves the futex word on and wakes every sleeper.
    fn ring(&self);
}

/// One round of a sleeping wait: `settled` decides (`Ok(true)`: done, an error: over),
/// else the thread sleeps until a ring. Returns `(done, woken by a ring)`.
pub(crate) fn sleep_round<B: Bell>(
    bell: &B,
    fence: impl FnOnce(),
    settled: impl FnOnce() -> crate::error::Result<bool>,
) -> crate::error::Result<(bool, bool)> {
    let seq = bell.seq();
    bell.raise();
    fence();
    if settled()? {
        return Ok((true, false));
    }
    Ok((false, bell.sleep(seq)))
}

/// A wait's sleeping phase: rounds of [`sleep_round`] until `settled` says the wait is
/// over (`Ok(true)`), or until a ring ended a sleep without ending the wait when
/// `back_after_ring` (`Ok(false)`: the caller polls again before it sleeps anew), its
/// rank counted out of `awake` meanwhile; `woken` is called after each sleep that a ring
/// ended.
pub(crate) fn sleep_until<B: Bell>(
    bell: &B,
    awake: RanksAwake<'_>,
    fence: impl Fn(),
    back_after_ring: bool,
    mut settled: impl FnMut() -> crate::error::Result<bool>,
    mut woken: impl FnMut(),
) -> crate::error::Result<bool> {
    let _asleep = awake.asleep();
    loop {
        let (done, rung) = sleep_round(bell, &fence, &mut settled)?;
        if done {
            return Ok(true);
        }
        if rung {
            woken();
            if back_after_ring {
                return settled();
            }
        }
    }
}

/// A writer's side, after its write and its half of the barrier: rings `bell` when a
/// thread sleeps on it. Only the first writer after the flag went up pays the ring.
#[inline(always)]
pub(crate) fn ring_if_asleep<B: Bell>(bell: &B) {
    if bell.is_raised() {
        ring_first(bell);
    }
}

#[cold]
#[inline(never)]
fn ring_first<B: Bell>(bell: &B) {
    if bell.lower() {
        bell.ring();
    }
}

/// The control block at the start of every rank's segment.
#[repr(C)]
pub(crate) struct Header {
    pub(crate) magic: AtomicU64,
    pub(crate) procs: AtomicU64,
    pub(crate) rank: AtomicU64,
    pub(crate) starter_len: AtomicU64,
    pub(crate) heap_len: AtomicU64,
    pub(crate) pid: AtomicU64,
    /// The rank's address of its own segment, written when it attaches: another process
    /// that maps the segment at the same address can follow pointers the rank stores into
    /// it.
    pub(crate) home: AtomicU64,
    pub(crate) state: AtomicU64,
    /// Non-zero when the rank asked that its death be reported to the other ranks (their
    /// waits for it end with an error) instead of ending the job: a coarray job's failed
    /// image.
    pub(crate) reports_failure: AtomicU64,
    /// Non-zero once the job is being aborted (1 + rank, possibly with
    /// [`ENDED_ON_PURPOSE`], or [`ABORTED_BY_LAUNCHER`]).
    pub(crate) abort: Padded,
    /// How many departures of ranks this rank has been told of (see
    /// `Transport::departures`): each rank that notes one, and the launcher for each rank
    /// whose exit it records, adds one in every segment.
    pub(crate) departures: Padded,
    /// Where the barrier's waits sleep (rung by the barrier's signals).
    pub(crate) collective_bell: Doorbell,
    /// Where the other waits on this segment's memory sleep (rung by atomics and
    /// flushed puts to it): separate, so that writes to the memory of a rank that sleeps
    /// in a barrier do not wake it.
    pub(crate) memory_bell: Doorbell,
    /// Dissemination barrier slots (flag and call word): `barrier[k][e % 2]` is written by
    /// this rank's round-k source in barrier number e.
    pub(crate) barrier: [[Slot<AtomicU64>; 2]; MAX_ROUNDS],
    /// Double-buffered words for `allgather_u64`.
    pub(crate) exchange: [Padded; 2],
    /// The accumulate lock: in the header, where no global address reaches.
    pub(crate) accumulate_lock: Padded,
    /// In rank 0's segment: the job's count of ranks awake (see `wait::RanksAwake`); in
    /// the other ranks' segments unused.
    pub(crate) ranks_awake: Padded,
    /// The cores the rank may run on (its affinity mask, see `wait::affinity_mask`),
    /// written by the rank before the start-up barrier.
    pub(crate) affinity: [AtomicU64; AFFINITY_WORDS],
    pub(crate) regions: [RegionEntry; REGISTRATION_SLOTS],
}

/// Byte offsets of the parts of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) channels: ChannelLayout,
    pub(crate) starter_offset: u64,
    pub(crate) starter_len: u64,
    pub(crate) heap_offset: u64,
    pub(crate) heap_len: u64,
}

/// Where a segment's collective channels lie, and their sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChannelLayout {
    /// Byte offset of the first inbox.
    pub(crate) offset: u64,
    /// Ranks of the job: one inbox and one acknowledgement word for each.
    pub(crate) procs: u32,
    /// Payload bytes of one chunk slot (a multiple of 64).
    pub(crate) chunk: u64,
}

/// Chunk slots per inbox: a sender fills one while the receiver empties the other.
pub(crate) const CHANNEL_DEPTH: u64 = 2;
/// Bytes of the largest note: its header, then its payload (a message of one or a few cache
/// lines touches only those). 4 KiB: an allreduce of up to 506 doubles agrees in its own
/// notes; a larger one agrees in notes first, then moves its data through the channels,
/// which costs one more round (measured at 2 ranks: 16 doubles 310 ns that way against
/// 220 ns in the channels alone and 155 ns in notes; 128 doubles 1.08 us against 0.95).
pub(crate) const NOTE_LEN: u64 = 4096;
/// Bytes of each inbox's ring of notes (see `notes`), which holds notes of any length up
/// to [`NOTE_LEN`] one after the other on whole cache lines: two of the largest, as many
/// as may be unread between calls that exchange notes both ways, or 128 notes of a few
/// values, as many as a one-way broadcast's root sends before it waits for a member.
/// Deep enough that with more ranks than cores a root runs ahead of members that are not
/// running, as MPI's eager messages let it: a broadcast of one integer at 4 ranks on 2
/// cores took 1.7-2.5 us a call with room for two notes, 0.32-0.49 us with room for 16
/// (gfortran 12 `co_broadcast`, AMD EPYC 2 vCPUs; OpenCoarrays 0.29-0.46 us).
pub(crate) const NOTE_RING: u64 = 2 * NOTE_LEN;
/// Bytes of a chunk slot's header (tag and message length, on their own line).
pub(crate) const CHUNK_HEADER: u64 = 64;
/// Payload of a chunk slot in jobs of up to 16 ranks; larger jobs get smaller slots, so
/// that a segment's chunk slots stay within [`CHANNELS_BUDGET`] of address space (pages
/// nobody writes cost no memory), down to [`SMALLEST_CHUNK`]. Every chunk is a hand-over
/// between two ranks, which costs a wake-up whenever the receiver went to sleep waiting
/// for it (always, with more ranks than cores): 512 KiB slots instead of 64 KiB made
/// co_sum of 1 Mi doubles 2.5x and co_broadcast 2.1x as fast at 2 images (0.50 / 0.48 ms
/// against 1.3 / 1.0 ms), 1.4x / 1.7x at 4 on 2 cores (gfortran 16 bench/caf/bench.f90,
/// both libraries alternated, AMD EPYC 2 vCPUs), sync all unchanged.
const LARGEST_CHUNK: u64 = 512 * 1024;
const SMALLEST_CHUNK: u64 = 1024;
const CHANNELS_BUDGET: u64 = 16 << 20;

impl ChannelLayout {
    fn new(offset: u64, procs: u32) -> ChannelLayout {
        let chunk = (CHANNELS_BUDGET / (CHANNEL_DEPTH * u64::from(procs.max(1))))
            .clamp(SMALLEST_CHUNK, LARGEST_CHUNK)
            / 64
            * 64;
        ChannelLayout {
            offset,
            procs,
            chunk,
        }
    }

    /// Bytes of one inbox: its sent counter's line, its notes' read counter's line, its
    /// ring of notes, then its chunk slots.
    pub(crate) fn inbox_len(&self) -> u64 {
        128 + NOTE_RING + CHANNEL_DEPTH * (CHUNK_HEADER + self.chunk)
    }

    /// Byte offset of the count of note lines read, which the receiver keeps, in the
    /// inbox `source` sends into.
    pub(crate) fn notes_read(&self, source: u32) -> u64 {
        self.inbox(source) + 64
    }

    /// Byte offset of the ring of notes of the inbox `source` sends into.
    pub(crate) fn note_ring(&self, source: u32) -> u64 {
        self.inbox(source) + 128
    }

    /// Byte offset of chunk slot number `slot` (of [`CHANNEL_DEPTH`]) of the inbox
    /// `source` sends into.
    pub(crate) fn chunk_slot(&self, source: u32, slot: u64) -> u64 {
        self.inbox(source) + 128 + NOTE_RING + slot * (CHUNK_HEADER + self.chunk)
    }

    /// Byte offset of the inbox that rank `source` sends into.
    pub(crate) fn inbox(&self, source: u32) -> u64 {
        self.offset + u64::from(source) * self.inbox_len()
    }

    /// Byte offset of the acknowledgement word that rank `receiver` writes.
    pub(crate) fn ack(&self, receiver: u32) -> u64 {
        self.offset + u64::from(self.procs) * self.inbox_len() + u64::from(receiver) * 64
    }

    /// Bytes of the whole area.
    fn len(&self) -> u64 {
        u64::from(self.procs) * (self.inbox_len() + 64)
    }
}

impl Layout {
    /// The layout of a segment of a job of `procs` ranks with the given sizes, or `None`
    /// if the segment would not fit in 64 bits.
    pub(crate) fn new(procs: u32, starter_len: u64, heap_len: u64) -> Option<Layout> {
        let channels =
            ChannelLayout::new(round_up(std::mem::size_of::<Header>() as u64, PAGE)?, procs);
        let starter_offset = round_up(channels.offset.checked_add(channels.len())?, PAGE)?;
        let heap_offset = round_up(starter_offset.checked_add(starter_len)?, HEAP_ALIGN)?;
        heap_offset.checked_add(heap_len)?;
        Some(Layout {
            channels,
            starter_offset,
            starter_len,
            heap_offset,
            heap_len,
        })
    }

    /// Total bytes of the segment.
    pub(crate) fn total(&self) -> u64 {
        self.heap_offset + self.heap_len
    }
}

fn round_up(value: u64, to: u64) -> Option<u64> {
    Some(value.checked_add(to - 1)? / to * to)
}

impl Header {
    /// Fills in a freshly zeroed header.
    pub(crate) fn initialize(&self, rank: u32, procs: u32, layout: &Layout) {
        self.procs.store(u64::from(procs), Ordering::Relaxed);
        self.rank.store(u64::from(rank), Ordering::Relaxed);
        self.starter_len
            .store(layout.starter_len, Ordering::Relaxed);
        self.heap_len.store(layout.heap_len, Ordering::Relaxed);
        self.state.store(state::CREATED, Ordering::Relaxed);
        self.magic.store(MAGIC, Ordering::Release);
    }

    /// Records that the rank's process ended, unless it finalized first (the launcher
    /// calls this when it reaps the rank, then rings every segment's doorbell so that
    /// waits for the rank find out).
    pub(crate) fn record_exit(&self) {
        let _ = self
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
                (now != state::FINALIZED).then_some(state::EXITED)
            });
    }

    /// Wakes every wait on this segment (the job is aborted, or a rank has gone).
    pub(crate) fn ring_every_bell(&self) {
        self.collective_bell.ring();
        self.memory_bell.ring();
    }

    /// The layout the header describes, if it is a valid header.
    pub(crate) fn layout(&self) -> Option<Layout> {
        if self.magic.load(Ordering::Acquire) != MAGIC {
            return None;
        }
        Layout::new(
            u32::try_from(self.procs.load(Ordering::Relaxed)).ok()?,
            self.starter_len.load(Ordering::Relaxed),
            self.heap_len.load(Ordering::Relaxed),
        )
    }
}

/// Model checks with loom: `RUSTFLAGS="--cfg loom" cargo test --release --lib loom`.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::{ring_if_asleep, sleep_round, Bell};
    use loom::sync::atomic::{AtomicU64, Ordering};
    use loom::sync::Arc;

    /// A doorbell whose futex is a mutex and a condition variable: `sleep` waits only
    /// while the word is unchanged, as FUTEX_WAIT does, and loom reports a deadlock if a
    /// wake-up is lost.
    struct ModelBell {
        seq: AtomicU64,
        asleep: AtomicU64,
        lock: loom::sync::Mutex<()>,
        woken: loom::sync::Condvar,
    }

    impl Bell for ModelBell {
        fn seq(&self) -> u32 {
            self.seq.load(Ordering::Acquire) as u32
        }
        fn raise(&self) {
            self.asleep.store(1, Ordering::SeqCst);
        }
        fn is_raised(&self) -> bool {
            self.asleep.load(Ordering::SeqCst) != 0
        }
        fn lower(&self) -> bool {
            self.asleep.swap(0, Ordering::SeqCst) != 0
        }
        fn sleep(&self, seq: u32) -> bool {
            let guard = self.lock.lock().unwrap();
            if self.seq() != seq {
                return false;
            }
            drop(self.woken.wait(guard).unwrap());
            true
        }
        fn ring(&self) {
            let _guard = self.lock.lock().unwrap();
            self.seq.fetch_add(1, Ordering::Release);
            self.woken.notify_all();
        }
    }

    /// A sleeper waits for a flag; one writer sets it and rings, another rings for an
    /// unrelated write at any moment (it may lower the sleeper's flag first). The
    /// sleeper always wakes and sees the flag (the model's fences are SeqCst fences, the
    /// fallback of `membarrier`).
    #[test]
    fn loom_doorbell_wake_ups_are_never_lost() {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let bell = Arc::new(ModelBell {
                seq: AtomicU64::new(0),
                asleep: AtomicU64::new(0),
                lock: loom::sync::Mutex::new(()),
                woken: loom::sync::Condvar::new(),
            });
            let flag = Arc::new(AtomicU64::new(0));
            let fence = || loom::sync::atomic::fence(Ordering::SeqCst);
            let writer = {
                let (bell, flag) = (bell.clone(), flag.clone());
                loom::thread::spawn(move || {
                    flag.store(1, Ordering::Release);
                    fence();
                    ring_if_asleep(&*bell);
                })
            };
            let other = {
                let bell = bell.clone();
                loom::thread::spawn(move || {
                    fence();
                    ring_if_asleep(&*bell);
                })
            };
            loop {
                let (done, _) =
                    sleep_round(&*bell, fence, || Ok(flag.load(Ordering::Acquire) == 1)).unwrap();
                if done {
                    break;
                }
            }
            writer.join().unwrap();
            other.join().unwrap();
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::wait::Crowding;

    /// A thread whose wait sleeps is counted out of the ranks awake while it sleeps (so
    /// that the ranks left polling spin), and counted back in when a ring wakes it.
    #[test]
    fn a_sleeping_wait_counts_its_rank_out_until_woken() {
        let bell = Doorbell {
            seq: AtomicU32::new(0),
            asleep: AtomicU32::new(0),
            rung_at: AtomicU64::new(0),
        };
        let (count, flag) = (AtomicU64::new(0), AtomicU64::new(0));
        let awake = RanksAwake(&count);
        awake.join();
        awake.join();
        let crowding = Crowding::Live {
            awake,
            cores: crate::transport::wait::JobCores::unlimited(1),
        };
        assert!(crowding.now(), "two ranks awake on one core yield");
        let fence = || std::sync::atomic::fence(Ordering::SeqCst);
        let mut rings = 0;
        std::thread::scope(|s| {
            let sleeper = s.spawn(|| {
                sleep_until(
                    &bell,
                    awake,
                    fence,
                    false,
                    || Ok(flag.load(Ordering::Acquire) == 1),
                    || rings += 1,
                )
            });
            while !bell.is_raised() {
                std::thread::yield_now();
            }
            assert_eq!(awake.count(), 1, "the sleeper is counted out");
            assert!(!crowding.now(), "one rank awake on one core spins");
            flag.store(1, Ordering::Release);
            fence();
            ring_if_asleep(&bell);
            sleeper.join().unwrap().unwrap();
        });
        assert_eq!(awake.count(), 2, "the woken rank is counted again");
        assert!(crowding.now());
        assert!(rings <= 1);
    }

    #[test]
    fn layout_is_page_and_heap_aligned() {
        let l = Layout::new(4, 65536, 1 << 20).unwrap();
        assert_eq!(l.channels.offset % PAGE, 0);
        assert!(l.channels.offset >= std::mem::size_of::<Header>() as u64);
        assert!(l.starter_offset >= l.channels.ack(3) + 64);
        assert_eq!(l.channels.notes_read(1), l.channels.inbox(1) + 64);
        assert_eq!(l.channels.note_ring(1), l.channels.inbox(1) + 128);
        assert_eq!(
            l.channels.chunk_slot(1, 0),
            l.channels.note_ring(1) + NOTE_RING
        );
        assert_eq!(
            l.channels.chunk_slot(1, CHANNEL_DEPTH),
            l.channels.inbox(2),
            "the last chunk slot ends where the next inbox begins"
        );
        assert_eq!(l.starter_offset % PAGE, 0);
        assert_eq!(l.heap_offset % HEAP_ALIGN, 0);
        assert!(l.starter_offset >= std::mem::size_of::<Header>() as u64);
        assert!(l.heap_offset >= l.starter_offset + 65536);
        assert_eq!(l.total(), l.heap_offset + (1 << 20));
        assert!(Layout::new(4, 0, u64::MAX).is_none());
        assert_eq!(Layout::new(16, 0, 0).unwrap().channels.chunk, LARGEST_CHUNK);
        assert_eq!(Layout::new(64, 0, 0).unwrap().channels.chunk, 128 * 1024);
        assert_eq!(
            Layout::new(16384, 0, 0).unwrap().channels.chunk,
            SMALLEST_CHUNK
        );
    }
}
