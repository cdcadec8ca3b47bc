//! The MPI-3 RMA transport (cargo feature `mpi`), used when the process was started by
//! mpirun: one `MPI_Win_allocate` window holds each rank's starter memory and symmetric
//! heap, locked with `MPI_Win_lock_all` for the whole run.
//!
//! Put/get/copy/atomics/barrier/allgather work. When every rank runs on one host, the
//! window is a shared one mapped in every process and, unless `GASPAR_MPI_DIRECT=off`,
//! transfers are copies through it, atomics processor atomics and accumulates in-place
//! updates under the target's lock, as on shm ([`direct`](MpiTransport::direct)).
//! Otherwise regular strided transfers are one MPI_Put/MPI_Get with nested-hvector
//! datatypes; run lists and I/O vectors one MPI_Put/MPI_Get with hindexed datatypes;
//! accumulates one MPI_Accumulate. Registered user memory is attached to a
//! second, dynamic window (`MPI_Win_create_dynamic` + `MPI_Win_attach`); each rank keeps a
//! registration table (slot -> address, length) at the end of its allocated window, which
//! others read with MPI_Get, so decoding a global address needs no collective. Atomics on
//! registered memory are refused, as on shm.
//!
//! What MPI does not promise, the transport makes sure of: the order of a rank's
//! operations to one target (a put completed only locally is completed at its target
//! before the next operation there, [`Unflushed`]), the alignment of each rank's memory
//! in the window (a pad, the same on every rank), and a one-sided component that works
//! (OpenMPI's osc/rdma is steered away from when gaspar is loaded, and refused with what
//! to pass where it cannot be: `steer_openmpi_away_from_rdma`).

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use mpi::ffi;

mod accumulate;
mod atomics;
mod datatype;
mod dynamic;
mod host;
mod progress;
mod sieve;
mod startup;
mod team;

use self::datatype::{indexed_pair, pattern_pair, Datatype};
pub(crate) use self::progress::sleeping_wait;
pub(crate) use self::startup::library_version;
use self::startup::LIVE_RANK;
pub(crate) use self::team::Communicator;
use super::team::{TeamCall, TransportTeam};
use super::{
    segments_extent, AccKind, AccShape, AtomicOp, Incoming, Location, Outgoing, Pattern, Run,
    SegmentSizes, Transport, TransportResult, Width,
};
use crate::addr::{GlobalAddr, Segment, REGISTRATION_SLOTS};
use crate::error::{Error, Result};
use crate::transport::seqlock::RegionEntry;
use crate::transport::shm::copy::{copy_bytes, move_pattern, Direction};
use crate::transport::wait::Patience;

/// The calling thread's id, kept in a thread-local: `std::thread::current()` clones the
/// thread's handle (two locked instructions), and a program that initialized MPI below
/// MPI_THREAD_MULTIPLE (a C program calling MPI_Init before ARMCI_Init, as Global Arrays'
/// do) checks its thread several times per operation (`on_mpi_thread`): 18 % of an 8-byte
/// `ARMCI_Acc` loop's samples were that clone.
fn this_thread() -> std::thread::ThreadId {
    thread_local! {
        static ID: std::thread::ThreadId = std::thread::current().id();
    }
    ID.with(|id| *id)
}

/// One registration-table entry: a [`RegionEntry`] (sequence, base, length, color), which
/// other ranks read with MPI_Get as four 8-byte words (`registered_span`).
const ENTRY_BYTES: u64 = std::mem::size_of::<RegionEntry>() as u64;
const _: () = assert!(
    ENTRY_BYTES == 4 * 8 && std::mem::align_of::<RegionEntry>() == 8,
    "a registration-table entry must be four 8-byte words, as registered_span reads it"
);
/// One entry per registration slot.
const TABLE_BYTES: u64 = ENTRY_BYTES * REGISTRATION_SLOTS as u64;

/// The runtime's own words after the table, where no global address reaches: the
/// accumulate lock (its first 8 bytes). A whole cache line: with 8 bytes, MPICH 4.0
/// (ch4:ucx) crashed in a put to registered memory (a window length it handles badly).
const RUNTIME_WORDS_BYTES: u64 = 64;

/// The MPI constants gaspar uses, read from the bindings' shims.
mod constant {
    use mpi::ffi;

    macro_rules! constants {
        ($($name:ident: $t:ident = $value:ident;)*) => {$(
            pub(super) fn $name() -> ffi::$t {
                // SAFETY: the RSMPI_* statics are constants the MPI bindings' C shim
                // initializes at load time and never changes.
                unsafe { ffi::$value }
            }
        )*};
    }

    constants! {
        byte: MPI_Datatype = RSMPI_UINT8_T;
        uint32: MPI_Datatype = RSMPI_UINT32_T;
        uint64: MPI_Datatype = RSMPI_UINT64_T;
        comm_world: MPI_Comm = RSMPI_COMM_WORLD;
        comm_null: MPI_Comm = RSMPI_COMM_NULL;
        win_null: MPI_Win = RSMPI_WIN_NULL;
        info_null: MPI_Info = RSMPI_INFO_NULL;
        sum: MPI_Op = RSMPI_SUM;
        errors_return: MPI_Errhandler = RSMPI_ERRORS_RETURN;
        errors_are_fatal: MPI_Errhandler = RSMPI_ERRORS_ARE_FATAL;
        bxor: MPI_Op = RSMPI_BXOR;
        bor: MPI_Op = RSMPI_BOR;
        band: MPI_Op = RSMPI_BAND;
        request_null: MPI_Request = RSMPI_REQUEST_NULL;
    }

    // The handles the bindings lack, from build.rs's C shim (constants.c).
    unsafe extern "C" {
        safe fn gaspar_mpi_replace() -> ffi::MPI_Op;
        safe fn gaspar_mpi_no_op() -> ffi::MPI_Op;
        safe fn gaspar_mpi_in_place() -> *mut std::ffi::c_void;
    }

    /// MPI_REPLACE: an accumulate or fetch-and-op that stores its operand.
    pub(super) fn replace() -> ffi::MPI_Op {
        gaspar_mpi_replace()
    }

    /// MPI_NO_OP: a fetch-and-op that only reads.
    pub(super) fn no_op() -> ffi::MPI_Op {
        gaspar_mpi_no_op()
    }

    /// MPI_IN_PLACE: a reduction's send buffer that says "the receive buffer holds it".
    pub(super) fn in_place() -> *const std::ffi::c_void {
        gaspar_mpi_in_place()
    }

    pub(super) fn status_ignore() -> *mut ffi::MPI_Status {
        // SAFETY: as above.
        unsafe { ffi::RSMPI_STATUS_IGNORE }
    }

    pub(super) fn thread_multiple() -> std::ffi::c_int {
        // SAFETY: as above.
        unsafe { ffi::RSMPI_THREAD_MULTIPLE }
    }
}

/// Serializes the collectives that several threads of this rank call at once (MPI forbids
/// concurrent collectives on one communicator); each counts as one collective of the rank.
static COLLECTIVES: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Marks an RMA call on one of gaspar's windows on the fast paths. The windows run under
/// MPI_ERRORS_ARE_FATAL (MPI's default for windows, set again in `start` to make it
/// explicit): a failing call ends the job inside MPI with MPI's message and never
/// returns, so a return code is always MPI_SUCCESS and there is nothing to branch on.
/// Debug builds verify it.
#[inline(always)]
fn succeeded(call: &'static str, code: c_int) {
    debug_assert_eq!(code, 0, "{call} returned under MPI_ERRORS_ARE_FATAL");
}

/// [`succeeded`] for a flush of the slow paths, noting that the rank drove MPI's progress
/// (see [`progress::note_rank_call`]; the fast paths' operations are noted by
/// [`ANNOUNCES_CALLS`]).
#[inline(always)]
fn flushed(call: &'static str, code: c_int) {
    progress::note_rank_call();
    succeeded(call, code);
}

/// Collective over `comm`: every rank contributes `value`; `out[r]` receives rank r's.
///
/// # Safety
/// `comm` is a live communicator and `out` has one slot per rank of it.
unsafe fn allgather_words(comm: ffi::MPI_Comm, value: u64, out: &mut [u64]) -> Result<()> {
    // SAFETY: one u64 in, one per rank out (caller's contract).
    check("MPI_Allgather", unsafe {
        ffi::MPI_Allgather(
            (&value as *const u64).cast(),
            1,
            constant::uint64(),
            out.as_mut_ptr().cast(),
            1,
            constant::uint64(),
            comm,
        )
    })
}

#[inline]
fn check(call: &'static str, code: c_int) -> Result<()> {
    progress::note_rank_call();
    if code == 0 {
        Ok(())
    } else {
        Err(Error::Transport { call, code })
    }
}

