//! Start-up of the mpi transport: initializing MPI (with the workarounds for the
//! libraries' defaults applied before MPI_Init), allocating and aligning the window,
//! and the at-exit check that ends the job when a rank exits without finalizing.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};

use mpi::ffi;

use super::host::Host;
use super::progress::{self, Need, ProgressThread};
use super::sieve;
use super::{
    allgather_words, check, constant, MpiTransport, PeerWindow, Unflushed, RUNTIME_WORDS_BYTES,
    TABLE_BYTES,
};
use crate::addr::REGISTRATION_SLOTS;
use crate::config;
use crate::error::{Error, Result};
use crate::transport::wait::{Patience, Sleep};
use crate::transport::Transport;

/// The heap starts on a 64 KiB boundary of the window.
const HEAP_ALIGN: u64 = 64 * 1024;

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

/// This rank's window of `total` bytes on `comm`: its base, the window, and where each
/// rank's window lies in this process when every rank's memory is mapped here (else
/// empty), with whether that is where the rank itself has it. Collective over `comm`.
///
/// When the job's ranks share one host (`one_host`: the host's shared window works for
/// all of them), the window is a shared one (`MPI_Win_allocate_shared`, each rank's part
/// on its own pages), which the libraries serve as they serve `MPI_Win_allocate` there
/// (Open MPI's osc/sm, MPICH's shared memory: the same RMA, as fast), and whose other
/// ranks' parts are mapped here too: plain loads and stores reach them
/// ([`Transport::mapped_address`]), so that, as on `shm`, an accessor of gfortran 15/16
/// runs in the caller against the part instead of in the owner's service thread. Else,
/// or when the library cannot make one on every rank, `MPI_Win_allocate`.
///
/// # Safety
/// MPI is initialized and `comm` is a live communicator.
unsafe fn allocate_window(
    comm: ffi::MPI_Comm,
    total: u64,
    one_host: bool,
) -> Result<(*mut u8, ffi::MPI_Win, Box<[PeerWindow]>)> {
    let mut base: *mut u8 = std::ptr::null_mut();
    let mut win = constant::win_null();
    let mut procs: c_int = 0;
    // SAFETY: MPI is initialized and `comm` live (this function's contract); every
    // out-pointer is a valid local; `total` is a byte count of memory this rank maps
    // (checked against overflow by the caller).
    unsafe {
        check("MPI_Comm_size", ffi::MPI_Comm_size(comm, &mut procs))?;
        // Each rank's window on its own pages (osc/sm, MPICH), equally aligned.
        let mut info = constant::info_null();
        check("MPI_Info_create", ffi::MPI_Info_create(&mut info))?;
        check(
            "MPI_Info_set",
            ffi::MPI_Info_set(info, c"alloc_shared_noncontig".as_ptr(), c"true".as_ptr()),
        )?;
        if one_host {
            // Errors returned while the window is tried, and every rank decides alike
            // from the agreement below.
            ffi::MPI_Comm_set_errhandler(comm, constant::errors_return());
            let allocated = ffi::MPI_Win_allocate_shared(
                total as ffi::MPI_Aint,
                1,
                info,
                comm,
                &mut base as *mut *mut u8 as *mut std::ffi::c_void,
                &mut win,
            );
            let mut peers: Vec<usize> = Vec::with_capacity(procs as usize);
            if allocated == 0 {
                ffi::MPI_Win_set_errhandler(win, constant::errors_return());
                for rank in 0..procs {
                    let mut at: *mut std::ffi::c_void = std::ptr::null_mut();
                    let (mut len, mut unit): (ffi::MPI_Aint, c_int) = (0, 0);
                    let queried = ffi::MPI_Win_shared_query(
                        win,
                        rank,
                        &mut len,
                        &mut unit,
                        (&mut at as *mut *mut std::ffi::c_void).cast(),
                    );
                    if queried != 0 || at.is_null() || (len as u64) < total {
                        break;
                    }
                    peers.push(at as usize);
                }
            }
            ffi::MPI_Comm_set_errhandler(comm, constant::errors_are_fatal());
            // Each rank's word: 1 when it made the window, 2 when it could also see
            // every rank's part.
            let mine = u64::from(allocated == 0) + u64::from(peers.len() == procs as usize);
            let mut usable = vec![0u64; procs as usize];
            allgather_words(comm, mine, &mut usable)?;
            if usable.iter().all(|&u| u == 2) {
                ffi::MPI_Info_free(&mut info);
                let mut homes = vec![0u64; procs as usize];
                allgather_words(comm, base as u64, &mut homes)?;
                let peers = peers
                    .iter()
                    .zip(homes)
                    .map(|(&at, home)| PeerWindow {
                        base: at,
                        at_home: at as u64 == home,
                    })
                    .collect();
                return Ok((base, win, peers));
            }
            // Freed together (a collective call) only where every rank made it; a
            // library that made it on some ranks only is left with it unused rather than
            // waiting forever in a free the others do not make.
            if usable.iter().all(|&u| u >= 1) {
                check("MPI_Win_free", ffi::MPI_Win_free(&mut win))?;
            }
        }
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
    }
    Ok((base, win, Box::default()))
}

