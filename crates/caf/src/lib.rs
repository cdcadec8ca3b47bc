//! libcaf_gaspar: the coarray library gfortran programs compiled with `-fcoarray=lib` call
//! (`_gfortran_caf_*`: gfortran 12-14's transfer calls, gfortran 15-16's accessor family,
//! and GCC 16's forms of the team and image queries), on gaspar's coarray engine
//! ([`gaspar::coarray`]). Build a program with `gaspar caf prog.f90` and run it with
//! `gaspar run -n N ./a.out`.
//!
//! Modules by job: `abi` names the ABI's numbers, `descriptor` reads gfortran's
//! descriptors, `section` turns them into the engine's sections, `reference` resolves
//! reference chains (`caf_reference_t`) on a remote image, `component` holds the allocatable
//! components of derived-type coarrays, `reduce` calls a CO_REDUCE operation, `token` is
//! gfortran's `caf_token_t`, `stat` does STAT=/ERRMSG=, `error` the library's error,
//! `runtime` holds the lazily started engine, `panic` keeps panics out of Fortran. The other
//! modules are the entry points, one statement family each: `setup`, `memory`, `transfer`,
//! `by_ref`, `sync`, `termination`, `atomic`, `lock`, `event`, `collective`, `status`,
//! `random`, `teams`; `accessor` is gfortran 15's accessor family, `gcc16` the calls GCC 16
//! changed (under `_gaspar_caf16_*` names that `gaspar caf` links for gfortran 16).

mod abi;
mod accessor;
mod atomic;
mod by_ref;
mod collective;
mod component;
mod descriptor;
mod error;
mod event;
mod gcc16;
mod lock;
mod memory;
mod panic;
mod random;
mod reduce;
mod reference;
mod routes;
mod runtime;
mod section;
mod self_launch;
mod setup;
mod stat;
mod status;
mod sync;
mod teams;
mod termination;
mod token;
mod transfer;
mod words;

/// The library's own allocations (the engine's tables, routes, buffers) come from
/// mimalloc's regions, not from the program's malloc heap: blocks the library allocated
/// and freed there at start-up left holes between live blocks, and the temporaries
/// gfortran allocates for every section transfer were then carved from such a hole, each
/// free and malloc splitting and merging it again (glibc's slow path: a 4 KiB section get
/// cost 70 ns against caf_shmem's 55 in the same program). Memory handed to the program
/// (reallocated arrays, the status lists) is still `libc::malloc`'s, as it frees it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