/// Runs `transfer(byte offset, displacement, count)` over a `len`-byte transfer at `disp`
/// in pieces of at most `i32::MAX` bytes (MPI counts are ints), stopping at the first
/// failing MPI code.
fn in_pieces(
    call: &'static str,
    len: usize,
    disp: ffi::MPI_Aint,
    mut transfer: impl FnMut(usize, ffi::MPI_Aint, c_int) -> c_int,
) -> Result<()> {
    let mut done = 0;
    loop {
        let count = (len - done).min(i32::MAX as usize);
        check(
            call,
            transfer(done, disp + done as ffi::MPI_Aint, count as c_int),
        )?;
        done += count;
        if done >= len {
            return Ok(());
        }
    }
}

/// One MPI_Put of `count` bytes at `src`; returns MPI's code.
///
/// # Safety
/// `count` bytes at `src` stay readable until the caller's flush, and the target range
/// lies inside `rank`'s part of `win`.
#[inline]
unsafe fn put_piece(
    win: ffi::MPI_Win,
    rank: u32,
    disp: ffi::MPI_Aint,
    src: *const u8,
    count: c_int,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        ffi::MPI_Put(
            src.cast(),
            count,
            constant::byte(),
            rank as c_int,
            disp,
            count,
            constant::byte(),
            win,
        )
    }
}

/// One MPI_Get of `count` bytes into `dst`; returns MPI's code.
///
/// # Safety
/// `count` bytes at `dst` stay writable until the caller's flush, and the source range
/// lies inside `rank`'s part of `win`.
#[inline]
unsafe fn get_piece(
    win: ffi::MPI_Win,
    rank: u32,
    disp: ffi::MPI_Aint,
    dst: *mut u8,
    count: c_int,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        ffi::MPI_Get(
            dst.cast(),
            count,
            constant::byte(),
            rank as c_int,
            disp,
            count,
            constant::byte(),
            win,
        )
    }
}

/// The writes that completed only locally (MPI_Put or MPI_Accumulate + flush_local) and
/// that no flush has completed at their target yet. MPI orders neither a put after a put
/// nor a get after a put or an accumulate to the same target (only accumulates among
/// themselves), so before the next operation on a target's memory its pending writes are
/// completed there with MPI_Win_flush, and before an accumulate its pending puts: the
/// transport's order promise then holds on every one-sided component, not only on those
/// (osc/sm) that happen to complete a write at once. `total` is the fast paths' one check
/// (zero: nothing to do), `puts_total` an accumulate's; the counts are changed under
/// `flushing`, so that threads sharing the transport neither lose a write nor count one
/// twice.
struct Unflushed {
    /// Pending writes of both kinds, in steps of [`ONE_WRITE`], and in the low bit
    /// [`ANNOUNCES_CALLS`]: so that the one check also sends every operation to the branch
    /// that announces it, where that is needed.
    total: AtomicU64,
    /// Pending writes of both kinds, by target rank.
    by_rank: Box<[AtomicU64]>,
    /// Pending puts.
    puts_total: AtomicU64,
    /// Pending puts, by target rank.
    puts_by_rank: Box<[AtomicU64]>,
    flushing: std::sync::Mutex<()>,
}

/// In [`Unflushed::total`]: every MPI operation on another rank's memory announces itself.
/// It wakes that rank first if it sleeps in a wait on this host ([`host::Host::wake`]),
/// and tells this rank's progress thread that the rank calls MPI
/// ([`progress::note_rank_call`]). Set where the transfers and atomics on starter memory
/// and the heap are MPI calls (not `GASPAR_MPI_DIRECT` copies) and either complete only
/// in the target's MPI calls (a job across hosts, MPICH) or a progress thread runs. The
/// check that every operation makes anyway then takes its slow branch: a few nanoseconds
/// on an MPI call of 0.6 us (MPICH on one host) or 20 us (across hosts), and nothing on
/// Open MPI's osc/sm, where no target needs waking and no thread runs (a note on every
/// put and get there, a store, took 0.25 ns: put 1.091x -> 1.109x raw MPI in the same
/// job, get 1.107x -> 1.125x, `GASPAR_MPI_DIRECT=off gaspar bench --transport mpi`, AMD
/// EPYC VM). The notes save a sixth of every put and get where the thread runs beside
/// them: 2 MPICH ranks on two hosts (network namespaces over TCP), 8-byte puts to a rank
/// waiting in a barrier took 19.4-23.5 us without them (and without
/// [`progress::in_blocking_call`]) and 16.5-16.9 with them, against 16.0-16.4 without the
/// thread (`op_loop addr-put`).
const ANNOUNCES_CALLS: u64 = 1;
/// One pending write in [`Unflushed::total`].
const ONE_WRITE: u64 = 2;

impl Unflushed {
    /// Nothing pending, for a job of `procs` ranks.
    fn new(procs: u32) -> Unflushed {
        let counts = || (0..procs).map(|_| AtomicU64::new(0)).collect();
        Unflushed {
            total: AtomicU64::new(0),
            by_rank: counts(),
            puts_total: AtomicU64::new(0),
            puts_by_rank: counts(),
            flushing: std::sync::Mutex::new(()),
        }
    }
}

/// Where another rank's part of a shared window lies in this process.
#[derive(Debug, Clone, Copy)]
struct PeerWindow {
    /// This process's address of the rank's window.
    base: usize,
    /// Whether the rank has its window at that address too.
    at_home: bool,
}

/// The `mpi` transport of one rank.
pub struct MpiTransport {
    rank: u32,
    procs: u32,
    comm: ffi::MPI_Comm,
    win: ffi::MPI_Win,
    /// Dynamic window for registered user memory (MPI_Win_create_dynamic + attach).
    dynamic: ffi::MPI_Win,
    /// Where each rank's registration table (slot -> base, len) lives in `win`.
    table_offset: u64,
    /// What this rank attached to `dynamic`, by slot.
    attached: std::sync::Mutex<Vec<Option<usize>>>,
    base: *mut u8,
    /// Where each rank's window lies in this process, by rank, when the window is shared
    /// (every rank on this host: `startup::allocate_window`); empty otherwise.
    peer_bases: Box<[PeerWindow]>,
    /// Whether contiguous puts and gets to mapped ranks are copies and atomics processor
    /// atomics (`GASPAR_MPI_DIRECT` on every rank, and `peer_bases` not empty):
    /// [`direct_target`](Self::direct_target), [`atomic_at`](Self::atomic_at).
    direct: bool,
    /// Where the starter memory begins in every rank's window: the alignment pad.
    starter_offset: u64,
    starter_len: u64,
    heap_offset: u64,
    heap_len: u64,
    /// How far into the starter memory and the heap the fast paths (`heap_target`) go,
    /// plus one: the segment's length, capped at `i32::MAX` bytes (one MPI count); 0 when
    /// MPI runs below MPI_THREAD_MULTIPLE, so that every call takes the general path,
    /// which checks the calling thread.
    fast_reach: [u64; 2],
    /// The writes that completed only locally, by target rank.
    unflushed: Unflushed,
    we_initialized: bool,
    finalized: AtomicBool,
    /// When MPI runs below MPI_THREAD_MULTIPLE: its level, and the only thread that may
    /// make MPI calls through this transport.
    single_thread: Option<(c_int, std::thread::ThreadId)>,
    /// How this rank waits: polls with MPI's progress, sleeping only in long waits.
    patience: &'static Patience,
    /// The ranks of this host: when they are the whole job, the barriers and allgathers
    /// run in their shared window, as on `shm`; else, when they outnumber their cores,
    /// those wait in `patience` (nonblocking MPI collectives, tested until done) rather
    /// than in MPI; and how many are awake, which decides whether a wait spins or yields.
    host: host::Host,
    /// The thread that makes MPI progress while this rank computes, when one runs
    /// (`GASPAR_MPI_PROGRESS`; stopped at finalize).
    progress: std::sync::Mutex<Option<progress::ProgressThread>>,
    /// The progress thread's interval when it is to start with the rank's first
    /// registration of memory (`progress::Need::AtFirstRegistration`).
    progress_at_registration: Option<std::time::Duration>,
    /// Operations on registered memory (the dynamic window) complete only in the target's
    /// MPI calls: each wakes its target first ([`host::Host::wake`]).
    wakes_registered_targets: bool,
    /// Which strided gets are sieved, by target rank.
    sieve: sieve::Sieve,
}

// SAFETY: MPI runs at MPI_THREAD_MULTIPLE, so its handles may be used from any thread, or
// (a program that initialized MPI at a lower level) every method refuses threads other
// than the one that started the transport (`on_mpi_thread`); `base` points into the
// window, which lives until finalize.
unsafe impl Send for MpiTransport {}
// SAFETY: as above.
unsafe impl Sync for MpiTransport {}

impl MpiTransport {
    /// Refuses a call from a thread other than the one that started the transport when MPI
    /// runs below MPI_THREAD_MULTIPLE (one well-predicted branch otherwise).
    #[inline]
    fn on_mpi_thread(&self) -> Result<()> {
        match self.single_thread {
            None => Ok(()),
            Some((level, owner)) if this_thread() != owner => Err(Error::WrongThread { level }),
            Some(_) => Ok(()),
        }
    }

