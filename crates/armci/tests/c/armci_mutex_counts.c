/* Mutex counts per process (issue 15, item 1): rank 0 creates 2 mutexes, every other
 * rank none, as ARMCI and ARMCI-MPI allow. Every rank then takes rank 0's mutexes to do
 * unprotected get-add-put increments of two counters on rank 0: no update may be lost.
 * A second set, with one mutex on the last rank only, guards a counter there. */
#include <armci.h>
#include <message.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

#define ROUNDS 200

static void increment_under(int mutex, int owner, long *counter) {
    long value;
    ARMCI_Lock(mutex, owner);
    CHECK(ARMCI_Get(counter, &value, sizeof value, owner) == 0, "get");
    value += 1;
    CHECK(ARMCI_Put(&value, counter, sizeof value, owner) == 0, "put");
    ARMCI_Unlock(mutex, owner);
}

int main(int argc, char **argv) {
    CHECK(ARMCI_Init_args(&argc, &argv) == 0, "init");
    int me = armci_msg_me(), nproc = armci_msg_nproc(), last = nproc - 1;
    long **counters = malloc(sizeof(long *) * nproc);
    CHECK(ARMCI_Malloc((void **)counters, 3 * sizeof(long)) == 0, "malloc");
    counters[me][0] = counters[me][1] = counters[me][2] = 0;
    ARMCI_Barrier();

    CHECK(ARMCI_Create_mutexes(me == 0 ? 2 : 0) == 0, "create");
    for (int i = 0; i < ROUNDS; i++) {
        increment_under(0, 0, &counters[0][0]);
        increment_under(1, 0, &counters[0][1]);
    }
    ARMCI_Barrier();
    CHECK(ARMCI_Destroy_mutexes() == 0, "destroy");

    CHECK(ARMCI_Create_mutexes(me == last ? 1 : 0) == 0, "create again");
    for (int i = 0; i < ROUNDS; i++)
        increment_under(0, last, &counters[last][2]);
    ARMCI_Barrier();
    CHECK(ARMCI_Destroy_mutexes() == 0, "destroy again");

    if (me == 0)
        CHECK(counters[0][0] == (long)ROUNDS * nproc && counters[0][1] == (long)ROUNDS * nproc,
              "counters on rank 0: %ld %ld, expected %ld", counters[0][0], counters[0][1],
              (long)ROUNDS * nproc);
    if (me == last)
        CHECK(counters[last][2] == (long)ROUNDS * nproc, "counter on rank %d: %ld", last,
              counters[last][2]);
    ARMCI_Barrier();
    printf("armci_mutex_counts ok rank %d of %d\n", me, nproc);
    CHECK(ARMCI_Free(counters[me]) == 0, "free");
    free(counters);
    ARMCI_Finalize();
    return 0;
}
