//! gaspar: a partitioned-global-address-space runtime.
//!
//! A program holds one [`Runtime`] (from [`init`], or given by [`run_job`]): its rank, the
//! number of ranks, barriers, and typed symmetric arrays ([`Runtime::alloc`] →
//! [`SymmetricArray`]) that every rank reads and writes by (rank, index), with atomics,
//! `wait_until` and put-with-signal. [`runtime`] states once what `fence` and `quiet` mean.
//!
//! ```no_run
//! gaspar::run_job(|rt| {
//!     let (me, n) = (rt.rank(), rt.procs());
//!     let slot = rt.alloc::<u64>(1)?;
//!     slot.put((me + 1) % n, 0, &u64::from(me))?;
//!     rt.barrier()?;
//!     assert_eq!(slot.local().get(0)?, u64::from((me + n - 1) % n));
//!     slot.free()
//! })?;
//! # Ok::<(), gaspar::Error>(())
//! ```
//!
//! Words keep one meaning throughout: a *rank* is a `u32` in `0..procs`; an *index*
//! counts elements of a [`SymmetricArray`]; an *offset* counts bytes into a segment
//! ([`GlobalAddr::offset`] moves an address that many bytes on,
//! [`SymmetricAlloc::heap_offset`] is where a block starts in the heap); [`GlobalPtr::add`]
//! moves a typed pointer by elements, as `<*const T>::add` does; a *segment*
//! ([`gmem::Segment`]) is a kind of memory of a rank: starter, heap, registered.
//!
//! Under the facade are the layers, bottom up (see DESIGN.md), which ACP and ARMCI programs
//! reach through [`Runtime::acp`]: the global address, its segments and limits (internal,
//! a leaf everything above builds on; public through [`gmem`]); the transport (internal)
//! moves bytes between processes, each transport publishing its registration table with
//! one sequence lock; [`world`] is the job (rank, procs, barrier, abort, reset); [`gmem`]
//! gives memory global addresses (registration, starter memory, symmetric heap); [`gma`]
//! accesses it (copy, atomics, handles); [`strided`] moves noncontiguous data. Beside them,
//! [`launcher`] is `gaspar run`: it starts a job's ranks and watches them, and shares with
//! the shm transport only the environment the ranks start in. [`error`] and [`config`] sit
//! below everything.
//!
//! Only calls that cannot reach memory outside what the job registered are public: the
//! transport, resolved locations, the heap allocator and the registration table are
//! internal, so safe code cannot name arbitrary memory through them. The exceptions are
//! `unsafe` and take raw pointers their callers vouch for:
//! [`strided::put_mapped`]/[`strided::get_mapped`] (the copy engine on memory mapped
//! here, for libarmci, which checks every address itself).
//!
//! ```compile_fail
//! let rt = gaspar::init()?;
//! rt.acp().transport(); // internal
//! # Ok::<(), gaspar::Error>(())
//! ```
//! ```compile_fail
//! use gaspar::transport::Transport; // internal
//! ```
//! ```compile_fail
//! let rt = gaspar::init()?;
//! rt.acp().locate(gaspar::GlobalAddr::NULL); // internal
//! # Ok::<(), gaspar::Error>(())
//! ```
//! ```compile_fail
//! let heap = gaspar::gmem::heap::HeapAllocator::new(1024); // internal
//! ```
#![deny(unsafe_code)]

mod addr;
pub mod coarray;
pub mod config;
pub mod darray;
pub mod error;
pub mod gma;
pub mod gmem;
#[allow(unsafe_code)]
pub mod launcher;
pub mod runtime;
pub mod strided;
mod symmetric;
#[allow(unsafe_code)]
pub(crate) mod transport;
pub mod world;

/// The `shm` transport's copy engine: the copy method it uses per size and placement,
/// measured on this machine's processor (`gaspar calibrate`, shown by `gaspar info`).
pub mod copy_engine {
    pub use crate::transport::shm::calibrate::cache::CpuKey;
    pub use crate::transport::shm::calibrate::{calibrate, status, Calibration, Status};
    pub use crate::transport::shm::copy::table::MethodTable;
}

/// The MPI library this build links (cargo feature `mpi`).
#[cfg(feature = "mpi")]
pub mod mpi_library {
    /// The library's version string (`MPI_Get_library_version`, callable before MPI
    /// starts), e.g. "Open MPI v4.1.4, ..." or "MPICH Version: 4.0.2 ...".
    pub fn version() -> String {
        crate::transport::mpi::library_version()
    }

    /// Whether the library is MPICH (or one derived from it that says so first).
    pub fn is_mpich() -> bool {
        version().starts_with("MPICH")
    }
}

