/* armci.h as a drop-in for ARMCI-MPI's (issue 15, item 2): this program includes only
 * armci.h, yet uses MPI (MPI_Init, MPI_COMM_WORLD, MPI_Allreduce), and starts ARMCI with
 * ARMCI_Init_thread_comm on MPI_COMM_WORLD, as programs written for ARMCI-MPI do. Built
 * with mpicc; ARMCI's ranks must be MPI's. */
#include <armci.h>

#ifndef ARMCI_GASPAR_WITH_MPI
#error "armci.h did not bring in MPI under mpicc"
#endif

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (ARMCI_Init_thread_comm(0, MPI_COMM_WORLD) != 0) MPI_Abort(MPI_COMM_WORLD, 2);
    if (armci_msg_me() != me || armci_msg_nproc() != n) ARMCI_Error("ranks differ from MPI's", 1);
    long **words = malloc(n * sizeof(long *));
    ARMCI_Malloc((void **)words, sizeof(long));
    int right = (me + 1) % n;
    ARMCI_PutValueLong(1000L + me, words[right], right);
    ARMCI_Barrier();
    long mine = *words[me], total = 0;
    MPI_Allreduce(&mine, &total, 1, ARMCII_MPI_SIZE_T, MPI_SUM, MPI_COMM_WORLD);
    if (total != 1000L * n + (long)n * (n - 1) / 2) ARMCI_Error("wrong sum of the words", 1);
    ARMCI_Free(words[me]);
    ARMCI_Finalize();
    printf("armci_mpi_header ok rank %d of %d\n", me, n);
    MPI_Finalize();
    return 0;
}
