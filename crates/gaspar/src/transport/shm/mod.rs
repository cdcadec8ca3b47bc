//! The shared-memory transport: every rank maps every rank's segment, a put is a copy
//! into the peer's mapping and an atomic is a CPU atomic on the shared word.
//!
//! Registered user memory lies outside the segments; it is reached with cross-memory
//! attach (`process_vm_readv`/`process_vm_writev`). Atomics on it are refused: no CPU
//! atomic can reach another process's private memory.

pub mod calibrate;
mod channel;
mod collective;
pub(crate) mod copy;
mod cross_memory;
pub(crate) mod env;
pub(crate) mod job;
pub(crate) mod layout;
pub(crate) mod mapped;
mod notes;
pub(crate) mod segment;

use std::io::{IoSlice, IoSliceMut};
use std::sync::atomic::{compiler_fence, fence, AtomicBool, AtomicU64, Ordering};

use nix::sys::uio::{process_vm_readv, process_vm_writev};
use nix::unistd::Pid;
use rustix::thread::{membarrier, MembarrierCommand};

use self::copy::{copy_bytes, move_pattern, Direction};
use self::cross_memory::{cross_memory, cross_memory_vector};
use self::layout::{state, Header, Layout, MAX_ROUNDS};
use self::segment::Mapping;
use super::processor_atomics;
use super::team::{TeamCall, TransportTeam};
use super::wait::{affinity_mask, Crowding, JobCores, Patience, RanksAwake, AFFINITY_WORDS};
use super::{
    barrier, segments_extent, AtomicOp, Incoming, Location, Outgoing, Pattern, Run, SegmentSizes,
    Transport, TransportResult, Width, Writers,
};
use crate::addr::{GlobalAddr, Segment, REGISTRATION_SLOTS};
use crate::error::{Error, Result};

/// One peer's mapping, as this process sees it.
struct Peer {
    base: *mut u8,
    pid: Pid,
}

/// The `shm` transport of one rank.
pub struct ShmTransport {
    rank: u32,
    procs: u32,
    layout: Layout,
    peers: Vec<Peer>,
    /// The collectives' counters, and the lock that serializes collectives several
    /// threads of this rank call at once (each counts as one collective of this rank).
    collectives: Collectives,
    /// The notes this rank sent to and received from each rank (see `notes`).
    notes: notes::NoteCounts,
    patience: &'static Patience,
    /// The cores of the job's ranks (the union of their affinity masks, and those a CPU
    /// quota lets them keep busy), against which a poll weighs the ranks awake (see
    /// [`Crowding`]).
    cores: JobCores,
    /// This process takes part in `membarrier`'s global expedited barriers: a put needs
    /// no fence of its own between its write and its look at a doorbell (see `wake` and
    /// `wait_for`).
    asymmetric_fences: bool,
    mappings: Vec<Mapping>,
}

/// The doorbell a wait sleeps on, which says who may end it.
#[derive(Debug, Clone, Copy)]
enum Watched {
    /// This rank's collective bell: the writers are other ranks' collectives (barrier
    /// flags, notes, channel counters), which fence before they look at it.
    Collective,
    /// The memory bell of rank `.0`: the writers are puts and atomics into that rank's
    /// memory, as the wait says. A put only fences against the compiler before it looks
    /// at the bell, an atomic is a sequentially consistent read-modify-write followed by
    /// a sequentially consistent look (see `wait_for`).
    Memory(u32, Writers),
}

/// How many barriers and exchanges this rank has done, and a lock that serializes the
/// collectives several threads of this rank call at once (each counts as one collective
/// of the rank). Uncontended it costs one compare-and-swap and a plain store, as the
/// counter alone did; a contender yields its core until the collective in progress ends
/// (which it does, with an error at worst, when the job aborts).
#[derive(Default)]
struct Collectives {
    busy: AtomicBool,
    barriers: AtomicU64,
    exchanges: AtomicU64,
}

impl Collectives {
    fn enter(&self) -> InCollective<'_> {
        while self
            .busy
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::thread::yield_now();
        }
        InCollective(self)
    }
}

/// This thread is the one in a collective of this rank.
struct InCollective<'a>(&'a Collectives);

impl InCollective<'_> {
    /// The number of the next barrier (1, 2, ...).
    fn next_barrier(&self) -> u64 {
        let next = self.0.barriers.load(Ordering::Relaxed) + 1;
        self.0.barriers.store(next, Ordering::Relaxed);
        next
    }

    /// The number of the next exchange (0, 1, ...).
    fn next_exchange(&self) -> u64 {
        let next = self.0.exchanges.load(Ordering::Relaxed);
        self.0.exchanges.store(next + 1, Ordering::Relaxed);
        next
    }
}

impl Drop for InCollective<'_> {
    fn drop(&mut self) {
        self.0.busy.store(false, Ordering::Release);
    }
}

// SAFETY: the raw pointers in `peers` point into `mappings`, which `self` owns and never
// unmaps while alive. Every access through them is either an atomic or a byte copy into
// memory that other processes share anyway, so sharing the transport between threads adds
// no hazard that other processes do not already pose.
unsafe impl Send for ShmTransport {}
// SAFETY: see `Send` above; the transport has no interior state besides atomics.
unsafe impl Sync for ShmTransport {}

