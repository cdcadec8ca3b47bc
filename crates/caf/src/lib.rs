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
mod setup;
mod stat;
mod status;
mod sync;
mod teams;
mod termination;
mod token;
mod transfer;
mod words;
