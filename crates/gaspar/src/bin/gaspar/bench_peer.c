/* The OpenMPI MPI-3 RMA peer of `gaspar bench`: the same operations as gaspar's bench
 * rank, through MPI_Win_allocate + MPI_Win_lock_all, each operation followed by
 * MPI_Win_flush. Rank 0 prints "metric size ns_per_op" lines (median over repetitions).
 *
 * With "scaling" as the third argument (any number of ranks): the barrier alone, then the
 * signal ping-pong between ranks 0 and 1 while the other ranks wait in MPI_Barrier. A half
 * round puts 8 bytes of data (MPI_Put + MPI_Win_flush), then the signal word
 * (MPI_Accumulate with MPI_REPLACE + MPI_Win_flush: MPI orders neither two puts nor a put
 * and an accumulate, so the data is flushed first); the other side waits for the signal
 * in one of two ways, both measured (the fairest comparison is the faster):
 *   sync: MPI_Win_sync + a volatile load of its own window memory (osc/sm's unified
 *         memory model makes the accumulate visible to loads after MPI_Win_sync);
 *   fop:  MPI_Fetch_and_op(MPI_NO_OP) on its own window + MPI_Win_flush (atomic with the
 *         accumulate under any memory model; every poll enters MPI's progress engine). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp);
    return v[n / 2];
}

#define MAX_SIZE (4u << 20)

/* MPI_Allreduce (sum) of 1 and of 1 Mi doubles alone, `iters` calls per repetition for
 * one double and iters / 200 for 1 Mi; every rank times it, rank 0 prints
 * "allreduce_ranks_PROCS COUNT ns" lines. */
static void allreduce_figures(int rank, int procs, int reps, int iters, double *t) {
    const int counts[2] = {1, 1 << 20};
    double *in = malloc(sizeof(double) << 20), *out = malloc(sizeof(double) << 20);
    for (int i = 0; i < 1 << 20; i++) in[i] = rank + i % 1000;
    for (int k = 0; k < 2; k++) {
        int n = counts[k];
        int loops = n == 1 ? iters : (iters / 200 > 0 ? iters / 200 : 1);
        for (int r = 0; r < reps; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double s = MPI_Wtime();
            for (int i = 0; i < loops; i++)
                MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            t[r] = (MPI_Wtime() - s) * 1e9 / loops;
        }
        if (rank == 0) printf("allreduce_ranks_%d %d %.3f\n", procs, n, median(t, reps));
    }
    free(in);
    free(out);
}

/* Displacements of the ping-pong's data and signal words in each rank's window. */
enum { DATA_DISP = 0, SIGNAL_DISP = 8 };

/* Waits until this rank's signal word reaches `round` (see the top of the file). */
static void wait_signal(MPI_Win win, char *base, int rank, uint64_t round, int fop) {
    volatile uint64_t *signal = (volatile uint64_t *)(base + SIGNAL_DISP);
    uint64_t seen = 0;
    while (seen < round) {
        if (fop) {
            MPI_Fetch_and_op(NULL, &seen, MPI_UINT64_T, rank, SIGNAL_DISP, MPI_NO_OP, win);
            MPI_Win_flush(rank, win);
        } else {
            MPI_Win_sync(win);
            seen = *signal;
        }
    }
}

/* Half a round: the data, then the signal word, into `target`. */
static void put_signal(MPI_Win win, int target, uint64_t round) {
    MPI_Put(&round, 8, MPI_BYTE, target, DATA_DISP, 8, MPI_BYTE, win);
    MPI_Win_flush(target, win);
    MPI_Accumulate(&round, 1, MPI_UINT64_T, target, SIGNAL_DISP, 1, MPI_UINT64_T, MPI_REPLACE,
                   win);
    MPI_Win_flush(target, win);
}

/* The signal ping-pong between ranks 0 and 1 (the others wait in MPI_Barrier): the
 * median time of one round trip, on rank 0. Collective. */
