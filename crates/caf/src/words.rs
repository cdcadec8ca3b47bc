//! The fast path of the atomic subroutines, LOCK and UNLOCK: the first statement on image
//! `i`'s part goes through the engine, which also tells where the part is mapped and
//! whether the runtime's atomics there are the processor's own
//! ([`gaspar::coarray::Part::processor_atomics`]: `shm`, and `mpi` with every image on one
//! host); later ones do the CPU's atomic on the mapped word directly, as GCC's caf_shmem
//! does: no engine lock, no lookup. Where each part is mapped is kept in the token's table
//! of word routes ([`crate::routes`]), for such parts only: elsewhere a CPU atomic beside
//! the runtime's (MPI's across hosts) would not be atomic with them.
//!
//! A fast UNLOCK must still leave this image's writes visible before the lock word says
//! free. On `shm` a put is complete at its target when issued; on `mpi` a put to
//! registered memory may still be in flight, so the fast path completes those first
//! ([`gaspar::coarray::Coarrays::sync_memory`], no MPI call when there are none).

use std::sync::atomic::{AtomicBool, Ordering};

/// Whether this process's transport completes every put when it is issued.
static PUTS_COMPLETE_WHEN_ISSUED: AtomicBool = AtomicBool::new(false);

/// Says whether the transport completes every put when it is issued (at start).
pub(crate) fn set_puts_complete_when_issued(yes: bool) {
    PUTS_COMPLETE_WHEN_ISSUED.store(yes, Ordering::Relaxed);
}

/// Whether the transport completes every put when it is issued, so that a fast LOCK or
/// UNLOCK has none to complete first.
#[inline]
pub(crate) fn puts_complete_when_issued() -> bool {
    PUTS_COMPLETE_WHEN_ISSUED.load(Ordering::Relaxed)
}