/// `GASPAR_MPI_DIRECT`: whether transfers to mapped ranks are copies and atomics and
/// accumulates the processor's (see `MpiTransport::direct`).
fn direct_from_env() -> Result<bool> {
    match config::MPI_DIRECT.raw().trim() {
        "on" => Ok(true),
        "off" => Ok(false),
        other => Err(Error::Environment(format!(
            "{}={other:?} is not on or off",
            config::MPI_DIRECT.name
        ))),
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
}

impl Drop for ControlVariable {
    fn drop(&mut self) {
        // SAFETY: a handle allocated by `find`, freed once.
        unsafe { ffi::MPI_T_cvar_handle_free(&mut self.handle) };
    }
}

/// Whether one-sided operations on a rank of this host complete only while it makes MPI
/// calls: MPICH's do, unless its own progress thread runs (`MPIR_CVAR_ASYNC_PROGRESS` set
/// by the user: gaspar no longer switches it on, see `progress`). OpenMPI's osc/sm needs
/// no help.
fn mpich_needs_progress() -> bool {
    let own_thread =
        std::env::var("MPIR_CVAR_ASYNC_PROGRESS").is_ok_and(|v| !matches!(v.trim(), "" | "0"));
    library_version().starts_with("MPICH") && !own_thread
}

/// OpenMPI 4.1's default one-sided component on one host, osc/rdma, crashes the target of
/// a 64-bit MPI_Compare_and_swap (in the shared-memory BTL's emulated atomics), which
/// gaspar's atomics and ARMCI's locks use. So when a process of an OpenMPI job before 5 loads
/// gaspar and the user has not chosen the component, gaspar adds osc/rdma to the
/// components OpenMPI excludes, before MPI is initialized: OpenMPI then picks osc/sm on
/// one host (osc/ucx across hosts, when the system allows it). This runs when the library
/// is loaded (an ELF constructor), because a C program that links libarmci may call
/// MPI_Init itself, before any gaspar call.
///
/// OpenMPI 5 and later are left alone: their osc/rdma does not crash (Open MPI 6.0 of
/// Debian sid: counter, ordering, busy-target on one host and across two), and it is the
/// component that serves a job across hosts over TCP there. Excluding it left no
/// component for MPI_Win_allocate across hosts (osc/ucx declines TCP unless UCX is told
/// to use it), and osc/ucx with UCX 1.19 aborts on an assertion
/// (`ucs_async_check_owner_thread`) as soon as a second thread makes an MPI call, as the
/// progress thread does.
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
        || !open_mpi_before_5(&library_version())
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
#[unsafe(link_section = ".init_array")]
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
    if rdma_priority.is_none_or(|p| p < 100) {
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

/// Whether `version` (MPI_Get_library_version's) is Open MPI's, before 5.
fn open_mpi_before_5(version: &str) -> bool {
    version
        .strip_prefix("Open MPI v")
        .and_then(|v| v.split('.').next())
        .and_then(|major| major.parse::<u32>().ok())
        .is_some_and(|major| major < 5)
}

/// The MPI library's version string (MPI_Get_library_version may be called at any time,
/// before MPI_Init too).
pub(crate) fn library_version() -> String {
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

/// The rank of this process's live (started, not finalized) mpi transport, or -1.
pub(super) static LIVE_RANK: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(-1);
/// The status a live rank that failed on its own (101: it panicked, Rust's panic status as
/// the launcher reports it) ends the job with at exit; 0 while it has not.
pub(super) static OWN_FAILURE: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// At process exit (`exit_status` as given to `exit`): a rank that started the transport
/// and did not finalize ends the whole job, as gaspar's launcher reports it, instead of
/// leaving the other ranks waiting or (under MPI libraries that do not check, MPICH)
/// letting the job succeed:
/// - exiting with 0, it ends the job (`MPI_Abort`) with 1 and a line saying why;
/// - after a panic, with the panic's status (the panic said why);
/// - exiting with another failure status, it lets the exit go on: mpirun and mpiexec end
///   the job when a rank fails, and name it. This is also how MPICH ends a rank when
///   another called MPI_Abort: from inside whatever MPI call the rank was in (or its
///   progress thread), with that rank's code, where an MPI_Abort of ours would fail MPICH's
///   lock assertion and replace the code (`ERROR STOP 5` ended MPICH jobs with 1 or 9).
fn exit_without_finalize(exit_status: c_int) {
    let rank = LIVE_RANK.load(Ordering::Acquire);
    if rank < 0 {
        return;
    }
    let status = match (exit_status, OWN_FAILURE.load(Ordering::Acquire)) {
        (_, failure) if failure != 0 => failure,
        (0, _) => {
            // One write: ranks' messages must not interleave.
            let line = format!("gaspar: rank {rank} exited without finalizing; ending the job\n");
            let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
            1
        }
        _ => return,
    };
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

#[cfg(target_env = "gnu")]
unsafe extern "C" {
    /// glibc's at-exit registration that passes the exit status.
    fn on_exit(
        hook: extern "C" fn(c_int, *mut std::ffi::c_void),
        arg: *mut std::ffi::c_void,
    ) -> c_int;
}

#[cfg(target_env = "gnu")]
extern "C" fn exit_hook(exit_status: c_int, _arg: *mut std::ffi::c_void) {
    exit_without_finalize(exit_status);
}

#[cfg(not(target_env = "gnu"))]
extern "C" fn exit_hook() {
    // Without the status, every exit of a live rank is treated as the rank's own.
    exit_without_finalize(0);
}

/// Registers [`exit_without_finalize`] once per process.
fn register_exit_hook() {
    static EXIT_CHECK: std::sync::Once = std::sync::Once::new();
    EXIT_CHECK.call_once(|| {
        // SAFETY: registers a function that touches only statics and thread-locals.
        #[cfg(target_env = "gnu")]
        unsafe {
            on_exit(exit_hook, std::ptr::null_mut())
        };
        // SAFETY: as above.
        #[cfg(not(target_env = "gnu"))]
        unsafe {
            nix::libc::atexit(exit_hook)
        };
    });
}

impl MpiTransport {
    /// Joins the MPI job (initializing MPI unless the program already did).
    pub fn start() -> Result<MpiTransport> {
        let (starter_len, heap_len) = config::segment_sizes()?;
        let sieve_choice = sieve::Choice::from_env()?;
        let mut direct = direct_from_env()?;
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
        let host: Host;
        let (mut rank, mut procs): (c_int, c_int) = (0, 0);
        let base: *mut u8;
        let win: ffi::MPI_Win;
        let peer_bases: Box<[PeerWindow]>;
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
            host = Host::join(comm)?;
            (base, win, peer_bases) = allocate_window(comm, total, host.runs_collectives())?;
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
            if !peer_bases.is_empty() {
                // Atomics are processor atomics only if every rank's are (`atomic_at`):
                // one rank's GASPAR_MPI_DIRECT=off makes every rank's transfers MPI calls.
                let mut choices = vec![0u64; procs as usize];
                allgather_words(comm, u64::from(direct), &mut choices)?;
                direct = choices.iter().all(|&c| c == 1);
            }
            // An empty registration table and a free accumulate lock (the window's memory
            // is not zeroed by MPI).
            std::ptr::write_bytes(
                base.add((pad + table_offset) as usize),
                0,
                (TABLE_BYTES + RUNTIME_WORDS_BYTES) as usize,
            );
        }
        register_exit_hook();
        LIVE_RANK.store(i64::from(rank), Ordering::Release);
        let pad = alignment_pad(base as usize);
        let mut transport = MpiTransport {
            rank: rank as u32,
            procs: procs as u32,
            comm,
            win,
            dynamic,
            table_offset: pad + table_offset,
            attached: std::sync::Mutex::new(vec![None; REGISTRATION_SLOTS]),
            base,
            direct: direct && !peer_bases.is_empty(),
            peer_bases,
            starter_offset: pad,
            starter_len,
            heap_offset: pad + heap_offset,
            heap_len,
            fast_reach: match single_thread {
                Some(_) => [0, 0],
                None => [starter_len, heap_len].map(|len| len.min(i32::MAX as u64) + 1),
            },
            unflushed: Unflushed::new(procs as u32),
            we_initialized,
            finalized: AtomicBool::new(false),
            single_thread,
            patience: Patience::of_process(Sleep::Progressing)?,
            host,
            progress: std::sync::Mutex::new(None),
            progress_at_registration: None,
            wakes_registered_targets: false,
            sieve: sieve::Sieve::new(sieve_choice, procs as u32),
        };
        // `direct`: every transfer, atomic and accumulate on starter memory and the heap
        // is a copy or a processor atomic.
        let copies_only = transport.direct;
        let need = if transport.host.spans_hosts() {
            Need::Now
        } else if !mpich_needs_progress() {
            Need::Never
        } else if copies_only {
            Need::AtFirstRegistration
        } else {
            Need::Now
        };
        // The operations that complete only in the target's MPI calls wake a target
        // asleep in a wait on this host first.
        transport.wakes_registered_targets = need != Need::Never;
        // Only at MPI_THREAD_MULTIPLE: below it, no other thread may call MPI.
        let mut thread_now = false;
        if transport.single_thread.is_none() {
            transport
                .host
                .set_sleeps_drive_progress(need != Need::Never);
            let (now, later) = progress::Choice::from_env()?.schedule(need);
            transport.progress_at_registration = later;
            if let Some(interval) = now {
                transport.start_progress(interval)?;
                thread_now = true;
            }
        }
        // Where transfers and atomics are MPI calls (a thread starting at the first
        // registration means they are copies), they announce themselves when targets
        // need waking or a thread wants to know.
        if !transport.direct && (need == Need::Now || thread_now) {
            transport
                .unflushed
                .total
                .fetch_or(super::ANNOUNCES_CALLS, Ordering::Relaxed);
        }
        transport.barrier()?;
        tracing::debug!(rank, procs, total, "mpi transport attached");
        Ok(transport)
    }

    /// Starts the progress thread probing every `interval` (less often while the rank
    /// calls MPI itself), unless it runs or the
    /// transport finalized. Only at MPI_THREAD_MULTIPLE.
    pub(super) fn start_progress(&self, interval: std::time::Duration) -> Result<()> {
        let mut progress = self.progress.lock().unwrap_or_else(|p| p.into_inner());
        // Finalize marks the transport finalized before it takes the thread out under
        // this lock, so a thread started here is always stopped before the communicator
        // is freed.
        if progress.is_some() || self.finalized.load(Ordering::Acquire) {
            return Ok(());
        }
        debug_assert!(self.single_thread.is_none());
        // SAFETY: MPI is initialized, at MPI_THREAD_MULTIPLE (this function's contract);
        // the transport's communicator is freed at finalize, after the thread stopped.
        *progress = Some(unsafe { ProgressThread::start(interval, self.comm)? });
        tracing::debug!(?interval, "mpi progress thread started");
        Ok(())
    }
}

impl Drop for MpiTransport {
    fn drop(&mut self) {
        // Dropped unfinalized while unwinding: the job ends at exit with the panic status.
        if !self.finalized.load(Ordering::Acquire) && std::thread::panicking() {
            OWN_FAILURE.store(101, Ordering::Release);
        }
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
    fn only_open_mpi_before_5_is_steered() {
        assert!(open_mpi_before_5(
            "Open MPI v4.1.4, package: Debian OpenMPI"
        ));
        assert!(open_mpi_before_5("Open MPI v3.1.6"));
        assert!(!open_mpi_before_5(
            "Open MPI v6.0.0rc2, package: Debian OpenMPI"
        ));
        assert!(!open_mpi_before_5("Open MPI v5.0.3"));
        assert!(!open_mpi_before_5("MPICH Version:      4.0.2"));
        assert!(!open_mpi_before_5(""));
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
