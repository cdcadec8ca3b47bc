/* The OpenMPI RMA peer of examples/coarray_bench.rs (run by scripts/bench-coarray): the
 * fairest MPI-3 equivalent of each coarray operation, timed as the Rust bench times it
 * (a warm-up, then the best of three runs of ITERATIONS). Rank 0 prints
 * "PROCS images  WHAT  mpi NS ns" lines with the Rust bench's operation names.
 *
 *   coarray_bench_peer          the operations of issue 12's benchmark
 *   coarray_bench_peer memory   window creation and destruction, per allocation size
 *
 * Equivalents: a put is MPI_Put (8 B: issued, flushed after the loop as a coarray put
 * completes at the next image control statement; bandwidth: MPI_Put + MPI_Win_flush);
 * a get is MPI_Get + MPI_Win_flush; the strided put is one MPI_Put to an MPI_Type_vector
 * target + flush; sync all is MPI_Win_flush_all + MPI_Barrier; sync images (ring) is a
 * zero-byte MPI_Sendrecv with each neighbour; co_sum is MPI_Allreduce; lock + unlock is
 * MPI_Win_lock(EXCLUSIVE) + MPI_Win_unlock on rank 0 of a second window; event post is
 * MPI_Accumulate(+1) + flush, event wait polls the own counter with MPI_Fetch_and_op
 * (NO_OP) and takes the count off with another accumulate. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZE (4 << 20)

static int rank, procs;

#define TIME(iterations, body)                                              \
    ({                                                                      \
        long iters_ = (iterations);                                         \
        for (long i_ = 0; i_ < iters_ / 10 + 1; i_++) { body; }             \
        double best_ = 1e300;                                               \
        for (int r_ = 0; r_ < 3; r_++) {                                    \
            double s_ = MPI_Wtime();                                        \
            for (long i_ = 0; i_ < iters_; i_++) { body; }                  \
            double t_ = (MPI_Wtime() - s_) * 1e9 / iters_;                  \
            if (t_ < best_) best_ = t_;                                     \
        }                                                                   \
        best_;                                                              \
    })

static void report(const char *what, double ns) {
    if (rank == 0) printf("%d images  %-40s mpi %12.0f ns\n", procs, what, ns);
}

/* Window creation and destruction per allocation size: MPI_Win_allocate (the runtime
 * allocates: RA's peer), MPI_Win_create on memory the caller allocated (CA's), and
 * MPI_Win_attach to a dynamic window (registration of caller memory, when the one-sided
 * component has dynamic windows). */