impl ShmTransport {
    fn start(
        rank: u32,
        procs: u32,
        layout: Layout,
        mappings: Vec<Mapping>,
    ) -> Result<ShmTransport> {
        let peers = mappings
            .iter()
            .map(|m| Peer {
                base: m.base(),
                pid: Pid::from_raw(0),
            })
            .collect();
        let mask = affinity_mask();
        let mut transport = ShmTransport {
            rank,
            procs,
            layout,
            peers,
            collectives: Collectives::default(),
            notes: notes::NoteCounts::new(procs),
            patience: Patience::of_process(super::wait::Sleep::Futex)?,
            // Until every rank has published its mask (at the start-up barrier).
            cores: JobCores::of_masks(&mask),
            // Every rank registers before its first put that a wait may look for.
            asymmetric_fences: membarrier(MembarrierCommand::RegisterGlobalExpedited).is_ok(),
            mappings,
        };
        // Attaching is exclusive: one process per rank, once.
        let me = transport.header(rank);
        if let Err(now) = me.state.compare_exchange(
            state::CREATED,
            state::ATTACHED,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            let holder = me.pid.load(Ordering::Relaxed);
            let how = if now == state::FINALIZED {
                "has finalized"
            } else {
                "is attached"
            };
            return Err(Error::Environment(format!(
                "rank {rank} of this job is taken by pid {holder} (which {how}); a second process with GASPAR_RANK={rank} cannot join"
            )));
        }
        me.pid
            .store(u64::from(std::process::id()), Ordering::Relaxed);
        me.home.store(
            transport.mappings[rank as usize].base() as u64,
            Ordering::Relaxed,
        );
        for (word, published) in mask.iter().zip(&me.affinity) {
            published.store(*word, Ordering::Relaxed);
        }
        transport.ranks_awake().join();
        // Start-up barrier: every rank has mapped every segment and published its pid
        // and its mask.
        transport.barrier()?;
        let mut union = [0u64; AFFINITY_WORDS];
        for r in 0..procs {
            let header = transport.header(r);
            for (word, published) in union.iter_mut().zip(&header.affinity) {
                *word |= published.load(Ordering::Relaxed);
            }
            let pid = header.pid.load(Ordering::Relaxed);
            transport.peers[r as usize].pid = Pid::from_raw(pid as i32);
        }
        transport.cores = JobCores::of_masks(&union);
        tracing::debug!(
            rank,
            procs,
            ?layout,
            asymmetric_fences = transport.asymmetric_fences,
            cores = ?transport.cores,
            "shm transport attached"
        );
        Ok(transport)
    }

    #[inline]
    fn header(&self, rank: u32) -> &Header {
        self.mappings[rank as usize].header()
    }

    /// Marks the job aborted with `word` (unless it already is), wakes every rank so that
    /// each finds out, and exits with `status`.
    fn end_job_with(&self, word: u64, status: i32) -> ! {
        for r in 0..self.procs {
            let _ = self.header(r).abort.0.compare_exchange(
                0,
                word,
                Ordering::AcqRel,
                Ordering::Relaxed,
            );
        }
        for r in 0..self.procs {
            self.header(r).ring_every_bell();
        }
        std::process::exit(status)
    }

    fn aborted(&self) -> Option<u64> {
        match self.header(self.rank).abort.0.load(Ordering::Acquire) {
            0 => None,
            v => Some(v),
        }
    }

