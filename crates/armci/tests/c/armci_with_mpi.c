/* An ARMCI-MPI style program: it initializes MPI itself, then ARMCI on the same world. */
#include <mpi.h>
#include <armci.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (ARMCI_Init() != 0) MPI_Abort(MPI_COMM_WORLD, 2);
    if (armci_msg_me() != me || armci_msg_nproc() != n) ARMCI_Error("ranks differ from MPI's", 1);
    void **base = malloc(n * sizeof(void *));
    ARMCI_Malloc(base, 64);
    int right = (me + 1) % n, left = (me + n - 1) % n, value = 100 + me;
    ARMCI_Put(&value, base[right], sizeof value, right);
    ARMCI_Barrier();
    if (*(int *)base[me] != 100 + left) ARMCI_Error("put did not arrive", 1);
    int sum = me, mpi_sum = 0;
    armci_msg_igop(&sum, 1, "+");
    MPI_Allreduce(&me, &mpi_sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (sum != mpi_sum) ARMCI_Error("igop differs from MPI_Allreduce", 1);
    ARMCI_Free(base[me]);
    ARMCI_Finalize();
    printf("armci_with_mpi ok rank %d of %d\n", me, n);
    MPI_Finalize();
    return 0;
}
