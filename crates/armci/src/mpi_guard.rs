//! The shared-memory build and a program that initialized MPI itself: under `gaspar run`
//! every process becomes a one-rank MPI job while ARMCI sees the whole job (or, under
//! `mpirun`, each process a one-rank ARMCI job), and the program computes wrong data
//! silently. This build links no MPI, so it looks for the program's own MPI library in
//! the process and compares the size of MPI's world with ARMCI's.

use std::ffi::{c_int, c_void, CStr};

/// OpenMPI's MPI_COMM_WORLD is the address of this object.
const OPENMPI_WORLD: &CStr = c"ompi_mpi_comm_world";
/// MPICH's (and its derivatives') MPI_COMM_WORLD handle.
const MPICH_WORLD: c_int = 0x4400_0000;

/// A function of the process's MPI library, if one is loaded.
fn mpi_symbol(name: &CStr) -> Option<*mut c_void> {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only looks the name up.
    let address = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!address.is_null()).then_some(address)
}

/// The size of MPI's world, when the process initialized MPI (OpenMPI or MPICH).
fn mpi_world_size() -> Option<c_int> {
    let initialized = mpi_symbol(c"MPI_Initialized")?;
    // SAFETY: MPI_Initialized has this signature in every MPI and may be called at any
    // time, before MPI_Init too.
    let initialized: extern "C" fn(*mut c_int) -> c_int =
        unsafe { std::mem::transmute(initialized) };
    let mut flag = 0;
    if initialized(&mut flag) != 0 || flag == 0 {
        return None;
    }
    let comm_size = mpi_symbol(c"MPI_Comm_size")?;
    let mut size = 0;
    let status = match mpi_symbol(OPENMPI_WORLD) {
        Some(world) => {
            // SAFETY: in OpenMPI, MPI_Comm is a pointer and MPI_COMM_WORLD this object's
            // address; MPI is initialized (checked).
            let comm_size: extern "C" fn(*mut c_void, *mut c_int) -> c_int =
                unsafe { std::mem::transmute(comm_size) };
            comm_size(world, &mut size)
        }
        None => {
            // SAFETY: in MPICH, MPI_Comm is an int and MPI_COMM_WORLD this constant; MPI
            // is initialized (checked).
            let comm_size: extern "C" fn(c_int, *mut c_int) -> c_int =
                unsafe { std::mem::transmute(comm_size) };
            comm_size(MPICH_WORLD, &mut size)
        }
    };
    (status == 0).then_some(size)
}

/// What is wrong, when the program initialized MPI with a world of another size than
/// ARMCI's `procs` ranks.
pub(crate) fn mismatch(procs: u32) -> Option<String> {
    let mpi_procs = mpi_world_size()?;
    (u32::try_from(mpi_procs).ok() != Some(procs)).then(|| {
        format!(
            "this program initialized MPI itself (an MPI world of {mpi_procs}), but this \
             libarmci is the shared-memory build, running {procs} ranks: build libarmci \
             with the mpi feature and start the program with mpirun or \
             `gaspar run --transport mpi`"
        )
    })
}