    /// The job's count of ranks awake (in rank 0's segment, which every rank maps).
    fn ranks_awake(&self) -> RanksAwake<'_> {
        RanksAwake(&self.header(0).ranks_awake.0)
    }

    /// Whether this rank's polls should yield their core: decided by the ranks awake now.
    fn crowding(&self) -> Crowding<'_> {
        Crowding::Live {
            awake: self.ranks_awake(),
            cores: self.cores,
        }
    }

    /// Records that this rank finalized, and counts it out of the ranks awake (once).
    fn record_finalized(&self) {
        let before = self
            .header(self.rank)
            .state
            .swap(state::FINALIZED, Ordering::AcqRel);
        if before != state::FINALIZED {
            self.ranks_awake().leave();
        }
    }

    /// Waits until `ready()` holds: polls it for the patience budget (and on while
    /// [`Patience::keeps_polling`] says so), then sleeps on
    /// the doorbell `watched` (of the segment whose memory `ready` looks at) until a writer
    /// rings it (the protocol: [`layout::Bell`]); a wait on memory that a ring woke without
    /// ending it polls a budget again before it sleeps anew. Ends with [`Error::JobAborted`] when the
    /// job is aborted, and with [`Error::RankGone`] when one of `awaited` (the ranks
    /// expected to make `ready` hold) has finalized or exited without doing so.
    ///
    /// The store-load barrier on each side of the handshake, by who may end the wait:
    /// - puts ([`Writers::Any`] on the memory bell): the sleeper's is `membarrier` (a
    ///   barrier on every core running a rank, paid only when going to sleep), so the
    ///   writer's is only a compiler fence on every put (a full fence there made an 8-byte
    ///   put 6.1 ns instead of 2.4 on the AMD EPYC VM); without `membarrier` both sides
    ///   use a full fence;
    /// - atomics ([`Writers::Atomics`]): the writer's is its sequentially consistent
    ///   read-modify-write (on x86 the same locked instruction as any other ordering)
    ///   followed by a sequentially consistent load of the bell's flag, so the sleeper's
    ///   own full fence completes the handshake;
    /// - collectives (barrier flags, notes, channel counters, on the collective bell):
    ///   both sides use a full fence, which the writers pay among their cache misses.
    ///
    /// So a rank that goes to sleep in SYNC ALL, an event wait or a barrier does not
    /// interrupt the ranks still working: `membarrier` reaches every core that runs a
    /// rank by an inter-processor interrupt, which on the AMD EPYC VM slowed image 1's
    /// rounds of 8-byte coarray puts at 4 images on 2 cores (the three others going to
    /// sleep in the next SYNC ALL) to 5.6-7.0 ns from 4.8-5.4 without it (caf_shmem
    /// 4.8-5.5).
    ///
    /// While it sleeps, the rank is counted out of the ranks awake, so that the ranks
    /// still polling spin rather than yield once each of them has a core.
    fn wait_for(
        &self,
        watched: Watched,
        awaited: &[u32],
        mut ready: impl FnMut() -> Result<bool>,
    ) -> Result<()> {
        let crowding = self.crowding();
        while !self.patience.poll(&crowding, &mut ready)? {
            if self.patience.keeps_polling(&crowding) {
                // Polling on: whether the wait can still end well is looked at once per
                // budget, as a sleeper looks at each wake-up.
                if self.settled(awaited, &mut ready)? {
                    return Ok(());
                }
                continue;
            }
            if self.sleep_for(watched, awaited, &mut ready)? {
                return Ok(());
            }
            // Woken by a write into the watched memory that did not end the wait (an
            // atomic or an UNLOCK on another word of it): polls a budget again before it
            // sleeps anew. Sleeping again at once made a rank that writes there in a loop
            // pay a wake-up per write, and the sleeper an IPI to every rank per sleep
            // (`fence_against_wakers`).
        }
        Ok(())
    }

    /// The sleeping half of [`wait_for`](Self::wait_for): whether the wait is over, or
    /// (`Ok(false)`) a wait on memory was woken by a ring that did not end it. A wait on
    /// the collective bell sleeps on until it is over: its rings are the collectives'
    /// own steps.
    fn sleep_for(
        &self,
        watched: Watched,
        awaited: &[u32],
        mut ready: impl FnMut() -> Result<bool>,
    ) -> Result<bool> {
        let bell = match watched {
            Watched::Collective => &self.header(self.rank).collective_bell,
            Watched::Memory(rank, _) => &self.header(rank).memory_bell,
        };
        layout::sleep_until(
            bell,
            self.ranks_awake(),
            || match watched {
                Watched::Collective | Watched::Memory(_, Writers::Atomics) => {
                    fence(Ordering::SeqCst)
                }
                Watched::Memory(_, Writers::Any) => self.fence_against_wakers(),
            },
            matches!(watched, Watched::Memory(..)),
            || self.settled(awaited, &mut ready),
            || {
                let rung_at = bell.rung_at.load(Ordering::Relaxed);
                self.patience
                    .woken_after(layout::monotonic_ns().saturating_sub(rung_at));
            },
        )
    }

    /// Whether a wait is over: `Ok(true)` when `ready` holds, an error when it never will.
    fn settled(&self, awaited: &[u32], ready: &mut impl FnMut() -> Result<bool>) -> Result<bool> {
        if ready()? {
            return Ok(true);
        }
        if let Some(by) = self.aborted() {
            return Err(Error::JobAborted {
                rank: layout::aborting_rank(by),
            });
        }
        for &rank in awaited {
            let now = self.header(rank).state.load(Ordering::Acquire);
            if now == state::FINALIZED || now == state::EXITED {
                // Whatever the rank wrote before it left is visible after that load.
                if ready()? {
                    return Ok(true);
                }
                return Err(Error::RankGone {
                    rank,
                    finalized: now == state::FINALIZED,
                });
            }
        }
        Ok(false)
    }

    /// The sleeper's half of the store-load barrier of `wait_for`.
    fn fence_against_wakers(&self) {
        if !self.asymmetric_fences || membarrier(MembarrierCommand::GlobalExpedited).is_err() {
            fence(Ordering::SeqCst);
        }
    }

    /// `op` on the word at `ptr`, of `rank`'s memory; wakes `rank`'s sleepers when the
    /// word may have changed.
    ///
    /// # Safety
    /// `ptr` is aligned to `width` and its `width` bytes lie inside a shared mapping of
    /// this transport, which every process touches only through atomics or the
    /// program's own copies.
    #[inline(always)]
    unsafe fn atomic_on(&self, ptr: *mut u8, rank: u32, width: Width, op: AtomicOp) -> u64 {
        // SAFETY: the function's contract.
        let old = unsafe { processor_atomics::on_word(ptr, width, op) };
        if op != AtomicOp::Load {
            self.wake_after_atomic(rank);
        }
        old
    }

    /// The address of the word of an atomic at `target`: aligned to `width`, in starter
    /// memory or the heap of a rank this process maps.
    #[inline(always)]
    fn atomic_word(&self, target: Location, width: Width) -> TransportResult<*mut u8> {
        let bytes = u64::from(width.bytes());
        // A mask, not `%`: a 64-bit division costs tens of cycles on this hot path.
        if target.offset & (bytes - 1) != 0 {
            return Err(Box::new(Error::MisalignedAtomic {
                ga: target.ga,
                width: width.bytes(),
            }));
        }
        match self.shared(target, bytes)? {
            // Aligned: segment bases are page aligned and the offset was checked.
            Some(ptr) => Ok(ptr),
            None => Err(Box::new(Error::AtomicUnsupported {
                ga: target.ga,
                reason: "on the shm transport atomics need starter memory or the symmetric heap, not registered memory",
            })),
        }
    }

    /// [`atomic`](Transport::atomic) out of line, the operation as scalars (so that a
    /// caller's constant operation is never written to memory for it).
    #[cold]
    #[inline(never)]
    fn atomic_elsewhere(
        &self,
        target: Location,
        width: Width,
        code: u8,
        a: u64,
        b: u64,
    ) -> TransportResult<u64> {
        self.atomic(target, width, AtomicOp::from_parts(code, a, b))
    }

    /// Called after a write that a wait on memory of `watched` may look for: rings
    /// that rank's memory doorbell when somebody sleeps on it (the writer's side of
    /// [`layout::Bell`]; the fence as [`wait_for`](Self::wait_for) says).
    #[inline(always)]
    fn wake(&self, watched: u32) {
        if self.asymmetric_fences {
            compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
        layout::ring_if_asleep(&self.header(watched).memory_bell);
    }

    /// Called after an atomic (a sequentially consistent read-modify-write) of `watched`'s
    /// memory: rings its memory doorbell when somebody sleeps on it. The atomic is the
    /// writer's half of the handshake ([`Writers::Atomics`]), so nothing more is needed
    /// on any CPU.
    #[inline(always)]
    fn wake_after_atomic(&self, watched: u32) {
        layout::ring_if_asleep(&self.header(watched).memory_bell);
    }

    /// Called after a write of a collective (a barrier's flag, a note, a channel's
    /// counter) that `rank` may wait for: rings its collective doorbell when somebody
    /// sleeps on it, after a full fence (see [`wait_for`](Self::wait_for)).
    #[inline(always)]
    fn ring_collective(&self, rank: u32) {
        fence(Ordering::SeqCst);
        layout::ring_if_asleep(&self.header(rank).collective_bell);
    }

    /// The next barrier, with the collectives' lock held; `finalizing` when this rank
    /// enters it to finalize (every rank must, or every rank gets an error). Returns
    /// whether every rank passed the same `call` word.
    fn barrier_locked(
        &self,
        collective: &InCollective<'_>,
        finalizing: bool,
        call: u64,
    ) -> Result<bool> {
        let arrival = barrier::barrier(
            barrier::Algorithm::for_job(self.procs),
            self.rank,
            self.procs,
            collective.next_barrier(),
            finalizing,
            call,
            |r, k, parity| &self.header(r).barrier[k][parity],
            |partner| self.ring_collective(partner),
            |flag, source, epoch| {
                let mut seen = 0;
                self.wait_for(Watched::Collective, &[source], || {
                    seen = barrier::Flag::load_acquire(flag);
                    Ok(barrier::arrived(seen, epoch))
                })?;
                Ok(seen)
            },
        )?;
        if !arrival.mismatched() {
            return Ok(arrival.same_call);
        }
        Err(if finalizing {
            Error::finalize_during_collective()
        } else {
            Error::finalized_during("barrier")
        })
    }

    /// Resolves `len` bytes at `loc` inside a shared segment to a pointer in this process,
    /// or `None` when the location is registered user memory.
    #[inline]
    fn shared(&self, loc: Location, len: u64) -> Result<Option<*mut u8>> {
        if matches!(loc.segment(), Segment::Registered(_)) {
            return Ok(None);
        }
        match self.shared_range(loc, len) {
            Some(ptr) => Ok(Some(ptr)),
            None => check_bounds(loc, len, self.segment_len(loc.segment())).map(|()| None),
        }
    }

    /// The fast paths' `shared`: the pointer when `len` bytes at `loc` lie inside a shared
    /// segment, `None` for anything else (registered memory, out of bounds).
    #[inline]
    fn shared_range(&self, loc: Location, len: u64) -> Option<*mut u8> {
        let (start, segment_len) = match loc.segment() {
            Segment::Starter => (self.layout.starter_offset, self.layout.starter_len),
            Segment::Heap => (self.layout.heap_offset, self.layout.heap_len),
            Segment::Registered(_) => return None,
        };
        if loc.offset.checked_add(len)? > segment_len {
            return None;
        }
        let base = self.peers[loc.rank() as usize].base;
        // `start + offset + len <= segment total`, which is the mapping's length.
        Some(base.wrapping_add((start + loc.offset) as usize))
    }

    /// Where the `len` bytes at `offset` of `rank`'s symmetric heap are mapped here, when
    /// `rank` is a rank of the job and the range lies inside its heap: the contiguous
    /// transfers' heap paths, which know the segment and so skip decoding it.
    #[inline(always)]
    fn heap_range(&self, rank: u32, offset: u64, len: u64) -> Option<*mut u8> {
        let end = offset.checked_add(len)?;
        let peer = self.peers.get(rank as usize)?;
        // `heap_offset + end <= the segment total`, which is the mapping's length.
        (end <= self.layout.heap_len).then(|| {
            peer.base
                .wrapping_add((self.layout.heap_offset + offset) as usize)
        })
    }

    /// [`Transport::put_heap`] where [`heap_range`](Self::heap_range) refused: the error.
    #[inline(never)]
    fn put_heap_elsewhere(&self, dst: Location, src: &[u8]) -> TransportResult<()> {
        self.put_flushed(dst, src)
    }

    /// [`Transport::get_heap`] where [`heap_range`](Self::heap_range) refused: the error.
    #[inline(never)]
    fn get_heap_elsewhere(&self, src: Location, dst: &mut [u8]) -> TransportResult<()> {
        self.get(src, dst)
    }

    /// Length of a shared segment (starter or heap).
    fn segment_len(&self, segment: Segment) -> u64 {
        match segment {
            Segment::Starter => self.layout.starter_len,
            Segment::Heap => self.layout.heap_len,
            Segment::Registered(_) => 0,
        }
    }

    /// Copies `len` bytes from `loc` into this process's memory at `dst`.
    fn read_into(&self, loc: Location, dst: *mut u8, len: u64) -> Result<()> {
        if let Some(src) = self.shared(loc, len)? {
            // SAFETY: `src..src+len` lies inside a live mapping (bounds checked above);
            // `dst..dst+len` is memory of this process that the caller made writable.
            unsafe { copy_bytes(src, dst, len as usize) };
            return Ok(());
        }
        let (pid, addr) = self.registered(loc, len)?;
        if loc.rank() == self.rank {
            // SAFETY: own registered memory; `register`'s contract keeps it valid while
            // registered, and the bounds were checked against the registration.
            unsafe { std::ptr::copy(addr as *const u8, dst, len as usize) };
            return Ok(());
        }
        // SAFETY: `dst..dst+len` is writable memory of this process (caller's contract).
        let local = unsafe { std::slice::from_raw_parts_mut(dst, len as usize) };
        cross_memory(
            loc,
            len,
            |remote| process_vm_readv(pid, &mut [IoSliceMut::new(local)], remote),
            addr,
        )
    }

    /// Copies `len` bytes from this process's memory at `src` to `loc`.
    fn write_from(&self, loc: Location, src: *const u8, len: u64) -> Result<()> {
        if let Some(dst) = self.shared(loc, len)? {
            // SAFETY: `dst..dst+len` lies inside a live mapping (bounds checked above);
            // `src..src+len` is readable memory of this process (caller's contract).
            unsafe { copy_bytes(src, dst, len as usize) };
            return Ok(());
        }
        let (pid, addr) = self.registered(loc, len)?;
        if loc.rank() == self.rank {
            // SAFETY: own registered memory, valid while registered; bounds checked.
            unsafe { std::ptr::copy(src, addr as *mut u8, len as usize) };
            return Ok(());
        }
        // SAFETY: `src..src+len` is readable memory of this process (caller's contract).
        let local = unsafe { std::slice::from_raw_parts(src, len as usize) };
        cross_memory(
            loc,
            len,
            |remote| process_vm_writev(pid, &[IoSlice::new(local)], remote),
            addr,
        )
    }
}