    /// Waits in this rank's [`Patience`] until `request` (of a nonblocking collective)
    /// completes; every poll is an MPI_Test, which makes progress.
    fn complete(&self, mut request: ffi::MPI_Request) -> Result<()> {
        self.patience.poll_progressing(
            &self.host.crowding(),
            self.host.own_bell(),
            || {
                let mut done: c_int = 0;
                // SAFETY: a live request of this rank, tested until it completes.
                check("MPI_Test", unsafe {
                    ffi::MPI_Test(&mut request, &mut done, constant::status_ignore())
                })?;
                Ok(done != 0)
            },
            // Each MPI_Test drives progress.
            || {},
        )
    }

    /// Drives MPI's progress once (a rank asleep in a barrier of the host's window calls
    /// it now and then: a one-sided component that needs the target's help would
    /// otherwise never finish another rank's access to this one).
    fn progress(&self) {
        let mut flag: c_int = 0;
        // SAFETY: MPI is initialized; MPI_Iprobe writes one int and no status.
        unsafe {
            ffi::MPI_Iprobe(
                ffi::RSMPI_ANY_SOURCE,
                ffi::RSMPI_ANY_TAG,
                self.comm,
                &mut flag,
                ffi::RSMPI_STATUS_IGNORE,
            )
        };
        progress::note_rank_call();
    }

    /// The job's barrier: in the host's window when the host's ranks are the whole job
    /// (`host::Host::exchange`), else MPI_Barrier on the transport's communicator, or,
    /// when the host is crowded, an MPI_Ibarrier completed in this rank's patience.
    fn barrier_waiting(&self) -> Result<()> {
        if self
            .host
            .exchange(self.patience, 0, None, &|| self.progress())?
            .is_some()
        {
            return Ok(());
        }
        if !self.host.crowded() {
            let _blocking = progress::in_blocking_call();
            // SAFETY: the communicator lives until finalize.
            return check("MPI_Barrier", unsafe { ffi::MPI_Barrier(self.comm) });
        }
        let mut request = constant::request_null();
        // SAFETY: as above; the request is completed before it goes out of scope.
        check("MPI_Ibarrier", unsafe {
            ffi::MPI_Ibarrier(self.comm, &mut request)
        })?;
        self.complete(request)
    }

    /// The job's allgather of one word per rank: in the host's window when the host's
    /// ranks are the whole job, else [`allgather_words`] on the transport's communicator,
    /// or, when the host is crowded, an MPI_Iallgather completed in this rank's patience.
    fn allgather_waiting(&self, value: u64, out: &mut [u64]) -> Result<()> {
        if self
            .host
            .exchange(self.patience, value, Some(&mut *out), &|| self.progress())?
            .is_some()
        {
            return Ok(());
        }
        if !self.host.crowded() {
            let _blocking = progress::in_blocking_call();
            // SAFETY: the communicator lives until finalize; `out` has one slot per rank
            // (checked by the callers).
            return unsafe { allgather_words(self.comm, value, out) };
        }
        let mut request = constant::request_null();
        // SAFETY: as above; `value` and `out` outlive the request, completed here.
        check("MPI_Iallgather", unsafe {
            ffi::MPI_Iallgather(
                (&value as *const u64).cast(),
                1,
                constant::uint64(),
                out.as_mut_ptr().cast(),
                1,
                constant::uint64(),
                self.comm,
                &mut request,
            )
        })?;
        self.complete(request)
    }

    /// An atomic load of this rank's own word at `disp` (checked and aligned by the
    /// caller): MPI_Win_sync, then a load of the window's memory, which then holds every
    /// put and accumulate of another rank completed before (in the unified memory model
    /// at once; in the separate one, MPI_Win_sync by the owner makes the public copy's
    /// updates visible in its memory: MPI-3.1 11.4 and 11.7). A wait polls its own word
    /// this way, as MPI programs do:
    /// an MPI atomic on one's own window takes the target's accumulate lock (osc/sm), and
    /// a poller that holds it keeps the writer out (a ping-pong round trip 3-4x as long).
    /// The libraries write an aligned word with one store, so the load sees a whole value;
    /// so does a direct put of the word ([`put_direct`](Self::put_direct): an 8-byte copy
    /// is one store), as on `shm`.
    #[inline]
    fn load_own(&self, disp: ffi::MPI_Aint, width: Width) -> u64 {
        // SAFETY: the window is locked for the whole run.
        succeeded("MPI_Win_sync", unsafe { ffi::MPI_Win_sync(self.win) });
        // SAFETY: `disp` addresses an aligned word of this rank's part of the window
        // (checked by the caller against the segment), which lives until finalize; other
        // ranks change it through MPI or direct puts, and it is read here only atomically.
        unsafe {
            let word = self.base.add(disp as usize);
            match width {
                Width::W4 => u64::from((*word.cast::<AtomicU32>()).load(Ordering::Acquire)),
                Width::W8 => (*word.cast::<AtomicU64>()).load(Ordering::Acquire),
            }
        }
    }

    /// Records a put to `rank` that completed only locally (see [`Unflushed`]).
    #[inline]
    fn put_left_unflushed(&self, rank: u32) {
        if let Some(count) = self.unflushed.puts_by_rank.get(rank as usize) {
            count.fetch_add(1, Ordering::AcqRel);
            self.unflushed.puts_total.fetch_add(1, Ordering::AcqRel);
        }
        self.accumulate_left_unflushed(rank);
    }

    /// Records an accumulate to `rank` that completed only locally (see [`Unflushed`]).
    #[inline]
    fn accumulate_left_unflushed(&self, rank: u32) {
        if let Some(count) = self.unflushed.by_rank.get(rank as usize) {
            count.fetch_add(1, Ordering::AcqRel);
            self.unflushed.total.fetch_add(ONE_WRITE, Ordering::AcqRel);
        }
    }

    /// Before an operation on `rank`'s memory: completes there every earlier put or
    /// accumulate to `rank` that completed only locally, so that MPI cannot apply the
    /// operation before them, and announces the operation where that is needed
    /// ([`ANNOUNCES_CALLS`]).
    /// One load and a branch while no write is pending and no target needs waking (the
    /// rest is out of line).
    #[inline(always)]
    fn order_after_writes(&self, rank: u32) {
        if self.unflushed.total.load(Ordering::Acquire) != 0 {
            self.wake_and_order(rank);
        }
    }

    /// Before a load of this rank's own word ([`load_own`](Self::load_own)): completes
    /// this rank's earlier writes to itself, as
    /// [`order_after_writes`](Self::order_after_writes) does, but announces no MPI call.
    /// The load and its MPI_Win_sync drive no progress, and a rank that polls its own word
    /// must leave its progress thread probing: another rank's atomic on that word may need
    /// this rank's progress to complete (osc/ucx over TCP). `locks.f90` across two hosts
    /// hung there when the load announced a call: image 1 polled its counter, image 2's
    /// MPI_Compare_and_swap on it never completed, and image 1's thread, told at every
    /// poll that the rank called MPI itself, never probed.
    #[inline(always)]
    fn order_own_load(&self) {
        if self.unflushed.total.load(Ordering::Acquire) >= ONE_WRITE {
            self.flush_if_pending(self.rank, &self.unflushed.by_rank);
        }
    }

    /// Wakes `rank` where operations announce themselves ([`ANNOUNCES_CALLS`]), before an
    /// MPI call that needs its progress and does not pass through
    /// [`order_after_writes`](Self::order_after_writes) (accumulates, the accumulate lock,
    /// flushes; these note their calls themselves).
    fn wake_target(&self, rank: u32) {
        if self.unflushed.total.load(Ordering::Acquire) & ANNOUNCES_CALLS != 0 {
            self.host.wake(rank);
        }
    }

    /// The slow branch of [`order_after_writes`](Self::order_after_writes).
    #[cold]
    #[inline(never)]
    fn wake_and_order(&self, rank: u32) {
        let total = self.unflushed.total.load(Ordering::Acquire);
        if total & ANNOUNCES_CALLS != 0 {
            self.host.wake(rank);
            progress::note_rank_call();
        }
        if total >= ONE_WRITE {
            self.flush_if_pending(rank, &self.unflushed.by_rank);
        }
    }

    /// Before an accumulate to `rank`: completes there every earlier put to `rank` that
    /// completed only locally (MPI orders the accumulates among themselves).
    #[inline(always)]
    fn order_accumulate_after_puts(&self, rank: u32) {
        if self.unflushed.puts_total.load(Ordering::Acquire) != 0 {
            self.flush_if_pending(rank, &self.unflushed.puts_by_rank);
        }
    }

    /// [`flush_pending`](Self::flush_pending) to `rank` when `pending` (one of the
    /// [`Unflushed`] counts) has a write there.
    fn flush_if_pending(&self, rank: u32, pending: &[AtomicU64]) {
        // Writes pending elsewhere only: nothing to do, without the lock. (This thread's
        // own writes to `rank` were counted there before they were counted in a total.)
        if pending
            .get(rank as usize)
            .is_some_and(|c| c.load(Ordering::Acquire) != 0)
        {
            self.flush_pending(Some(rank));
        }
    }

