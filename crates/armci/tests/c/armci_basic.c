/* Exercises libarmci the way ARMCI programs use it; every check aborts on failure. */
#include <armci.h>
#include <message.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int me, nproc;


int main(int argc, char **argv) {
    CHECK(ARMCI_Init_args(&argc, &argv) == 0, "init");
    CHECK(ARMCI_Initialized(), "initialized");
    me = armci_msg_me();
    nproc = armci_msg_nproc();
    int right = (me + 1) % nproc, left = (me + nproc - 1) % nproc;

    /* Contiguous put into the right neighbour. */
    double **base = malloc(sizeof(double *) * nproc);
    /* 9 rows of 64: the strided put below fills rows 1..8. */
    CHECK(ARMCI_Malloc((void **)base, 64 * 9 * sizeof(double)) == 0, "malloc");
    double *mine = base[me];
    for (int i = 0; i < 576; i++) mine[i] = -1.0;
    ARMCI_Barrier();
    double row[64];
    for (int i = 0; i < 64; i++) row[i] = me * 1000 + i;
    CHECK(ARMCI_Put(row, base[right], sizeof row, right) == 0, "put");
    ARMCI_Barrier();
    for (int i = 0; i < 64; i++) CHECK(mine[i] == left * 1000 + i, "put: mine[%d] = %g", i, mine[i]);

    /* Strided: 8 rows of 3 doubles into the right neighbour, rows 64 doubles apart. */
    double block[8][3];
    for (int r = 0; r < 8; r++)
        for (int c = 0; c < 3; c++) block[r][c] = me + r * 10 + c * 100;
    int src_stride[1] = {3 * sizeof(double)}, dst_stride[1] = {64 * sizeof(double)};
    int count[2] = {3 * sizeof(double), 8};
    CHECK(ARMCI_PutS(block, src_stride, base[right] + 64, dst_stride, count, 1, right) == 0, "puts");
    ARMCI_Barrier();
    for (int r = 0; r < 8; r++)
        for (int c = 0; c < 3; c++)
            CHECK(mine[64 + r * 64 + c] == left + r * 10 + c * 100, "puts r%d c%d", r, c);
    double back[8][3];
    memset(back, 0, sizeof back);
    CHECK(ARMCI_GetS(base[right] + 64, dst_stride, back, src_stride, count, 1, right) == 0, "gets");
    CHECK(memcmp(back, block, sizeof back) == 0, "gets round trip");

    /* Nonblocking put and get. */
    armci_hdl_t h;
    ARMCI_INIT_HANDLE(&h);
    double v = 42.0 + me;
    CHECK(ARMCI_NbPut(&v, base[right] + 500, sizeof v, right, &h) == 0, "nbput");
    CHECK(ARMCI_Wait(&h) == 0, "wait");
    ARMCI_Barrier();
    CHECK(mine[500] == 42.0 + left, "nbput value %g", mine[500]);
    double got = 0;
    ARMCI_INIT_HANDLE(&h);
    ARMCI_NbGet(base[right] + 500, &got, sizeof got, right, &h);
    ARMCI_Wait(&h);
    CHECK(got == 42.0 + me, "nbget %g", got);
    CHECK(ARMCI_Test(&h) == 0, "test after wait");
    ARMCI_Barrier();

    /* Accumulate: every rank adds 2 * (rank + 1) into rank 0's first 16 doubles. */
    if (me == 0) for (int i = 0; i < 16; i++) mine[i] = 1.0;
    ARMCI_Barrier();
    double ones[16];
    for (int i = 0; i < 16; i++) ones[i] = me + 1;
    double scale = 2.0;
    CHECK(ARMCI_Acc(ARMCI_ACC_DBL, &scale, ones, base[0], sizeof ones, 0) == 0, "acc");
    ARMCI_Barrier();
    double expect = 1.0 + 2.0 * nproc * (nproc + 1) / 2;
    if (me == 0) for (int i = 0; i < 16; i++) CHECK(mine[i] == expect, "acc: %g != %g", mine[i], expect);
    ARMCI_Barrier();

    /* I/O vector: 10 doubles to every other slot of the right neighbour's row 7. */
    double vals[10];
    void *src_ptrs[10], *dst_ptrs[10];
    for (int i = 0; i < 10; i++) {
        vals[i] = me * 7 + i;
        src_ptrs[i] = &vals[i];
        dst_ptrs[i] = base[right] + 7 * 64 + 2 * i;
    }
    armci_giov_t iov = {src_ptrs, dst_ptrs, sizeof(double), 10};
    CHECK(ARMCI_PutV(&iov, 1, right) == 0, "putv");
    ARMCI_Barrier();
    for (int i = 0; i < 10; i++) CHECK(mine[7 * 64 + 2 * i] == left * 7 + i, "putv %d", i);
    double fetched[10];
    void *gsrc[10], *gdst[10];
    for (int i = 0; i < 10; i++) { gsrc[i] = dst_ptrs[i]; gdst[i] = &fetched[i]; }
    armci_giov_t giov = {gsrc, gdst, sizeof(double), 10};
    CHECK(ARMCI_GetV(&giov, 1, right) == 0, "getv");
    for (int i = 0; i < 10; i++) CHECK(fetched[i] == vals[i], "getv %d", i);
    ARMCI_Barrier();

    /* I/O vectors of several sets, of segment sizes 1, 4, 8, 16 and 24 bytes, to the right
     * neighbour's row 20 onwards and back: every size has its own copy path. */
    {
        enum { SETS = 5, SEGS = 40 };
        int sizes[SETS] = {1, 4, 8, 16, 24};
        char *out = malloc(SETS * SEGS * 24), *in = calloc(SETS * SEGS, 24);
        void *ps[SETS][SEGS], *pd[SETS][SEGS], *gs[SETS][SEGS], *gd[SETS][SEGS];
        armci_giov_t put_sets[SETS], get_sets[SETS];
        void **vbase = malloc(sizeof(void *) * nproc);
        CHECK(ARMCI_Malloc(vbase, SETS * SEGS * 32) == 0, "malloc for vectors");
        char *row = vbase[right];
        for (int s = 0, at = 0; s < SETS; s++) {
            for (int k = 0; k < SEGS; k++, at += 32) {
                char *o = out + (s * SEGS + k) * 24;
                for (int b = 0; b < sizes[s]; b++) o[b] = (char)(me + s * 31 + k * 7 + b);
                ps[s][k] = o;
                pd[s][k] = row + at;
                gs[s][k] = row + at;
                gd[s][k] = in + (s * SEGS + k) * 24;
            }
            put_sets[s] = (armci_giov_t){ps[s], pd[s], sizes[s], SEGS};
            get_sets[s] = (armci_giov_t){gs[s], gd[s], sizes[s], SEGS};
        }
        CHECK(ARMCI_PutV(put_sets, SETS, right) == 0, "putv sets");
        ARMCI_Fence(right);
        CHECK(ARMCI_GetV(get_sets, SETS, right) == 0, "getv sets");
        for (int s = 0; s < SETS; s++)
            for (int k = 0; k < SEGS; k++)
                CHECK(memcmp(in + (s * SEGS + k) * 24, out + (s * SEGS + k) * 24, sizes[s]) == 0,
                      "vector set %d segment %d", s, k);
        free(out);
        free(in);
        ARMCI_Barrier();
        ARMCI_Free(vbase[me]);
        free(vbase);
    }

    /* Read-modify-write and values on rank 0. */
    int **counters = malloc(sizeof(int *) * nproc);
    ARMCI_Malloc((void **)counters, 4 * sizeof(int));
    if (me == 0) memset(counters[0], 0, 4 * sizeof(int));
    ARMCI_Barrier();
    for (int i = 0; i < 100; i++) {
        int old;
        ARMCI_Rmw(ARMCI_FETCH_AND_ADD, &old, counters[0], 1, 0);
        CHECK(old >= 0 && old < 100 * nproc, "rmw old %d", old);
    }
    ARMCI_Barrier();
    CHECK(ARMCI_GetValueInt(counters[0], 0) == 100 * nproc, "rmw total %d", ARMCI_GetValueInt(counters[0], 0));
    int swapped = 5;
    if (me == 0) { ARMCI_Rmw(ARMCI_SWAP, &swapped, counters[0] + 1, 0, 0); CHECK(swapped == 0, "swap old"); }
    ARMCI_Barrier();
    CHECK(ARMCI_GetValueInt(counters[0] + 1, 0) == 5, "swap new");
    ARMCI_PutValueInt(me, counters[right] + 2, right);
    ARMCI_Barrier();
    CHECK(counters[me][2] == left, "putvalue");

    /* Mutexes guard a get-modify-put. */
    ARMCI_Create_mutexes(1);
    for (int i = 0; i < 50; i++) {
        ARMCI_Lock(0, 0);
        int x = ARMCI_GetValueInt(counters[0] + 3, 0);
        ARMCI_PutValueInt(x + 1, counters[0] + 3, 0);
        ARMCI_Unlock(0, 0);
    }
    ARMCI_Barrier();
    CHECK(ARMCI_GetValueInt(counters[0] + 3, 0) == 50 * nproc, "mutex total %d", ARMCI_GetValueInt(counters[0] + 3, 0));
    ARMCI_Destroy_mutexes();

    /* Message layer. */
    int isum[2] = {me, 1};
    armci_msg_igop(isum, 2, "+");
    CHECK(isum[0] == nproc * (nproc - 1) / 2 && isum[1] == nproc, "igop");
    double dmax = -me;
    armci_msg_dgop(&dmax, 1, "absmax");
    CHECK(dmax == nproc - 1, "dgop absmax %g", dmax);
    long lmin = 10 + me;
    armci_msg_lgop(&lmin, 1, "min");
    CHECK(lmin == 10, "lgop min");
    /* The logical and bitwise operators (as ARMCI-MPI and Global Arrays use them). */
    long flags[4] = {1, me == 0, 1L << me, 3};
    armci_msg_lgop(flags, 1, "&&");
    armci_msg_lgop(flags + 1, 1, "||");
    armci_msg_lgop(flags + 2, 1, "|");
    armci_msg_lgop(flags + 3, 1, "band");
    CHECK(flags[0] == 1 && flags[1] == 1 && flags[2] == (1L << nproc) - 1 && flags[3] == 3,
          "lgop && || | band: %ld %ld %ld %ld", flags[0], flags[1], flags[2], flags[3]);
    int none = me == nproc; /* false everywhere */
    armci_msg_igop(&none, 1, "lor");
    CHECK(none == 0, "igop lor %d", none);
    char word[16] = "";
    if (me == 0) strcpy(word, "broadcast");
    armci_msg_bcast(word, sizeof word, 0);
    CHECK(strcmp(word, "broadcast") == 0, "bcast");
    /* A 40000-byte ring message (three mailbox rounds). */
    int n = 10000, *out = malloc(n * sizeof(int)), *in = malloc(n * sizeof(int)), len = 0;
    for (int i = 0; i < n; i++) out[i] = me * n + i;
    if (nproc == 1) {
        /* A blocking send to oneself has no receiver yet (as with MPI_Send). */
        len = n * sizeof(int);
        memcpy(in, out, len);
    } else if (me % 2 == 0) {
        armci_msg_snd(1, out, n * sizeof(int), right);
        armci_msg_rcv(1, in, n * sizeof(int), &len, left);
    } else {
        armci_msg_rcv(1, in, n * sizeof(int), &len, left);
        armci_msg_snd(1, out, n * sizeof(int), right);
    }
    CHECK(len == n * (int)sizeof(int), "rcv length %d", len);
    for (int i = 0; i < n; i++) CHECK(in[i] == left * n + i, "rcv %d: %d", i, in[i]);

    /* rcvany: every other rank sends its rank to rank 0, which takes them in any order. */
    if (me == 0) {
        int seen = 0, sum = 0;
        for (int k = 1; k < nproc; k++) {
            int v = -1, l = 0, from = armci_msg_rcvany(7, &v, sizeof v, &l);
            CHECK(from == v && l == (int)sizeof v, "rcvany from %d got %d", from, v);
            seen |= 1 << from;
            sum += v;
        }
        CHECK(sum == nproc * (nproc - 1) / 2, "rcvany sum %d", sum);
    } else {
        armci_msg_snd(7, &me, sizeof me, 0);
    }
    /* bintree, sel: the largest of the even ranks' keys, with its payload. */
    int root, up, lft, rgt;
    armci_msg_bintree(SCOPE_ALL, &root, &up, &lft, &rgt);
    CHECK(root == 0 && up == (me == 0 ? -1 : (me - 1) / 2), "bintree up %d", up);
    CHECK(lft == (2 * me + 1 < nproc ? 2 * me + 1 : -1) && rgt == (2 * me + 2 < nproc ? 2 * me + 2 : -1),
          "bintree children %d %d", lft, rgt);
    double sel[2] = {(double)(me * 10 % 7), (double)me};
    armci_msg_sel(sel, sizeof sel, "max", ARMCI_DOUBLE, me % 2 == 0);
    double best = -1, who = -1;
    for (int k = 0; k < nproc; k += 2)
        if (k * 10 % 7 > best) { best = k * 10 % 7; who = k; }
    CHECK(sel[0] == best && sel[1] == who, "sel max %g from %g, want %g from %g", sel[0], sel[1], best, who);
    /* memdev variants: the device is ignored. */
    void **dev = malloc(sizeof(void *) * nproc);
    CHECK(ARMCI_Malloc_memdev(dev, 64, "DRAM") == 0 && dev[me] != NULL, "malloc_memdev");
    CHECK(ARMCI_Free_memdev(dev[me]) == 0, "free_memdev");
    free(dev);

    /* Local strided pack/unpack. */
    double grid[4][5], packed[4][2];
    for (int r = 0; r < 4; r++) for (int c = 0; c < 5; c++) grid[r][c] = r * 5 + c;
    int gstride[1] = {5 * sizeof(double)}, gcount[2] = {2 * sizeof(double), 4};
    armci_read_strided(&grid[0][1], 1, gstride, gcount, (char *)packed);
    for (int r = 0; r < 4; r++) CHECK(packed[r][0] == r * 5 + 1 && packed[r][1] == r * 5 + 2, "read_strided");

    ARMCI_Barrier();
    CHECK(ARMCI_Free(counters[me]) == 0, "free counters");
    CHECK(ARMCI_Free(mine) == 0, "free");
    printf("armci_basic ok rank %d of %d\n", me, nproc);
    fflush(stdout);
    ARMCI_Finalize();
    return 0;
}