/// The local byte range of a run, checked against the local buffer's length.
#[inline]
fn local_piece(local_len: usize, run: Run) -> Result<std::ops::Range<usize>> {
    let end = run
        .local
        .checked_add(run.len)
        .filter(|&e| e <= local_len as u64)
        .ok_or_else(|| {
            Error::invalid(
                "strided transfer",
                format!(
                    "run of {} bytes at {} is outside the local buffer of {local_len} bytes",
                    run.len, run.local
                ),
            )
        })?;
    Ok(run.local as usize..end as usize)
}

/// `loc` moved `by` bytes further.
fn at(loc: Location, by: u64) -> Result<Location> {
    match loc.offset.checked_add(by) {
        Some(offset) => Ok(loc.at_offset(offset)),
        None => Err(Error::LengthOverflow { what: "run offset" }),
    }
}

/// Checks that a run after `loc` stays inside a segment of `segment_len` bytes.
#[inline]
fn check_run(loc: Location, run: Run, segment_len: u64) -> Result<()> {
    match loc
        .offset
        .checked_add(run.remote)
        .and_then(|o| o.checked_add(run.len))
    {
        Some(end) if end <= segment_len => Ok(()),
        Some(_) => check_bounds(loc.at_offset(loc.offset + run.remote), run.len, segment_len),
        None => Err(Error::LengthOverflow { what: "run offset" }),
    }
}

