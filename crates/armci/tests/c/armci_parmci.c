/* The profiling interface (issue 15, item 4), called directly: PARMCI_Init, Malloc, Put,
 * Get, Barrier, Free and Finalize behave as their ARMCI_ names. Each rank puts its rank
 * into its right neighbour's word and reads back its own, put there by its left one. */
#include <armci.h>
#include <message.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

int main(void) {
    CHECK(PARMCI_Init() == 0, "PARMCI_Init");
    CHECK(PARMCI_Initialized(), "PARMCI_Initialized");
    int me = armci_msg_me(), nproc = armci_msg_nproc();
    int **words = malloc(sizeof(int *) * nproc);
    CHECK(PARMCI_Malloc((void **)words, sizeof(int)) == 0, "PARMCI_Malloc");
    *words[me] = -1;
    PARMCI_Barrier();
    int right = (me + 1) % nproc, left = (me + nproc - 1) % nproc;
    CHECK(PARMCI_Put(&me, words[right], sizeof me, right) == 0, "PARMCI_Put");
    PARMCI_AllFence();
    PARMCI_Barrier();
    int got = -2;
    CHECK(PARMCI_Get(words[me], &got, sizeof got, me) == 0, "PARMCI_Get");
    CHECK(got == left, "rank %d holds %d, expected %d", me, got, left);
    CHECK(PARMCI_GetValueInt(words[right], right) == me, "PARMCI_GetValueInt");
    PARMCI_Barrier();
    printf("armci_parmci ok rank %d of %d\n", me, nproc);
    CHECK(PARMCI_Free(words[me]) == 0, "PARMCI_Free");
    free(words);
    CHECK(PARMCI_Finalize() == 0, "PARMCI_Finalize");
    return 0;
}