    /// MPI_Win_flush to `rank` (every rank: `None`) of every window; then the pending
    /// counts drop by what the flush covered.
    fn flush_pending(&self, rank: Option<u32>) {
        let _flushing = self
            .unflushed
            .flushing
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let range = match rank {
            Some(r) => r as usize..r as usize + 1,
            None => 0..self.unflushed.by_rank.len(),
        };
        let range_start = range.start as u32;
        let writes = self
            .unflushed
            .by_rank
            .get(range.clone())
            .unwrap_or_default();
        let puts = self.unflushed.puts_by_rank.get(range).unwrap_or_default();
        let covered = |counts: &[AtomicU64]| -> Vec<u64> {
            counts.iter().map(|c| c.load(Ordering::Acquire)).collect()
        };
        let (covered_writes, covered_puts) = (covered(writes), covered(puts));
        // The flush completes the writes at their targets, in the targets' progress.
        for (rank, &pending) in (range_start..).zip(&covered_writes) {
            if pending != 0 {
                self.wake_target(rank);
            }
        }
        for win in [self.win, self.dynamic] {
            if win == constant::win_null() {
                continue;
            }
            // SAFETY: the windows are locked for the whole run and run under
            // MPI_ERRORS_ARE_FATAL (see `succeeded`).
            unsafe {
                match rank {
                    Some(r) => flushed("MPI_Win_flush", ffi::MPI_Win_flush(r as c_int, win)),
                    None => flushed("MPI_Win_flush_all", ffi::MPI_Win_flush_all(win)),
                }
            }
        }
        for (counts, covered, total, step) in [
            (writes, covered_writes, &self.unflushed.total, ONE_WRITE),
            (puts, covered_puts, &self.unflushed.puts_total, 1),
        ] {
            for (count, covered) in counts.iter().zip(covered) {
                count.fetch_sub(covered, Ordering::AcqRel);
                total.fetch_sub(covered * step, Ordering::AcqRel);
            }
        }
    }

    /// Window displacement of `len` bytes at `loc` in the allocated window (starter memory
    /// or heap), checked against its segment.
    #[inline]
    fn disp(&self, loc: Location, len: u64) -> Result<ffi::MPI_Aint> {
        if matches!(loc.segment(), Segment::Registered(_)) {
            return Err(unsupported_registered(loc));
        }
        self.span(loc)?.disp(loc, loc.offset, len)
    }

    /// MPI_Put of `src` to `disp` of `rank` in `win` (checked by the caller against the
    /// window); the caller flushes.
    fn put_bytes(
        &self,
        win: ffi::MPI_Win,
        rank: u32,
        disp: ffi::MPI_Aint,
        src: &[u8],
    ) -> Result<()> {
        in_pieces("MPI_Put", src.len(), disp, |at, disp, count| {
            // SAFETY: `src` is borrowed until the caller's flush and the piece lies inside
            // it; callers pass a target range they checked against the window.
            unsafe { put_piece(win, rank, disp, src.as_ptr().add(at), count) }
        })
    }

    /// MPI_Get into `dst` from `disp` of `rank` in `win`, as [`put_bytes`](Self::put_bytes).
    fn get_bytes(
        &self,
        win: ffi::MPI_Win,
        rank: u32,
        disp: ffi::MPI_Aint,
        dst: &mut [u8],
    ) -> Result<()> {
        let base = dst.as_mut_ptr();
        in_pieces("MPI_Get", dst.len(), disp, |at, disp, count| {
            // SAFETY: as in `put_bytes`, writing into the borrowed `dst`.
            unsafe { get_piece(win, rank, disp, base.add(at), count) }
        })
    }

    /// Where `loc`'s segment lives: the allocated window for the starter memory and heap,
    /// the dynamic one (at the owner's address, read once from its registration table) for
    /// registered memory.
    #[inline]
    fn span(&self, loc: Location) -> Result<Span> {
        let slot = match loc.segment() {
            Segment::Starter => {
                return Ok(Span {
                    win: self.win,
                    start: self.starter_offset,
                    len: self.starter_len,
                })
            }
            Segment::Heap => {
                return Ok(Span {
                    win: self.win,
                    start: self.heap_offset,
                    len: self.heap_len,
                })
            }
            Segment::Registered(slot) => slot,
        };
        self.registered_span(loc, slot)
    }

    /// [`atomic_elsewhere`](Self::atomic_elsewhere) with the place and the operation as
    /// scalars, in registers: passed whole (by memory, as the ABI passes them), they
    /// were written on every call and the operation, a constant in the caller, was read
    /// back and dispatched through a jump table.
    #[inline(always)]
    fn atomic_elsewhere_of(
        &self,
        target: Location,
        width: Width,
        op: AtomicOp,
    ) -> TransportResult<u64> {
        let (code, a, b) = op.parts();
        self.atomic_elsewhere(target.offset, target.ga, target.place, width, code, a, b)
    }

    /// The common case of [`target`](Self::target), in a few instructions: `len` bytes of
    /// starter memory or heap that end before [`fast_reach`](Self::fast_reach). Returns
    /// the window displacement and the MPI count; `None` sends the caller to its general
    /// path, which handles everything else or reports what is wrong.
    #[inline]
    fn heap_target(&self, loc: Location, len: usize) -> Option<(ffi::MPI_Aint, c_int)> {
        let (start, reach) = match loc.segment() {
            Segment::Starter => (self.starter_offset, self.fast_reach[0]),
            Segment::Heap => (self.heap_offset, self.fast_reach[1]),
            Segment::Registered(_) => return None,
        };
        // The offset is below 2^38 (its bit field) and `len` a slice length: no overflow.
        // A reach of at most `i32::MAX` bounds `len` too, so it is a valid MPI count.
        (loc.offset + (len as u64) < reach)
            .then_some(((start + loc.offset) as ffi::MPI_Aint, len as c_int))
    }

    /// This process's address of the `len` bytes at `loc` when a contiguous transfer
    /// there is a copy instead of an MPI call: with [`direct`](Self::direct), starter
    /// memory or heap of a rank whose window is mapped here, within the fast paths' reach
    /// (never below MPI_THREAD_MULTIPLE, nor past 2 GiB into a segment: there the slow
    /// paths make the copy, [`direct_span`](Self::direct_span)). As OSHMPI does on a host's ranks: an 8-byte put or get is a
    /// load or a store instead of MPI's call, lock and flush (16-19 ns on Open MPI's
    /// osc/sm). Atomics are then processor atomics ([`atomic_at`](Self::atomic_at)),
    /// strided and vector transfers copies too ([`direct_span`](Self::direct_span)). A
    /// copy is ordered after this rank's earlier MPI writes to the rank
    /// ([`order_after_writes`](Self::order_after_writes)) and, by the fences of
    /// [`put_direct`](Self::put_direct) and [`get_direct`](Self::get_direct), with its
    /// atomics.
    #[inline(always)]
    fn direct_target(&self, loc: Location, len: usize) -> Option<*mut u8> {
        // Also in `direct_base`; checked first here so that the MPI path decodes nothing.
        if !self.direct {
            return None;
        }
        let (disp, _) = self.heap_target(loc, len)?;
        Some((self.direct_base(loc.rank())? + disp as usize) as *mut u8)
    }

    /// Whether `len` bytes `offset` bytes into the heap end before the fast paths' reach
    /// ([`fast_reach`](Self::fast_reach)), whatever the caller passed.
    #[inline(always)]
    fn in_heap_reach(&self, offset: u64, len: u64) -> bool {
        offset
            .checked_add(len)
            .is_some_and(|end| end < self.fast_reach[1])
    }

    /// Where `rank`'s window starts in this process, when contiguous transfers to it are
    /// copies ([`direct_target`](Self::direct_target)).
    #[inline(always)]
    fn direct_base(&self, rank: u32) -> Option<usize> {
        if !self.direct {
            None
        } else if rank == self.rank {
            Some(self.base as usize)
        } else {
            Some(self.peer_bases.get(rank as usize)?.base)
        }
    }

    /// Copies `src` to `at`, the mapped address of a put to `rank`.
    #[inline(always)]
    fn put_direct(&self, rank: u32, at: *mut u8, src: &[u8]) {
        self.order_after_writes(rank);
        // SAFETY: `at` is `src.len()` bytes of a rank's window mapped here
        // (`direct_target` checked the range against the segment), which lives until
        // finalize; other ranks may touch it only as a put or get may, unordered with
        // this one unless the program synchronized. A copy that allows overlap: `src`
        // may lie in the same window (a put within this rank's own memory).
        unsafe { std::ptr::copy(src.as_ptr(), at, src.len()) };
        // Before any later write of this rank, such as an MPI atomic that signals it.
        std::sync::atomic::fence(Ordering::Release);
    }

    /// Copies from `at`, the mapped address of a get from `rank`, into `dst`.
    #[inline(always)]
    fn get_direct(&self, rank: u32, at: *const u8, dst: &mut [u8]) {
        self.order_after_writes(rank);
        // After any earlier read of this rank, such as an MPI atomic that saw a signal.
        std::sync::atomic::fence(Ordering::Acquire);
        // SAFETY: as in `put_direct`, reading into the borrowed `dst`, which may lie in
        // the window too.
        unsafe { std::ptr::copy(at, dst.as_mut_ptr(), dst.len()) };
    }

