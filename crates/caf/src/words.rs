//! Where the atomic and lock words of each image's part of a coarray are mapped in this
//! process: the fast path of the atomic subroutines, LOCK and UNLOCK. The first statement
//! on image `i`'s part goes through the engine, which also tells where the part is mapped;
//! later ones do the CPU's atomic on the mapped word directly, as GCC's caf_shmem does: no
//! engine lock, no lookup.
//!
//! Only where the transport's own atomics are sure to be the CPU's atomics on that same
//! memory (the shm transport: [`gaspar::world::World::transport_name`]): an MPI job's
//! atomics are MPI's across hosts, and a CPU atomic beside them would not be atomic with
//! them (on one host they are the CPU's too, but that is the transport's decision). Where each part is
//! mapped is kept in the token's table of word routes ([`crate::routes`]).

use std::sync::atomic::{AtomicBool, Ordering};

/// Whether this process's transport does its atomics as CPU atomics on mapped memory.
static CPU_ATOMICS: AtomicBool = AtomicBool::new(false);

/// Says whether the transport's atomics are CPU atomics on mapped memory (at start).
pub(crate) fn set_cpu_atomics(yes: bool) {
    CPU_ATOMICS.store(yes, Ordering::Relaxed);
}

/// Whether the transport's atomics are CPU atomics on mapped memory (routes are kept).
#[inline]
pub(crate) fn cpu_atomics() -> bool {
    CPU_ATOMICS.load(Ordering::Relaxed)
}
