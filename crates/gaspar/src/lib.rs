//! gaspar: a partitioned-global-address-space runtime.
//!
//! The layers, bottom up (see DESIGN.md): the global address, its segments and limits
//! (internal, a leaf everything above builds on; public through [`gmem`]); the transport
//! (internal) moves bytes between processes, each transport publishing its registration
//! table with one sequence lock; [`world`] is the job (rank, procs, barrier, abort, reset);
//! [`gmem`] gives memory global addresses (registration, starter memory, symmetric heap);
//! [`gma`] accesses it (copy, atomics, handles); [`strided`] moves noncontiguous data. Each
//! layer owns the one below it and derefs to it, so the top one, [`Runtime`], offers every
//! call. Beside them, [`launcher`] is `gaspar run`: it starts a job's ranks and watches
//! them, and shares with the shm transport only the environment the ranks start in.
//! [`error`] and [`config`] sit below everything.
//!
//! ```no_run
//! let rt = gaspar::init()?;
//! let right = (rt.rank() + 1) % rt.procs();
//! let slot = gaspar::GlobalPtr::<u64>::new(rt.starter_ga(right)?);
//! slot.put(&rt, &u64::from(rt.rank()))?;
//! rt.barrier()?;
//! # Ok::<(), gaspar::Error>(())
//! ```
//!
//! Only calls that cannot reach memory outside what the job registered are public: the
//! transport, resolved locations, the heap allocator and the registration table are
//! internal, so safe code cannot name arbitrary memory through them.
//!
//! ```compile_fail
//! let rt = gaspar::init()?;
//! rt.transport(); // internal
//! # Ok::<(), gaspar::Error>(())
//! ```
//! ```compile_fail
//! use gaspar::transport::Transport; // internal
//! ```
//! ```compile_fail
//! let rt = gaspar::init()?;
//! rt.locate(gaspar::GlobalAddr::NULL); // internal
//! # Ok::<(), gaspar::Error>(())
//! ```
//! ```compile_fail
//! let heap = gaspar::gmem::heap::HeapAllocator::new(1024); // internal
//! ```
#![deny(unsafe_code)]

mod addr;
pub mod coarray;
pub mod config;
pub mod error;
pub mod gma;
pub mod gmem;
#[allow(unsafe_code)]
pub mod launcher;
pub mod strided;
#[allow(unsafe_code)]
pub(crate) mod transport;
pub mod world;

pub use error::{Error, Result};
pub use gma::{AtomicWord, Compare, Fetched, GlobalPtr, Gma, Handle};
pub use gmem::{GlobalAddr, Key, LocalAlloc, SymmetricAlloc};
pub use transport::{AtomicOp, Run, Width};

/// The runtime as a program uses it: the top layer, with every lower layer's calls.
pub type Runtime = strided::Strided;

/// Runs `body` as this process's rank of the job: init, `body`, finalize. An error from
/// `body` aborts the whole job with the error's message, as an MPI program would: the
/// other ranks cannot know that this one stopped, and would otherwise wait for it in their
/// next collective. Returns only when every rank finished `body` (or if init failed).
pub fn run_job(body: impl FnOnce(&mut Runtime) -> Result<()>) -> Result<()> {
    let mut rt = init()?;
    match body(&mut rt) {
        Ok(()) => rt.finalize(),
        Err(e) => rt.abort(&e.to_string()),
    }
}

/// Joins the job this process was started in (by `gaspar run`, or alone as one rank).
/// Finalize it on every rank ([`Gma::finalize`]): dropping it unfinalized ends the job
/// (see [`world::World`]).
pub fn init() -> Result<Runtime> {
    let world = world::World::init()?;
    strided::Strided::new(Gma::new(gmem::GlobalMemory::new(world)))
}