    /// This process's address of the `extent` bytes at `loc` when a strided or vector
    /// transfer there is copies through the shared window ([`direct`](Self::direct):
    /// starter memory or heap, inside the segment), as on shm: the target's MPI progress
    /// is not needed (MPICH's, for a datatype), and a copy of chunks costs less than
    /// MPI's datatype engine. This rank's earlier MPI writes to the rank are complete
    /// when it returns an address.
    ///
    /// The contiguous transfers' slow paths ask it too, after their thread check: a copy
    /// where the fast paths do not reach, below MPI_THREAD_MULTIPLE (a program that
    /// called MPI_Init itself, as Global Arrays' programs do: the fast paths are off
    /// there, so that every call is checked) and past a segment's first 2 GiB.
    fn direct_span(&self, loc: Location, extent: u64) -> Option<*mut u8> {
        if !self.direct {
            return None;
        }
        let address = self.mapped_address(loc, extent)?;
        self.order_after_writes(loc.rank());
        Some(address as *mut u8)
    }

    /// Copies each run of `src` to its place after `to`, `to` from
    /// [`direct_span`](Self::direct_span) for the runs' extent; `runs` checked against
    /// `src` (`runs_extent`).
    fn put_runs_direct(to: *mut u8, src: &[u8], runs: &[Run]) {
        for run in runs {
            let piece = &src[run.local as usize..(run.local + run.len) as usize];
            // SAFETY: the run lies inside `src` (checked by the caller) and inside the
            // mapped extent after `to`, which lives until finalize; a memmove-safe copy.
            unsafe { copy_bytes(piece.as_ptr(), to.add(run.remote as usize), piece.len()) };
        }
        std::sync::atomic::fence(Ordering::Release);
    }

    /// Copies each run from its place after `from` into `dst`:
    /// [`put_runs_direct`](Self::put_runs_direct) the other way round.
    fn get_runs_direct(from: *const u8, dst: &mut [u8], runs: &[Run]) {
        std::sync::atomic::fence(Ordering::Acquire);
        for run in runs {
            let piece = &mut dst[run.local as usize..(run.local + run.len) as usize];
            // SAFETY: as in `put_runs_direct`, reading the mapping into `dst`.
            unsafe {
                copy_bytes(
                    from.add(run.remote as usize),
                    piece.as_mut_ptr(),
                    piece.len(),
                )
            };
        }
    }

    /// The window and displacement of `len` bytes at `loc`.
    #[inline]
    fn target(&self, loc: Location, len: u64) -> Result<(ffi::MPI_Win, ffi::MPI_Aint)> {
        let span = self.span(loc)?;
        Ok((span.win, span.disp(loc, loc.offset, len)?))
    }

    /// Puts one run of `src` after `dst`, whose segment is `span`.
    fn put_run(&self, span: &Span, dst: Location, src: &[u8], run: Run) -> Result<()> {
        let piece = src
            .get(run.local as usize..(run.local + run.len) as usize)
            .ok_or_else(|| Error::invalid("strided transfer", "run outside the local buffer"))?;
        let offset = dst
            .offset
            .checked_add(run.remote)
            .ok_or(Error::LengthOverflow { what: "run offset" })?;
        self.put_bytes(
            span.win,
            dst.rank(),
            span.disp(dst, offset, run.len)?,
            piece,
        )
    }

    /// Gets one run after `src`, whose segment is `span`, into `dst`.
    fn get_run(&self, span: &Span, src: Location, dst: &mut [u8], run: Run) -> Result<()> {
        let offset = src
            .offset
            .checked_add(run.remote)
            .ok_or(Error::LengthOverflow { what: "run offset" })?;
        let disp = span.disp(src, offset, run.len)?;
        let piece = dst
            .get_mut(run.local as usize..(run.local + run.len) as usize)
            .ok_or_else(|| Error::invalid("strided transfer", "run outside the local buffer"))?;
        self.get_bytes(span.win, src.rank(), disp, piece)
    }

    /// [`put_flushed_anywhere`](Self::put_flushed_anywhere) out of line, with its error
    /// boxed there: the fast path's frame then holds neither.
    #[cold]
    #[inline(never)]
    fn put_flushed_elsewhere(&self, dst: Location, src: &[u8]) -> TransportResult<()> {
        Ok(self.put_flushed_anywhere(dst, src)?)
    }

    /// [`get_anywhere`](Self::get_anywhere) out of line (see
    /// [`put_flushed_elsewhere`](Self::put_flushed_elsewhere)).
    #[cold]
    #[inline(never)]
    fn get_elsewhere(&self, src: Location, dst: &mut [u8]) -> TransportResult<()> {
        Ok(self.get_anywhere(src, dst)?)
    }

    /// `put_flushed` for any segment and size, or the error that stops it.
    fn put_flushed_anywhere(&self, dst: Location, src: &[u8]) -> Result<()> {
        if self.put_copied_after_check(dst, src)? {
            return Ok(());
        }
        let (win, disp) = self.target(dst, src.len() as u64)?;
        self.order_after_writes(dst.rank());
        self.put_bytes(win, dst.rank(), disp, src)?;
        // A flush of the one window used completes the put at the target (and locally).
        // SAFETY: the window is locked for the whole run.
        check("MPI_Win_flush", unsafe {
            ffi::MPI_Win_flush(dst.rank() as c_int, win)
        })
    }

    /// The start of a contiguous put's slow paths: the thread check, then the copy the
    /// fast path did not make where the destination is mapped (see `direct_span`).
    /// Whether the put is done.
    fn put_copied_after_check(&self, dst: Location, src: &[u8]) -> Result<bool> {
        self.on_mpi_thread()?;
        let Some(at) = self.direct_span(dst, src.len() as u64) else {
            return Ok(false);
        };
        self.put_direct(dst.rank(), at, src);
        Ok(true)
    }

    /// `get` for any segment and size, or the error that stops it.
    fn get_anywhere(&self, src: Location, dst: &mut [u8]) -> Result<()> {
        self.on_mpi_thread()?;
        if let Some(at) = self.direct_span(src, dst.len() as u64) {
            // A copy the fast path did not make (see `direct_span`).
            self.get_direct(src.rank(), at, dst);
            return Ok(());
        }
        let (win, disp) = self.target(src, dst.len() as u64)?;
        self.order_after_writes(src.rank());
        self.get_bytes(win, src.rank(), disp, dst)?;
        // SAFETY: the window is locked for the whole run.
        check("MPI_Win_flush_local", unsafe {
            ffi::MPI_Win_flush_local(src.rank() as c_int, win)
        })
    }

    fn flush_local(&self, rank: u32) -> Result<()> {
        // SAFETY: the window is locked for the whole run.
        check("MPI_Win_flush_local", unsafe {
            ffi::MPI_Win_flush_local(rank as c_int, self.win)
        })?;
        if !self.has_dynamic() {
            return Ok(());
        }
        // SAFETY: as above, for the dynamic window.
        check("MPI_Win_flush_local", unsafe {
            ffi::MPI_Win_flush_local(rank as c_int, self.dynamic)
        })
    }
}

/// Where a segment lives: its window, the displacement of its byte 0 there, its length.
#[derive(Clone, Copy)]
struct Span {
    win: ffi::MPI_Win,
    start: u64,
    len: u64,
}

impl Span {
    /// The displacement of `len` bytes at `offset` in the segment that `loc` names.
    #[inline]
    fn disp(&self, loc: Location, offset: u64, len: u64) -> Result<ffi::MPI_Aint> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok((self.start + offset) as ffi::MPI_Aint),
            Some(_) => Err(Error::OutOfBounds {
                ga: loc.ga,
                len,
                segment_len: self.len,
            }),
            None => Err(Error::LengthOverflow {
                what: "offset + length",
            }),
        }
    }
}

fn unsupported_registered(loc: Location) -> Error {
    Error::AtomicUnsupported {
        ga: loc.ga,
        reason: "registered user memory is not supported on the mpi transport yet",
    }
}

/// The transfers of [`Transport::put`] and [`Transport::get`], one per shape.
impl MpiTransport {
    /// Copies through the mapping ([`direct_span`](Self::direct_span)); else one MPI_Put
    /// with hindexed datatypes on both sides (one message, not one per run); registered
    /// memory: one put per run.
    fn put_runs(&self, dst: Location, src: &[u8], runs: &[Run]) -> TransportResult<()> {
        self.on_mpi_thread()?;
        let extent = super::runs_extent(runs, src.len(), "strided transfer")?;
        if let Some(to) = self.direct_span(dst, extent) {
            Self::put_runs_direct(to, src, runs);
            return Ok(());
        }
        if matches!(dst.segment(), Segment::Registered(_)) || runs.len() < 2 {
            let span = self.span(dst)?;
            self.order_after_writes(dst.rank());
            for &run in runs {
                self.put_run(&span, dst, src, run)?;
            }
            self.flush_local(dst.rank())?;
            self.put_left_unflushed(dst.rank());
            return Ok(());
        }
        let offsets: Vec<u64> = runs.iter().map(|r| r.remote).collect();
        let (origin, target) = indexed_pair(
            runs.iter().map(|r| r.len),
            runs.iter().map(|r| r.local as isize),
            &offsets,
        )?;
        // SAFETY: every origin block lies inside `src` (checked by `runs_extent`).
        unsafe { Ok(self.put_typed(dst, src.as_ptr(), &origin, &target, extent)?) }
    }

