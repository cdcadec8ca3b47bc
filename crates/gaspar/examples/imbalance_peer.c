/* The OpenMPI peer of examples/imbalance.rs (run by scripts/bench-quota): each round rank 0
 * computes for WORK_US microseconds of CPU time while the other ranks wait for it in
 * MPI_Barrier. Every rank prints "rank R cpu_us C wall_us W" as the Rust example does.
 * Usage: mpirun -n N imbalance_peer ROUNDS WORK_US */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double micros(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 3) {
        if (rank == 0)
            fprintf(stderr, "usage: imbalance_peer ROUNDS WORK_US\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long rounds = atol(argv[1]), work_us = atol(argv[2]);
    MPI_Barrier(MPI_COMM_WORLD);
    double wall = micros(CLOCK_MONOTONIC), cpu = micros(CLOCK_PROCESS_CPUTIME_ID);
    volatile unsigned long x = 1;
    for (long r = 0; r < rounds; r++) {
        if (rank == 0) {
            double until = micros(CLOCK_THREAD_CPUTIME_ID) + work_us;
            while (micros(CLOCK_THREAD_CPUTIME_ID) < until)
                for (int k = 0; k < 1000; k++)
                    x = x * 6364136223846793005UL + 1;
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    printf("rank %d cpu_us %.0f wall_us %.0f\n", rank, micros(CLOCK_PROCESS_CPUTIME_ID) - cpu,
           micros(CLOCK_MONOTONIC) - wall);
    MPI_Finalize();
    return 0;
}
