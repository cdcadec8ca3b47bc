//! The MPI-3 RMA transport (cargo feature `mpi`), used when the process was started by
//! mpirun: one `MPI_Win_allocate` window holds each rank's starter memory and symmetric
//! heap, locked with `MPI_Win_lock_all` for the whole run.
//!
//! Status: first version. Put/get/copy/atomics/barrier/allgather work; regular strided
//! transfers are one MPI_Put/MPI_Get with nested-hvector datatypes; I/O vectors are one
//! MPI_Put/MPI_Get per segment with one flush. Registered user memory is attached to a
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
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use mpi::ffi;

mod team;

pub(crate) use self::team::Communicator;
use super::team::{TeamCall, TransportTeam};
use super::{
    segments_extent, AtomicOp, Location, Pattern, Run, SegmentSizes, Transport, TransportResult,
    Width,
};
use crate::addr::{Segment, REGISTRATION_SLOTS};
use crate::config;
use crate::error::{Error, Result};
use crate::transport::seqlock::RegionEntry;
use crate::transport::wait::{Patience, Sleep};

/// The heap starts on a 64 KiB boundary of the window.
const HEAP_ALIGN: u64 = 64 * 1024;
/// One registration-table entry: a [`RegionEntry`] (sequence, base, length, color), which
/// other ranks read with MPI_Get as four 8-byte words (`registered_span`).
const ENTRY_BYTES: u64 = std::mem::size_of::<RegionEntry>() as u64;
const _: () = assert!(
    ENTRY_BYTES == 4 * 8 && std::mem::align_of::<RegionEntry>() == 8,
    "a registration-table entry must be four 8-byte words, as registered_span reads it"
);
/// One entry per registration slot.
const TABLE_BYTES: u64 = ENTRY_BYTES * REGISTRATION_SLOTS as u64;

/// The alignment gaspar needs where its memory starts in a window: the heap begins a
/// multiple of 64 KiB after the starter memory, and heap blocks are promised
/// `HEAP_BLOCK_ALIGN`-byte alignment (which also covers the registration table's 8-byte
/// atomics). MPI promises none: OpenMPI's osc/sm returns bases 8 bytes past a cache line,
/// or at any byte for windows whose size is not a multiple of a page.
const WINDOW_ALIGN: u64 = crate::addr::HEAP_BLOCK_ALIGN;

/// How many bytes after this rank's window base the next `WINDOW_ALIGN` boundary lies.
fn alignment_pad(base: usize) -> u64 {
    (WINDOW_ALIGN - base as u64 % WINDOW_ALIGN) % WINDOW_ALIGN
}

/// The pad every rank skips at the start of its window (displacements are computed
/// locally for every target, so it must be the same everywhere), or an error when the
/// library aligned the ranks' windows differently.
fn common_pad(pads: &[u64]) -> Result<u64> {
    let first = pads.first().copied().unwrap_or(0);
    if pads.iter().all(|&p| p == first) {
        return Ok(first);
    }
    Err(Error::Environment(format!(
        "MPI_Win_allocate aligned the ranks' windows differently (bytes to the next \
         {WINDOW_ALIGN}-byte boundary, by rank: {pads:?}); gaspar needs the same alignment \
         on every rank"
    )))
}
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

    pub(super) fn status_ignore() -> *mut ffi::MPI_Status {
        // SAFETY: as above.
        unsafe { ffi::RSMPI_STATUS_IGNORE }
    }

    pub(super) fn thread_multiple() -> std::ffi::c_int {
        // SAFETY: as above.
        unsafe { ffi::RSMPI_THREAD_MULTIPLE }
    }
}

/// The MPI tool interface (MPI_T), which may be used before MPI is initialized. It stays
/// initialized once started: MPICH 4.0 crashes in MPI_Init after an MPI_T_finalize.
fn tool_interface() -> bool {
    let mut provided: c_int = 0;
    // SAFETY: MPI_T_init_thread may be called at any time, also before MPI_Init, and
    // writes one int.
    unsafe { ffi::MPI_T_init_thread(constant::thread_multiple(), &mut provided) == 0 }
}

/// A control variable of the MPI tool interface, by name (MPI_T must be initialized).
struct ControlVariable {
    handle: ffi::MPI_T_cvar_handle,
    count: c_int,
}

impl ControlVariable {
    /// The variable `name`, or `None` when this MPI library has none of that name.
    fn find(name: &std::ffi::CStr) -> Option<ControlVariable> {
        let mut index: c_int = 0;
        let mut handle: ffi::MPI_T_cvar_handle = std::ptr::null_mut();
        let mut count: c_int = 0;
        // SAFETY: `name` is NUL-terminated; every out-pointer is a valid local; the
        // variables gaspar asks for are not bound to an MPI object (null object handle).
        let found = unsafe {
            ffi::MPI_T_cvar_get_index(name.as_ptr(), &mut index) == 0
                && ffi::MPI_T_cvar_handle_alloc(
                    index,
                    std::ptr::null_mut(),
                    &mut handle,
                    &mut count,
                ) == 0
        };
        found.then_some(ControlVariable { handle, count })
    }

    /// The value of an integer variable.
    fn read_int(&self) -> Option<c_int> {
        let mut value: c_int = 0;
        // SAFETY: an integer variable of count 1 writes one int.
        let code = unsafe { ffi::MPI_T_cvar_read(self.handle, (&mut value as *mut c_int).cast()) };
        (code == 0 && self.count == 1).then_some(value)
    }

    /// The value of a string variable.
    fn read_string(&self) -> Option<String> {
        // `count` is the string's length; room for more in case the library counts less.
        let mut buffer = vec![0u8; self.count.max(0) as usize + 4096];
        // SAFETY: a string variable writes at most `count` characters and a NUL into the
        // buffer, which is longer.
        let code = unsafe { ffi::MPI_T_cvar_read(self.handle, buffer.as_mut_ptr().cast()) };
        let text = std::ffi::CStr::from_bytes_until_nul(&buffer).ok()?;
        (code == 0).then(|| text.to_string_lossy().into_owned())
    }

    /// Sets a string variable.
    fn write_string(&self, value: &std::ffi::CStr) -> bool {
        // SAFETY: a NUL-terminated string for a string variable.
        unsafe { ffi::MPI_T_cvar_write(self.handle, value.as_ptr().cast()) == 0 }
    }

    /// Sets an integer variable.
    fn write_int(&self, value: c_int) -> bool {
        // SAFETY: one int for an integer variable.
        unsafe { ffi::MPI_T_cvar_write(self.handle, (&value as *const c_int).cast()) == 0 }
    }
}

impl Drop for ControlVariable {
    fn drop(&mut self) {
        // SAFETY: a handle allocated by `find`, freed once.
        unsafe { ffi::MPI_T_cvar_handle_free(&mut self.handle) };
    }
}