fn check_bounds(loc: Location, len: u64, segment_len: u64) -> Result<()> {
    match loc.offset.checked_add(len) {
        Some(end) if end <= segment_len => Ok(()),
        Some(_) => Err(Error::OutOfBounds {
            ga: loc.ga,
            len,
            segment_len,
        }),
        None => Err(Error::LengthOverflow {
            what: "offset + length",
        }),
    }
}

/// The transfers of [`Transport::put`] and [`Transport::get`], one per shape.
impl ShmTransport {
    fn put_runs(&self, dst: Location, src: &[u8], runs: &[Run]) -> TransportResult<()> {
        let (base, segment_len) = match self.shared(dst, 0)? {
            Some(base) => (base, self.segment_len(dst.segment())),
            None => {
                // Registered memory: one cross-memory copy per run.
                for &run in runs {
                    let piece = local_piece(src.len(), run)?;
                    self.write_from(at(dst, run.remote)?, src[piece].as_ptr(), run.len)?;
                }
                return Ok(());
            }
        };
        for &run in runs {
            let piece = local_piece(src.len(), run)?;
            check_run(dst, run, segment_len)?;
            // SAFETY: the local piece is inside `src` and `base + run.remote .. + len` lies
            // inside the live mapping (both checked just above).
            unsafe {
                copy_bytes(
                    src[piece].as_ptr(),
                    base.add(run.remote as usize),
                    run.len as usize,
                )
            };
        }
        Ok(())
    }

    fn get_runs(&self, src: Location, dst: &mut [u8], runs: &[Run]) -> TransportResult<()> {
        let (base, segment_len) = match self.shared(src, 0)? {
            Some(base) => (base, self.segment_len(src.segment())),
            None => {
                for &run in runs {
                    let piece = local_piece(dst.len(), run)?;
                    self.read_into(at(src, run.remote)?, dst[piece].as_mut_ptr(), run.len)?;
                }
                return Ok(());
            }
        };
        for &run in runs {
            let piece = local_piece(dst.len(), run)?;
            check_run(src, run, segment_len)?;
            // SAFETY: as in `put_runs`, with the roles of the buffers swapped.
            unsafe {
                copy_bytes(
                    base.add(run.remote as usize),
                    dst[piece].as_mut_ptr(),
                    run.len as usize,
                )
            };
        }
        Ok(())
    }