    fn get_runs(&self, src: Location, dst: &mut [u8], runs: &[Run]) -> TransportResult<()> {
        self.on_mpi_thread()?;
        let extent = super::runs_extent(runs, dst.len(), "strided transfer")?;
        if let Some(from) = self.direct_span(src, extent) {
            Self::get_runs_direct(from, dst, runs);
            return Ok(());
        }
        if matches!(src.segment(), Segment::Registered(_)) || runs.len() < 2 {
            let span = self.span(src)?;
            self.order_after_writes(src.rank());
            for &run in runs {
                self.get_run(&span, src, dst, run)?;
            }
            return Ok(self.flush_local(src.rank())?);
        }
        let offsets: Vec<u64> = runs.iter().map(|r| r.remote).collect();
        let (origin, target) = indexed_pair(
            runs.iter().map(|r| r.len),
            runs.iter().map(|r| r.local as isize),
            &offsets,
        )?;
        // SAFETY: every origin block lies inside `dst` (checked by `runs_extent`).
        unsafe { Ok(self.get_typed(src, dst.as_mut_ptr(), &origin, &target, extent)?) }
    }

    fn put_segments(&self, dst: Location, srcs: &[&[u8]], offsets: &[u64]) -> TransportResult<()> {
        self.on_mpi_thread()?;
        let extent = segments_extent(srcs.iter().map(|s| s.len()), offsets)?;
        let Some(first) = srcs.first() else {
            return Ok(());
        };
        if matches!(dst.segment(), Segment::Registered(_)) {
            let span = self.span(dst)?;
            self.order_after_writes(dst.rank());
            span.disp(dst, dst.offset, extent)?;
            for (s, &o) in srcs.iter().zip(offsets) {
                self.put_bytes(
                    span.win,
                    dst.rank(),
                    span.disp(dst, dst.offset + o, s.len() as u64)?,
                    s,
                )?;
            }
            self.flush_local(dst.rank())?;
            self.put_left_unflushed(dst.rank());
            return Ok(());
        }
        if let Some(to) = self.direct_span(dst, extent) {
            for (s, &o) in srcs.iter().zip(offsets) {
                // SAFETY: each segment ends inside the mapped extent after `to`
                // (`segments_extent`), which lives until finalize.
                unsafe { copy_bytes(s.as_ptr(), to.add(o as usize), s.len()) };
            }
            std::sync::atomic::fence(Ordering::Release);
            return Ok(());
        }
        let base = first.as_ptr();
        let (origin, target) = indexed_pair(
            srcs.iter().map(|s| s.len() as u64),
            srcs.iter()
                .map(|s| (s.as_ptr() as isize).wrapping_sub(base as isize)),
            offsets,
        )?;
        // SAFETY: the origin blocks are exactly the slices `srcs`, addressed from the
        // first one's start.
        unsafe { Ok(self.put_typed(dst, base, &origin, &target, extent)?) }
    }

    fn get_segments(
        &self,
        src: Location,
        dsts: &mut [&mut [u8]],
        offsets: &[u64],
    ) -> TransportResult<()> {
        self.on_mpi_thread()?;
        let extent = segments_extent(dsts.iter().map(|d| d.len()), offsets)?;
        if dsts.is_empty() {
            return Ok(());
        }
        if matches!(src.segment(), Segment::Registered(_)) {
            let span = self.span(src)?;
            self.order_after_writes(src.rank());
            span.disp(src, src.offset, extent)?;
            for (d, &o) in dsts.iter_mut().zip(offsets) {
                let disp = span.disp(src, src.offset + o, d.len() as u64)?;
                self.get_bytes(span.win, src.rank(), disp, d)?;
            }
            return Ok(self.flush_local(src.rank())?);
        }
        if let Some(from) = self.direct_span(src, extent) {
            std::sync::atomic::fence(Ordering::Acquire);
            for (d, &o) in dsts.iter_mut().zip(offsets) {
                // SAFETY: as in `put_segments`, reading the mapping into `d`.
                unsafe { copy_bytes(from.add(o as usize), d.as_mut_ptr(), d.len()) };
            }
            return Ok(());
        }
        let shortest = dsts.iter().map(|d| d.len() as u64).min().unwrap_or(0);
        if self.sieves_segments(src, dsts.len() as u64, shortest, extent)? {
            // One get of the span, each segment picked out (see `sieve`).
            let mut stage = vec![0u8; extent as usize];
            self.get(src, &mut stage).map_err(|e| *e)?;
            for (d, &o) in dsts.iter_mut().zip(offsets) {
                let len = d.len();
                d.copy_from_slice(&stage[o as usize..o as usize + len]);
            }
            return Ok(());
        }
        let base = dsts[0].as_mut_ptr();
        let (origin, target) = indexed_pair(
            dsts.iter().map(|d| d.len() as u64),
            dsts.iter()
                .map(|d| (d.as_ptr() as isize).wrapping_sub(base as isize)),
            offsets,
        )?;
        // SAFETY: the origin blocks are exactly the slices `dsts`, addressed from the
        // first one's start.
        unsafe { Ok(self.get_typed(src, base, &origin, &target, extent)?) }
    }

    /// Copies through the mapping ([`direct_span`](Self::direct_span)); else one MPI_Put
    /// with a derived datatype on each side: one message, not one per chunk.
    fn put_pattern(&self, dst: Location, src: &[u8], pattern: &Pattern<'_>) -> TransportResult<()> {
        self.on_mpi_thread()?;
        let (local_extent, remote_extent) = pattern.checked_extents(src.len())?;
        if let Some(to) = self.direct_span(dst, remote_extent) {
            // SAFETY: every chunk lies inside `src` (its extent was checked against
            // `src.len()`) and inside the mapped extent after `to` (`direct_span`).
            unsafe {
                move_pattern(
                    pattern,
                    (src.as_ptr(), local_extent),
                    (to, remote_extent),
                    Direction::LocalToRemote,
                )
            };
            std::sync::atomic::fence(Ordering::Release);
            return Ok(());
        }
        if matches!(dst.segment(), Segment::Registered(_)) {
            // No datatypes into attached memory here: one put per chunk, one table read.
            let span = self.span(dst)?;
            self.order_after_writes(dst.rank());
            span.disp(dst, dst.offset, remote_extent)?;
            let chunk = pattern.chunk;
            pattern.for_each(|l, r| {
                self.put_run(
                    &span,
                    dst,
                    src,
                    Run {
                        local: l,
                        remote: r,
                        len: chunk,
                    },
                )
            })?;
            self.flush_local(dst.rank())?;
            self.put_left_unflushed(dst.rank());
            return Ok(());
        }
        let (origin, target) = pattern_pair(pattern)?;
        // SAFETY: the origin type spans at most src.len() bytes of `src` (checked).
        unsafe { Ok(self.put_typed(dst, src.as_ptr(), &origin, &target, remote_extent)?) }
    }

    /// Copies through the mapping ([`direct_span`](Self::direct_span)); else one MPI_Get
    /// with a derived datatype on each side, or a sieved get when that is faster from
    /// `src` (see [`sieve`]).
    fn get_pattern(
        &self,
        src: Location,
        dst: &mut [u8],
        pattern: &Pattern<'_>,
    ) -> TransportResult<()> {
        self.on_mpi_thread()?;
        let (local_extent, remote_extent) = pattern.checked_extents(dst.len())?;
        if let Some(from) = self.direct_span(src, remote_extent) {
            std::sync::atomic::fence(Ordering::Acquire);
            // SAFETY: as in `put_pattern`, with the roles of the buffers swapped.
            unsafe {
                move_pattern(
                    pattern,
                    (dst.as_mut_ptr(), local_extent),
                    (from, remote_extent),
                    Direction::RemoteToLocal,
                )
            };
            return Ok(());
        }
        if matches!(src.segment(), Segment::Registered(_)) {
            let span = self.span(src)?;
            self.order_after_writes(src.rank());
            span.disp(src, src.offset, remote_extent)?;
            let chunk = pattern.chunk;
            pattern.for_each(|l, r| {
                self.get_run(
                    &span,
                    src,
                    dst,
                    Run {
                        local: l,
                        remote: r,
                        len: chunk,
                    },
                )
            })?;
            return Ok(self.flush_local(src.rank())?);
        }
        if self.sieves(src, pattern, remote_extent)? {
            let mut stage = vec![0u8; remote_extent as usize];
            return Ok(self.get_sieved(src, dst, pattern, &mut stage)?);
        }
        Ok(self.get_typed_pattern(src, dst, pattern, remote_extent)?)
    }

