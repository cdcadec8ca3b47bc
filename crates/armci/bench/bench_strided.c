/* Strided and I/O-vector transfers through the ARMCI interface, 2 ranks: rank 0 times,
 * rank 1 is the passive target. One source, built against gaspar's libarmci and against
 * ARMCI-MPI (-DUSE_MPI), so both run exactly the same calls. Prints "name ns" lines,
 * each the median over repetitions of the time per operation (put or accumulate + fence,
 * or get). Accumulates add doubles scaled by 2. */
#ifdef USE_MPI
#include <mpi.h>
#endif
#include <armci.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int reps = 31;

#define TIME(name, iters, body)                                        \
    do {                                                               \
        double t_[reps];                                               \
        for (int r_ = 0; r_ < reps; r_++) {                            \
            double s_ = now_ns();                                      \
            for (int i_ = 0; i_ < (iters); i_++) { body; }             \
            t_[r_] = (now_ns() - s_) / (iters);                        \
        }                                                              \
        qsort(t_, reps, sizeof(double), cmp);                          \
        printf("%s %.1f\n", name, t_[reps / 2]);                       \
        fflush(stdout);                                                \
    } while (0)

/* Two operations timed in alternation, repetition by repetition, so that the ratio of
 * their medians compares them in the same states of a machine whose speed drifts (a VM
 * can change by 2x within a minute); prints both, A first. */
#define TIME2(name_a, name_b, iters, body_a, body_b)                   \
    do {                                                               \
        double a_[reps], b_[reps];                                     \
        for (int r_ = 0; r_ < reps; r_++) {                            \
            double s_ = now_ns();                                      \
            for (int i_ = 0; i_ < (iters); i_++) { body_a; }           \
            a_[r_] = (now_ns() - s_) / (iters);                        \
            s_ = now_ns();                                             \
            for (int i_ = 0; i_ < (iters); i_++) { body_b; }           \
            b_[r_] = (now_ns() - s_) / (iters);                        \
        }                                                              \
        qsort(a_, reps, sizeof(double), cmp);                          \
        qsort(b_, reps, sizeof(double), cmp);                          \
        printf("%s %.1f\n%s %.1f\n", name_a, a_[reps / 2], name_b, b_[reps / 2]); \
        fflush(stdout);                                                \
    } while (0)

#define ROWS 256
#define ROW 64
#define RSTRIDE 1024
#define N 64
#define C 32
#define SEGS 1000

