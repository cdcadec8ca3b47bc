//! The shared-memory transport: every rank maps every rank's segment, a put is a copy
//! into the peer's mapping and an atomic is a CPU atomic on the shared word.
//!
//! Registered user memory lies outside the segments; it is reached with cross-memory
//! attach (`process_vm_readv`/`process_vm_writev`). Atomics on it are refused: no CPU
//! atomic can reach another process's private memory.

mod channel;
mod collective;
pub(crate) mod job;
pub(crate) mod layout;
pub(crate) mod segment;

use std::io::{IoSlice, IoSliceMut};
use std::sync::atomic::{compiler_fence, fence, AtomicBool, AtomicU32, AtomicU64, Ordering};

use nix::sys::uio::{process_vm_readv, process_vm_writev, RemoteIoVec};
use nix::unistd::Pid;
use rustix::thread::{membarrier, MembarrierCommand};

use self::layout::{state, Doorbell, Header, Layout, MAX_ROUNDS};
use self::segment::Mapping;
use super::team::{TeamCall, TransportTeam};
use super::wait::Patience;
use super::{
    barrier, segments_extent, AtomicOp, Location, Pattern, Run, SegmentSizes, Transport,
    TransportResult, Width,
};
use crate::addr::{Segment, REGISTRATION_SLOTS};
use crate::config;
use crate::error::{Error, Result};

/// Environment of a rank started by `gaspar run`.
pub(crate) mod env {
    /// Job id (names the segments).
    pub(crate) const JOB: &str = "GASPAR_JOB_ID";
    /// This rank.
    pub(crate) const RANK: &str = "GASPAR_RANK";
    /// Number of ranks.
    pub(crate) const PROCS: &str = "GASPAR_PROCS";
    /// The inherited descriptors of every rank's segment, in rank order.
    pub(crate) const SEGMENT_FDS: &str = "GASPAR_SEGMENT_FDS";
    /// The launcher's pid: its descendants (the job's ranks) may use cross-memory attach
    /// on this rank.
    pub(crate) const LAUNCHER_PID: &str = "GASPAR_LAUNCHER_PID";
}

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
    patience: &'static Patience,
    /// This process takes part in `membarrier`'s global expedited barriers: a waker needs
    /// no fence of its own between its write and its look at a doorbell (see
    /// `ring_if_asleep`).
    asymmetric_fences: bool,
    mappings: Vec<Mapping>,
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

fn env_number(name: &str) -> Result<u32> {
    std::env::var(name)
        .map_err(|_| Error::Environment(format!("{name} is not set")))?
        .parse()
        .map_err(|_| Error::Environment(format!("{name} is not a number")))
}

