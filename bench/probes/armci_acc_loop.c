/*
 * armci_acc_loop.c -- ARMCI_Acc of doubles (8 B, 1152 B, 12800 B, scale 1) from rank 0 to
 * rank 1 in a loop, two places 8 KiB apart in turn, while rank 1 waits in ARMCI_Barrier;
 * the program initializes MPI itself (MPI_THREAD_SINGLE), as Global Arrays' programs do.
 * Prints, per size, the first pass and the best of 5 passes, ns per call. The same source
 * links gaspar's libarmci (MPI build) or ARMCI-MPI:
 *
 *   cargo build --release -p gaspar-armci --features gaspar-armci/mpi --target-dir target/mpi
 *   mpicc -O2 -I crates/armci/include bench/probes/armci_acc_loop.c -L target/mpi/release \
 *       -larmci -Wl,-rpath,$PWD/target/mpi/release -o /tmp/acc_gaspar
 *   mpicc -O2 bench/probes/armci_acc_loop.c /usr/lib/x86_64-linux-gnu/libarmci-openmpi.a \
 *       -o /tmp/acc_armcimpi
 *   mpirun -n 2 /tmp/acc_gaspar [ITERATIONS=20000]    # GASPAR_MPI_DIRECT=off: the MPI path
 *   mpirun -n 2 /tmp/acc_armcimpi [ITERATIONS=20000]
 */
#include <armci.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    ARMCI_Init();
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    void **bases = malloc(n * sizeof(void *));
    ARMCI_Malloc(bases, 1 << 20);
    double src[2048] = {0}, one = 1.0;
    int iters = argc > 1 ? atoi(argv[1]) : 20000;
    ARMCI_Barrier();
    if (me == 0) {
        int sizes[] = {8, 1152, 12800};
        for (int s = 0; s < 3; s++) {
            double best = 1e9, first = 0;
            for (int r = 0; r < 5; r++) {
                double t = MPI_Wtime();
                for (int i = 0; i < iters; i++) {
                    char *dst = (char *)bases[1] + ((i & 1) ? 1024 * 8 : 0);
                    ARMCI_Acc(ARMCI_ACC_DBL, &one, src, dst, sizes[s], 1);
                }
                t = (MPI_Wtime() - t) / iters * 1e9;
                if (r == 0) first = t;
                if (t < best) best = t;
            }
            printf("ARMCI_Acc %d B x %d: first pass %.1f ns, best of 5 %.1f ns\n", sizes[s], iters, first, best);
        }
    }
    ARMCI_Barrier();
    ARMCI_Free(bases[me]);
    ARMCI_Finalize();
    MPI_Finalize();
    return 0;
}