static double pingpong(MPI_Win win, char *base, int rank, int reps, int iters, int fop,
                       double *t) {
    MPI_Accumulate(&(uint64_t){0}, 1, MPI_UINT64_T, rank, SIGNAL_DISP, 1, MPI_UINT64_T,
                   MPI_REPLACE, win);
    MPI_Win_flush(rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t round = 0;
    if (rank < 2) {
        for (int r = 0; r < reps; r++) {
            double s = MPI_Wtime();
            for (int i = 0; i < iters; i++) {
                round++;
                if (rank == 0) {
                    put_signal(win, 1, round);
                    wait_signal(win, base, rank, round, fop);
                } else {
                    wait_signal(win, base, rank, round, fop);
                    put_signal(win, 0, round);
                }
            }
            t[r] = (MPI_Wtime() - s) * 1e9 / iters;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return median(t, reps);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, procs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &procs);
    int reps = argc > 1 ? atoi(argv[1]) : 31;
    int lat_iters = argc > 2 ? atoi(argv[2]) : 10000;
    char *base;
    MPI_Win win;
    MPI_Win_allocate(MAX_SIZE + 64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    memset(base, 0, MAX_SIZE + 64);
    MPI_Win_lock_all(0, win);
    char *local = malloc(MAX_SIZE);
    memset(local, 1, MAX_SIZE);
    double *t = malloc(sizeof(double) * reps);
    const int target = 1;
    uint64_t one = 1, result = 0, compare = 0, swap = 0;
    int scaling = argc > 3 && strcmp(argv[3], "scaling") == 0;
    if (scaling) goto barrier;
    /* "allreduce" as the third argument: the allreduce alone, on any number of ranks. */
    if (argc > 3 && strcmp(argv[3], "allreduce") == 0) {
        allreduce_figures(rank, procs, reps, lat_iters, t);
        goto done;
    }

#define MEASURE(name, size, iters, body)                                  \
    do {                                                                  \
        MPI_Barrier(MPI_COMM_WORLD);                                      \
        if (rank == 0) {                                                  \
            for (int r = 0; r < reps; r++) {                              \
                double s = MPI_Wtime();                                   \
                for (long i = 0; i < (iters); i++) { body; }              \
                t[r] = (MPI_Wtime() - s) * 1e9 / (iters);                 \
            }                                                             \
            printf("%s %lu %.3f\n", name, (unsigned long)(size), median(t, reps)); \
            fflush(stdout);                                               \
        }                                                                 \
        MPI_Barrier(MPI_COMM_WORLD);                                      \
    } while (0)

    MEASURE("put_lat", 8, lat_iters, {
        MPI_Put(local, 8, MPI_BYTE, target, 0, 8, MPI_BYTE, win);
        MPI_Win_flush(target, win);
    });
    MEASURE("get_lat", 8, lat_iters, {
        MPI_Get(local, 8, MPI_BYTE, target, 0, 8, MPI_BYTE, win);
        MPI_Win_flush(target, win);
    });
    MEASURE("fadd_lat", 8, lat_iters, {
        MPI_Fetch_and_op(&one, &result, MPI_UINT64_T, target, 0, MPI_SUM, win);
        MPI_Win_flush(target, win);
    });
    MEASURE("cas_lat", 8, lat_iters, {
        MPI_Compare_and_swap(&swap, &compare, &result, MPI_UINT64_T, target, 8, win);
        MPI_Win_flush(target, win);
    });
    for (unsigned long size = 8; size <= MAX_SIZE; size *= 2) {
        long iters = (16l << 20) / size;
        if (iters > 10000) iters = 10000;
        if (iters < 4) iters = 4;
        MEASURE("put_bw", size, iters, {
            MPI_Put(local, size, MPI_BYTE, target, 0, size, MPI_BYTE, win);
            MPI_Win_flush(target, win);
        });
        MEASURE("get_bw", size, iters, {
            MPI_Get(local, size, MPI_BYTE, target, 0, size, MPI_BYTE, win);
            MPI_Win_flush(target, win);
        });
    }
    /* Barrier: every rank times it; rank 0 reports. */
barrier:
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double s = MPI_Wtime();
        for (int i = 0; i < lat_iters; i++) MPI_Barrier(MPI_COMM_WORLD);
        t[r] = (MPI_Wtime() - s) * 1e9 / lat_iters;
    }
    if (rank == 0) printf("%s %d %.3f\n", scaling ? "barrier_ranks" : "barrier",
                          scaling ? procs : 0, median(t, reps));
    if (scaling) {
        int pingpong_iters = argc > 4 ? atoi(argv[4]) : 200;
        double sync = pingpong(win, base, rank, reps, pingpong_iters, 0, t);
        double fop = pingpong(win, base, rank, reps, pingpong_iters, 1, t);
        if (rank == 0) {
            printf("pingpong_sync_ranks %d %.3f\n", procs, sync);
            printf("pingpong_fop_ranks %d %.3f\n", procs, fop);
        }
    }
done:
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    free(local);
    free(t);
    MPI_Finalize();
    return 0;
}