impl ShmTransport {
    /// Attaches to the job described by the environment (`gaspar run`), or makes a private
    /// 1-rank job when there is none.
    pub fn attach_from_env() -> Result<ShmTransport> {
        let Ok(job) = std::env::var(env::JOB) else {
            let (starter_len, heap_len) = config::segment_sizes()?;
            let layout = Layout::new(1, starter_len, heap_len).ok_or(Error::LengthOverflow {
                what: "segment size",
            })?;
            let mapping = Mapping::anonymous(&layout)?;
            return Self::start(0, 1, layout, vec![mapping]);
        };
        let rank = env_number(env::RANK)?;
        let procs = env_number(env::PROCS)?;
        if procs == 0 || rank >= procs {
            return Err(Error::Environment(format!("rank {rank} of {procs} ranks")));
        }
        let launcher = env_number(env::LAUNCHER_PID)?;
        let fds = segment::fd_list(
            &std::env::var(env::SEGMENT_FDS)
                .map_err(|_| Error::Environment(format!("{} is not set", env::SEGMENT_FDS)))?,
            procs,
        )?;
        // The descriptors are taken once: an init after finalize in the same process must
        // not take them again (their numbers may name other files by then).
        static TAKEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        let taken_before = || {
            Error::Environment(
                "this process already used its job's segments; a rank can init only once".into(),
            )
        };
        if TAKEN.load(Ordering::Acquire) {
            return Err(taken_before());
        }
        // Every descriptor is checked to be a segment of this job before any is taken: a
        // refused one stays open, as it was.
        let checked = fds
            .iter()
            .enumerate()
            .map(|(r, &fd)| segment::check_inherited(fd, &job, r as u32))
            .collect::<Result<Vec<_>>>()?;
        if TAKEN.swap(true, Ordering::AcqRel) {
            return Err(taken_before());
        }
        let mappings = checked
            .into_iter()
            .map(Mapping::inherited)
            .collect::<Result<Vec<_>>>()?;
        let layout = mappings[rank as usize]
            .header()
            .layout()
            .ok_or_else(|| Error::Environment("own segment has no valid header".into()))?;
        for (r, m) in mappings.iter().enumerate() {
            let h = m.header();
            if h.layout() != Some(layout)
                || h.procs.load(Ordering::Relaxed) != u64::from(procs)
                || h.rank.load(Ordering::Relaxed) != r as u64
                || m.len() < layout.total()
            {
                return Err(Error::Environment(format!(
                    "segment of rank {r} does not match this job"
                )));
            }
        }
        tracing::debug!(job, "attaching");
        allow_cross_memory_attach(Pid::from_raw(launcher as i32));
        Self::start(rank, procs, layout, mappings)
    }

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
        let mut transport = ShmTransport {
            rank,
            procs,
            layout,
            peers,
            collectives: Collectives::default(),
            patience: Patience::of_process(
                procs as usize > super::wait::cores_in(&super::wait::affinity_mask()),
                super::wait::Sleep::Futex,
            )?,
            // Every rank registers before its first write that a wait may look for (the
            // start-up barrier's).
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
        // Start-up barrier: every rank has mapped every segment and published its pid.
        transport.barrier()?;
        for r in 0..procs {
            let pid = transport.header(r).pid.load(Ordering::Relaxed);
            transport.peers[r as usize].pid = Pid::from_raw(pid as i32);
        }
        tracing::debug!(
            rank,
            procs,
            ?layout,
            asymmetric_fences = transport.asymmetric_fences,
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

    /// Waits until `ready()` holds: polls it for the patience budget, then sleeps on
    /// `bell` (a doorbell of the segment whose memory `ready` looks at) until a writer
    /// rings it (the protocol: [`layout::Bell`]). Ends with [`Error::JobAborted`] when the
    /// job is aborted, and with [`Error::RankGone`] when one of `awaited` (the ranks
    /// expected to make `ready` hold) has finalized or exited without doing so.
    ///
    /// The sleeper's store-load barrier is `membarrier` (a barrier on every core running
    /// a rank, a few microseconds, paid only when going to sleep), so the writer's is only
    /// a compiler fence on every put and atomic; without `membarrier` both sides use a
    /// full fence.
    fn wait_for(
        &self,
        bell: &Doorbell,
        awaited: &[u32],
        mut ready: impl FnMut() -> Result<bool>,
    ) -> Result<()> {
        if self.patience.poll(&mut ready)? {
            return Ok(());
        }
        loop {
            let (done, woken) = layout::sleep_round(
                bell,
                || self.fence_against_wakers(),
                || self.settled(awaited, &mut ready),
            )?;
            if done {
                return Ok(());
            }
            if woken {
                let rung_at = bell.rung_at.load(Ordering::Relaxed);
                self.patience
                    .woken_after(layout::monotonic_ns().saturating_sub(rung_at));
            }
        }
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

    /// Called after a write that a wait on memory of `watched` may look for: rings
    /// that rank's memory doorbell when somebody sleeps on it.
    #[inline(always)]
    fn wake(&self, watched: u32) {
        self.ring_if_asleep(&self.header(watched).memory_bell);
    }

    /// Rings `bell` if somebody sleeps on it (the writer's side of [`layout::Bell`]).
    #[inline(always)]
    fn ring_if_asleep(&self, bell: &Doorbell) {
        if self.asymmetric_fences {
            compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
        layout::ring_if_asleep(bell);
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
        let arrival = barrier::dissemination(
            self.rank,
            self.procs,
            collective.next_barrier(),
            finalizing,
            call,
            |r, k, parity| &self.header(r).barrier[k][parity],
            |partner| self.ring_if_asleep(&self.header(partner).collective_bell),
            |flag, source, epoch| {
                let mut seen = 0;
                let bell = &self.header(self.rank).collective_bell;
                self.wait_for(bell, &[source], || {
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
        if matches!(loc.segment, Segment::Registered(_)) {
            return Ok(None);
        }
        match self.shared_range(loc, len) {
            Some(ptr) => Ok(Some(ptr)),
            None => check_bounds(loc, len, self.segment_len(loc.segment)).map(|()| None),
        }
    }

    /// The fast paths' `shared`: the pointer when `len` bytes at `loc` lie inside a shared
    /// segment, `None` for anything else (registered memory, out of bounds).
    #[inline]
    fn shared_range(&self, loc: Location, len: u64) -> Option<*mut u8> {
        let (start, segment_len) = match loc.segment {
            Segment::Starter => (self.layout.starter_offset, self.layout.starter_len),
            Segment::Heap => (self.layout.heap_offset, self.layout.heap_len),
            Segment::Registered(_) => return None,
        };
        if loc.offset.checked_add(len)? > segment_len {
            return None;
        }
        let base = self.peers[loc.rank as usize].base;
        // `start + offset + len <= segment total`, which is the mapping's length.
        Some(base.wrapping_add((start + loc.offset) as usize))
    }

    /// Length of a shared segment (starter or heap).
    fn segment_len(&self, segment: Segment) -> u64 {
        match segment {
            Segment::Starter => self.layout.starter_len,
            Segment::Heap => self.layout.heap_len,
            Segment::Registered(_) => 0,
        }
    }

    /// Resolves registered memory to (owner pid, address in the owner's process).
    fn registered(&self, loc: Location, len: u64) -> Result<(Pid, usize)> {
        let Segment::Registered(slot) = loc.segment else {
            unreachable!("called for registered segments only")
        };
        let (base, region_len) = self.header(loc.rank).regions[slot as usize].read();
        if region_len == 0 {
            return Err(Error::NotRegistered { ga: loc.ga });
        }
        check_bounds(loc, len, region_len)?;
        Ok((
            self.peers[loc.rank as usize].pid,
            (base + loc.offset) as usize,
        ))
    }

    /// Copies `len` bytes from `loc` into this process's memory at `dst`.
    #[inline(never)]
    fn read_into(&self, loc: Location, dst: *mut u8, len: u64) -> Result<()> {
        if let Some(src) = self.shared(loc, len)? {
            // SAFETY: `src..src+len` lies inside a live mapping (bounds checked above);
            // `dst..dst+len` is memory of this process that the caller made writable.
            unsafe { copy_bytes(src, dst, len as usize) };
            return Ok(());
        }
        let (pid, addr) = self.registered(loc, len)?;
        if loc.rank == self.rank {
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
    #[inline(never)]
    fn write_from(&self, loc: Location, src: *const u8, len: u64) -> Result<()> {
        if let Some(dst) = self.shared(loc, len)? {
            // SAFETY: `dst..dst+len` lies inside a live mapping (bounds checked above);
            // `src..src+len` is readable memory of this process (caller's contract).
            unsafe { copy_bytes(src, dst, len as usize) };
            return Ok(());
        }
        let (pid, addr) = self.registered(loc, len)?;
        if loc.rank == self.rank {
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
        Some(offset) => Ok(Location { offset, ..loc }),
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
        Some(_) => check_bounds(
            Location {
                offset: loc.offset + run.remote,
                ..loc
            },
            run.len,
            segment_len,
        ),
        None => Err(Error::LengthOverflow { what: "run offset" }),
    }
}

/// Which way a pattern's bytes move.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    LocalToRemote,
    RemoteToLocal,
}

/// Moves every chunk of `pattern` between a local buffer and a mapped remote segment, each
/// given as (base, extent). The copy routine is chosen once for the whole pattern: the
/// chunk length is fixed, and the two extents either overlap or not.
///
/// # Safety
/// Both ranges are valid for the pattern's accesses (the source side readable, the
/// destination writable), which holds when each extent was checked against its buffer.
#[inline]
unsafe fn move_pattern(
    pattern: &Pattern<'_>,
    (local, local_extent): (*const u8, u64),
    (remote, remote_extent): (*mut u8, u64),
    direction: Direction,
) {
    let chunk = pattern.chunk as usize;
    let (l, r) = (local as usize, remote as usize);
    let disjoint = l + local_extent as usize <= r || r + remote_extent as usize <= l;
    // One loop per copy routine, each with its routine inlined.
    #[inline(always)]
    fn each(
        pattern: &Pattern<'_>,
        (local, remote): (*const u8, *mut u8),
        direction: Direction,
        copy: impl Fn(*const u8, *mut u8),
    ) {
        let Ok(()) = pattern.for_each(|lo, ro| -> Result<(), std::convert::Infallible> {
            let (lp, rp) = (
                local.wrapping_add(lo as usize),
                remote.wrapping_add(ro as usize),
            );
            match direction {
                Direction::LocalToRemote => copy(lp, rp),
                Direction::RemoteToLocal => copy(rp, lp as *mut u8),
            }
            Ok(())
        });
    }
    let ends = (local, remote);
    // SAFETY: (every arm) each chunk is inside both extents (caller's contract); the
    // routines other than `copy_bytes` need disjoint ranges, checked just above.
    unsafe {
        match (chunk, direction) {
            _ if !disjoint => each(pattern, ends, direction, |s, d| copy_bytes(s, d, chunk)),
            (0..=64, _) => each(pattern, ends, direction, |s, d| copy_small(s, d, chunk)),
            (65..=MEDIUM, _) => medium_chunks(pattern, ends, direction, chunk),
            _ => each(pattern, ends, direction, |s, d| copy_bytes(s, d, chunk)),
        }
    }
}

/// The loops of [`move_pattern`] for 65..=MEDIUM-byte chunks (rows of 3-D sections, say),
/// each in a function of its own: their speed moved by half with where unrelated changes
/// put the code (3-D sections of 256-byte rows, gathered in 6.7-7.0 us or 9.5-11 us).
///
/// # Safety
/// As [`move_pattern`], with disjoint extents.
unsafe fn medium_chunks(
    pattern: &Pattern<'_>,
    (local, remote): (*const u8, *mut u8),
    direction: Direction,
    chunk: usize,
) {
    #[inline(never)]
    fn run(pattern: &Pattern<'_>, copy: impl Fn(u64, u64)) {
        let Ok(()) = pattern.for_each(|lo, ro| -> Result<(), std::convert::Infallible> {
            copy(lo, ro);
            Ok(())
        });
    }
    let local_at = |lo: u64| (local as *mut u8).wrapping_add(lo as usize);
    let remote_at = |ro: u64| remote.wrapping_add(ro as usize);
    match direction {
        Direction::RemoteToLocal => run(pattern, |lo, ro| {
            // SAFETY: each chunk is inside both extents and they are disjoint (caller's
            // contract).
            unsafe { copy_medium(remote_at(ro), local_at(lo), chunk) }
        }),
        Direction::LocalToRemote => run(pattern, |lo, ro| {
            // SAFETY: as above.
            unsafe { copy_medium(local_at(lo), remote_at(ro), chunk) }
        }),
    }
}

/// memcpy when the ranges are disjoint (the usual case, and faster), memmove otherwise.
///
/// # Safety
/// `src..src+len` must be readable and `dst..dst+len` writable.
#[inline]
unsafe fn copy_bytes(src: *const u8, dst: *mut u8, len: usize) {
    let (s, d) = (src as usize, dst as usize);
    if s.abs_diff(d) >= len {
        if len <= 64 {
            // SAFETY: as below (disjoint, readable and writable for `len` bytes).
            unsafe { copy_small(src, dst, len) };
            return;
        }
        if len <= MEDIUM {
            // SAFETY: as below (disjoint, readable and writable for `len` bytes).
            unsafe { copy_medium(src, dst, len) };
            return;
        }
        // glibc copies 4 KiB and more with `rep movsb`, which stalls on 4K aliasing when
        // the destination's page offset is a little ahead of the source's (measured here:
        // a 4 KiB get from a page-aligned heap block into a malloc'd buffer ran at 27
        // instead of 108 GB/s). Pieces below glibc's rep-movsb threshold avoid it.
        const PIECE: usize = 2048;
        let ahead = d.wrapping_sub(s) % 4096;
        if len >= 2 * PIECE && ahead != 0 && ahead < 1024 {
            let mut done = 0;
            while done < len {
                let n = PIECE.min(len - done);
                // SAFETY: a sub-range of the ranges below.
                unsafe { std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), n) };
                done += n;
            }
            return;
        }
        // SAFETY: readable/writable by the caller's contract; disjoint as just checked.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, len) }
    } else {
        // SAFETY: readable/writable by the caller's contract; memmove allows overlap.
        unsafe { std::ptr::copy(src, dst, len) }
    }
}

/// Rows up to this many bytes are gathered inline by [`copy_medium`]: measured here, a
/// strided gather of 256-byte rows took 10.8 us through glibc's memcpy (its AVX-512 entry,
/// per call) and 6.5 us with inline 16-byte moves.
const MEDIUM: usize = 512;

/// Copies 65..=MEDIUM bytes inline: 16-byte moves, each load followed by its store (as
/// compilers inline a memcpy of known size), unrolled by eight by hand (the compiler's own
/// unrolling came and went with unrelated changes, and with it a third of the speed of
/// 3-D transfers), then the rest, then the last 16 bytes (overlapping the previous move,
/// which the disjoint buffers allow).
///
/// # Safety
/// `src..src+len` readable, `dst..dst+len` writable, disjoint, `64 < len <= MEDIUM`.
#[inline(always)]
unsafe fn copy_medium(src: *const u8, dst: *mut u8, len: usize) {
    use std::ptr::{read_unaligned as rd, write_unaligned as wr};
    // SAFETY: every move starts at some `at <= len - 16`, so it stays inside both buffers.
    let move16 = |at: usize| unsafe {
        wr(
            dst.add(at) as *mut [u8; 16],
            rd(src.add(at) as *const [u8; 16]),
        )
    };
    let mut done = 0;
    while done + 128 <= len {
        move16(done);
        move16(done + 16);
        move16(done + 32);
        move16(done + 48);
        move16(done + 64);
        move16(done + 80);
        move16(done + 96);
        move16(done + 112);
        done += 128;
    }
    while done + 16 < len {
        move16(done);
        done += 16;
    }
    move16(len - 16);
    // Not hoisted out of the caller's loop (see `copy_small`).
    compiler_fence(Ordering::SeqCst);
}

/// Copies up to 64 bytes inline, with two possibly overlapping moves of the largest power
/// of two that fits (what memcpy does for small sizes, without the call).
///
/// One side is memory other processes write, and this copy is inlined into the caller's
/// loop, where a plain load could be hoisted out of a polling loop (`while p.get(&rt)? == 0
/// {}` would then spin forever). So an aligned 4- or 8-byte word — what programs poll — is
/// moved with volatile accesses (one `mov` each, single-copy atomic on x86-64 and AArch64),
/// and every other size ends with a compiler fence, which no load is moved across.
/// (Volatile moves of byte arrays, which would be sound at any alignment, are lowered to
/// one access per byte: 8x slower, measured.)
///
/// # Safety
/// `src..src+len` readable, `dst..dst+len` writable, disjoint, `len <= 64`.
#[inline(always)]
unsafe fn copy_small(src: *const u8, dst: *mut u8, len: usize) {
    use std::ptr::{read_unaligned as rd, write_unaligned as wr};
    let aligned = |width: usize| (src as usize | dst as usize) % width == 0;
    if len == 8 && aligned(8) {
        // SAFETY: both 8-byte words are inside the buffers (caller) and 8-aligned.
        unsafe { (dst as *mut u64).write_volatile((src as *const u64).read_volatile()) };
        return;
    }
    if len == 4 && aligned(4) {
        // SAFETY: both 4-byte words are inside the buffers (caller) and 4-aligned.
        unsafe { (dst as *mut u32).write_volatile((src as *const u32).read_volatile()) };
        return;
    }
    // SAFETY: in every arm both moves stay inside `0..len` of each buffer, because the
    // arm's width is at most `len`; the buffers are disjoint, so order does not matter.
    unsafe {
        match len {
            32..=64 => {
                let (a, b) = (
                    rd(src as *const [u8; 32]),
                    rd(src.add(len - 32) as *const [u8; 32]),
                );
                wr(dst as *mut [u8; 32], a);
                wr(dst.add(len - 32) as *mut [u8; 32], b);
            }
            16..=31 => {
                let (a, b) = (
                    rd(src as *const [u8; 16]),
                    rd(src.add(len - 16) as *const [u8; 16]),
                );
                wr(dst as *mut [u8; 16], a);
                wr(dst.add(len - 16) as *mut [u8; 16], b);
            }
            8..=15 => {
                let (a, b) = (rd(src as *const u64), rd(src.add(len - 8) as *const u64));
                wr(dst as *mut u64, a);
                wr(dst.add(len - 8) as *mut u64, b);
            }
            4..=7 => {
                let (a, b) = (rd(src as *const u32), rd(src.add(len - 4) as *const u32));
                wr(dst as *mut u32, a);
                wr(dst.add(len - 4) as *mut u32, b);
            }
            _ => {
                for i in 0..len {
                    *dst.add(i) = *src.add(i);
                }
            }
        }
    }
    compiler_fence(Ordering::SeqCst);
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

/// Runs one `process_vm_*v` call and turns a short or failed transfer into an error.
fn cross_memory(
    loc: Location,
    len: u64,
    call: impl FnOnce(&[RemoteIoVec]) -> nix::Result<usize>,
    addr: usize,
) -> Result<()> {
    let remote = [RemoteIoVec {
        base: addr,
        len: len as usize,
    }];
    match call(&remote) {
        Ok(n) if n as u64 == len => Ok(()),
        Ok(_) | Err(nix::errno::Errno::EFAULT) => Err(Error::NotRegistered { ga: loc.ga }),
        Err(e) => Err(Error::os("process_vm_readv/writev", e)),
    }
}

/// Moves an I/O vector of segments `lens` at `offsets` after registered memory at `addr`
/// in another process, in `process_vm_*v` calls of at most IOV_MAX segments;
/// `call(remote, first)` moves the local segments `first..first + remote.len()`.
fn cross_memory_vector(
    loc: Location,
    lens: &[usize],
    offsets: &[u64],
    addr: usize,
    mut call: impl FnMut(&[RemoteIoVec], usize) -> nix::Result<usize>,
) -> Result<()> {
    const IOV_MAX: usize = 1024;
    let mut first = 0;
    for batch in offsets.chunks(IOV_MAX) {
        let remote: Vec<RemoteIoVec> = batch
            .iter()
            .zip(&lens[first..])
            .map(|(&o, &len)| RemoteIoVec {
                base: addr + o as usize,
                len,
            })
            .collect();
        let want: usize = remote.iter().map(|r| r.len).sum();
        match call(&remote, first) {
            Ok(n) if n == want => {}
            Ok(_) | Err(nix::errno::Errno::EFAULT) => {
                return Err(Error::NotRegistered { ga: loc.ga })
            }
            Err(e) => return Err(Error::os("process_vm_readv/writev", e)),
        }
        first += batch.len();
    }
    Ok(())
}

/// Lets the job's other ranks use process_vm_readv/writev on this process under Yama's
/// restricted ptrace scope (`kernel.yama.ptrace_scope = 1`), and nobody else: Yama lets
/// the named process and its descendants attach, and the ranks are the launcher's
/// descendants. (A no-op where Yama is absent; Yama keeps one such exception per process.)
fn allow_cross_memory_attach(launcher: Pid) {
    // SAFETY: PR_SET_PTRACER takes integer arguments and touches no memory of ours.
    let _ = unsafe {
        nix::libc::prctl(
            nix::libc::PR_SET_PTRACER,
            launcher.as_raw() as nix::libc::c_ulong,
            0,
            0,
            0,
        )
    };
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

    #[inline(always)]
    fn put_flushed(&self, dst: Location, src: &[u8]) -> TransportResult<()> {
        self.put(dst, src)?;
        self.flush(dst.rank)
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

    fn put_runs(&self, dst: Location, src: &[u8], runs: &[Run]) -> TransportResult<()> {
        let (base, segment_len) = match self.shared(dst, 0)? {
            Some(base) => (base, self.segment_len(dst.segment)),
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
            Some(base) => (base, self.segment_len(src.segment)),
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
            if dst.rank == self.rank {
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
            if src.rank == self.rank {
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
        let (_, remote_extent) = pattern.checked_extents(src.len())?;
        let Some(base) = self.shared(dst, remote_extent)? else {
            return Ok(pattern.for_each(|l, r| {
                self.write_from(at(dst, r)?, src[l as usize..].as_ptr(), pattern.chunk)
            })?);
        };
        let (local_extent, _) = pattern.checked_extents(src.len())?;
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
        let (_, remote_extent) = pattern.checked_extents(dst.len())?;
        let Some(base) = self.shared(src, remote_extent)? else {
            return Ok(pattern.for_each(|l, r| {
                self.read_into(at(src, r)?, dst[l as usize..].as_mut_ptr(), pattern.chunk)
            })?);
        };
        let (local_extent, _) = pattern.checked_extents(dst.len())?;
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

    fn check_range(&self, loc: Location, len: u64) -> TransportResult<()> {
        match loc.segment {
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
            let at = |l: Location| Location {
                offset: l.offset + done,
                ..l
            };
            self.read_into(at(src), chunk.as_mut_ptr(), n)?;
            self.write_from(at(dst), chunk.as_ptr(), n)?;
            done += n;
        }
        Ok(())
    }

    #[inline]
    fn atomic(&self, target: Location, width: Width, op: AtomicOp) -> TransportResult<u64> {
        let bytes = u64::from(width.bytes());
        // A mask, not `%`: a 64-bit division costs tens of cycles on this hot path.
        if target.offset & (bytes - 1) != 0 {
            return Err(Box::new(Error::MisalignedAtomic {
                ga: target.ga,
                width: width.bytes(),
            }));
        }
        let Some(ptr) = self.shared(target, bytes)? else {
            return Err(Box::new(Error::AtomicUnsupported {
                ga: target.ga,
                reason: "on the shm transport atomics need starter memory or the symmetric heap, not registered memory",
            }));
        };
        let old = match width {
            Width::W8 => {
                // SAFETY: `ptr` is 8-byte aligned (segment bases are page aligned and the
                // offset was checked), inside a live shared mapping, and every process
                // touches this word only through atomics or the program's own copies.
                let word = unsafe { &*(ptr as *const AtomicU64) };
                atomic_u64(word, op)
            }
            Width::W4 => {
                // SAFETY: as above, with 4-byte alignment.
                let word = unsafe { &*(ptr as *const AtomicU32) };
                u64::from(atomic_u32(word, op))
            }
        };
        if op != AtomicOp::Load {
            self.wake(target.rank);
        }
        Ok(old)
    }

    fn accumulate_lock(&self, rank: u32, op: AtomicOp) -> TransportResult<u64> {
        let old = atomic_u64(&self.header(rank).accumulate_lock.0, op);
        // A rank waiting for the lock sleeps on the owner's memory doorbell.
        self.wake(rank);
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

    fn wait(
        &self,
        watched: u32,
        awaited: Option<u32>,
        ready: &mut dyn FnMut() -> Result<bool>,
    ) -> TransportResult<()> {
        Ok(self.wait_for(&self.header(watched).memory_bell, awaited.as_slice(), ready)?)
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
        call: TeamCall<'_, '_>,
    ) -> TransportResult<bool> {
        Ok(self.run_team_call(team, word, call)?)
    }

    fn finalize(&self) -> TransportResult<()> {
        self.barrier_locked(&self.collectives.enter(), true, 0)?;
        self.header(self.rank)
            .state
            .store(state::FINALIZED, Ordering::Release);
        Ok(())
    }

    fn finalize_alone(&self) -> TransportResult<()> {
        self.header(self.rank)
            .state
            .store(state::FINALIZED, Ordering::Release);
        Ok(())
    }
}

const _: () = assert!(MAX_ROUNDS >= 17);

fn atomic_u64(word: &AtomicU64, op: AtomicOp) -> u64 {
    const ORD: Ordering = Ordering::AcqRel;
    match op {
        AtomicOp::CompareSwap { expected, new } => {
            match word.compare_exchange(expected, new, ORD, Ordering::Acquire) {
                Ok(v) | Err(v) => v,
            }
        }
        AtomicOp::Swap(v) => word.swap(v, ORD),
        AtomicOp::Add(v) => word.fetch_add(v, ORD),
        AtomicOp::Xor(v) => word.fetch_xor(v, ORD),
        AtomicOp::Or(v) => word.fetch_or(v, ORD),
        AtomicOp::And(v) => word.fetch_and(v, ORD),
        AtomicOp::Load => word.load(Ordering::Acquire),
        AtomicOp::Store(v) => word.swap(v, ORD),
    }
}

fn atomic_u32(word: &AtomicU32, op: AtomicOp) -> u32 {
    const ORD: Ordering = Ordering::AcqRel;
    let low = |v: u64| v as u32;
    match op {
        AtomicOp::CompareSwap { expected, new } => {
            match word.compare_exchange(low(expected), low(new), ORD, Ordering::Acquire) {
                Ok(v) | Err(v) => v,
            }
        }
        AtomicOp::Swap(v) => word.swap(low(v), ORD),
        AtomicOp::Add(v) => word.fetch_add(low(v), ORD),
        AtomicOp::Xor(v) => word.fetch_xor(low(v), ORD),
        AtomicOp::Or(v) => word.fetch_or(low(v), ORD),
        AtomicOp::And(v) => word.fetch_and(low(v), ORD),
        AtomicOp::Load => word.load(Ordering::Acquire),
        AtomicOp::Store(v) => word.swap(low(v), ORD),
    }
}
