//! libcaf_gaspar: the coarray library gfortran programs compiled with `-fcoarray=lib` call
//! (`_gfortran_caf_*`, gfortran 12's ABI), on gaspar's coarray engine
//! ([`gaspar::coarray`]). Build a program with `gaspar caf prog.f90` and run it with
//! `gaspar run -n N ./a.out`.
//!
//! Modules by job: `abi` names the ABI's numbers, `descriptor` reads gfortran's
//! descriptors, `section` turns them into the engine's sections, `stat` does STAT=/ERRMSG=,
//! `runtime` holds the lazily started engine, `panic` keeps panics out of Fortran; the
//! other modules are the entry points, one statement family each.

mod abi;
mod atomic;
mod by_ref;
mod collective;
mod component;
mod descriptor;
mod error;
mod event;
mod lock;
mod memory;
mod panic;
mod random;
mod reduce;
mod reference;
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