    fn put_segments(&self, dst: Location, srcs: &[&[u8]], offsets: &[u64]) -> TransportResult<()> {
        let extent = segments_extent(srcs.iter().map(|s| s.len()), offsets)?;
        let Some(base) = self.shared(dst, extent)? else {
            let (pid, addr) = self.registered(dst, extent)?;
            if dst.rank() == self.rank {
                for (s, &o) in srcs.iter().zip(offsets) {
                    // SAFETY: own registered memory, valid while registered; every
                    // segment ends within `extent`, checked against the registration.
                    unsafe { std::ptr::copy(s.as_ptr(), (addr + o as usize) as *mut u8, s.len()) };
                }
                return Ok(());
            }
            let lens: Vec<usize> = srcs.iter().map(|s| s.len()).collect();
            let locals: Vec<IoSlice<'_>> = srcs.iter().map(|s| IoSlice::new(s)).collect();
            return Ok(cross_memory_vector(
                dst,
                &lens,
                offsets,
                addr,
                |remote, first| {
                    process_vm_writev(pid, &locals[first..first + remote.len()], remote)
                },
            )?);
        };
        for (s, &o) in srcs.iter().zip(offsets) {
            // SAFETY: `s` is a live slice; `base + o .. + s.len()` ends within `extent`
            // bytes after `dst`, which `shared` checked against the mapped segment.
            unsafe { copy_bytes(s.as_ptr(), base.add(o as usize), s.len()) };
        }
        Ok(())
    }

    fn get_segments(
        &self,
        src: Location,
        dsts: &mut [&mut [u8]],
        offsets: &[u64],
    ) -> TransportResult<()> {
        let extent = segments_extent(dsts.iter().map(|d| d.len()), offsets)?;
        let Some(base) = self.shared(src, extent)? else {
            let (pid, addr) = self.registered(src, extent)?;
            if src.rank() == self.rank {
                for (d, &o) in dsts.iter_mut().zip(offsets) {
                    // SAFETY: as in `put_segments`, reading own registered memory.
                    unsafe {
                        std::ptr::copy((addr + o as usize) as *const u8, d.as_mut_ptr(), d.len())
                    };
                }
                return Ok(());
            }
            let lens: Vec<usize> = dsts.iter().map(|d| d.len()).collect();
            let mut locals: Vec<IoSliceMut<'_>> =
                dsts.iter_mut().map(|d| IoSliceMut::new(d)).collect();
            return Ok(cross_memory_vector(
                src,
                &lens,
                offsets,
                addr,
                |remote, first| {
                    process_vm_readv(pid, &mut locals[first..first + remote.len()], remote)
                },
            )?);
        };
        for (d, &o) in dsts.iter_mut().zip(offsets) {
            // SAFETY: as in `put_segments`, with the roles of the buffers swapped.
            unsafe { copy_bytes(base.add(o as usize), d.as_mut_ptr(), d.len()) };
        }
        Ok(())
    }

    fn put_pattern(&self, dst: Location, src: &[u8], pattern: &Pattern<'_>) -> TransportResult<()> {
        let (local_extent, remote_extent) = pattern.checked_extents(src.len())?;
        let Some(base) = self.shared(dst, remote_extent)? else {
            return Ok(pattern.for_each(|l, r| {
                self.write_from(at(dst, r)?, src[l as usize..].as_ptr(), pattern.chunk)
            })?);
        };
        // SAFETY: every chunk lies inside `src` (its extent was checked against
        // `src.len()`) and inside the remote segment (its extent was checked by `shared`),
        // because each chunk's end is at most its side's extent.
        unsafe {
            move_pattern(
                pattern,
                (src.as_ptr(), local_extent),
                (base, remote_extent),
                Direction::LocalToRemote,
            )
        };
        Ok(())
    }

    fn get_pattern(
        &self,
        src: Location,
        dst: &mut [u8],
        pattern: &Pattern<'_>,
    ) -> TransportResult<()> {
        let (local_extent, remote_extent) = pattern.checked_extents(dst.len())?;
        let Some(base) = self.shared(src, remote_extent)? else {
            return Ok(pattern.for_each(|l, r| {
                self.read_into(at(src, r)?, dst[l as usize..].as_mut_ptr(), pattern.chunk)
            })?);
        };
        // SAFETY: as in `put_pattern`, with the roles of the buffers swapped.
        unsafe {
            move_pattern(
                pattern,
                (dst.as_mut_ptr(), local_extent),
                (base, remote_extent),
                Direction::RemoteToLocal,
            )
        };
        Ok(())
    }
}

impl Transport for ShmTransport {
    fn rank(&self) -> u32 {
        self.rank
    }

    fn procs(&self) -> u32 {
        self.procs
    }

    fn sizes(&self) -> SegmentSizes {
        SegmentSizes {
            starter: self.layout.starter_len,
            heap: self.layout.heap_len,
        }
    }

    #[inline]
    fn put(&self, dst: Location, src: &[u8]) -> TransportResult<()> {
        match self.shared_range(dst, src.len() as u64) {
            // SAFETY: `shared_range` checked the target range against the live mapping;
            // `src` is a borrowed slice.
            Some(to) => unsafe { copy_bytes(src.as_ptr(), to, src.len()) },
            // Registered memory, or the error.
            None => self.write_from(dst, src.as_ptr(), src.len() as u64)?,
        }
        Ok(())
    }

    fn put_pieces(&self, dst: Location, data: Outgoing<'_>) -> TransportResult<()> {
        match data {
            Outgoing::Runs { src, runs } => self.put_runs(dst, src, runs),
            Outgoing::Segments { srcs, offsets } => self.put_segments(dst, srcs, offsets),
            Outgoing::Pattern { src, pattern } => self.put_pattern(dst, src, pattern),
        }
    }

    #[inline(always)]
    fn put_flushed(&self, dst: Location, src: &[u8]) -> TransportResult<()> {
        self.put(dst, src)?;
        self.flush(dst.rank())
    }

    #[inline]
    fn get(&self, src: Location, dst: &mut [u8]) -> TransportResult<()> {
        match self.shared_range(src, dst.len() as u64) {
            // SAFETY: as in `put`, reading the mapping into the borrowed `dst`.
            Some(from) => unsafe { copy_bytes(from, dst.as_mut_ptr(), dst.len()) },
            None => self.read_into(src, dst.as_mut_ptr(), dst.len() as u64)?,
        }
        Ok(())
    }