/// MPICH completes one-sided operations only while the target is inside an MPI call,
/// unless its asynchronous progress thread runs (`MPIR_CVAR_ASYNC_PROGRESS`): gaspar's
/// operations must complete whatever the target does, so it switches that thread on
/// through the MPI tool interface before initializing MPI, unless the user set the
/// variable. Libraries without the variable (OpenMPI, whose osc/sm needs no help) are left
/// alone. Best effort: any failure leaves the library's default.
fn enable_async_progress() {
    const NAME: &std::ffi::CStr = c"MPIR_CVAR_ASYNC_PROGRESS";
    if std::env::var_os(NAME.to_str().expect("ASCII")).is_some() || !tool_interface() {
        return;
    }
    if ControlVariable::find(NAME).is_some_and(|v| v.write_int(1)) {
        tracing::debug!("MPICH asynchronous progress switched on");
    }
}

/// OpenMPI 4.1's default one-sided component on one host, osc/rdma, crashes the target of
/// a 64-bit MPI_Compare_and_swap (in the shared-memory BTL's emulated atomics), which
/// gaspar's atomics and ARMCI's locks use. So when a process of an OpenMPI job loads
/// gaspar and the user has not chosen the component, gaspar adds osc/rdma to the
/// components OpenMPI excludes, before MPI is initialized: OpenMPI then picks osc/sm on
/// one host (osc/ucx across hosts, when the system allows it). This runs when the library
/// is loaded (an ELF constructor), because a C program that links libarmci may call
/// MPI_Init itself, before any gaspar call.
///
/// "Chosen" means: `OMPI_MCA_osc` in the environment (which is also how mpirun passes
/// `--mca osc X` to its ranks), or an `osc` setting in OpenMPI's parameter files that
/// lists components to use. A list of components to exclude (Debian's
/// /etc/openmpi/openmpi-mca-params.conf has `osc = ^ucx,pt2pt`) is kept and extended.
/// The setting goes through the MPI tool interface, which reads it exactly as MPI_Init
/// will (environment, parameter files, defaults). Where it is chosen and still allows
/// osc/rdma, [`refuse_broken_component`] stops the job with what to pass.
extern "C" fn steer_openmpi_away_from_rdma() {
    if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_none()
        || std::env::var_os("OMPI_MCA_osc").is_some()
    {
        return;
    }
    let mut initialized: c_int = 0;
    // SAFETY: MPI_Initialized may be called at any time and writes one int.
    if unsafe { ffi::MPI_Initialized(&mut initialized) } != 0 || initialized != 0 {
        return;
    }
    if !tool_interface() {
        return;
    }
    let Some(osc) = ControlVariable::find(c"osc") else {
        return;
    };
    let Some(current) = osc.read_string() else {
        return;
    };
    if let Some(steered) = exclude_rdma(&current) {
        let steered = std::ffi::CString::new(steered).expect("no NUL in a component list");
        osc.write_string(&steered);
    }
}

/// The component selection that excludes osc/rdma in addition to what `current` (OpenMPI's
/// `osc` setting) excludes, or `None` when `current` names components to use (the user's
/// choice) or already excludes osc/rdma.
fn exclude_rdma(current: &str) -> Option<String> {
    let current = current.trim();
    if current.is_empty() {
        return Some("^rdma".to_string());
    }
    let excluded = current.strip_prefix('^')?;
    if excluded.split(',').any(|c| c.trim() == "rdma") {
        return None;
    }
    Some(format!("^{excluded},rdma"))
}

/// The ELF constructor that runs [`steer_openmpi_away_from_rdma`] when gaspar is loaded.
#[used]
#[link_section = ".init_array"]
static STEER_OPENMPI_AT_LOAD: extern "C" fn() = steer_openmpi_away_from_rdma;

/// Once MPI is initialized: an error saying what to pass when this job's windows would
/// be served by OpenMPI 4's osc/rdma (see [`steer_openmpi_away_from_rdma`]), which the
/// user chose or which the program's own MPI_Init selected before gaspar could steer.
/// osc/rdma serves them when its component is open (its parameters exist only then) and
/// its priority beats osc/sm's 100, as its default (101) does.
fn refuse_broken_component() -> Result<()> {
    if !library_version().starts_with("Open MPI v4.") || !tool_interface() {
        return Ok(());
    }
    let rdma_priority = ControlVariable::find(c"osc_rdma_priority").and_then(|v| v.read_int());
    if !rdma_priority.is_some_and(|p| p >= 100) {
        return Ok(());
    }
    let setting = ControlVariable::find(c"osc")
        .and_then(|v| v.read_string())
        .unwrap_or_default();
    Err(Error::Environment(format!(
        "OpenMPI's one-sided component osc/rdma (allowed by its setting `osc = {setting}`) \
         crashes on gaspar's 64-bit compare-and-swap: pass `--mca osc sm` to mpirun on one \
         host, or `--mca osc ucx` across hosts"
    )))
}

/// The MPI library's version string (MPI_Get_library_version may be called at any time).
fn library_version() -> String {
    // SAFETY: a constant the bindings' shim initializes at load time.
    let max = unsafe { ffi::RSMPI_MAX_LIBRARY_VERSION_STRING }.max(0) as usize;
    let mut buffer = vec![0u8; max + 1];
    let mut len: c_int = 0;
    // SAFETY: the buffer holds MPI_MAX_LIBRARY_VERSION_STRING characters.
    let code = unsafe { ffi::MPI_Get_library_version(buffer.as_mut_ptr().cast(), &mut len) };
    if code != 0 {
        return String::new();
    }
    buffer.truncate(len.clamp(0, max as c_int) as usize);
    String::from_utf8_lossy(&buffer).into_owned()
}

/// Serializes the collectives that several threads of this rank call at once (MPI forbids
/// concurrent collectives on one communicator); each counts as one collective of the rank.
static COLLECTIVES: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The rank of this process's live (started, not finalized) mpi transport, or -1.
static LIVE_RANK: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(-1);
/// The status the job ends with when a live rank exits: 101 after a panic (Rust's panic
/// status, as the launcher reports it), 1 otherwise.
static EXIT_STATUS: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(1);

/// At process exit: a rank that started the transport and did not finalize ends the whole
/// job with a message, as gaspar's launcher reports it, instead of leaving the other ranks
/// waiting or (under MPI libraries that do not check, MPICH) letting the job succeed.
extern "C" fn exit_without_finalize() {
    let rank = LIVE_RANK.load(Ordering::Acquire);
    if rank < 0 {
        return;
    }
    let status = EXIT_STATUS.load(Ordering::Acquire);
    if status == 1 {
        // One write: ranks' messages must not interleave.
        let line = format!("gaspar: rank {rank} exited without finalizing; ending the job\n");
        let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
    }
    let mut finalized: c_int = 0;
    // SAFETY: MPI_Finalized may be called at any time; MPI_Abort only before MPI_Finalize
    // (a program that finalized MPI under a live transport just fails).
    unsafe {
        ffi::MPI_Finalized(&mut finalized);
        if finalized == 0 {
            ffi::MPI_Abort(constant::comm_world(), status);
        }
        nix::libc::_exit(status);
    }
}

#[cfg(target_endian = "big")]
compile_error!("the mpi transport's atomics assume a little-endian target");

