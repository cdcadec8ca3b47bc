/*
 * checked_copy.c -- what the least checking a one-sided put must do costs beside memcpy,
 * at the sizes where a call's fixed cost shows (8 B - 8 KiB), in C, outside gaspar.
 *
 * A put into another process's segment may not trust its arguments: the target rank must
 * be one of the job's, the range must lie inside that rank's segment and inside a live
 * allocation, and the copy goes to that rank's mapping. `checked_put` below does exactly
 * that and nothing more (a table of bases, one compare each, the allocation a cached
 * [start, end) pair), in a function of its own as a library's entry point is; `memcpy`
 * is glibc's, called with a length the compiler does not know, between the same two
 * buffers (page-aligned, private memory). Both are timed in alternation, R repetitions of
 * N copies each per size; the median ns per copy and the ratio are printed. The ratio is
 * the floor of "a put within x of memcpy" for any runtime that checks its input.
 *
 *   gcc -O2 -o /tmp/checked_copy bench/probes/checked_copy.c
 *   /tmp/checked_copy [N=2000000] [R=9]
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct job {
    uint32_t procs;
    uint64_t segment_len;
    unsigned char *base[64];
    uint64_t alloc_start, alloc_end; /* the live allocation last found */
};

__attribute__((noinline)) int checked_put(const struct job *job, uint32_t rank, uint64_t offset,
                                          const void *src, uint64_t len) {
    if (rank >= job->procs)
        return 1;
    if (offset > job->segment_len || len > job->segment_len - offset)
        return 2;
    if (offset < job->alloc_start || offset + len > job->alloc_end)
        return 3;
    memcpy(job->base[rank] + offset, src, len);
    return 0;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 2000000;
    int reps = argc > 2 ? atoi(argv[2]) : 9;
    if (reps < 1 || reps > 99 || n < 1)
        return 1;
    enum { MAX = 8192 };
    unsigned char *src = aligned_alloc(4096, MAX), *dst = aligned_alloc(4096, 1 << 16);
    memset(src, 1, MAX);
    memset(dst, 0, 1 << 16);
    struct job job = {.procs = 2, .segment_len = 1 << 16, .alloc_start = 0, .alloc_end = 1 << 16};
    job.base[1] = dst;
    void *(*volatile copy)(void *, const void *, size_t) = memcpy;
    printf("%8s %12s %16s %8s\n", "size", "memcpy ns", "checked_put ns", "ratio");
    for (uint64_t len = 8; len <= MAX; len *= 2) {
        double tm[99], tc[99];
        volatile uint64_t vlen = len;
        for (int r = 0; r < reps; r++) {
            double t = now();
            for (long i = 0; i < n; i++)
                copy(dst, src, vlen);
            tm[r] = (now() - t) / n;
            t = now();
            for (long i = 0; i < n; i++)
                if (checked_put(&job, 1, 0, src, vlen))
                    return 2;
            tc[r] = (now() - t) / n;
        }
        qsort(tm, reps, sizeof tm[0], cmp);
        qsort(tc, reps, sizeof tc[0], cmp);
        printf("%8llu %12.2f %16.2f %7.2fx\n", (unsigned long long)len, tm[reps / 2], tc[reps / 2],
               tc[reps / 2] / tm[reps / 2]);
    }
    return 0;
}
