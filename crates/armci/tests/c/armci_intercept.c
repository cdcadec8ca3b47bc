/* Interception through the profiling interface (issue 15, item 4): this program defines
 * its own ARMCI_Put and ARMCI_Barrier, which count their calls and do the work through
 * PARMCI_Put and PARMCI_Barrier. Its calls reach the wrappers, the wrappers reach
 * libarmci (the data moves), and libarmci never calls back into them. */
#include <armci.h>
#include <message.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

static int puts_seen, barriers_seen;

int ARMCI_Put(void *src, void *dst, int size, int target) {
    puts_seen++;
    return PARMCI_Put(src, dst, size, target);
}

void ARMCI_Barrier(void) {
    barriers_seen++;
    PARMCI_Barrier();
}

int main(int argc, char **argv) {
    CHECK(ARMCI_Init_args(&argc, &argv) == 0, "init");
    int me = armci_msg_me(), nproc = armci_msg_nproc();
    long **words = malloc(sizeof(long *) * nproc);
    CHECK(ARMCI_Malloc((void **)words, nproc * sizeof(long)) == 0, "malloc");
    for (int r = 0; r < nproc; r++)
        words[me][r] = -1;
    ARMCI_Barrier();
    for (int r = 0; r < nproc; r++) {
        long value = 100L * me + r;
        CHECK(ARMCI_Put(&value, &words[r][me], sizeof value, r) == 0, "put");
    }
    ARMCI_AllFence();
    ARMCI_Barrier();
    for (int r = 0; r < nproc; r++)
        CHECK(words[me][r] == 100L * r + me, "word %d of rank %d: %ld", r, me, words[me][r]);
    CHECK(puts_seen == nproc, "the wrapper saw %d puts, expected %d", puts_seen, nproc);
    CHECK(barriers_seen == 2, "the wrapper saw %d barriers, expected 2", barriers_seen);
    printf("armci_intercept ok rank %d of %d\n", me, nproc);
    ARMCI_Barrier();
    CHECK(ARMCI_Free(words[me]) == 0, "free");
    free(words);
    ARMCI_Finalize();
    return 0;
}
