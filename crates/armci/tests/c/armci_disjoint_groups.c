/* Disjoint groups created in one call, as Global Arrays does on ARMCI-MPI (where
 * ARMCI_Group_create is MPI_Comm_create): ranks 2k and 2k+1 pass the list {2k, 2k+1} (a
 * last odd rank out passes its own {2k}). Each pair's group has the right size, ranks and
 * absolute ids, allocates memory and exchanges values in it. */
#include <armci.h>
#include <message.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

int main(int argc, char **argv) {
    CHECK(ARMCI_Init_args(&argc, &argv) == 0, "init");
    int me = armci_msg_me(), nproc = armci_msg_nproc();
    int first = me - me % 2, size = first + 1 < nproc ? 2 : 1;
    int pids[2] = {first, first + 1}, rank = -1, got_size = -1;
    ARMCI_Group pair;
    ARMCI_Group_create(size, pids, &pair);
    ARMCI_Group_rank(&pair, &rank);
    ARMCI_Group_size(&pair, &got_size);
    CHECK(rank == me % 2 && got_size == size, "rank %d: pair rank %d size %d", me, rank, got_size);
    for (int r = 0; r < size; r++)
        CHECK(ARMCI_Absolute_id(&pair, r) == first + r, "absolute id of %d", r);
    long **words = malloc(sizeof(long *) * size);
    CHECK(ARMCI_Malloc_group((void **)words, sizeof(long), &pair) == 0, "malloc_group");
    int other = (rank + 1) % size;
    CHECK(ARMCI_PutValueLong(1000L + me, words[other], first + other) == 0, "put");
    armci_msg_group_barrier(&pair);
    CHECK(*words[rank] == 1000L + first + other, "rank %d holds %ld", me, *words[rank]);
    armci_msg_group_barrier(&pair);
    CHECK(ARMCI_Free_group(words[rank], &pair) == 0, "free_group");
    free(words);
    ARMCI_Group_free(&pair);
    ARMCI_Barrier();
    printf("armci_disjoint_groups ok rank %d of %d\n", me, nproc);
    ARMCI_Finalize();
    return 0;
}
