/* Global Arrays on libarmci (issue 15, item 6): Debian's libga-openmpi.a, built against an
 * external ARMCI, linked with libarmci instead of ARMCI-MPI. A 100x100 array of doubles,
 * zeroed; each rank accumulates 2 x a 10x10 block of ones into its own rows, reads it
 * back, and GA_Ddot sums the squares over the whole array. */
#include <mpi.h>
#include <stdio.h>
#include <ga.h>
#include <macdecls.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    GA_Initialize();
    int me = GA_Nodeid(), n = GA_Nnodes();
    int dims[2] = {100, 100}, chunk[2] = {-1, -1};
    int ga = NGA_Create(C_DBL, 2, dims, "a", chunk);
    GA_Zero(ga);
    double ones[100], got[100], alpha = 2.0;
    for (int i = 0; i < 100; i++) ones[i] = 1.0;
    int lo[2] = {10 * me, 0}, hi[2] = {10 * me + 9, 9}, ld = 10;
    NGA_Acc(ga, lo, hi, ones, &ld, &alpha);
    GA_Sync();
    NGA_Get(ga, lo, hi, got, &ld);
    for (int i = 0; i < 100; i++)
        if (got[i] != 2.0) GA_Error("NGA_Get: wrong value", i);
    double dot = GA_Ddot(ga, ga);
    if (dot != 400.0 * n) GA_Error("GA_Ddot: wrong sum", (int)dot);
    GA_Destroy(ga);
    GA_Terminate();
    printf("ga_relink ok rank %d of %d\n", me, n);
    MPI_Finalize();
    return 0;
}
