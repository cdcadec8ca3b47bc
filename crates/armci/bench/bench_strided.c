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
        TIME("puts_2d", 200, { ARMCI_PutS(l2d, s2_local, r2d, s2_remote, c2, 1, 1); ARMCI_Fence(1); });
        TIME("gets_2d", 200, { ARMCI_GetS(r2d, s2_remote, l2d, s2_local, c2, 1, 1); });
        TIME("put_contig_2d", 200, { ARMCI_Put(l2d, r2d, ROWS * ROW, 1); ARMCI_Fence(1); });
        TIME("local_2d", 200, { for (int r = 0; r < ROWS; r++) memcpy(lstrided + r * RSTRIDE, l2d + r * ROW, ROW); });
        /* The get's floor: the same layout copied the other way, strided -> contiguous. */
        TIME("local_2d_get", 200, { for (int r = 0; r < ROWS; r++) memcpy(l2d + r * ROW, lstrided + r * RSTRIDE, ROW); });
        {
            /* Rows of 1 KiB: 64 of them, remote rows 2 KiB apart, beside one contiguous 64 KiB put. */
            int sk_local[1] = {1024}, sk_remote[1] = {2048}, ck[2] = {1024, 64};
            TIME("puts_1k_rows", 100, { ARMCI_PutS(l3d, sk_local, r3d, sk_remote, ck, 1, 1); ARMCI_Fence(1); });
            TIME("put_contig_1k_rows", 100, { ARMCI_Put(l3d, r3d, 64 * 1024, 1); ARMCI_Fence(1); });
        }
        TIME("puts_3d", 20, { ARMCI_PutS(l3d, s3_local, r3d, s3_remote, c3, 2, 1); ARMCI_Fence(1); });
        TIME("gets_3d", 20, { ARMCI_GetS(r3d, s3_remote, l3d, s3_local, c3, 2, 1); });
        TIME("put_contig_3d", 20, { ARMCI_Put(l3d, r3d, C * C * C * 8, 1); ARMCI_Fence(1); });
        TIME("local_3d", 20, {
            for (int z = 0; z < C; z++)
                for (int y = 0; y < C; y++)
                    memcpy(lstrided + ((size_t)z * N * N + y * N) * 8, l3d + ((size_t)z * C * C + y * C) * 8, C * 8);
        });
        TIME("local_3d_get", 20, {
            for (int z = 0; z < C; z++)
                for (int y = 0; y < C; y++)
                    memcpy(l3d + ((size_t)z * C * C + y * C) * 8, lstrided + ((size_t)z * N * N + y * N) * 8, C * 8);
        });
        double two = 2.0;
        TIME("acc_8", 200, { ARMCI_Acc(ARMCI_ACC_DBL, &two, l2d, r2d, 8, 1); ARMCI_Fence(1); });
        TIME("acc_contig_16k", 200, { ARMCI_Acc(ARMCI_ACC_DBL, &two, l2d, r2d, ROWS * ROW, 1); ARMCI_Fence(1); });
        TIME("accs_2d", 200, { ARMCI_AccS(ARMCI_ACC_DBL, &two, l2d, s2_local, r2d, s2_remote, c2, 1, 1); ARMCI_Fence(1); });
        TIME("accs_3d", 20, { ARMCI_AccS(ARMCI_ACC_DBL, &two, l3d, s3_local, r3d, s3_remote, c3, 2, 1); ARMCI_Fence(1); });
        TIME("putv_1000x8", 100, { ARMCI_PutV(&put_iov, 1, 1); ARMCI_Fence(1); });
        TIME("getv_1000x8", 100, { ARMCI_GetV(&get_iov, 1, 1); });
        TIME("put_contig_v", 100, { ARMCI_Put(lv, rv, SEGS * 8, 1); ARMCI_Fence(1); });
        TIME("local_v", 100, { for (int i = 0; i < SEGS; i++) memcpy(lstrided + 16 * i, lv + 8 * i, 8); });
        /* The same I/O vector copied locally through its pointer arrays, as a vector copy
         * must (the line above lets the compiler see the layout). */
        TIME("local_v_ptrs", 100, {
            for (int i = 0; i < SEGS; i++) memcpy(ldst[i], src[i], 8);
            __asm__ volatile("" ::: "memory");
        });
    }
    ARMCI_Barrier();
    ARMCI_Free(base[me]);
    ARMCI_Finalize();
#ifdef USE_MPI
    MPI_Finalize();
#endif
    return 0;
}
