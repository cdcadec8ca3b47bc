//! libarmci: the ARMCI C interface (source compatible with ARMCI-MPI 0.3's `armci.h` and
//! `message.h`) on gaspar's strided layer. ARMCI addresses are translated to gaspar global
//! addresses: memory from `ARMCI_Malloc` is gaspar's symmetric heap, and the address of
//! byte `o` of rank p's heap is `heap_base[p] + o`, where every rank's heap base is
//! exchanged once at `ARMCI_Init`.
//!
//! Bad input (an address outside ARMCI memory, a bad rank, a bad descriptor) ends the job
//! with a one-line message naming the call, as ARMCI-MPI does; functions gaspar does not
//! support yet say so in one line and return an error.

mod armcix;
mod collective;
mod direct;
mod group;
mod group_comm;
#[cfg(not(feature = "mpi"))]
mod mpi_guard;
mod msg;
mod mutex;
mod panic;
mod parmci;
mod rma;
mod setup;
mod state;
mod sync;

pub use state::Handle as armci_hdl_t;