    /// One MPI_Get with a derived datatype on each side, for a pattern checked against
    /// `dst` and spanning `remote_extent` bytes at `src`.
    fn get_typed_pattern(
        &self,
        src: Location,
        dst: &mut [u8],
        pattern: &Pattern<'_>,
        remote_extent: u64,
    ) -> Result<()> {
        let (origin, target) = pattern_pair(pattern)?;
        // SAFETY: the origin type spans at most dst.len() bytes of `dst` (checked).
        unsafe { self.get_typed(src, dst.as_mut_ptr(), &origin, &target, remote_extent) }
    }
}

impl Transport for MpiTransport {
    fn rank(&self) -> u32 {
        self.rank
    }

    fn procs(&self) -> u32 {
        self.procs
    }

    fn sizes(&self) -> SegmentSizes {
        SegmentSizes {
            starter: self.starter_len,
            heap: self.heap_len,
        }
    }

    fn put(&self, dst: Location, src: &[u8]) -> TransportResult<()> {
        if let Some(at) = self.direct_target(dst, src.len()) {
            self.put_direct(dst.rank(), at, src);
            return Ok(());
        }
        if self.put_copied_after_check(dst, src)? {
            return Ok(());
        }
        let (win, disp) = self.target(dst, src.len() as u64)?;
        self.order_after_writes(dst.rank());
        self.put_bytes(win, dst.rank(), disp, src)?;
        self.flush_local(dst.rank())?;
        self.put_left_unflushed(dst.rank());
        Ok(())
    }

    fn put_pieces(&self, dst: Location, data: Outgoing<'_>) -> TransportResult<()> {
        match data {
            Outgoing::Runs { src, runs } => self.put_runs(dst, src, runs),
            Outgoing::Segments { srcs, offsets } => self.put_segments(dst, srcs, offsets),
            Outgoing::Pattern { src, pattern } => self.put_pattern(dst, src, pattern),
        }
    }

    #[inline]
    fn put_flushed(&self, dst: Location, src: &[u8]) -> TransportResult<()> {
        if let Some(at) = self.direct_target(dst, src.len()) {
            self.put_direct(dst.rank(), at, src);
            return Ok(());
        }
        let Some((disp, count)) = self.heap_target(dst, src.len()) else {
            return self.put_flushed_elsewhere(dst, src);
        };
        self.order_after_writes(dst.rank());
        // SAFETY: `src` is borrowed until the flush below; `heap_target` checked the range;
        // the window is locked for the whole run.
        let (put, flush) = unsafe {
            (
                put_piece(self.win, dst.rank(), disp, src.as_ptr(), count),
                ffi::MPI_Win_flush(dst.rank() as c_int, self.win),
            )
        };
        succeeded("MPI_Put", put);
        succeeded("MPI_Win_flush", flush);
        Ok(())
    }

    #[inline(always)]
    fn put_heap(
        &self,
        rank: u32,
        offset: u64,
        ga: impl FnOnce() -> GlobalAddr,
        src: &[u8],
    ) -> TransportResult<()> {
        // As `put_flushed`, with the segment known (any offset: the sum is checked); a
        // reach of at most `i32::MAX` makes the length a valid MPI count.
        if self.in_heap_reach(offset, src.len() as u64) {
            let disp = self.heap_offset + offset;
            if let Some(base) = self.direct_base(rank) {
                self.put_direct(rank, (base + disp as usize) as *mut u8, src);
                return Ok(());
            }
            self.order_after_writes(rank);
            // SAFETY: `src` is borrowed until the flush below; the range was checked
            // above; the window is locked for the whole run.
            let (put, flush) = unsafe {
                (
                    put_piece(
                        self.win,
                        rank,
                        disp as ffi::MPI_Aint,
                        src.as_ptr(),
                        src.len() as c_int,
                    ),
                    ffi::MPI_Win_flush(rank as c_int, self.win),
                )
            };
            succeeded("MPI_Put", put);
            succeeded("MPI_Win_flush", flush);
            return Ok(());
        }
        self.put_flushed_elsewhere(Location::new(rank, Segment::Heap, offset, ga()), src)
    }

    #[inline(always)]
    fn get_heap(
        &self,
        rank: u32,
        offset: u64,
        ga: impl FnOnce() -> GlobalAddr,
        dst: &mut [u8],
    ) -> TransportResult<()> {
        // As `get`, with the segment known (see `put_heap`).
        if self.in_heap_reach(offset, dst.len() as u64) {
            let disp = self.heap_offset + offset;
            if let Some(base) = self.direct_base(rank) {
                self.get_direct(rank, (base + disp as usize) as *const u8, dst);
                return Ok(());
            }
            self.order_after_writes(rank);
            // SAFETY: `dst` is borrowed until the flush below; the range was checked
            // above; the window is locked for the whole run.
            let (get, flush) = unsafe {
                (
                    get_piece(
                        self.win,
                        rank,
                        disp as ffi::MPI_Aint,
                        dst.as_mut_ptr(),
                        dst.len() as c_int,
                    ),
                    ffi::MPI_Win_flush_local(rank as c_int, self.win),
                )
            };
            succeeded("MPI_Get", get);
            succeeded("MPI_Win_flush_local", flush);
            return Ok(());
        }
        self.get_elsewhere(Location::new(rank, Segment::Heap, offset, ga()), dst)
    }

    #[inline]
    fn get(&self, src: Location, dst: &mut [u8]) -> TransportResult<()> {
        if let Some(at) = self.direct_target(src, dst.len()) {
            self.get_direct(src.rank(), at, dst);
            return Ok(());
        }
        let Some((disp, count)) = self.heap_target(src, dst.len()) else {
            return self.get_elsewhere(src, dst);
        };
        self.order_after_writes(src.rank());
        // SAFETY: `dst` is borrowed until the flush below; `heap_target` checked the range;
        // the window is locked for the whole run.
        let (get, flush) = unsafe {
            (
                get_piece(self.win, src.rank(), disp, dst.as_mut_ptr(), count),
                ffi::MPI_Win_flush_local(src.rank() as c_int, self.win),
            )
        };
        succeeded("MPI_Get", get);
        succeeded("MPI_Win_flush_local", flush);
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
        self.on_mpi_thread()?;
        Ok(self.target(loc, len).map(drop)?)
    }

    fn copy(&self, dst: Location, src: Location, len: u64) -> TransportResult<()> {
        self.on_mpi_thread()?;
        // Through the initiator: get into a bounce buffer, then put.
        const CHUNK: u64 = 1 << 20;
        self.target(src, len)?;
        self.target(dst, len)?;
        let mut bounce = vec![0u8; len.min(CHUNK) as usize];
        let mut done = 0;
        while done < len {
            let n = (len - done).min(CHUNK);
            let piece = &mut bounce[..n as usize];
            self.get(src.at_offset(src.offset + done), piece)?;
            self.put(dst.at_offset(dst.offset + done), piece)?;
            done += n;
        }
        Ok(())
    }

    // Always inlined into its caller, where the operation is usually a constant (an
    // 8-byte fetch-add in `RUNS=3 scripts/bench-mpi`: 24.4 -> 23.3-23.6 ns, raw MPI
    // 19.2; AMD EPYC, Zen 4, Open MPI 4.1's osc/sm).
    #[inline(always)]
    fn atomic(&self, target: Location, width: Width, op: AtomicOp) -> TransportResult<u64> {
        let bytes = width.bytes() as usize;
        let aligned = target.offset & (bytes as u64 - 1) == 0;
        match self.heap_target(target, bytes) {
            Some((disp, _)) if aligned => {
                if target.rank() == self.rank && matches!(op, AtomicOp::Load) {
                    self.order_own_load();
                    return Ok(self.load_own(disp, width));
                }
                self.order_after_writes(target.rank());
                Ok(self.atomic_at(target.rank(), disp, width, op))
            }
            _ => self.atomic_elsewhere_of(target, width, op),
        }
    }

    #[inline]
    fn atomic_unwatched(
        &self,
        target: Location,
        width: Width,
        op: AtomicOp,
    ) -> TransportResult<u64> {
        // Nothing to skip: an MPI job's waits watch no memory (a ring wakes a target only
        // for its MPI progress, which this atomic needs as any other does).
        self.atomic(target, width, op)
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
        // The caller checked the word against its array; the window's reach and the
        // alignment are checked here all the same, in a few instructions.
        if offset & (bytes - 1) == 0 && self.in_heap_reach(offset, bytes) {
            let disp = (self.heap_offset + offset) as ffi::MPI_Aint;
            if rank == self.rank && matches!(op, AtomicOp::Load) {
                self.order_own_load();
                return Ok(self.load_own(disp, width));
            }
            self.order_after_writes(rank);
            return Ok(self.atomic_at(rank, disp, width, op));
        }
        let target = Location::new(rank, Segment::Heap, offset, ga());
        self.atomic_elsewhere_of(target, width, op)
    }

    fn accumulate(
        &self,
        dst: Location,
        src: &[u8],
        shape: AccShape<'_>,
        kind: AccKind,
        scale: &[u8],
    ) -> TransportResult<()> {
        Ok(self.accumulate_summing(dst, src, shape, kind, scale)?)
    }

