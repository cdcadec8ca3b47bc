/*
 * vector_get.c -- what one MPI_Get of a strided region costs against one MPI_Get of the
 * contiguous bytes from its first to its last element, holes included ("data sieving").
 *
 * Rank 1 exposes a 24 x 2304 array of doubles (dimension 0 fastest: one half of a 48^3
 * grid split along its fastest dimension); rank 0 reads N elements of its first column
 * (N = 16, 256, 2304: the last is the face a 3-D stencil reads) with an MPI_Type_vector,
 * then the N * 192 bytes that cover them, three times each; each get is flushed.
 *
 *   mpicc -O2 -Wall -o /tmp/vector_get bench/probes/vector_get.c
 *   mpirun -n 2 /tmp/vector_get                    # one host
 *   # two hosts (network namespaces, MPI over TCP, root):
 *   bash -c 'source scripts/lib/two-hosts.sh; two_hosts_up; two_hosts_mpirun /tmp/vector_get'
 *
 * What it showed (AMD EPYC family 25 model 17, OpenMPI 4.1.4, two hosts, osc/ucx over TCP
 * on a veth pair): 2304 elements 16.1-16.5 ms as a vector, 0.62-0.63 ms as their 442 KiB
 * span; 256 elements 1.7-1.9 ms against 87-95 us; 16 elements 154-298 us against 29-30 us.
 * The component moves a datatype chunk by chunk, 7 us each. gaspar's mpi transport
 * therefore measures both ways per target rank and sieves where it wins
 * (crates/gaspar/src/transport/mpi/sieve.rs).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int provided, rank, procs;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &procs);
    if (procs != 2) {
        if (rank == 0)
            fprintf(stderr, "vector_get: run with 2 ranks\n");
        MPI_Finalize();
        return 1;
    }
    const int nx = 24, ny = 48 * 48;
    const size_t bytes = (size_t)nx * ny * sizeof(double);
    double *base;
    MPI_Win win;
    MPI_Win_allocate((MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    for (size_t i = 0; i < bytes / sizeof(double); i++)
        base[i] = rank * 1e6 + (double)i;
    MPI_Win_lock_all(0, win);
    MPI_Barrier(MPI_COMM_WORLD);
    double *out = malloc(bytes);
    const int counts[] = {16, 256, 2304};
    int failed = 0;
    if (rank == 0) {
        for (int round = 0; round < 3; round++) {
            for (int c = 0; c < 3; c++) {
                int n = counts[c];
                MPI_Datatype column;
                MPI_Type_vector(n, 1, nx, MPI_DOUBLE, &column);
                MPI_Type_commit(&column);
                double t = MPI_Wtime();
                MPI_Get(out, n, MPI_DOUBLE, 1, 0, 1, column, win);
                MPI_Win_flush(1, win);
                double vector = MPI_Wtime() - t;
                if (out[n - 1] != 1e6 + (double)(n - 1) * nx)
                    failed = 1;
                int span = (n - 1) * nx * (int)sizeof(double) + (int)sizeof(double);
                t = MPI_Wtime();
                MPI_Get(out, span, MPI_BYTE, 1, 0, span, MPI_BYTE, win);
                MPI_Win_flush(1, win);
                double sieved = MPI_Wtime() - t;
                if (out[(size_t)(n - 1) * nx] != 1e6 + (double)(n - 1) * nx)
                    failed = 1;
                printf("%4d elements: vector get %8.1f us, span of %6d B %7.1f us\n", n,
                       vector * 1e6, span, sieved * 1e6);
                MPI_Type_free(&column);
            }
        }
        if (failed)
            fprintf(stderr, "vector_get: wrong data read\n");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    free(out);
    MPI_Finalize();
    return failed;
}