    fn get_pieces(&self, src: Location, data: Incoming<'_, '_>) -> TransportResult<()> {
        match data {
            Incoming::Runs { dst, runs } => self.get_runs(src, dst, runs),
            Incoming::Segments { dsts, offsets } => self.get_segments(src, dsts, offsets),
            Incoming::Pattern { dst, pattern } => self.get_pattern(src, dst, pattern),
        }
    }

    fn check_range(&self, loc: Location, len: u64) -> TransportResult<()> {
        match loc.segment() {
            Segment::Registered(_) => Ok(self.registered(loc, len).map(drop)?),
            _ => Ok(self.shared(loc, len).map(drop)?),
        }
    }

    fn copy(&self, dst: Location, src: Location, len: u64) -> TransportResult<()> {
        if let Some(from) = self.shared(src, len)? {
            return Ok(self.write_from(dst, from, len)?);
        }
        if let Some(to) = self.shared(dst, len)? {
            return Ok(self.read_into(src, to, len)?);
        }
        // Registered memory on both sides: bounce through this process in chunks, once
        // both whole ranges are known to be registered (nothing moves otherwise).
        self.registered(src, len)?;
        self.registered(dst, len)?;
        const CHUNK: u64 = 1 << 20;
        let mut bounce = vec![0u8; len.min(CHUNK) as usize];
        let mut done = 0;
        while done < len {
            let n = (len - done).min(CHUNK);
            let chunk = &mut bounce[..n as usize];
            let at = |l: Location| l.at_offset(l.offset + done);
            self.read_into(at(src), chunk.as_mut_ptr(), n)?;
            self.write_from(at(dst), chunk.as_ptr(), n)?;
            done += n;
        }
        Ok(())
    }

    #[inline]
    fn atomic(&self, target: Location, width: Width, op: AtomicOp) -> TransportResult<u64> {
        let ptr = self.atomic_word(target, width)?;
        // SAFETY: `atomic_word` checked the word (aligned, inside a live shared mapping).
        Ok(unsafe { self.atomic_on(ptr, target.rank(), width, op) })
    }

    #[inline]
    fn atomic_unwatched(
        &self,
        target: Location,
        width: Width,
        op: AtomicOp,
    ) -> TransportResult<u64> {
        let ptr = self.atomic_word(target, width)?;
        // SAFETY: as in `atomic`; nothing waits for this change, so no ring.
        Ok(unsafe { processor_atomics::on_word(ptr, width, op) })
    }

    #[inline(always)]
    fn atomic_heap(
        &self,
        rank: u32,
        offset: u64,
        ga: impl FnOnce() -> GlobalAddr,
        width: Width,
        op: AtomicOp,
    ) -> TransportResult<u64> {
        let bytes = u64::from(width.bytes());
        let inside = offset
            .checked_add(bytes)
            .is_some_and(|end| end <= self.layout.heap_len);
        match self.peers.get(rank as usize) {
            Some(peer) if inside && offset & (bytes - 1) == 0 => {
                let ptr = peer
                    .base
                    .wrapping_add((self.layout.heap_offset + offset) as usize);
                // SAFETY: an aligned word inside `rank`'s heap (checked above; the heap's
                // start is page aligned), which is mapped as long as the transport lives.
                Ok(unsafe { self.atomic_on(ptr, rank, width, op) })
            }
            _ => {
                let (code, a, b) = op.parts();
                self.atomic_elsewhere(
                    Location::new(rank, Segment::Heap, offset, ga()),
                    width,
                    code,
                    a,
                    b,
                )
            }
        }
    }

    #[inline(always)]
    fn put_heap(
        &self,
        rank: u32,
        offset: u64,
        ga: impl FnOnce() -> GlobalAddr,
        src: &[u8],
    ) -> TransportResult<()> {
        match self.heap_range(rank, offset, src.len() as u64) {
            Some(to) => {
                // SAFETY: `heap_range` checked the target range against `rank`'s heap,
                // mapped as long as the transport lives; `src` is a borrowed slice.
                unsafe { copy_bytes(src.as_ptr(), to, src.len()) };
                self.flush(rank)
            }
            None => self.put_heap_elsewhere(Location::new(rank, Segment::Heap, offset, ga()), src),
        }
    }

    #[inline(always)]
    fn get_heap(
        &self,
        rank: u32,
        offset: u64,
        ga: impl FnOnce() -> GlobalAddr,
        dst: &mut [u8],
    ) -> TransportResult<()> {
        match self.heap_range(rank, offset, dst.len() as u64) {
            // SAFETY: as in `put_heap`, reading the mapping into the borrowed `dst`.
            Some(from) => unsafe {
                copy_bytes(from, dst.as_mut_ptr(), dst.len());
                Ok(())
            },
            None => self.get_heap_elsewhere(Location::new(rank, Segment::Heap, offset, ga()), dst),
        }
    }

    fn accumulate_lock(&self, rank: u32, op: AtomicOp) -> TransportResult<u64> {
        let old = processor_atomics::on_u64(&self.header(rank).accumulate_lock.0, op);
        // A rank waiting for the lock sleeps on the owner's memory doorbell (a look at the
        // lock changes nothing: ringing for it would wake the looker's own sleep).
        if op != AtomicOp::Load {
            self.wake_after_atomic(rank);
        }
        Ok(old)
    }

    #[inline(always)]
    fn flush(&self, rank: u32) -> TransportResult<()> {
        // Copies into shared memory are complete once issued; the fence orders them
        // before whatever this rank does next to tell others about them, and a wait on
        // the target's memory is woken.
        fence(Ordering::Release);
        self.wake(rank);
        Ok(())
    }

