//! The MPI communicators an `ARMCI_Group` carries, as ARMCI-MPI's do: libraries compiled
//! against ARMCI-MPI's header (Global Arrays) use `group.comm` for MPI calls of their own.
//! In the MPI build the world group carries a duplicate of MPI_COMM_WORLD (made at
//! ARMCI_Init) and every other group one split from its parent's; in the shared-memory
//! build there is no MPI and the fields are null.

#[cfg(feature = "mpi")]
mod imp {
    use std::ffi::c_int;

    use mpi::ffi;

    /// An MPI communicator handle (a pointer in OpenMPI, an int in MPICH).
    pub(crate) type Comm = ffi::MPI_Comm;

    /// MPI_COMM_NULL.
    pub(crate) fn null() -> Comm {
        // SAFETY: a constant of the MPI library, set before main.
        unsafe { ffi::RSMPI_COMM_NULL }
    }

    fn mpi_is_initialized() -> bool {
        let mut flag: c_int = 0;
        // SAFETY: MPI_Initialized may be called at any time and writes one int.
        unsafe { ffi::MPI_Initialized(&mut flag) == 0 && flag != 0 }
    }

    /// Collective over the job: a duplicate of MPI_COMM_WORLD (null when MPI does not run:
    /// a job started without MPI).
    pub(crate) fn world() -> Comm {
        if !mpi_is_initialized() {
            return null();
        }
        let mut comm = null();
        // SAFETY: MPI is initialized; every rank calls this in ARMCI_Init.
        if unsafe { ffi::MPI_Comm_dup(ffi::RSMPI_COMM_WORLD, &mut comm) } != 0 {
            return null();
        }
        comm
    }

    /// Collective over `parent`'s members: MPI_Comm_split with the same color and key as
    /// the group's team (null for a rank that joins none, or under a null parent).
    pub(crate) fn split(parent: Comm, color: Option<u32>, key: u32) -> Comm {
        if parent == null() {
            return null();
        }
        // SAFETY: a constant of the MPI library.
        let undefined = unsafe { ffi::RSMPI_UNDEFINED };
        let color = color.map_or(undefined, |c| c as c_int);
        let mut comm = null();
        // SAFETY: `parent` is a live communicator of the group, whose members all call
        // this (collective, as the team split beside it).
        if unsafe { ffi::MPI_Comm_split(parent, color, key as c_int, &mut comm) } != 0 {
            return null();
        }
        comm
    }

    /// Frees a communicator of a group (nothing for null).
    pub(crate) fn free(mut comm: Comm) {
        if comm != null() && mpi_is_initialized() {
            // SAFETY: a communicator this module made, freed once (with its group).
            unsafe { ffi::MPI_Comm_free(&mut comm) };
        }
    }
}

#[cfg(not(feature = "mpi"))]
mod imp {
    use std::ffi::c_void;

    /// No MPI: the fields hold null pointers.
    pub(crate) type Comm = *mut c_void;

    /// The null field.
    pub(crate) fn null() -> Comm {
        std::ptr::null_mut()
    }

    /// No communicator.
    pub(crate) fn world() -> Comm {
        null()
    }

    /// No communicator.
    pub(crate) fn split(_parent: Comm, _color: Option<u32>, _key: u32) -> Comm {
        null()
    }

    /// Nothing to free.
    pub(crate) fn free(_comm: Comm) {}
}

pub(crate) use imp::{free, null, split, world, Comm};