static void memory(void) {
    const long sizes[3] = {8, 64 << 10, 4 << 20};
    MPI_Win dynamic;
    int has_dynamic = MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dynamic) == MPI_SUCCESS;
    if (has_dynamic) MPI_Win_set_errhandler(dynamic, MPI_ERRORS_RETURN);
    for (int k = 0; k < 3; k++) {
        long size = sizes[k];
        char what[64];
        double ns = TIME(100, {
            char *base;
            MPI_Win win;
            MPI_Win_allocate(size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
            MPI_Win_free(&win);
        });
        snprintf(what, sizeof what, "allocate+free %ld B MPI_Win_allocate", size);
        report(what, ns);
        ns = TIME(100, {
            char *mem = calloc(1, size);
            MPI_Win win;
            MPI_Win_create(mem, size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
            MPI_Win_free(&win);
            free(mem);
        });
        snprintf(what, sizeof what, "allocate+free %ld B MPI_Win_create", size);
        report(what, ns);
        if (has_dynamic) {
            char *mem = calloc(1, size);
            int ok = MPI_Win_attach(dynamic, mem, size) == MPI_SUCCESS;
            if (ok) MPI_Win_detach(dynamic, mem);
            if (ok) {
                ns = TIME(100, {
                    MPI_Win_attach(dynamic, mem, size);
                    MPI_Barrier(MPI_COMM_WORLD);
                    MPI_Win_detach(dynamic, mem);
                });
                snprintf(what, sizeof what, "register %ld B MPI_Win_attach", size);
                report(what, ns);
            } else if (rank == 0) {
                printf("%d images  register %ld B MPI_Win_attach: no dynamic windows here\n",
                       procs, size);
            }
            free(mem);
        }
    }
    if (has_dynamic) MPI_Win_free(&dynamic);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &procs);
    if (argc > 1 && strcmp(argv[1], "memory") == 0) {
        memory();
        MPI_Finalize();
        return 0;
    }
    char *base;
    MPI_Win win;
    MPI_Win_allocate(MAX_SIZE, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    memset(base, 0, MAX_SIZE);
    MPI_Win_lock_all(0, win);
    MPI_Barrier(MPI_COMM_WORLD);
    char *src = malloc(MAX_SIZE), *dst = malloc(MAX_SIZE);
    memset(src, 1, MAX_SIZE);
    int right = (rank + 1) % procs, left = (rank + procs - 1) % procs;

    double ns = TIME(20000, MPI_Put(src, 8, MPI_BYTE, right, 0, 8, MPI_BYTE, win));
    MPI_Win_flush_all(win);
    report("put 8 B", ns);
    MPI_Barrier(MPI_COMM_WORLD);
    ns = TIME(20000, {
        MPI_Get(dst, 8, MPI_BYTE, right, 0, 8, MPI_BYTE, win);
        MPI_Win_flush(right, win);
    });
    report("get 8 B", ns);
    MPI_Barrier(MPI_COMM_WORLD);

    const int lens[3] = {8 << 10, 256 << 10, 4 << 20};
    for (int k = 0; k < 3; k++) {
        int len = lens[k];
        long iterations = (64 << 20) / len;
        char what[64];
        ns = TIME(iterations, {
            MPI_Put(src, len, MPI_BYTE, right, 0, len, MPI_BYTE, win);
            MPI_Win_flush(right, win);
        });
        snprintf(what, sizeof what, "put %d KiB", len >> 10);
        report(what, ns);
        ns = TIME(iterations, {
            MPI_Get(dst, len, MPI_BYTE, right, 0, len, MPI_BYTE, win);
            MPI_Win_flush(right, win);
        });
        snprintf(what, sizeof what, "get %d KiB", len >> 10);
        report(what, ns);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 256 x 64 doubles into every other column of 256 x 128: element k lands at 2k. */
    MPI_Datatype every_other;
    MPI_Type_vector(256 * 64, 1, 2, MPI_DOUBLE, &every_other);
    MPI_Type_commit(&every_other);
    ns = TIME(200, {
        MPI_Put(src, 256 * 64, MPI_DOUBLE, right, 0, 1, every_other, win);
        MPI_Win_flush(right, win);
    });
    report("strided put 256x64 doubles", ns);
    MPI_Type_free(&every_other);
    MPI_Barrier(MPI_COMM_WORLD);

    ns = TIME(2000, {
        MPI_Win_flush_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
    });
    report("sync all (vs the runtime's barrier)", ns);
    ns = TIME(2000, {
        MPI_Sendrecv(NULL, 0, MPI_BYTE, right, 7, NULL, 0, MPI_BYTE, left, 7, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        if (procs > 2)
            MPI_Sendrecv(NULL, 0, MPI_BYTE, left, 8, NULL, 0, MPI_BYTE, right, 8,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    });
    report("sync images (ring)", ns);

    double *values = malloc(sizeof(double) << 20), *sums = malloc(sizeof(double) << 20);
    for (int i = 0; i < 1 << 20; i++) values[i] = 1.0;
    const int counts[2] = {1, 1 << 20};
    for (int k = 0; k < 2; k++) {
        char what[64];
        ns = TIME(counts[k] == 1 ? 2000 : 10,
                  MPI_Allreduce(values, sums, counts[k], MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
        snprintf(what, sizeof what, "co_sum of %d doubles", counts[k]);
        report(what, ns);
    }

    /* Lock round trip on rank 0 (image 1), every rank at once. */
    uint64_t *words;
    MPI_Win lockwin;
    MPI_Win_allocate(64, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &words, &lockwin);
    words[0] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    ns = TIME(2000, {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, lockwin);
        MPI_Win_unlock(0, lockwin);
    });
    report("lock + unlock (every image, image 1's)", ns);
    MPI_Barrier(MPI_COMM_WORLD);

    /* Event ping-pong between ranks 0 and 1 on a counter in `win` at offset 0. */
    int64_t plus = 1, minus = -1, seen = 0, none = 0;
    int64_t *counter = (int64_t *)base;
    *counter = 0;
    MPI_Win_sync(win);
    MPI_Barrier(MPI_COMM_WORLD);
#define POST(to)                                                              \
    do {                                                                      \
        MPI_Accumulate(&plus, 1, MPI_INT64_T, to, 0, 1, MPI_INT64_T, MPI_SUM, win); \
        MPI_Win_flush(to, win);                                               \
    } while (0)
#define WAIT()                                                                \
    do {                                                                      \
        do {                                                                  \
            MPI_Fetch_and_op(&none, &seen, MPI_INT64_T, rank, 0, MPI_NO_OP, win); \
            MPI_Win_flush(rank, win);                                         \
        } while (seen < 1);                                                   \
        MPI_Accumulate(&minus, 1, MPI_INT64_T, rank, 0, 1, MPI_INT64_T, MPI_SUM, win); \
        MPI_Win_flush(rank, win);                                             \
    } while (0)
    ns = TIME(1000, {
        if (rank == 0) {
            POST(1);
            WAIT();
        } else if (rank == 1) {
            WAIT();
            POST(0);
        }
    });
    report("event ping-pong round trip", ns);
    ns = TIME(20000, {
        MPI_Fetch_and_op(&none, &seen, MPI_INT64_T, right, 0, MPI_NO_OP, win);
        MPI_Win_flush(right, win);
    });
    report("remote 8-byte atomic load", ns);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&lockwin);
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    free(src);
    free(dst);
    free(values);
    free(sums);
    MPI_Finalize();
    return 0;
}
