/*
 * futex_barrier.c -- the floor the OS allows for a barrier among N processes, in C,
 * outside gaspar, to compare with gaspar's coarray `sync all`.
 *
 * N processes (rank 0 is the parent, ranks 1..N-1 are fork()ed from it) share one
 * MAP_SHARED|MAP_ANONYMOUS mapping and run R repetitions of (up to) B barriers each;
 * rank 0 times every repetition and prints the median (and the minimum) time per
 * barrier in ns. A repetition also ends after T ms, so that slow flavours (pure
 * spinning with more processes than cores) stay short: the ns figure is always the
 * elapsed time divided by the barriers actually done in that repetition.
 *
 * Flavours (all are the same sense-reversing centralized counter barrier: atomic
 * fetch-add on a counter, the last arriver resets it and flips a shared sense word;
 * they differ only in how a waiter waits for the flip):
 *   spin    poll the sense word with a pause instruction between polls, never sleep.
 *   futex   poll at most P times (pause between polls), then FUTEX_WAIT on the sense
 *           word (a shared futex: no FUTEX_PRIVATE_FLAG); the waiter counts itself in a
 *           sleepers word first, and the last arriver FUTEX_WAKEs all only when that
 *           count is non-zero.
 *   yield   poll the sense word with sched_yield() between polls, never sleep.
 *   yfutex  (extra) poll at most P times with sched_yield() between polls, then sleep
 *           on the futex as `futex` does.
 *   ring    not a barrier: a token goes round the ranks, rank i waits for its own slot
 *           word to be bumped (poll at most P times, then FUTEX_WAIT), then bumps the
 *           slot of rank i+1 and FUTEX_WAKEs it (only if it sleeps). Printed: the time
 *           of one full round divided by N, the cost of one handoff from a process to
 *           the next (with P = 0: one futex wake-up of a sleeping process per handoff).
 *   all     spin, futex, yield, yfutex, ring, one after the other.
 *
 * Compile and run (from the repository's root):
 *   gcc -O2 -Wall -o /tmp/futex_barrier bench/probes/futex_barrier.c
 *   /tmp/futex_barrier [flavour=all] [N=4] [P=1000] [R=21] [B=20000] [T=200] [pin=0]
 * e.g. `/tmp/futex_barrier all 4 1000`, `/tmp/futex_barrier futex 4 100`; the figures
 * in README.md were taken with `/tmp/futex_barrier all N 1000 11 20000 100 0` (and the
 * same with flavour futex|yfutex|ring and P = 100, 0), five runs, median of the medians.
 * P: polls before sleeping (futex, yfutex, ring; ignored by spin and yield).
 * pin=1 pins rank i to the i-th allowed CPU modulo their count, pin=2 pins all ranks to
 * the first allowed CPU (default pin=0: the OS places the processes).
 * Output: first `pause_poll_ns=..` (the cost of one pause poll, to read P as time), then
 * one line per flavour: `flavour N=.. P=.. pin=.. median_ns=.. min_ns=.. reps=..
 * barriers_last_rep=..` (for ring: ns per handoff, and handoffs_last_rep).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXN 64
#define MAXR 1001
#define LINE 64

struct line { _Alignas(LINE) atomic_uint v; };

struct shared {
    struct line count;          /* arrivals at the current barrier */
    struct line sense;          /* flipped by the last arriver; the futex word */
    struct line sleepers;       /* waiters inside FUTEX_WAIT (or about to be) */
    struct line stop_at;        /* barrier index after which every rank stops */
    struct line last_done;      /* barriers (handoffs) in the last repetition */
    struct line slot[MAXN];     /* ring: rank i's token counter (its futex word) */
    struct line sleeping[MAXN]; /* ring: whether rank i sleeps (or is about to) */
    double ns[MAXR];            /* per-repetition results, written by rank 0 */
};

enum flavour { SPIN, FUTEX, YIELD, YFUTEX, RING };
static const char *names[] = { "spin", "futex", "yield", "yfutex", "ring" };

static struct shared *sh;
static int N = 4, P = 1000, R = 21, B = 20000, T = 200, PIN = 0;

static inline void cpu_pause(void) { __builtin_ia32_pause(); }