/// Marks an RMA call on one of gaspar's windows on the fast paths. The windows run under
/// MPI_ERRORS_ARE_FATAL (MPI's default for windows, set again in `start` to make it
/// explicit): a failing call ends the job inside MPI with MPI's message and never
/// returns, so a return code is always MPI_SUCCESS and there is nothing to branch on.
/// Debug builds verify it.
#[inline(always)]
fn succeeded(call: &'static str, code: c_int) {
    debug_assert_eq!(code, 0, "{call} returned under MPI_ERRORS_ARE_FATAL");
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

/// Whether the ranks of `comm` on this host outnumber the cores they may run on (the
/// union of their affinity masks): then a rank's wait gives its core away (see
/// [`Patience`]) and collectives wait in gaspar's waits rather than in MPI's spinning
/// ones. Collective over `comm`.
///
/// # Safety
/// `comm` is a live communicator.
unsafe fn host_crowded(comm: ffi::MPI_Comm) -> Result<bool> {
    use super::wait::{affinity_mask, cores_in, AFFINITY_WORDS};
    let mine = affinity_mask();
    let mut union = [0u64; AFFINITY_WORDS];
    let (mut host, mut ranks_here): (ffi::MPI_Comm, c_int) = (constant::comm_null(), 0);
    // SAFETY: `comm` is live (caller's contract); the host communicator is freed here;
    // both masks hold AFFINITY_WORDS u64s.
    unsafe {
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
        check("MPI_Comm_size", ffi::MPI_Comm_size(host, &mut ranks_here))?;
        let reduced = ffi::MPI_Allreduce(
            mine.as_ptr().cast(),
            union.as_mut_ptr().cast(),
            AFFINITY_WORDS as c_int,
            constant::uint64(),
            constant::bor(),
            host,
        );
        ffi::MPI_Comm_free(&mut host);
        check("MPI_Allreduce", reduced)?;
    }
    Ok(ranks_here as usize > cores_in(&union))
}

fn check(call: &'static str, code: c_int) -> Result<()> {
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

/// The puts that completed only locally (MPI_Put + flush_local) and that no flush has
/// completed at their target yet. MPI orders neither a put after a put nor a get after a
/// put to the same target (only accumulates among themselves), so before the next
/// operation on a target's memory its pending puts are completed there with
/// MPI_Win_flush: the transport's order promise then holds on every one-sided component,
/// not only on those (osc/sm) that happen to complete a put at once. `total` is the fast
/// paths' one check (zero: nothing to do); the counts are changed under `flushing`, so
/// that threads sharing the transport neither lose a put nor count one twice.
struct Unflushed {
    total: AtomicU64,
    by_rank: Box<[AtomicU64]>,
    flushing: std::sync::Mutex<()>,
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
    /// The puts that completed only locally, by target rank.
    unflushed: Unflushed,
    we_initialized: bool,
    finalized: AtomicBool,
    /// When MPI runs below MPI_THREAD_MULTIPLE: its level, and the only thread that may
    /// make MPI calls through this transport.
    single_thread: Option<(c_int, std::thread::ThreadId)>,
    /// How this rank waits: polls, then backs off.
    patience: &'static Patience,
    /// The job's ranks on this host outnumber their cores: collectives wait in
    /// `patience` (nonblocking MPI collectives, tested until done) rather than in MPI.
    crowded: bool,
}

// SAFETY: MPI runs at MPI_THREAD_MULTIPLE, so its handles may be used from any thread, or
// (a program that initialized MPI at a lower level) every method refuses threads other
// than the one that started the transport (`on_mpi_thread`); `base` points into the
// window, which lives until finalize.
unsafe impl Send for MpiTransport {}
// SAFETY: as above.
unsafe impl Sync for MpiTransport {}

impl MpiTransport {
    /// Joins the MPI job (initializing MPI unless the program already did).
    pub fn start() -> Result<MpiTransport> {
        let (starter_len, heap_len) = config::segment_sizes()?;
        let heap_offset = starter_len.div_ceil(HEAP_ALIGN) * HEAP_ALIGN;
        let table_offset = (heap_offset + heap_len).div_ceil(64) * 64;
        // Room for the alignment pad; a whole number of pages, so that libraries which
        // place the ranks' windows one after another keep them equally aligned.
        let total = table_offset
            .checked_add(TABLE_BYTES + RUNTIME_WORDS_BYTES + WINDOW_ALIGN)
            .and_then(|t| t.checked_next_multiple_of(4096))
            .ok_or(Error::LengthOverflow {
                what: "window size",
            })?;
        let mut initialized: c_int = 0;
        // SAFETY: MPI_Initialized may be called at any time and writes one int.
        check("MPI_Initialized", unsafe {
            ffi::MPI_Initialized(&mut initialized)
        })?;
        let we_initialized = initialized == 0;
        if we_initialized {
            enable_async_progress();
            let mut provided: c_int = 0;
            // SAFETY: MPI is not initialized; null argc/argv are allowed by MPI-2 and later.
            check("MPI_Init_thread", unsafe {
                ffi::MPI_Init_thread(
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    constant::thread_multiple(),
                    &mut provided,
                )
            })?;
        }
        let mut level: c_int = 0;
        // SAFETY: MPI is initialized; writes one int.
        check("MPI_Query_thread", unsafe {
            ffi::MPI_Query_thread(&mut level)
        })?;
        if let Err(broken) = refuse_broken_component() {
            if we_initialized {
                // Every rank finds the same settings and ends MPI here, before any window.
                // SAFETY: MPI was initialized above and nothing of gaspar's is open.
                unsafe { ffi::MPI_Finalize() };
            }
            return Err(broken);
        }
        let single_thread = if level >= constant::thread_multiple() {
            None
        } else if we_initialized {
            return Err(Error::invalid(
                "mpi transport",
                format!("this MPI library provides thread level {level}, not MPI_THREAD_MULTIPLE"),
            ));
        } else {
            tracing::warn!(
                level,
                "MPI was initialized below MPI_THREAD_MULTIPLE: gaspar may be used only from \
                 this thread"
            );
            Some((level, std::thread::current().id()))
        };
        let mut comm = constant::comm_null();
        let crowded: bool;
        let (mut rank, mut procs): (c_int, c_int) = (0, 0);
        let mut base: *mut u8 = std::ptr::null_mut();
        let mut win = constant::win_null();
        let mut dynamic = constant::win_null();
        // SAFETY: MPI is initialized; every out-pointer is a valid local; the window size
        // fits MPI_Aint (checked above against overflow, and it is a byte count of memory
        // this rank will map).
        unsafe {
            check(
                "MPI_Comm_dup",
                ffi::MPI_Comm_dup(constant::comm_world(), &mut comm),
            )?;
            check("MPI_Comm_rank", ffi::MPI_Comm_rank(comm, &mut rank))?;
            check("MPI_Comm_size", ffi::MPI_Comm_size(comm, &mut procs))?;
            // Each rank's window on its own pages (osc/sm, MPICH), equally aligned.
            let mut info = constant::info_null();
            check("MPI_Info_create", ffi::MPI_Info_create(&mut info))?;
            check(
                "MPI_Info_set",
                ffi::MPI_Info_set(info, c"alloc_shared_noncontig".as_ptr(), c"true".as_ptr()),
            )?;
            let allocated = ffi::MPI_Win_allocate(
                total as ffi::MPI_Aint,
                1,
                info,
                comm,
                &mut base as *mut *mut u8 as *mut std::ffi::c_void,
                &mut win,
            );
            ffi::MPI_Info_free(&mut info);
            check("MPI_Win_allocate", allocated)?;
            check(
                "MPI_Win_lock_all",
                ffi::MPI_Win_lock_all(ffi::MPI_MODE_NOCHECK as c_int, win),
            )?;
            // MPI's default for windows, made explicit: the fast paths rely on it (see
            // `succeeded`).
            check(
                "MPI_Win_set_errhandler",
                ffi::MPI_Win_set_errhandler(win, constant::errors_are_fatal()),
            )?;
            // Not every one-sided component has dynamic windows (OpenMPI's osc/sm has
            // not): without one, registration reports an error and all else works.
            ffi::MPI_Comm_set_errhandler(comm, constant::errors_return());
            if ffi::MPI_Win_create_dynamic(constant::info_null(), comm, &mut dynamic) == 0 {
                check(
                    "MPI_Win_set_errhandler",
                    ffi::MPI_Win_set_errhandler(dynamic, constant::errors_are_fatal()),
                )?;
                check(
                    "MPI_Win_lock_all",
                    ffi::MPI_Win_lock_all(ffi::MPI_MODE_NOCHECK as c_int, dynamic),
                )?;
            } else {
                dynamic = constant::win_null();
            }
            ffi::MPI_Comm_set_errhandler(comm, constant::errors_are_fatal());
            let mut pads = vec![0u64; procs as usize];
            let pad = alignment_pad(base as usize);
            allgather_words(comm, pad, &mut pads)?;
            common_pad(&pads)?;
            crowded = host_crowded(comm)?;
            // An empty registration table and a free accumulate lock (the window's memory
            // is not zeroed by MPI).
            std::ptr::write_bytes(
                base.add((pad + table_offset) as usize),
                0,
                (TABLE_BYTES + RUNTIME_WORDS_BYTES) as usize,
            );
        }
        static EXIT_CHECK: std::sync::Once = std::sync::Once::new();
        EXIT_CHECK.call_once(|| {
            // SAFETY: registers a function without arguments that touches only statics.
            unsafe { nix::libc::atexit(exit_without_finalize) };
        });
        LIVE_RANK.store(i64::from(rank), Ordering::Release);
        let pad = alignment_pad(base as usize);
        let transport = MpiTransport {
            rank: rank as u32,
            procs: procs as u32,
            comm,
            win,
            dynamic,
            table_offset: pad + table_offset,
            attached: std::sync::Mutex::new(vec![None; REGISTRATION_SLOTS]),
            base,
            starter_offset: pad,
            starter_len,
            heap_offset: pad + heap_offset,
            heap_len,
            fast_reach: match single_thread {
                Some(_) => [0, 0],
                None => [starter_len, heap_len].map(|len| len.min(i32::MAX as u64) + 1),
            },
            unflushed: Unflushed {
                total: AtomicU64::new(0),
                by_rank: (0..procs).map(|_| AtomicU64::new(0)).collect(),
                flushing: std::sync::Mutex::new(()),
            },
            we_initialized,
            finalized: AtomicBool::new(false),
            single_thread,
            patience: Patience::of_process(crowded, Sleep::BackOff)?,
            crowded,
        };
        transport.barrier()?;
        tracing::debug!(rank, procs, total, "mpi transport attached");
        Ok(transport)
    }

    /// Refuses a call from a thread other than the one that started the transport when MPI
    /// runs below MPI_THREAD_MULTIPLE (one well-predicted branch otherwise).
    #[inline]
    fn on_mpi_thread(&self) -> Result<()> {
        match self.single_thread {
            None => Ok(()),
            Some((level, owner)) if std::thread::current().id() != owner => {
                Err(Error::WrongThread { level })
            }
            Some(_) => Ok(()),
        }
    }

    /// Waits in this rank's [`Patience`] until `request` (of a nonblocking collective)
    /// completes; every poll is an MPI_Test, which makes progress.
    fn complete(&self, mut request: ffi::MPI_Request) -> Result<()> {
        self.patience.poll_backing_off(|| {
            let mut done: c_int = 0;
            // SAFETY: a live request of this rank, tested until it completes.
            check("MPI_Test", unsafe {
                ffi::MPI_Test(&mut request, &mut done, constant::status_ignore())
            })?;
            Ok(done != 0)
        })
    }

    /// MPI_Barrier on the transport's communicator; when the host is crowded, an
    /// MPI_Ibarrier completed in this rank's patience.
    fn barrier_waiting(&self) -> Result<()> {
        if !self.crowded {
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

    /// [`allgather_words`] on the transport's communicator; when the host is crowded, an
    /// MPI_Iallgather completed in this rank's patience.
    fn allgather_waiting(&self, value: u64, out: &mut [u64]) -> Result<()> {
        if !self.crowded {
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

    /// Records a put to `rank` that completed only locally (see [`Unflushed`]).
    #[inline]
    fn put_left_unflushed(&self, rank: u32) {
        if let Some(count) = self.unflushed.by_rank.get(rank as usize) {
            count.fetch_add(1, Ordering::AcqRel);
            self.unflushed.total.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Before an operation on `rank`'s memory: completes there every earlier put to `rank`
    /// that completed only locally, so that MPI cannot apply the operation before them.
    /// One load and a branch while no put is pending (the rest is out of line).
    #[inline(always)]
    fn order_after_puts(&self, rank: u32) {
        if self.unflushed.total.load(Ordering::Acquire) != 0 {
            self.complete_puts(Some(rank), false);
        }
    }

    /// MPI_Win_flush to `rank` (every rank: `None`) of every window, when a put is pending
    /// there or `always`; then the pending counts drop by what the flush covered.
    #[inline(never)]
    fn complete_puts(&self, rank: Option<u32>, always: bool) {
        // Puts pending elsewhere only: nothing to do, without the lock. (This thread's own
        // puts to `rank` were counted there before they were counted in the total.)
        if let (Some(r), false) = (rank, always) {
            let count = self.unflushed.by_rank.get(r as usize);
            if count.map_or(true, |c| c.load(Ordering::Acquire) == 0) {
                return;
            }
        }
        let _flushing = self
            .unflushed
            .flushing
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let counts = match rank {
            Some(r) => self.unflushed.by_rank.get(r as usize..=r as usize),
            None => Some(&self.unflushed.by_rank[..]),
        }
        .unwrap_or_default();
        let covered: Vec<u64> = counts.iter().map(|c| c.load(Ordering::Acquire)).collect();
        if !always && covered.iter().all(|&c| c == 0) {
            return;
        }
        for win in [self.win, self.dynamic] {
            if win == constant::win_null() {
                continue;
            }
            // SAFETY: the windows are locked for the whole run and run under
            // MPI_ERRORS_ARE_FATAL (see `succeeded`).
            unsafe {
                match rank {
                    Some(r) => succeeded("MPI_Win_flush", ffi::MPI_Win_flush(r as c_int, win)),
                    None => succeeded("MPI_Win_flush_all", ffi::MPI_Win_flush_all(win)),
                }
            }
        }
        for (count, covered) in counts.iter().zip(covered) {
            count.fetch_sub(covered, Ordering::AcqRel);
            self.unflushed.total.fetch_sub(covered, Ordering::AcqRel);
        }
    }

    /// Window displacement of `len` bytes at `loc` in the allocated window (starter memory
    /// or heap), checked against its segment.
    #[inline]
    fn disp(&self, loc: Location, len: u64) -> Result<ffi::MPI_Aint> {
        if matches!(loc.segment, Segment::Registered(_)) {
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
        let slot = match loc.segment {
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

    /// `span` of registered memory: the owner's table entry, read consistently.
    #[inline(never)]
    fn registered_span(&self, loc: Location, slot: u8) -> Result<Span> {
        let entry = (self.table_offset + ENTRY_BYTES * u64::from(slot)) as ffi::MPI_Aint;
        let (base, len) = loop {
            let mut fields = [0u64; 4];
            self.get_bytes(
                self.win,
                loc.rank,
                entry,
                bytemuck::cast_slice_mut(&mut fields),
            )?;
            self.flush_local(loc.rank)?;
            let mut again = [0u64; 1];
            self.get_bytes(
                self.win,
                loc.rank,
                entry,
                bytemuck::cast_slice_mut(&mut again),
            )?;
            self.flush_local(loc.rank)?;
            // A consistent snapshot: no rewrite in progress (odd) or in between.
            if fields[0] % 2 == 0 && again[0] == fields[0] {
                break (fields[1], fields[2]);
            }
        };
        if len == 0 {
            return Err(Error::NotRegistered { ga: loc.ga });
        }
        Ok(Span {
            win: self.dynamic,
            start: base,
            len,
        })
    }

    /// The common case of [`target`](Self::target), in a few instructions: `len` bytes of
    /// starter memory or heap that end before [`fast_reach`](Self::fast_reach). Returns
    /// the window displacement and the MPI count; `None` sends the caller to its general
    /// path, which handles everything else or reports what is wrong.
    #[inline]
    fn heap_target(&self, loc: Location, len: usize) -> Option<(ffi::MPI_Aint, c_int)> {
        let (start, reach) = match loc.segment {
            Segment::Starter => (self.starter_offset, self.fast_reach[0]),
            Segment::Heap => (self.heap_offset, self.fast_reach[1]),
            Segment::Registered(_) => return None,
        };
        // The offset is below 2^38 (its bit field) and `len` a slice length: no overflow.
        // A reach of at most `i32::MAX` bounds `len` too, so it is a valid MPI count.
        (loc.offset + (len as u64) < reach)
            .then_some(((start + loc.offset) as ffi::MPI_Aint, len as c_int))
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
        self.put_bytes(span.win, dst.rank, span.disp(dst, offset, run.len)?, piece)
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
        self.get_bytes(span.win, src.rank, disp, piece)
    }

    /// One MPI_Put of `origin` (relative to `base`) into `target` at `dst`, whose blocks
    /// end within `extent` bytes; then a local flush.
    ///
    /// # Safety
    /// Every block of `origin` is readable memory when addressed from `base`.
    unsafe fn put_typed(
        &self,
        dst: Location,
        base: *const u8,
        origin: &Datatype,
        target: &Datatype,
        extent: u64,
    ) -> Result<()> {
        let disp = self.disp(dst, extent)?;
        self.order_after_puts(dst.rank);
        // SAFETY: the origin blocks are readable (caller's contract); the target blocks
        // end within `extent` bytes, bounds-checked against the segment; both types live
        // until after the flush.
        check("MPI_Put", unsafe {
            ffi::MPI_Put(
                base.cast(),
                1,
                origin.0,
                dst.rank as c_int,
                disp,
                1,
                target.0,
                self.win,
            )
        })?;
        self.flush_local(dst.rank)?;
        self.put_left_unflushed(dst.rank);
        Ok(())
    }

    /// One MPI_Get of `target` at `src` into `origin` (relative to `base`), as
    /// [`put_typed`](Self::put_typed).
    ///
    /// # Safety
    /// Every block of `origin` is writable memory when addressed from `base`.
    unsafe fn get_typed(
        &self,
        src: Location,
        base: *mut u8,
        origin: &Datatype,
        target: &Datatype,
        extent: u64,
    ) -> Result<()> {
        let disp = self.disp(src, extent)?;
        self.order_after_puts(src.rank);
        // SAFETY: as in `put_typed`, writing into the origin blocks.
        check("MPI_Get", unsafe {
            ffi::MPI_Get(
                base.cast(),
                1,
                origin.0,
                src.rank as c_int,
                disp,
                1,
                target.0,
                self.win,
            )
        })?;
        self.flush_local(src.rank)
    }

    /// `put_flushed` for any segment and size, or the error that stops it.
    #[inline(never)]
    fn put_flushed_anywhere(&self, dst: Location, src: &[u8]) -> Result<()> {
        self.on_mpi_thread()?;
        let (win, disp) = self.target(dst, src.len() as u64)?;
        self.order_after_puts(dst.rank);
        self.put_bytes(win, dst.rank, disp, src)?;
        // A flush of the one window used completes the put at the target (and locally).
        // SAFETY: the window is locked for the whole run.
        check("MPI_Win_flush", unsafe {
            ffi::MPI_Win_flush(dst.rank as c_int, win)
        })
    }

    /// `get` for any segment and size, or the error that stops it.
    #[inline(never)]
    fn get_anywhere(&self, src: Location, dst: &mut [u8]) -> Result<()> {
        self.on_mpi_thread()?;
        let (win, disp) = self.target(src, dst.len() as u64)?;
        self.order_after_puts(src.rank);
        self.get_bytes(win, src.rank, disp, dst)?;
        // SAFETY: the window is locked for the whole run.
        check("MPI_Win_flush_local", unsafe {
            ffi::MPI_Win_flush_local(src.rank as c_int, win)
        })
    }

    /// `atomic` for any address, or the error that stops it.
    #[inline(never)]
    fn atomic_anywhere(&self, target: Location, width: Width, op: AtomicOp) -> Result<u64> {
        self.on_mpi_thread()?;
        let bytes = u64::from(width.bytes());
        // A mask, not `%`: a 64-bit division costs tens of cycles.
        if target.offset & (bytes - 1) != 0 {
            return Err(Error::MisalignedAtomic {
                ga: target.ga,
                width: width.bytes(),
            });
        }
        if matches!(target.segment, Segment::Registered(_)) {
            return Err(unsupported_registered(target));
        }
        let disp = self.span(target)?.disp(target, target.offset, bytes)?;
        self.order_after_puts(target.rank);
        self.atomic_at(target.rank, disp, width, op)
    }

    /// `op` on the word at `disp` of `rank`'s window, checked by the caller.
    #[inline(always)]
    fn atomic_at(&self, rank: u32, disp: ffi::MPI_Aint, width: Width, op: AtomicOp) -> Result<u64> {
        let (operand, mpi_op) = match op {
            AtomicOp::CompareSwap { expected, new } => {
                return self.compare_and_swap(rank, disp, width, expected, new)
            }
            AtomicOp::Swap(v) | AtomicOp::Store(v) => return self.swap(rank, disp, width, v),
            AtomicOp::Add(v) => (v, constant::sum()),
            AtomicOp::Xor(v) => (v, constant::bxor()),
            AtomicOp::Or(v) => (v, constant::bor()),
            AtomicOp::And(v) => (v, constant::band()),
            AtomicOp::Load => (0, constant::sum()),
        };
        self.fetch_and_op(rank, disp, width, operand, mpi_op)
    }

    /// Whether the dynamic window exists (see `start`).
    #[inline]
    fn has_dynamic(&self) -> bool {
        self.dynamic != constant::win_null()
    }

    /// This rank's registration-table entry for `slot`, in its own window memory.
    fn own_entry(&self, slot: u8) -> &RegionEntry {
        // SAFETY: the table lies inside this rank's window memory (allocated with room for
        // every slot), which lives until finalize; RegionEntry is four atomics, valid for
        // any bits, and 8-byte aligned (the table offset is a multiple of 64).
        unsafe {
            &*(self
                .base
                .add((self.table_offset + ENTRY_BYTES * u64::from(slot)) as usize)
                as *const RegionEntry)
        }
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

    /// MPI_Fetch_and_op + flush: `op` with `operand` on the `width`-byte word at `disp`.
    #[inline]
    fn fetch_and_op(
        &self,
        rank: u32,
        disp: ffi::MPI_Aint,
        width: Width,
        operand: u64,
        op: ffi::MPI_Op,
    ) -> Result<u64> {
        // Little-endian (checked at compile time below): the first 4 bytes of a u64 hold
        // its low u32, so one u64 serves both widths, and a 4-byte result leaves the
        // upper half of `result` zero.
        let mut result = 0u64;
        let datatype = match width {
            Width::W4 => constant::uint32(),
            Width::W8 => constant::uint64(),
        };
        // SAFETY: operand and result are valid u64 locals, as wide as either datatype;
        // the flush below completes the operation before they go out of scope.
        let code = unsafe {
            ffi::MPI_Fetch_and_op(
                (&operand as *const u64).cast(),
                (&mut result as *mut u64).cast(),
                datatype,
                rank as c_int,
                disp,
                op,
                self.win,
            )
        };
        succeeded("MPI_Fetch_and_op", code);
        // SAFETY: the window is locked for the whole run.
        succeeded("MPI_Win_flush", unsafe {
            ffi::MPI_Win_flush(rank as c_int, self.win)
        });
        Ok(result)
    }

    /// MPI_REPLACE has no portable shim in the bindings: a compare-and-swap loop.
    #[inline(never)]
    fn swap(&self, rank: u32, disp: ffi::MPI_Aint, width: Width, value: u64) -> Result<u64> {
        let mut seen = self.fetch_and_op(rank, disp, width, 0, constant::sum())?;
        loop {
            let old = self.compare_and_swap(rank, disp, width, seen, value)?;
            if old == seen {
                return Ok(old);
            }
            seen = old;
        }
    }

    /// MPI_Compare_and_swap + flush, little-endian as [`fetch_and_op`](Self::fetch_and_op).
    #[inline]
    fn compare_and_swap(
        &self,
        rank: u32,
        disp: ffi::MPI_Aint,
        width: Width,
        expected: u64,
        new: u64,
    ) -> Result<u64> {
        let mut result = 0u64;
        let datatype = match width {
            Width::W4 => constant::uint32(),
            Width::W8 => constant::uint64(),
        };
        // SAFETY: as in `fetch_and_op`.
        let code = unsafe {
            ffi::MPI_Compare_and_swap(
                (&new as *const u64).cast(),
                (&expected as *const u64).cast(),
                (&mut result as *mut u64).cast(),
                datatype,
                rank as c_int,
                disp,
                self.win,
            )
        };
        succeeded("MPI_Compare_and_swap", code);
        // SAFETY: the window is locked for the whole run.
        succeeded("MPI_Win_flush", unsafe {
            ffi::MPI_Win_flush(rank as c_int, self.win)
        });
        Ok(result)
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

/// A committed MPI datatype describing one side of a noncontiguous transfer, freed on drop.
struct Datatype(ffi::MPI_Datatype);

/// `v` as an MPI int count, or an error.
fn mpi_int(v: u64) -> Result<c_int> {
    c_int::try_from(v).map_err(|_| Error::LengthOverflow {
        what: "MPI datatype count",
    })
}

impl Datatype {
    /// `chunk` contiguous bytes repeated over `counts` levels `strides` bytes apart (nested
    /// hvectors); an error when a count or the chunk does not fit an MPI int.
    fn pattern(chunk: u64, counts: &[u64], strides: &[u64]) -> Result<Datatype> {
        let int = mpi_int;
        let mut current = constant::byte();
        let mut owned: Vec<ffi::MPI_Datatype> = Vec::new();
        let mut next = constant::byte();
        // SAFETY: each call creates a new datatype from a valid one; intermediate types
        // are freed below after the outermost one is committed (MPI keeps what it needs).
        unsafe {
            check(
                "MPI_Type_contiguous",
                ffi::MPI_Type_contiguous(int(chunk)?, current, &mut next),
            )?;
            owned.push(next);
            current = next;
            for (&count, &stride) in counts.iter().zip(strides) {
                check(
                    "MPI_Type_create_hvector",
                    ffi::MPI_Type_create_hvector(
                        int(count)?,
                        1,
                        stride as ffi::MPI_Aint,
                        current,
                        &mut next,
                    ),
                )?;
                owned.push(next);
                current = next;
            }
            check("MPI_Type_commit", ffi::MPI_Type_commit(&mut current))?;
            let outer = owned.pop().expect("at least the contiguous type");
            for mut t in owned {
                ffi::MPI_Type_free(&mut t);
            }
            Ok(Datatype(outer))
        }
    }

    /// Blocks of `lens[k]` bytes at byte displacements `disps[k]` (an hindexed type).
    fn indexed(lens: &[c_int], disps: &[ffi::MPI_Aint]) -> Result<Datatype> {
        let mut t = constant::byte();
        // SAFETY: both arrays have `lens.len()` entries, which fits an MPI int (checked).
        unsafe {
            check(
                "MPI_Type_create_hindexed",
                ffi::MPI_Type_create_hindexed(
                    mpi_int(lens.len() as u64)?,
                    lens.as_ptr(),
                    disps.as_ptr(),
                    constant::byte(),
                    &mut t,
                ),
            )?;
            check("MPI_Type_commit", ffi::MPI_Type_commit(&mut t))?;
        }
        Ok(Datatype(t))
    }
}

/// The two sides of a vectored transfer as hindexed datatypes: the origin's blocks at
/// `local[k]` (byte displacements from the origin buffer), the target's at `remote[k]`
/// (from the target displacement), `lens[k]` bytes each.
fn indexed_pair(
    lens: impl Iterator<Item = u64>,
    local: impl Iterator<Item = isize>,
    remote: &[u64],
) -> Result<(Datatype, Datatype)> {
    let lens = lens.map(mpi_int).collect::<Result<Vec<c_int>>>()?;
    let local: Vec<ffi::MPI_Aint> = local.map(|d| d as ffi::MPI_Aint).collect();
    let remote = remote
        .iter()
        .map(|&d| {
            ffi::MPI_Aint::try_from(d).map_err(|_| Error::LengthOverflow {
                what: "MPI displacement",
            })
        })
        .collect::<Result<Vec<ffi::MPI_Aint>>>()?;
    Ok((
        Datatype::indexed(&lens, &local)?,
        Datatype::indexed(&lens, &remote)?,
    ))
}

impl Drop for MpiTransport {
    fn drop(&mut self) {
        // Dropped unfinalized while unwinding: the job ends at exit with the panic status.
        if !self.finalized.load(Ordering::Acquire) && std::thread::panicking() {
            EXIT_STATUS.store(101, Ordering::Release);
        }
    }
}

impl Drop for Datatype {
    fn drop(&mut self) {
        // SAFETY: a committed datatype this value owns; operations using it were flushed.
        unsafe { ffi::MPI_Type_free(&mut self.0) };
    }
}

/// The remote extent of `runs` (one past the furthest byte after the remote location),
/// after checking that each run lies inside a local buffer of `local_len` bytes.
fn runs_extent(runs: &[Run], local_len: usize) -> Result<u64> {
    let mut extent = 0u64;
    for run in runs {
        let local_end = run.local.checked_add(run.len);
        let remote_end = run.remote.checked_add(run.len);
        match (local_end, remote_end) {
            (Some(l), Some(r)) if l <= local_len as u64 => extent = extent.max(r),
            (Some(_), Some(_)) => {
                return Err(Error::invalid(
                    "strided transfer",
                    "run outside the local buffer",
                ))
            }
            _ => return Err(Error::LengthOverflow { what: "run offset" }),
        }
    }
    Ok(extent)
}

fn unsupported_registered(loc: Location) -> Error {
    Error::AtomicUnsupported {
        ga: loc.ga,
        reason: "registered user memory is not supported on the mpi transport yet",
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
        self.on_mpi_thread()?;
        let (win, disp) = self.target(dst, src.len() as u64)?;
        self.order_after_puts(dst.rank);
        self.put_bytes(win, dst.rank, disp, src)?;
        self.flush_local(dst.rank)?;
        self.put_left_unflushed(dst.rank);
        Ok(())
    }

    #[inline]
    fn put_flushed(&self, dst: Location, src: &[u8]) -> TransportResult<()> {
        let Some((disp, count)) = self.heap_target(dst, src.len()) else {
            return Ok(self.put_flushed_anywhere(dst, src)?);
        };
        self.order_after_puts(dst.rank);
        // SAFETY: `src` is borrowed until the flush below; `heap_target` checked the range;
        // the window is locked for the whole run.
        let (put, flush) = unsafe {
            (
                put_piece(self.win, dst.rank, disp, src.as_ptr(), count),
                ffi::MPI_Win_flush(dst.rank as c_int, self.win),
            )
        };
        succeeded("MPI_Put", put);
        succeeded("MPI_Win_flush", flush);
        Ok(())
    }

    #[inline]
    fn get(&self, src: Location, dst: &mut [u8]) -> TransportResult<()> {
        let Some((disp, count)) = self.heap_target(src, dst.len()) else {
            return Ok(self.get_anywhere(src, dst)?);
        };
        self.order_after_puts(src.rank);
        // SAFETY: `dst` is borrowed until the flush below; `heap_target` checked the range;
        // the window is locked for the whole run.
        let (get, flush) = unsafe {
            (
                get_piece(self.win, src.rank, disp, dst.as_mut_ptr(), count),
                ffi::MPI_Win_flush_local(src.rank as c_int, self.win),
            )
        };
        succeeded("MPI_Get", get);
        succeeded("MPI_Win_flush_local", flush);
        Ok(())
    }

    /// One MPI_Put with hindexed datatypes on both sides (one message, not one per run);
    /// registered memory: one put per run.
    fn put_runs(&self, dst: Location, src: &[u8], runs: &[Run]) -> TransportResult<()> {
        self.on_mpi_thread()?;
        if matches!(dst.segment, Segment::Registered(_)) || runs.len() < 2 {
            let span = self.span(dst)?;
            self.order_after_puts(dst.rank);
            for &run in runs {
                self.put_run(&span, dst, src, run)?;
            }
            self.flush_local(dst.rank)?;
            self.put_left_unflushed(dst.rank);
            return Ok(());
        }
        let extent = runs_extent(runs, src.len())?;
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
        if matches!(src.segment, Segment::Registered(_)) || runs.len() < 2 {
            let span = self.span(src)?;
            self.order_after_puts(src.rank);
            for &run in runs {
                self.get_run(&span, src, dst, run)?;
            }
            return Ok(self.flush_local(src.rank)?);
        }
        let extent = runs_extent(runs, dst.len())?;
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
        if matches!(dst.segment, Segment::Registered(_)) {
            let span = self.span(dst)?;
            self.order_after_puts(dst.rank);
            span.disp(dst, dst.offset, extent)?;
            for (s, &o) in srcs.iter().zip(offsets) {
                self.put_bytes(
                    span.win,
                    dst.rank,
                    span.disp(dst, dst.offset + o, s.len() as u64)?,
                    s,
                )?;
            }
            self.flush_local(dst.rank)?;
            self.put_left_unflushed(dst.rank);
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
        if matches!(src.segment, Segment::Registered(_)) {
            let span = self.span(src)?;
            self.order_after_puts(src.rank);
            span.disp(src, src.offset, extent)?;
            for (d, &o) in dsts.iter_mut().zip(offsets) {
                let disp = span.disp(src, src.offset + o, d.len() as u64)?;
                self.get_bytes(span.win, src.rank, disp, d)?;
            }
            return Ok(self.flush_local(src.rank)?);
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

    /// One MPI_Put with a derived datatype on each side: one message, not one per chunk.
    fn put_pattern(&self, dst: Location, src: &[u8], pattern: &Pattern<'_>) -> TransportResult<()> {
        self.on_mpi_thread()?;
        let (_, remote_extent) = pattern.checked_extents(src.len())?;
        if matches!(dst.segment, Segment::Registered(_)) {
            // No datatypes into attached memory here: one put per chunk, one table read.
            let span = self.span(dst)?;
            self.order_after_puts(dst.rank);
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
            self.flush_local(dst.rank)?;
            self.put_left_unflushed(dst.rank);
            return Ok(());
        }
        let origin = Datatype::pattern(pattern.chunk, pattern.counts, pattern.local_strides)?;
        let target = Datatype::pattern(pattern.chunk, pattern.counts, pattern.remote_strides)?;
        // SAFETY: the origin type spans at most src.len() bytes of `src` (checked).
        unsafe { Ok(self.put_typed(dst, src.as_ptr(), &origin, &target, remote_extent)?) }
    }

    /// One MPI_Get with a derived datatype on each side.
    fn get_pattern(
        &self,
        src: Location,
        dst: &mut [u8],
        pattern: &Pattern<'_>,
    ) -> TransportResult<()> {
        self.on_mpi_thread()?;
        let (_, remote_extent) = pattern.checked_extents(dst.len())?;
        if matches!(src.segment, Segment::Registered(_)) {
            let span = self.span(src)?;
            self.order_after_puts(src.rank);
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
            return Ok(self.flush_local(src.rank)?);
        }
        let origin = Datatype::pattern(pattern.chunk, pattern.counts, pattern.local_strides)?;
        let target = Datatype::pattern(pattern.chunk, pattern.counts, pattern.remote_strides)?;
        // SAFETY: the origin type spans at most dst.len() bytes of `dst` (checked).
        unsafe { Ok(self.get_typed(src, dst.as_mut_ptr(), &origin, &target, remote_extent)?) }
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
            self.get(
                Location {
                    offset: src.offset + done,
                    ..src
                },
                piece,
            )?;
            self.put(
                Location {
                    offset: dst.offset + done,
                    ..dst
                },
                piece,
            )?;
            done += n;
        }
        Ok(())
    }

    #[inline]
    fn atomic(&self, target: Location, width: Width, op: AtomicOp) -> TransportResult<u64> {
        let bytes = width.bytes() as usize;
        let aligned = target.offset & (bytes as u64 - 1) == 0;
        match self.heap_target(target, bytes) {
            Some((disp, _)) if aligned => {
                self.order_after_puts(target.rank);
                Ok(self.atomic_at(target.rank, disp, width, op)?)
            }
            _ => Ok(self.atomic_anywhere(target, width, op)?),
        }
    }

    fn accumulate_lock(&self, rank: u32, op: AtomicOp) -> TransportResult<u64> {
        self.on_mpi_thread()?;
        // After the registration table: 8-byte aligned (the table starts on 64 bytes and
        // its length is a multiple of 8).
        let disp = (self.table_offset + TABLE_BYTES) as ffi::MPI_Aint;
        Ok(self.atomic_at(rank, disp, Width::W8, op)?)
    }

    fn flush(&self, rank: u32) -> TransportResult<()> {
        self.on_mpi_thread()?;
        if rank >= self.procs {
            return Err(Box::new(Error::RankOutOfRange {
                rank,
                procs: self.procs,
            }));
        }
        self.complete_puts(Some(rank), true);
        Ok(())
    }

    fn flush_all(&self) -> TransportResult<()> {
        self.on_mpi_thread()?;
        self.complete_puts(None, true);
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

    fn publish_region(&self, slot: u8, base: usize, len: u64, color: u32) -> TransportResult<()> {
        self.on_mpi_thread()?;
        if slot as usize >= REGISTRATION_SLOTS || len == 0 {
            return Err(Box::new(Error::invalid(
                "publish_region",
                "bad slot or empty region",
            )));
        }
        if !self.has_dynamic() {
            return Err(Box::new(Error::invalid(
                "register",
                "this MPI's one-sided component has no dynamic windows (OpenMPI's osc/sm has none; osc/ucx or osc/rdma do)",
            )));
        }
        let size = ffi::MPI_Aint::try_from(len).map_err(|_| Error::LengthOverflow {
            what: "registered length",
        })?;
        let mut attached = self.attached.lock().unwrap_or_else(|p| p.into_inner());
        // A region that grew is attached again at its new length.
        if let Some(old) = attached[slot as usize].take() {
            // SAFETY: `old` was attached to the dynamic window by this rank.
            check("MPI_Win_detach", unsafe {
                ffi::MPI_Win_detach(self.dynamic, old as *const std::ffi::c_void)
            })?;
        }
        // SAFETY: `register`'s contract keeps `base..base+len` allocated until it is
        // unregistered (retract_region detaches it first).
        check("MPI_Win_attach", unsafe {
            ffi::MPI_Win_attach(self.dynamic, base as *mut std::ffi::c_void, size)
        })?;
        attached[slot as usize] = Some(base);
        self.own_entry(slot)
            .write(base as u64, len, u64::from(color));
        // SAFETY: the window lives until finalize; this orders the table update with RMA.
        Ok(check("MPI_Win_sync", unsafe {
            ffi::MPI_Win_sync(self.win)
        })?)
    }

    fn retract_region(&self, slot: u8) -> TransportResult<()> {
        self.on_mpi_thread()?;
        if slot as usize >= REGISTRATION_SLOTS {
            return Err(Box::new(Error::invalid("retract_region", "bad slot")));
        }
        self.own_entry(slot).write(0, 0, 0);
        // SAFETY: as in `publish_region`.
        check("MPI_Win_sync", unsafe { ffi::MPI_Win_sync(self.win) })?;
        let mut attached = self.attached.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(old) = attached[slot as usize].take() {
            // SAFETY: `old` was attached to the dynamic window by this rank.
            check("MPI_Win_detach", unsafe {
                ffi::MPI_Win_detach(self.dynamic, old as *const std::ffi::c_void)
            })?;
        }
        Ok(())
    }

    fn mapped_address(&self, loc: Location, len: u64) -> Option<usize> {
        let (start, segment_len) = match loc.segment {
            Segment::Starter => (self.starter_offset, self.starter_len),
            Segment::Heap => (self.heap_offset, self.heap_len),
            Segment::Registered(_) => return None,
        };
        let end = loc.offset.checked_add(len)?;
        (loc.rank == self.rank && end <= segment_len)
            .then(|| self.base as usize + (start + loc.offset) as usize)
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
        ready: &mut dyn FnMut() -> Result<bool>,
    ) -> TransportResult<()> {
        // MPI ends the whole job when a rank fails or aborts, and offers nothing to sleep
        // on until a window's memory changes: poll, then back off. Each poll also drives
        // MPI's progress: a one-sided component that needs the target's help (OpenMPI's
        // osc/ucx on dynamic windows and atomics) would otherwise never finish another
        // rank's access to this one while it waits.
        let mut ready_with_progress = || {
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
            ready()
        };
        Ok(self.patience.poll_backing_off(&mut ready_with_progress)?)
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
        call: TeamCall<'_, '_>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_start_at_the_heap_alignment_on_every_rank_or_not_at_all() {
        assert_eq!(alignment_pad(0x7f00_0000_0000), 0);
        assert_eq!(alignment_pad(0x7f00_0000_0108), 56);
        assert_eq!(alignment_pad(0x7f00_0000_0d39), 7);
        assert_eq!(common_pad(&[56, 56, 56]).unwrap(), 56);
        let message = common_pad(&[56, 24]).unwrap_err().to_string();
        assert!(
            message.contains("aligned the ranks' windows differently"),
            "{message}"
        );
    }

    #[test]
    fn osc_rdma_joins_a_list_of_exclusions_and_leaves_a_choice_alone() {
        assert_eq!(exclude_rdma("").as_deref(), Some("^rdma"));
        assert_eq!(
            exclude_rdma("^ucx,pt2pt").as_deref(),
            Some("^ucx,pt2pt,rdma")
        );
        assert_eq!(exclude_rdma("^ucx, rdma"), None);
        assert_eq!(exclude_rdma("sm"), None);
        assert_eq!(exclude_rdma("rdma"), None);
        assert_eq!(exclude_rdma("ucx,sm"), None);
    }
}