    fn accumulate_lock(&self, rank: u32, op: AtomicOp) -> TransportResult<u64> {
        self.on_mpi_thread()?;
        // After the registration table: 8-byte aligned (the table starts on 64 bytes and
        // its length is a multiple of 8).
        let disp = (self.table_offset + TABLE_BYTES) as ffi::MPI_Aint;
        self.wake_target(rank);
        Ok(self.atomic_at(rank, disp, Width::W8, op))
    }

    fn flush(&self, rank: u32) -> TransportResult<()> {
        self.on_mpi_thread()?;
        if rank >= self.procs {
            return Err(Box::new(Error::RankOutOfRange {
                rank,
                procs: self.procs,
            }));
        }
        // As `flush_all`: only writes counted in `unflushed` are not complete yet (an
        // accumulate's in-place update under the lock, on one host, needs no MPI call).
        if self.unflushed.by_rank[rank as usize].load(Ordering::Acquire) != 0 {
            self.flush_pending(Some(rank));
        }
        Ok(())
    }

    fn flush_all(&self) -> TransportResult<()> {
        self.on_mpi_thread()?;
        // Every write but those counted in `unflushed` was completed at its target by the
        // call that made it (put_flushed, atomics): nothing pending, nothing to flush.
        if self.unflushed.total.load(Ordering::Acquire) >= ONE_WRITE {
            self.flush_pending(None);
        }
        Ok(())
    }

    fn test_all(&self) -> TransportResult<bool> {
        self.on_mpi_thread()?;
        self.flush_all()?;
        Ok(true)
    }

    fn barrier(&self) -> TransportResult<()> {
        self.on_mpi_thread()?;
        let _serialized = COLLECTIVES.lock().unwrap_or_else(|p| p.into_inner());
        // flush_all + Win_sync + barrier + Win_sync: every earlier put is complete at its
        // target and visible to plain loads there after the barrier (seed 001's question).
        self.synchronizing(|| self.barrier_waiting())
            .map_err(Into::into)
    }

    fn allgather_u64(&self, value: u64, out: &mut [u64]) -> TransportResult<()> {
        self.on_mpi_thread()?;
        if out.len() != self.procs as usize {
            return Err(Box::new(Error::invalid(
                "allgather_u64",
                "output length != procs",
            )));
        }
        let _serialized = COLLECTIVES.lock().unwrap_or_else(|p| p.into_inner());
        // A barrier as well (see `barrier`): the runtime's barrier is an allgather.
        self.synchronizing(|| self.allgather_waiting(value, out))
            .map_err(Into::into)
    }

    fn agree_u64(&self, value: u64) -> TransportResult<bool> {
        self.on_mpi_thread()?;
        let serialized = COLLECTIVES.lock().unwrap_or_else(|p| p.into_inner());
        if !self.host.runs_collectives() {
            drop(serialized);
            // Whether every word is `value`, from an allgather in MPI.
            return super::agree_by_allgather(self, value);
        }
        // The allgather without reading the words: the barrier tells whether all agree.
        let mut agreed = false;
        self.synchronizing(|| {
            agreed = self
                .host
                .exchange(self.patience, value, None, &|| self.progress())?
                .unwrap_or(false);
            Ok(())
        })?;
        Ok(agreed)
    }

    fn publish_region(&self, slot: u8, base: usize, len: u64, color: u32) -> TransportResult<()> {
        self.attach_region(slot, base, len, color)?;
        if let Some(interval) = self.progress_at_registration {
            // Other ranks' accesses to the dynamic window wait for this rank's progress.
            self.start_progress(interval)?;
        }
        Ok(())
    }

    fn retract_region(&self, slot: u8) -> TransportResult<()> {
        self.detach_region(slot)
    }

    fn usable_cores(&self) -> usize {
        self.host.cores().usable
    }

    fn maps_at_home(&self, rank: u32) -> bool {
        rank == self.rank
            || self
                .peer_bases
                .get(rank as usize)
                .is_some_and(|peer| peer.at_home)
    }

    fn processor_atomics_at(&self, loc: Location) -> bool {
        // `atomic_at`: the processor's atomics on the shared window; registered memory
        // (the dynamic window) keeps MPI's.
        self.direct && !matches!(loc.segment(), Segment::Registered(_))
    }

    fn mapped_address(&self, loc: Location, len: u64) -> Option<usize> {
        let (start, segment_len) = match loc.segment() {
            Segment::Starter => (self.starter_offset, self.starter_len),
            Segment::Heap => (self.heap_offset, self.heap_len),
            Segment::Registered(_) => return None,
        };
        let end = loc.offset.checked_add(len)?;
        if end > segment_len {
            return None;
        }
        let base = if loc.rank() == self.rank {
            self.base as usize
        } else {
            self.peer_bases.get(loc.rank() as usize)?.base
        };
        // Every rank's part starts the same pad after its base (`common_pad`), and a
        // mapping keeps the offset within the page.
        Some(base + (start + loc.offset) as usize)
    }

    fn abort(&self, message: &str) -> ! {
        // One write: simultaneous aborts must not interleave.
        let line = format!("gaspar: rank {} aborted the job: {message}\n", self.rank);
        let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
        // MPICH's MPI_Abort exits through the at-exit hooks: this rank means to end the
        // job, so the hook for a rank that did not must stay quiet.
        LIVE_RANK.store(-1, Ordering::Release);
        // SAFETY: MPI_Abort may be called at any time after init.
        unsafe { ffi::MPI_Abort(self.comm, 1) };
        std::process::exit(1)
    }

    fn end_job(&self, status: i32, line: Option<&str>) -> ! {
        if let Some(line) = line {
            crate::error::report(line);
        }
        // MPICH's MPI_Abort exits through the at-exit hooks, and `_exit` skips them where
        // MPI_Abort returns: either way the hook for a rank that did not mean to end the
        // job must stay quiet.
        LIVE_RANK.store(-1, Ordering::Release);
        // SAFETY: MPI_Abort may be called at any time after init.
        unsafe {
            ffi::MPI_Abort(self.comm, status);
            nix::libc::_exit(status)
        }
    }

    fn job_aborted(&self) -> bool {
        // MPI_Abort ends every rank at once: a rank that runs was not aborted.
        false
    }

    fn wait(
        &self,
        _watched: u32,
        _awaited: Option<u32>,
        _writers: super::Writers,
        ready: &mut dyn FnMut() -> Result<bool>,
    ) -> TransportResult<()> {
        // MPI ends the whole job when a rank fails or aborts, and offers nothing to sleep
        // on until a window's memory changes: poll (`Patience::poll_progressing`), driving
        // MPI's progress at each clock read (every few polls) and after each sleep: a
        // one-sided component that needs the target's help (OpenMPI's osc/ucx on dynamic
        // windows and atomics) would otherwise never finish another rank's access to this
        // one while it waits.
        Ok(self.patience.poll_progressing(
            &self.host.crowding(),
            self.host.own_bell(),
            ready,
            || self.progress(),
        )?)
    }

    fn split_team(
        &self,
        parent: &TransportTeam,
        color: Option<u32>,
        key: u32,
        team: Option<TransportTeam>,
    ) -> TransportResult<Option<TransportTeam>> {
        Ok(self.split_communicator(parent, color, key, team)?)
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
        self.on_mpi_thread()?;
        if self.finalized.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        // A collective call like the memory layer's (a barrier too): a rank still in
        // another collective call learns that this one finalized, instead of MPI matching
        // its collectives with finalize's (on shm, the barrier's finalizing flag does it).
        if !self.agree_u64(super::FINALIZE_AGREEMENT)? {
            // The others go on to exchange their calls to name them (gmem's `agree`).
            let mut calls = vec![0u64; self.procs as usize];
            self.allgather_u64(super::FINALIZE_AGREEMENT, &mut calls)?;
            return Err(Box::new(Error::finalize_during_collective()));
        }
        LIVE_RANK.store(-1, Ordering::Release);
        if let Some(mut thread) = self
            .progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            thread.stop();
        }
        {
            // No barrier of this rank's other threads runs in the host's window as it goes.
            let _serialized = COLLECTIVES.lock().unwrap_or_else(|p| p.into_inner());
            self.host.release()?;
        }
        let mut win = self.win;
        let mut dynamic = self.dynamic;
        let mut comm = self.comm;
        // SAFETY: every rank reached the barrier, so no operation targets the windows any
        // more; the handles are not used after this.
        unsafe {
            if self.has_dynamic() {
                check("MPI_Win_unlock_all", ffi::MPI_Win_unlock_all(dynamic))?;
                check("MPI_Win_free", ffi::MPI_Win_free(&mut dynamic))?;
            }
            check("MPI_Win_unlock_all", ffi::MPI_Win_unlock_all(win))?;
            check("MPI_Win_free", ffi::MPI_Win_free(&mut win))?;
            check("MPI_Comm_free", ffi::MPI_Comm_free(&mut comm))?;
            if self.we_initialized {
                check("MPI_Finalize", ffi::MPI_Finalize())?;
            }
        }
        Ok(())
    }
}