static long futex(atomic_uint *addr, int op, unsigned val)
{
    /* shared futex: no FUTEX_PRIVATE_FLAG, the word lives in a MAP_SHARED mapping */
    return syscall(SYS_futex, (unsigned *)addr, op, val, NULL, NULL, 0);
}

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Waits until the sense word equals `want`, the way flavour `f` waits. */
static inline void wait_sense(enum flavour f, unsigned want)
{
    atomic_uint *s = &sh->sense.v;
    switch (f) {
    case SPIN:
        while (atomic_load_explicit(s, memory_order_acquire) != want)
            cpu_pause();
        return;
    case YIELD:
        while (atomic_load_explicit(s, memory_order_acquire) != want)
            sched_yield();
        return;
    case FUTEX:
    case YFUTEX:
        for (int i = 0; i < P; i++) {
            if (atomic_load_explicit(s, memory_order_acquire) == want)
                return;
            if (f == FUTEX)
                cpu_pause();
            else
                sched_yield();
        }
        /* Announce the sleep before the last look (seq_cst on both sides: either the
         * flipper sees the count, or this look sees the flip; and FUTEX_WAIT itself
         * returns at once if the word no longer holds the old value). */
        atomic_fetch_add(&sh->sleepers.v, 1);
        while (atomic_load(s) != want)
            futex(s, FUTEX_WAIT, want ^ 1u);
        atomic_fetch_sub(&sh->sleepers.v, 1);
        return;
    default:
        abort();
    }
}

static inline void barrier(enum flavour f, unsigned *local_sense)
{
    unsigned want = *local_sense ^= 1u;
    if (atomic_fetch_add(&sh->count.v, 1) == (unsigned)N - 1) {
        atomic_store_explicit(&sh->count.v, 0, memory_order_relaxed);
        atomic_store(&sh->sense.v, want); /* seq_cst: ordered before the sleepers read */
        if ((f == FUTEX || f == YFUTEX) && atomic_load(&sh->sleepers.v) != 0)
            futex(&sh->sense.v, FUTEX_WAKE, INT_MAX);
    } else {
        wait_sense(f, want);
    }
}

/* Ring: wait until my slot reaches `want`, then hand the token to the next rank. */
static inline void ring_wait(int me, unsigned want)
{
    atomic_uint *w = &sh->slot[me].v;
    for (int i = 0; i < P; i++) {
        if (atomic_load_explicit(w, memory_order_acquire) == want)
            return;
        cpu_pause();
    }
    atomic_store(&sh->sleeping[me].v, 1);
    unsigned v;
    while ((v = atomic_load(w)) != want)
        futex(w, FUTEX_WAIT, v);
    atomic_store_explicit(&sh->sleeping[me].v, 0, memory_order_relaxed);
}

static inline void ring_pass(int to)
{
    atomic_fetch_add(&sh->slot[to].v, 1); /* seq_cst: ordered before the sleeping read */
    if (atomic_load(&sh->sleeping[to].v))
        futex(&sh->slot[to].v, FUTEX_WAKE, 1);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void pin_rank(int rank)
{
    cpu_set_t allowed, one;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return;
    int n = CPU_COUNT(&allowed), k = PIN == 2 ? 0 : rank % n;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (CPU_ISSET(c, &allowed) && k-- == 0) {
            CPU_ZERO(&one);
            CPU_SET(c, &one);
            sched_setaffinity(0, sizeof one, &one);
            return;
        }
    }
}

