/* Strided puts and gets whose shapes change from call to call, the way libarmci keeps the
 * shapes of recent calls: shapes in turn (more than it keeps), some differing in one
 * stride only, 0, 1 and 2 stride levels, the same count and stride arrays rewritten in
 * place between calls, and a put and get of one patch alternating; and an I/O vector
 * whose segments lie in two blocks. Every value is checked, including the gaps the
 * transfers must leave alone. Each rank writes into its right neighbour. */
#include <armci.h>
#include <message.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define AREA 4096 /* doubles of ARMCI memory per rank */

static int me, nproc, right;
static double **base;

/* Doubles: `rows` x `cols` with local row length `lrow` and remote row length `rrow`
 * (in doubles), at remote offset `at`; then checks rank right's copy and a get back. */
static void round_trip(int rows, int cols, int lrow, int rrow, int at, int round, int *count,
                       int *src_stride, int *dst_stride) {
    double local[64 * 64], back[64 * 64];
    for (int i = 0; i < 64 * 64; i++) {
        local[i] = me * 1e6 + round * 1e4 + i;
        back[i] = -2.0;
    }
    count[0] = cols * (int)sizeof(double);
    count[1] = rows;
    src_stride[0] = lrow * (int)sizeof(double);
    dst_stride[0] = rrow * (int)sizeof(double);
    int levels = rows > 1 ? 1 : 0;
    CHECK(ARMCI_PutS(local, src_stride, base[right] + at, dst_stride, count, levels, right) == 0,
          "puts round %d", round);
    ARMCI_Fence(right);
    /* Read it back with the strides on the other sides (the shape a put-back-after-get
     * program alternates with). */
    CHECK(ARMCI_GetS(base[right] + at, dst_stride, back, src_stride, count, levels, right) == 0,
          "gets round %d", round);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < lrow; c++) {
            double want = c < cols ? local[r * lrow + c] : -2.0;
            CHECK(back[r * lrow + c] == want, "round %d (%dx%d): back[%d][%d] = %g, want %g",
                  round, rows, cols, r, c, back[r * lrow + c], want);
        }
}

int main(int argc, char **argv) {
    CHECK(ARMCI_Init_args(&argc, &argv) == 0, "init");
    me = armci_msg_me();
    nproc = armci_msg_nproc();
    right = (me + 1) % nproc;
    int left = (me + nproc - 1) % nproc;
    base = malloc(sizeof(double *) * nproc);
    CHECK(ARMCI_Malloc((void **)base, AREA * sizeof(double)) == 0, "malloc");
    int count[3], src_stride[2], dst_stride[2];

    /* Shapes as (rows, cols, local row, remote row, offset), twice in this order: the
     * second differs from the first only in the remote stride, the fourth only in the
     * local one, so a cache that compared one side's strides only would reuse a stale
     * shape; the fifth has no stride level. */
    int shapes[6][5] = {{8, 3, 3, 16, 0}, {8, 3, 3, 20, 0},    {8, 3, 3, 16, 0},
                        {8, 3, 5, 16, 0}, {1, 40, 40, 40, 200}, {5, 2, 4, 7, 300}};
    for (int round = 0; round < 12; round++) {
        int *s = shapes[round % 6];
        for (int i = 0; i < AREA; i++) base[me][i] = -1.0;
        ARMCI_Barrier();
        round_trip(s[0], s[1], s[2], s[3], s[4], round, count, src_stride, dst_stride);
        ARMCI_Barrier();
        /* What the left neighbour wrote here, and nothing else. */
        int rows = s[0], cols = s[1], rrow = s[3], at = s[4], lrow = s[2];
        for (int i = 0; i < AREA; i++) {
            int off = i - at, r = off / rrow, c = off % rrow;
            int inside = off >= 0 && r < rows && c < cols;
            double want = inside ? left * 1e6 + round * 1e4 + r * lrow + c : -1.0;
            CHECK(base[me][i] == want, "round %d: mine[%d] = %g, want %g", round, i, base[me][i],
                  want);
        }
    }

    /* Two levels: a 3-D block of 4 x 3 x 2 doubles into a 10 x 10 x 10 array, then the
     * same arrays rewritten to a 2 x 2 x 3 block: the cached shape must not be reused. */
    for (int round = 0; round < 2; round++) {
        int nx = round ? 2 : 4, ny = round ? 2 : 3, nz = round ? 3 : 2;
        double block[24];
        for (int i = 0; i < 24; i++) block[i] = me * 100 + round * 50 + i;
        for (int i = 0; i < 1000; i++) base[me][i] = -1.0;
        ARMCI_Barrier();
        count[0] = nx * (int)sizeof(double);
        count[1] = ny;
        count[2] = nz;
        src_stride[0] = nx * (int)sizeof(double);
        src_stride[1] = nx * ny * (int)sizeof(double);
        dst_stride[0] = 10 * (int)sizeof(double);
        dst_stride[1] = 100 * (int)sizeof(double);
        CHECK(ARMCI_PutS(block, src_stride, base[right] + 111, dst_stride, count, 2, right) == 0,
              "3-D puts");
        ARMCI_Barrier();
        for (int i = 0; i < 1000; i++) {
            int off = i - 111, z = off / 100, y = (off % 100) / 10, x = off % 10;
            int inside = off >= 0 && x < nx && y < ny && z < nz;
            double want = inside ? left * 100 + round * 50 + z * nx * ny + y * nx + x : -1.0;
            CHECK(base[me][i] == want, "3-D round %d: mine[%d] = %g, want %g", round, i,
                  base[me][i], want);
        }
        ARMCI_Barrier();
    }

    /* An I/O vector whose segments alternate between two ARMCI_Malloc blocks: no one
     * block holds the span of its segments, so each segment is checked on its own. */
    {
        double **second = malloc(sizeof(double *) * nproc);
        CHECK(ARMCI_Malloc((void **)second, 64 * sizeof(double)) == 0, "second malloc");
        for (int i = 0; i < 64; i++) second[me][i] = -1.0;
        for (int i = 0; i < 64; i++) base[me][i] = -1.0;
        ARMCI_Barrier();
        double values[16];
        void *src[16], *dst[16];
        for (int k = 0; k < 16; k++) {
            values[k] = me * 1000 + k;
            src[k] = &values[k];
            dst[k] = k % 2 ? (void *)(second[right] + 3 * k) : (void *)(base[right] + 3 * k);
        }
        armci_giov_t iov = {src, dst, sizeof(double), 16};
        CHECK(ARMCI_PutV(&iov, 1, right) == 0, "putv across two blocks");
        ARMCI_Fence(right);
        ARMCI_Barrier();
        for (int k = 0; k < 16; k++) {
            double *at = k % 2 ? &second[me][3 * k] : &base[me][3 * k];
            CHECK(*at == left * 1000 + k, "putv across two blocks: segment %d = %g", k, *at);
        }
        ARMCI_Barrier();
        ARMCI_Free(second[me]);
        free(second);
    }

    ARMCI_Barrier();
    printf("armci_strided_shapes ok rank %d of %d\n", me, nproc);
    fflush(stdout);
    ARMCI_Free(base[me]);
    ARMCI_Finalize();
    return 0;
}