/// The cores a job's waits count on: a wait spins only while the job's ranks awake fit
/// them (the fewer of the ranks' affinity masks' cores and a control group's CPU quota).
pub mod cores {
    pub use crate::transport::cpu_quota::{cpu_quota, CpuQuota};

    /// The cores this process's affinity mask allows.
    pub fn in_affinity_mask() -> usize {
        crate::transport::wait::cores_in(&crate::transport::wait::affinity_mask())
    }

    /// The cores this process may keep busy at once: [`in_affinity_mask`], fewer under a
    /// CPU quota (a job's waits count the union of its ranks' masks this way:
    /// [`World::usable_cores`](crate::world::World::usable_cores)).
    pub fn usable() -> usize {
        crate::transport::cpu_quota::usable_cores(in_affinity_mask())
    }
}

pub use error::{Error, Result};
pub use gma::{AtomicWord, Compare, Fetched, GlobalPtr, Gma, Handle, SignalOp};
pub use gmem::{GlobalAddr, Key, LocalAlloc, SymmetricAlloc};
pub use runtime::Runtime;
pub use symmetric::{LocalView, SymmetricArray};
pub use transport::{AccShape, AtomicOp, Pattern, Run, Width};
pub use world::{ReduceOp, Reducible, Team};

/// The transports this build has: `shm` (a job started by `gaspar run`, or one rank
/// alone) always, `mpi` (a job started by `mpirun`) when built with the `mpi` feature.
///
/// ```
/// assert_eq!(gaspar::transports()[0], "shm");
/// ```
pub fn transports() -> &'static [&'static str] {
    if cfg!(feature = "mpi") {
        &["shm", "mpi"]
    } else {
        &["shm"]
    }
}

/// Runs `body` as this process's rank of the job: init, `body`, finalize. An error from
/// `body` aborts the whole job with the error's message, as an MPI program would: the
/// other ranks cannot know that this one stopped, and would otherwise wait for it in their
/// next collective. Returns only when every rank finished `body` (or if init failed).
///
/// ```
/// gaspar::run_job(|rt| {
///     let counter = rt.alloc::<u64>(1)?;
///     counter.fetch_add(0, 0, 1)?;
///     rt.barrier()?;
///     if rt.rank() == 0 {
///         assert_eq!(counter.get(0, 0)?, u64::from(rt.procs()));
///     }
///     counter.free()
/// })?;
/// # Ok::<(), gaspar::Error>(())
/// ```
pub fn run_job(body: impl FnOnce(&mut Runtime) -> Result<()>) -> Result<()> {
    let mut rt = init()?;
    match body(&mut rt) {
        Ok(()) => rt.finalize(),
        Err(e) => rt.abort(&e.to_string()),
    }
}

/// Joins the job this process was started in (by `gaspar run`, or alone as one rank).
/// Finalize it on every rank ([`Runtime::finalize`]): dropping it unfinalized ends the
/// job (see [`world::World`]).
///
/// ```no_run
/// let rt = gaspar::init()?;
/// println!("rank {} of {}", rt.rank(), rt.procs());
/// rt.finalize()?;
/// # Ok::<(), gaspar::Error>(())
/// ```
pub fn init() -> Result<Runtime> {
    // Before the job is joined: a bad setting is an error of its own here, where after it
    // the world's drop would end the job with a message about the drop.
    let (policy, buffer_len) = strided::Strided::settings()?;
    let world = world::World::init()?;
    let memory = gmem::GlobalMemory::new(world)?;
    Ok(Runtime::new(strided::Strided::with_settings(
        Gma::new(memory),
        policy,
        buffer_len,
    )))
}

/// How long a wait of this process polls before it sleeps ([`config::SPIN_LIMIT`]; by
/// default what one sleep and wake-up costs on this machine, measured once per process).
/// A library that waits on something of its own (the coarray library's accessor service
/// waits on sockets) polls as long, so that one setting governs every wait. gaspar's own
/// waits also poll longer when the sleeps observed since took longer, while their ranks
/// fit their cores; this limit does not follow them, since a caller here cannot tell
/// whether its ranks are crowded (under a CPU quota, a wake-up delayed to the quota's
/// next period made gaspar's waits poll away the quota before they kept to the measured
/// budget while crowded).
///
/// ```
/// let limit = gaspar::spin_limit()?;
/// assert!(limit < std::time::Duration::from_secs(1));
/// # Ok::<(), gaspar::Error>(())
/// ```
pub fn spin_limit() -> Result<std::time::Duration> {
    transport::wait::Patience::of_process(transport::wait::Sleep::Futex)
        .map(|p| p.measured_budget())
}