int main(int argc, char **argv) {
#ifdef USE_MPI
    MPI_Init(&argc, &argv);
#endif
    ARMCI_Init();
    if (argc > 1) reps = atoi(argv[1]);
    int me = armci_msg_me();
    size_t area2d = ROWS * RSTRIDE, area3d = (size_t)N * N * N * sizeof(double), areav = SEGS * 16;
    void **base = malloc(2 * sizeof(void *));
    ARMCI_Malloc(base, area2d + area3d + areav);
    char *r2d = base[1], *r3d = (char *)base[1] + area2d, *rv = (char *)base[1] + area2d + area3d;
    char *l2d = calloc(1, ROWS * ROW), *l3d = calloc(1, (size_t)C * C * C * sizeof(double));
    char *lv = calloc(1, SEGS * 8), *lstrided = calloc(1, area3d);
    void *src[SEGS], *dst[SEGS], *ldst[SEGS];
    for (int i = 0; i < SEGS; i++) { src[i] = lv + 8 * i; dst[i] = rv + 16 * i; ldst[i] = lstrided + 16 * i; }
    armci_giov_t put_iov = {src, dst, 8, SEGS}, get_iov = {dst, src, 8, SEGS};
    int s2_local[1] = {ROW}, s2_remote[1] = {RSTRIDE}, c2[2] = {ROW, ROWS};
    int s3_local[2] = {C * 8, C * C * 8}, s3_remote[2] = {N * 8, N * N * 8}, c3[3] = {C * 8, C, C};
    ARMCI_Barrier();
    if (me == 0) {
        /* Each strided transfer alternated with its floor, the same layout copied
         * locally (for gets the other way, strided -> contiguous). */
        TIME2("puts_2d", "local_2d", 200,
              { ARMCI_PutS(l2d, s2_local, r2d, s2_remote, c2, 1, 1); ARMCI_Fence(1); },
              { for (int r = 0; r < ROWS; r++) memcpy(lstrided + r * RSTRIDE, l2d + r * ROW, ROW); });
        TIME2("gets_2d", "local_2d_get", 200,
              { ARMCI_GetS(r2d, s2_remote, l2d, s2_local, c2, 1, 1); },
              { for (int r = 0; r < ROWS; r++) memcpy(l2d + r * ROW, lstrided + r * RSTRIDE, ROW); });
        TIME("put_contig_2d", 200, { ARMCI_Put(l2d, r2d, ROWS * ROW, 1); ARMCI_Fence(1); });
        {
            /* Rows of 1 KiB: 64 of them, remote rows 2 KiB apart, beside one contiguous 64 KiB put. */
            int sk_local[1] = {1024}, sk_remote[1] = {2048}, ck[2] = {1024, 64};
            TIME("puts_1k_rows", 100, { ARMCI_PutS(l3d, sk_local, r3d, sk_remote, ck, 1, 1); ARMCI_Fence(1); });
            TIME("put_contig_1k_rows", 100, { ARMCI_Put(l3d, r3d, 64 * 1024, 1); ARMCI_Fence(1); });
        }
        TIME2("puts_3d", "local_3d", 20,
              { ARMCI_PutS(l3d, s3_local, r3d, s3_remote, c3, 2, 1); ARMCI_Fence(1); },
              {
                  for (int z = 0; z < C; z++)
                      for (int y = 0; y < C; y++)
                          memcpy(lstrided + ((size_t)z * N * N + y * N) * 8, l3d + ((size_t)z * C * C + y * C) * 8, C * 8);
              });
        TIME2("gets_3d", "local_3d_get", 20,
              { ARMCI_GetS(r3d, s3_remote, l3d, s3_local, c3, 2, 1); },
              {
                  for (int z = 0; z < C; z++)
                      for (int y = 0; y < C; y++)
                          memcpy(l3d + ((size_t)z * C * C + y * C) * 8, lstrided + ((size_t)z * N * N + y * N) * 8, C * 8);
              });
        TIME("put_contig_3d", 20, { ARMCI_Put(l3d, r3d, C * C * C * 8, 1); ARMCI_Fence(1); });
        double two = 2.0;
        TIME("acc_8", 200, { ARMCI_Acc(ARMCI_ACC_DBL, &two, l2d, r2d, 8, 1); ARMCI_Fence(1); });
        TIME("acc_contig_16k", 200, { ARMCI_Acc(ARMCI_ACC_DBL, &two, l2d, r2d, ROWS * ROW, 1); ARMCI_Fence(1); });
        TIME("accs_2d", 200, { ARMCI_AccS(ARMCI_ACC_DBL, &two, l2d, s2_local, r2d, s2_remote, c2, 1, 1); ARMCI_Fence(1); });
        TIME("accs_3d", 20, { ARMCI_AccS(ARMCI_ACC_DBL, &two, l3d, s3_local, r3d, s3_remote, c3, 2, 1); ARMCI_Fence(1); });
        /* The I/O vector alternated with the same vector copied locally through its
         * pointer arrays, as a vector copy must. */
        TIME2("putv_1000x8", "local_v_ptrs", 100,
              { ARMCI_PutV(&put_iov, 1, 1); ARMCI_Fence(1); },
              {
                  for (int i = 0; i < SEGS; i++) memcpy(ldst[i], src[i], 8);
                  __asm__ volatile("" ::: "memory");
              });
        TIME("getv_1000x8", 100, { ARMCI_GetV(&get_iov, 1, 1); });
        TIME("put_contig_v", 100, { ARMCI_Put(lv, rv, SEGS * 8, 1); ARMCI_Fence(1); });
        /* The same copy with the layout visible to the compiler. */
        TIME("local_v", 100, { for (int i = 0; i < SEGS; i++) memcpy(lstrided + 16 * i, lv + 8 * i, 8); });
    }
    ARMCI_Barrier();
    ARMCI_Free(base[me]);
    ARMCI_Finalize();
#ifdef USE_MPI
    MPI_Finalize();
#endif
    return 0;
}
