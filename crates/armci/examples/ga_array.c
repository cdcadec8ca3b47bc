/* Global Arrays on libarmci: a program written for GA, linked with libarmci in place of
 * ARMCI-MPI (see README.md, "C: libarmci"). A 2-D array of N x N doubles distributed over
 * the ranks; each rank writes its rows of a(i, j) = i + j / 1000 with NGA_Put, then adds 1
 * to its right neighbour's rows with NGA_Acc, and every rank reads the whole array back
 * with NGA_Get and checks every element. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <ga.h>
#include <macdecls.h>

enum { N = 64 };

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    GA_Initialize();
    int me = GA_Nodeid(), nproc = GA_Nnodes();
    int dims[2] = {N, N}, chunk[2] = {-1, N};
    int g_a = NGA_Create(C_DBL, 2, dims, "a", chunk);
    GA_Zero(g_a);

    /* Rows [first, last] of rank r: an even share, the rest on the last rank. */
    int per = N / nproc;
    int first = me * per, last = me == nproc - 1 ? N - 1 : first + per - 1;
    int rows = last - first + 1, ld = N;
    double *mine = malloc(sizeof(double) * rows * N);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < N; j++) mine[i * N + j] = (first + i) + j / 1000.0;
    int lo[2] = {first, 0}, hi[2] = {last, N - 1};
    NGA_Put(g_a, lo, hi, mine, &ld);
    GA_Sync();

    int right = (me + 1) % nproc;
    int rfirst = right * per, rlast = right == nproc - 1 ? N - 1 : rfirst + per - 1;
    double *ones = malloc(sizeof(double) * (rlast - rfirst + 1) * N), alpha = 1.0;
    for (int k = 0; k < (rlast - rfirst + 1) * N; k++) ones[k] = 1.0;
    int rlo[2] = {rfirst, 0}, rhi[2] = {rlast, N - 1};
    NGA_Acc(g_a, rlo, rhi, ones, &ld, &alpha);
    GA_Sync();

    double *all = malloc(sizeof(double) * N * N);
    int alo[2] = {0, 0}, ahi[2] = {N - 1, N - 1};
    NGA_Get(g_a, alo, ahi, all, &ld);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            if (all[i * N + j] != i + j / 1000.0 + 1.0) {
                fprintf(stderr, "rank %d: a(%d, %d) = %g\n", me, i, j, all[i * N + j]);
                GA_Error("wrong element", i);
            }
    printf("ga_array ok rank %d of %d: %d x %d elements checked\n", me, nproc, N, N);

    free(all);
    free(ones);
    free(mine);
    GA_Destroy(g_a);
    GA_Terminate();
    MPI_Finalize();
    return 0;
}
