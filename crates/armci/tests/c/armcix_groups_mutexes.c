/* armcix.h (issue 15, item 3): the world split by rank parity, keys reversing the order
 * (negative keys included); a duplicate of the world; and mutex handles on the split
 * group, only its first member creating mutexes. Members increment a counter on that
 * first member under its mutex, taken with ARMCIX_Trylock_hdl in a loop (as ARMCI-MPI's
 * test_mutex_trylock does) and with ARMCIX_Lock_hdl: no update may be lost. */
#include <armci.h>
#include <armcix.h>
#include <message.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

#define ROUNDS 100

int main(int argc, char **argv) {
    CHECK(ARMCI_Init_args(&argc, &argv) == 0, "init");
    int me = armci_msg_me(), nproc = armci_msg_nproc();
    ARMCI_Group world, half, dup, none;
    ARMCI_Group_get_world(&world);

    /* Parity groups, numbered by descending world rank (key = -rank). */
    CHECK(ARMCIX_Group_split(&world, me % 2, -me, &half) == 0, "split");
    int half_size = (nproc - me % 2 + 1) / 2, half_rank = -1, size = -1;
    ARMCI_Group_rank(&half, &half_rank);
    ARMCI_Group_size(&half, &size);
    CHECK(size == half_size, "rank %d: half has %d members, expected %d", me, size, half_size);
    int first = me % 2 + 2 * (half_size - 1); /* the highest rank of my parity */
    CHECK(half_rank == (first - me) / 2, "rank %d: half rank %d", me, half_rank);
    for (int r = 0; r < half_size; r++)
        CHECK(ARMCI_Absolute_id(&half, r) == first - 2 * r, "absolute id of %d", r);

    /* Only rank 0 joins a group; the others pass MPI_UNDEFINED's negative color. */
    CHECK(ARMCIX_Group_split(&world, me == 0 ? 5 : -32766, 0, &none) == 0, "split one");
    ARMCI_Group_size(&none, &size);
    CHECK(size == (me == 0 ? 1 : 0), "rank %d: one-member group of size %d", me, size);

    CHECK(ARMCIX_Group_dup(&world, &dup) == 0, "dup");
    ARMCI_Group_rank(&dup, &half_rank);
    ARMCI_Group_size(&dup, &size);
    CHECK(half_rank == me && size == nproc, "dup: rank %d size %d", half_rank, size);
    armci_msg_group_barrier(&dup);

    /* A counter on every rank; the mutexes of the parity group live on `first` only. */
    long **counters = malloc(sizeof(long *) * nproc);
    CHECK(ARMCI_Malloc((void **)counters, sizeof(long)) == 0, "malloc");
    *counters[me] = 0;
    ARMCI_Barrier();
    armcix_mutex_hdl_t hdl = ARMCIX_Create_mutexes_hdl(me == first ? 2 : 0, &half);
    CHECK(hdl != NULL, "create");
    for (int i = 0; i < ROUNDS; i++) {
        int mutex = i % 2;
        if (i % 4 < 2)
            while (ARMCIX_Trylock_hdl(hdl, mutex, first) != 0)
                ARMCIX_Progress();
        else
            ARMCIX_Lock_hdl(hdl, mutex, first);
        /* Both mutexes guard the same counter: hold both for the update. */
        if (mutex == 0)
            ARMCIX_Lock_hdl(hdl, 1, first);
        long value;
        CHECK(ARMCI_Get(counters[first], &value, sizeof value, first) == 0, "get");
        value += 1;
        CHECK(ARMCI_Put(&value, counters[first], sizeof value, first) == 0, "put");
        if (mutex == 0)
            ARMCIX_Unlock_hdl(hdl, 1, first);
        ARMCIX_Unlock_hdl(hdl, mutex, first);
    }
    CHECK(ARMCIX_Destroy_mutexes_hdl(hdl) == 0, "destroy");
    ARMCI_Barrier();
    if (me == first)
        CHECK(*counters[me] == (long)ROUNDS * half_size, "counter on rank %d: %ld, expected %ld",
              me, *counters[me], (long)ROUNDS * half_size);
    ARMCI_Barrier();
    printf("armcix_groups_mutexes ok rank %d of %d\n", me, nproc);
    CHECK(ARMCI_Free(counters[me]) == 0, "free");
    free(counters);
    ARMCI_Group_free(&half);
    ARMCI_Group_free(&none);
    ARMCI_Group_free(&dup);
    ARMCI_Finalize();
    return 0;
}
