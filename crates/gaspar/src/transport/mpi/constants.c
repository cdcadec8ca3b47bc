/* MPI's handles that the `mpi` crate's bindings do not export (its C shim has no
 * MPI_REPLACE, MPI_NO_OP or MPI_IN_PLACE). Each is a macro in mpi.h whose value differs
 * between MPI libraries (a pointer to a global in Open MPI, an integer in MPICH), so it is
 * read here, compiled against the same mpi.h as the bindings. */
#include <mpi.h>

MPI_Op gaspar_mpi_replace(void) { return MPI_REPLACE; }

MPI_Op gaspar_mpi_no_op(void) { return MPI_NO_OP; }

void *gaspar_mpi_in_place(void) { return MPI_IN_PLACE; }