    #[inline]
    fn flush_all(&self) -> TransportResult<()> {
        fence(Ordering::Release);
        for rank in 0..self.procs {
            self.wake(rank);
        }
        Ok(())
    }

    fn test_all(&self) -> TransportResult<bool> {
        self.flush_all()?;
        Ok(true)
    }

    fn barrier(&self) -> TransportResult<()> {
        self.barrier_locked(&self.collectives.enter(), false, 0)?;
        Ok(())
    }

    fn agree_u64(&self, value: u64) -> TransportResult<bool> {
        Ok(self.barrier_locked(&self.collectives.enter(), false, value)?)
    }

    fn allgather_u64(&self, value: u64, out: &mut [u64]) -> TransportResult<()> {
        if out.len() != self.procs as usize {
            return Err(Box::new(Error::invalid(
                "allgather_u64",
                "output length != procs",
            )));
        }
        let collective = self.collectives.enter();
        let slot = (collective.next_exchange() % 2) as usize;
        self.header(self.rank).exchange[slot]
            .0
            .store(value, Ordering::Relaxed);
        self.barrier_locked(&collective, false, 0)?;
        for (r, word) in out.iter_mut().enumerate() {
            *word = self.header(r as u32).exchange[slot]
                .0
                .load(Ordering::Relaxed);
        }
        Ok(())
    }

    fn publish_region(&self, slot: u8, base: usize, len: u64, color: u32) -> TransportResult<()> {
        if slot as usize >= REGISTRATION_SLOTS || len == 0 {
            return Err(Box::new(Error::invalid(
                "publish_region",
                "bad slot or empty region",
            )));
        }
        self.header(self.rank).regions[slot as usize].write(base as u64, len, u64::from(color));
        Ok(())
    }

    fn retract_region(&self, slot: u8) -> TransportResult<()> {
        if slot as usize >= REGISTRATION_SLOTS {
            return Err(Box::new(Error::invalid("retract_region", "bad slot")));
        }
        self.header(self.rank).regions[slot as usize].write(0, 0, 0);
        Ok(())
    }

    fn usable_cores(&self) -> usize {
        self.cores.usable
    }

    fn maps_at_home(&self, rank: u32) -> bool {
        // Each rank wrote its home address before the start-up barrier.
        self.mappings
            .get(rank as usize)
            .is_some_and(|m| m.header().home.load(Ordering::Relaxed) == m.base() as u64)
    }

    fn processor_atomics_at(&self, loc: Location) -> bool {
        // Atomics on registered memory are refused (`atomic`).
        !matches!(loc.segment(), Segment::Registered(_))
    }

    fn mapped_address(&self, loc: Location, len: u64) -> Option<usize> {
        match self.shared(loc, len) {
            Ok(Some(p)) => Some(p as usize),
            _ => None,
        }
    }

    fn abort(&self, message: &str) -> ! {
        crate::error::report(&format!(
            "gaspar: rank {} aborted the job: {message}",
            self.rank
        ));
        self.end_job_with(u64::from(self.rank) + 1, 1)
    }

    fn end_job(&self, status: i32, line: Option<&str>) -> ! {
        let word = (u64::from(self.rank) + 1) | layout::ENDED_ON_PURPOSE;
        let first = self
            .header(0)
            .abort
            .0
            .compare_exchange(0, word, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok();
        if let Some(line) = line.filter(|_| first) {
            crate::error::report(line);
        }
        self.end_job_with(word, status)
    }

    fn job_aborted(&self) -> bool {
        self.aborted().is_some()
    }

    fn report_failure_instead_of_abort(&self, report: bool) -> bool {
        self.header(self.rank)
            .reports_failure
            .store(u64::from(report), Ordering::Release);
        true
    }

    fn rank_failed(&self, rank: u32) -> bool {
        rank < self.procs && self.header(rank).state.load(Ordering::Acquire) == state::EXITED
    }

    fn note_departure(&self) {
        for r in 0..self.procs {
            // Sequentially consistent: an event wait reads it after it was woken by the
            // departing image's announcement (an atomic, see `Writers::Atomics`).
            self.header(r).departures.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[inline]
    fn departures(&self) -> Option<u64> {
        Some(self.header(self.rank).departures.0.load(Ordering::Acquire))
    }

    fn sent_messages_taken(&self, rank: u32) -> bool {
        rank >= self.procs || self.sent_notes_read(rank)
    }

    fn broadcasts_one_way(&self, team: &TransportTeam, len: usize) -> bool {
        collective::sends_one_way(team, len)
    }

    fn wait(
        &self,
        watched: u32,
        awaited: Option<u32>,
        writers: Writers,
        ready: &mut dyn FnMut() -> Result<bool>,
    ) -> TransportResult<()> {
        Ok(self.wait_for(Watched::Memory(watched, writers), awaited.as_slice(), ready)?)
    }

    fn split_team(
        &self,
        _parent: &TransportTeam,
        _color: Option<u32>,
        _key: u32,
        team: Option<TransportTeam>,
    ) -> TransportResult<Option<TransportTeam>> {
        // The channels reach every rank: a team needs nothing more than its members.
        Ok(team)
    }

    fn team_call(
        &self,
        team: &TransportTeam,
        word: u64,
        call: &mut TeamCall<'_, '_>,
    ) -> TransportResult<bool> {
        Ok(self.run_team_call(team, word, call)?)
    }

    fn finalize(&self) -> TransportResult<()> {
        self.barrier_locked(&self.collectives.enter(), true, 0)?;
        self.record_finalized();
        Ok(())
    }

    fn finalize_alone(&self) -> TransportResult<()> {
        self.record_finalized();
        Ok(())
    }
}

const _: () = assert!(MAX_ROUNDS >= 17);
