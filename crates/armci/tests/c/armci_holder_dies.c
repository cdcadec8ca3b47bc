/* A rank dies while the others wait for it: they must end with ARMCI's one-line message
 * naming the call they waited in (the job's abort flag ends every wait), not be killed
 * by the launcher. `mutex`: rank 1 holds mutex 0 of rank 0 and dies while rank 0 waits
 * in ARMCI_Lock. `message`: rank 1 dies while rank 0 waits in armci_msg_rcv for it. */
#include <armci.h>
#include <message.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check.h"

/* Keeps the core busy for `ms` milliseconds (gives rank 0 time to start waiting). */
static void busy(long ms) {
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < ms);
}

int main(int argc, char **argv) {
    CHECK(ARMCI_Init_args(&argc, &argv) == 0, "init");
    CHECK(argc > 1, "usage: armci_holder_dies mutex|message");
    int me = armci_msg_me();
    int mutex = strcmp(argv[1], "mutex") == 0;
    if (mutex) ARMCI_Create_mutexes(1);
    if (me == 1 && mutex) ARMCI_Lock(0, 0);
    ARMCI_Barrier();
    if (me == 1) {
        busy(200);
        raise(SIGKILL);
    }
    if (me == 0) {
        printf("rank 0 waits\n");
        fflush(stdout);
        if (mutex) {
            ARMCI_Lock(0, 0);
        } else {
            int len = 0;
            char buffer[8];
            armci_msg_rcv(0, buffer, sizeof buffer, &len, 1);
        }
        printf("rank 0 was not stopped\n");
    }
    ARMCI_Finalize();
    return 0;
}
