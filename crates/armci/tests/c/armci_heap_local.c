/* Local buffers in ARMCI_Malloc memory: memory other processes may write (the heap is
 * shared between the ranks' processes), which libarmci must move without borrowing it.
 * Every operation below has its local side in this rank's own ARMCI_Malloc block; every
 * check aborts on failure. */
#include <armci.h>
#include <message.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* Regions of each rank's block, in doubles. */
#define N 64
#define SRC 0          /* this rank's values: me * 1000 + i */
#define LANDED (1 * N) /* where the left neighbour puts */
#define GOT (2 * N)    /* where gets from the right neighbour land */
#define STRIDED (3 * N) /* 8 rows of 8 doubles: strided gets land in columns 0..2 */
#define ACC (4 * N)    /* accumulated into by the left neighbour */
#define MSG (5 * N)    /* broadcast and reduction buffers */
#define PTRS (6 * N)   /* a pointer array that its own I/O vector overwrites */
#define TOTAL (7 * N)

static int me, nproc;

static double value(int rank, int i) { return rank * 1000 + i; }

int main(int argc, char **argv) {
    CHECK(ARMCI_Init_args(&argc, &argv) == 0, "init");
    me = armci_msg_me();
    nproc = armci_msg_nproc();
    int right = (me + 1) % nproc, left = (me + nproc - 1) % nproc;
    double **base = malloc(sizeof(double *) * nproc);
    CHECK(ARMCI_Malloc((void **)base, TOTAL * sizeof(double)) == 0, "malloc");
    double *mine = base[me];
    for (int i = 0; i < TOTAL; i++) mine[i] = -1.0;
    for (int i = 0; i < N; i++) mine[SRC + i] = value(me, i), mine[ACC + i] = 0.0;
    ARMCI_Barrier();

    /* Contiguous put and get whose local side is this rank's heap. */
    CHECK(ARMCI_Put(mine + SRC, base[right] + LANDED, N * sizeof(double), right) == 0, "put");
    ARMCI_Barrier();
    for (int i = 0; i < N; i++)
        CHECK(mine[LANDED + i] == value(left, i), "put: landed[%d] = %g", i, mine[LANDED + i]);
    CHECK(ARMCI_Get(base[right] + SRC, mine + GOT, N / 2 * sizeof(double), right) == 0, "get");
    armci_hdl_t h;
    ARMCI_INIT_HANDLE(&h);
    CHECK(ARMCI_NbGet(base[right] + SRC + N / 2, mine + GOT + N / 2, N / 2 * sizeof(double), right,
                      &h) == 0,
          "nbget");
    CHECK(ARMCI_Wait(&h) == 0, "wait");
    for (int i = 0; i < N; i++)
        CHECK(mine[GOT + i] == value(right, i), "get: got[%d] = %g", i, mine[GOT + i]);
    ARMCI_Barrier();

    /* Strided: 8 rows of 3 doubles, 8 doubles apart on both sides. The get must leave the
     * gaps between the rows as they were. */
    int stride[1] = {8 * sizeof(double)}, count[2] = {3 * sizeof(double), 8};
    CHECK(ARMCI_PutS(mine + SRC, stride, base[right] + STRIDED, stride, count, 1, right) == 0,
          "puts");
    ARMCI_Barrier();
    for (int r = 0; r < 8; r++)
        for (int c = 0; c < 8; c++) {
            double want = c < 3 ? value(left, r * 8 + c) : -1.0;
            CHECK(mine[STRIDED + r * 8 + c] == want, "puts: r%d c%d = %g", r, c,
                  mine[STRIDED + r * 8 + c]);
        }
    ARMCI_Barrier();
    for (int i = 0; i < N; i++) mine[GOT + i] = -2.0;
    CHECK(ARMCI_GetS(base[right] + SRC, stride, mine + GOT, stride, count, 1, right) == 0, "gets");
    for (int r = 0; r < 8; r++)
        for (int c = 0; c < 8; c++) {
            double want = c < 3 ? value(right, r * 8 + c) : -2.0;
            CHECK(mine[GOT + r * 8 + c] == want, "gets: r%d c%d = %g", r, c, mine[GOT + r * 8 + c]);
        }
    ARMCI_Barrier();

    /* I/O vectors: 4 segments of 2 doubles each way. */
    void *src_ptrs[4], *dst_ptrs[4];
    for (int k = 0; k < 4; k++) {
        src_ptrs[k] = mine + SRC + 10 * k;
        dst_ptrs[k] = base[right] + LANDED + 10 * k;
    }
    armci_giov_t put_iov = {src_ptrs, dst_ptrs, 2 * sizeof(double), 4};
    for (int i = 0; i < N; i++) mine[LANDED + i] = -1.0;
    ARMCI_Barrier();
    CHECK(ARMCI_PutV(&put_iov, 1, right) == 0, "putv");
    ARMCI_Barrier();
    for (int i = 0; i < N; i++) {
        double want = i < 40 && i % 10 < 2 ? value(left, i) : -1.0;
        CHECK(mine[LANDED + i] == want, "putv: landed[%d] = %g", i, mine[LANDED + i]);
    }
    void *remote_ptrs[4], *local_ptrs[4];
    for (int k = 0; k < 4; k++) {
        remote_ptrs[k] = base[right] + SRC + 10 * k;
        local_ptrs[k] = mine + GOT + 10 * k;
    }
    for (int i = 0; i < N; i++) mine[GOT + i] = -2.0;
    armci_giov_t get_iov = {remote_ptrs, local_ptrs, 2 * sizeof(double), 4};
    CHECK(ARMCI_GetV(&get_iov, 1, right) == 0, "getv");
    for (int i = 0; i < N; i++) {
        double want = i < 40 && i % 10 < 2 ? value(right, i) : -2.0;
        CHECK(mine[GOT + i] == want, "getv: got[%d] = %g", i, mine[GOT + i]);
    }
    ARMCI_Barrier();

    /* Accumulate from the heap, twice, with the scale in the heap too. */
    mine[GOT] = 2.0;
    CHECK(ARMCI_Acc(ARMCI_ACC_DBL, mine + GOT, mine + SRC, base[right] + ACC, N * sizeof(double),
                    right) == 0,
          "acc");
    CHECK(ARMCI_Acc(ARMCI_ACC_DBL, mine + GOT, mine + SRC, base[right] + ACC, N * sizeof(double),
                    right) == 0,
          "acc again");
    ARMCI_Barrier();
    for (int i = 0; i < N; i++)
        CHECK(mine[ACC + i] == 4 * value(left, i), "acc: [%d] = %g", i, mine[ACC + i]);

    /* Strided accumulate from the heap: 8 rows of 3 doubles added once more. */
    ARMCI_Barrier();
    double one = 1.0;
    CHECK(ARMCI_AccS(ARMCI_ACC_DBL, &one, mine + SRC, stride, base[right] + ACC, stride, count, 1,
                     right) == 0,
          "accs");
    ARMCI_Barrier();
    for (int i = 0; i < N; i++) {
        double want = 4 * value(left, i) + (i % 8 < 3 ? value(left, i) : 0.0);
        CHECK(mine[ACC + i] == want, "accs: [%d] = %g", i, mine[ACC + i]);
    }

    /* An I/O vector to this rank whose destination pointers lie in the heap, where its
     * own first segment overwrites the sixth pointer (past the first four, which a move
     * may read together): every segment goes where the pointers said when the call began. */
    ARMCI_Barrier();
    void **ptrs = (void **)(mine + PTRS);
    double *decoy = mine + MSG, payload[8];
    for (int k = 0; k < 8; k++) ptrs[k] = mine + GOT + 5 * k;
    ptrs[0] = &ptrs[5];
    for (int k = 0; k < 8; k++) payload[k] = 100.0 + k;
    memcpy(&payload[0], &decoy, sizeof decoy); /* segment 0's bytes: a new pointer */
    void *from[8];
    for (int k = 0; k < 8; k++) from[k] = &payload[k];
    for (int i = 0; i < N; i++) mine[GOT + i] = -2.0, decoy[i] = -3.0;
    armci_giov_t self_iov = {from, ptrs, sizeof(double), 8};
    CHECK(ARMCI_PutV(&self_iov, 1, me) == 0, "putv into its own pointers");
    CHECK(ptrs[5] == decoy, "putv: segment 0 did not land on the sixth pointer");
    for (int k = 1; k < 8; k++)
        CHECK(mine[GOT + 5 * k] == 100.0 + k, "putv: segment %d got %g", k, mine[GOT + 5 * k]);
    for (int i = 0; i < N; i++) CHECK(decoy[i] == -3.0, "putv: decoy[%d] = %g", i, decoy[i]);
    ARMCI_Barrier();

    /* Broadcast and reduction with their buffers in the heap. */
    double *msg = mine + MSG;
    for (int i = 0; i < N; i++) msg[i] = me == nproc - 1 ? value(me, i) : -1.0;
    armci_msg_bcast(msg, N * sizeof(double), nproc - 1);
    for (int i = 0; i < N; i++) CHECK(msg[i] == value(nproc - 1, i), "bcast: [%d] = %g", i, msg[i]);
    for (int i = 0; i < N; i++) msg[i] = (me + 1) * i;
    armci_msg_dgop(msg, N, "+");
    for (int i = 0; i < N; i++)
        CHECK(msg[i] == nproc * (nproc + 1) / 2 * i, "dgop: [%d] = %g", i, msg[i]);

    /* Local strided packing and unpacking, both sides in the heap. */
    for (int i = 0; i < N; i++) mine[GOT + i] = -2.0, mine[LANDED + i] = -1.0;
    armci_read_strided(mine + SRC, 1, stride, count, (char *)(mine + GOT));
    for (int i = 0; i < N; i++) {
        double want = i < 24 ? value(me, i / 3 * 8 + i % 3) : -2.0;
        CHECK(mine[GOT + i] == want, "read_strided: [%d] = %g", i, mine[GOT + i]);
    }
    armci_write_strided(mine + LANDED, 1, stride, count, (char *)(mine + GOT));
    for (int i = 0; i < N; i++) {
        double want = i % 8 < 3 ? value(me, i) : -1.0;
        CHECK(mine[LANDED + i] == want, "write_strided: [%d] = %g", i, mine[LANDED + i]);
    }

    /* A message from rank 0 to rank 1, sent from and received into the heap. */
    ARMCI_Barrier();
    if (me == 0) armci_msg_snd(7, mine + SRC, N * sizeof(double), 1);
    if (me == 1) {
        int len = 0;
        for (int i = 0; i < N; i++) msg[i] = -1.0;
        armci_msg_rcv(7, msg, N * sizeof(double), &len, 0);
        CHECK(len == N * sizeof(double), "rcv: %d bytes", len);
        for (int i = 0; i < N; i++) CHECK(msg[i] == value(0, i), "rcv: [%d] = %g", i, msg[i]);
    }

    ARMCI_Barrier();
    CHECK(ARMCI_Free(mine) == 0, "free");
    free(base);
    printf("armci_heap_local ok rank %d of %d\n", me, nproc);
    ARMCI_Finalize();
    return 0;
}