/* One rank's part of a run of flavour f: R repetitions, rank 0 times them. */
static void run_rank(enum flavour f, int rank)
{
    if (PIN)
        pin_rank(rank);
    unsigned local_sense = 0;
    /* repetitions are fenced by the flavour's own barrier (ring: yield-then-futex) */
    enum flavour sync = f == RING ? YFUTEX : f;
    for (int r = -1; r < R; r++) {            /* r = -1: warm-up, not recorded */
        /* ring: my slot's count, final since my last wait (read before the fences,
         * after which my predecessor may bump it) */
        unsigned base = atomic_load(&sh->slot[rank].v);
        barrier(sync, &local_sense);          /* nobody still reads the old stop_at */
        if (rank == 0)
            atomic_store(&sh->stop_at.v, UINT_MAX);
        barrier(sync, &local_sense);          /* everybody sees the reset */
        uint64_t t0 = now_ns(), t1 = t0;
        unsigned done = 0;
        if (f != RING) {
            for (unsigned i = 0;; i++) {
                if (rank == 0 && atomic_load_explicit(&sh->stop_at.v, memory_order_relaxed) == UINT_MAX
                    && (i + 1 >= (unsigned)B || ((i & 15) == 0 && now_ns() - t0 > (uint64_t)T * 1000000u)))
                    atomic_store(&sh->stop_at.v, i + 1); /* seen by all after barrier i */
                barrier(f, &local_sense);
                if (i == atomic_load_explicit(&sh->stop_at.v, memory_order_acquire)) {
                    done = i + 1;
                    break;
                }
            }
        } else {
            /* round k: rank 0 passes to 1, ..., N-1 passes back to 0; slot values
             * count rounds, so rank i waits for its slot to reach base + k + 1 */
            for (unsigned k = 0;; k++) {
                if (rank == 0) {
                    int last = k + 1 >= (unsigned)B
                               || ((k & 15) == 0 && now_ns() - t0 > (uint64_t)T * 1000000u);
                    if (last)
                        atomic_store(&sh->stop_at.v, k);
                    ring_pass(1 % N);
                    ring_wait(0, base + k + 1);
                    if (last) {
                        done = k + 1;
                        break;
                    }
                } else {
                    ring_wait(rank, base + k + 1);
                    unsigned stop = atomic_load(&sh->stop_at.v);
                    ring_pass((rank + 1) % N);
                    if (stop == k)
                        break;
                }
            }
            done *= (unsigned)N; /* handoffs */
        }
        t1 = now_ns();
        if (rank == 0 && r >= 0)
            sh->ns[r] = (double)(t1 - t0) / done;
        if (rank == 0 && r == R - 1)
            atomic_store(&sh->last_done.v, done);
    }
}

static void run(enum flavour f)
{
    memset(sh, 0, sizeof *sh);
    pid_t pids[MAXN];
    for (int i = 1; i < N; i++) {
        pids[i] = fork();
        if (pids[i] < 0) {
            perror("fork");
            exit(1);
        }
        if (pids[i] == 0) {
            run_rank(f, i);
            _exit(0);
        }
    }
    cpu_set_t saved;
    sched_getaffinity(0, sizeof saved, &saved);
    run_rank(f, 0);
    sched_setaffinity(0, sizeof saved, &saved);
    unsigned last_done = atomic_load(&sh->last_done.v);
    for (int i = 1; i < N; i++)
        waitpid(pids[i], NULL, 0);
    double v[MAXR];
    memcpy(v, sh->ns, sizeof(double) * R);
    qsort(v, R, sizeof v[0], cmp_double);
    printf("%-6s N=%d P=%d pin=%d median_ns=%.1f min_ns=%.1f reps=%d %s=%u\n", names[f], N,
           (f == SPIN || f == YIELD) ? -1 : P, PIN, v[R / 2], v[0], R,
           f == RING ? "handoffs_last_rep" : "barriers_last_rep", last_done);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *which = argc > 1 ? argv[1] : "all";
    if (argc > 2) N = atoi(argv[2]);
    if (argc > 3) P = atoi(argv[3]);
    if (argc > 4) R = atoi(argv[4]);
    if (argc > 5) B = atoi(argv[5]);
    if (argc > 6) T = atoi(argv[6]);
    if (argc > 7) PIN = atoi(argv[7]);
    if (N < 2 || N > MAXN || R < 1 || R > MAXR || B < 1 || T < 1 || P < 0) {
        fprintf(stderr, "usage: %s [spin|futex|yield|yfutex|ring|all] [N 2..%d] [P>=0] "
                        "[R 1..%d] [B>=1] [T ms] [pin 0|1|2]\n", argv[0], MAXN, MAXR);
        return 2;
    }
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    /* the cost of one pause poll, so that P can be read as time */
    uint64_t t0 = now_ns();
    for (int i = 0; i < 1000000; i++) {
        if (atomic_load_explicit(&sh->sense.v, memory_order_acquire) == 7u)
            break;
        cpu_pause();
    }
    printf("pause_poll_ns=%.2f nproc=%ld\n", (double)(now_ns() - t0) / 1e6,
           sysconf(_SC_NPROCESSORS_ONLN));
    int any = 0;
    for (int f = SPIN; f <= RING; f++) {
        if (strcmp(which, "all") == 0 || strcmp(which, names[f]) == 0) {
            run((enum flavour)f);
            any = 1;
        }
    }
    if (!any) {
        fprintf(stderr, "unknown flavour %s\n", which);
        return 2;
    }
    return 0;
}
