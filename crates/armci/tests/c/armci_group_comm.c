/* Groups carry MPI communicators, as on ARMCI-MPI (issue 15, item 6), which libraries
 * such as Global Arrays use (GA_Initialize duplicates the world group's). The world
 * group's is a duplicate of MPI_COMM_WORLD; a group of the even ranks and a parity split
 * carry communicators of their members, used here for MPI_Comm_dup and MPI_Allreduce.
 * Built with mpicc against the MPI build. */
#include <armci.h>
#include <armcix.h>

#include "check.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    CHECK(ARMCI_Init() == 0, "init");
    int me = armci_msg_me(), nproc = armci_msg_nproc(), size = -1, rank = -1, result = -1;
    ARMCI_Group world, evens, parity;
    ARMCI_Group_get_world(&world);
    CHECK(world.comm != MPI_COMM_NULL, "world group without a communicator");
    MPI_Comm_compare(world.comm, MPI_COMM_WORLD, &result);
    CHECK(result == MPI_CONGRUENT, "world group's communicator: compare gives %d", result);
    MPI_Comm copy;
    CHECK(MPI_Comm_dup(world.comm, &copy) == MPI_SUCCESS, "MPI_Comm_dup of the world group's");
    MPI_Comm_free(&copy);

    int n_evens = (nproc + 1) / 2;
    int *pids = malloc(sizeof(int) * n_evens);
    for (int k = 0; k < n_evens; k++)
        pids[k] = 2 * k;
    ARMCI_Group_create(n_evens, pids, &evens);
    if (me % 2 == 0) {
        MPI_Comm_size(evens.comm, &size);
        MPI_Comm_rank(evens.comm, &rank);
        CHECK(size == n_evens && rank == me / 2, "evens: MPI size %d rank %d", size, rank);
        int sum = 0;
        MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, evens.comm);
        CHECK(sum == n_evens * (n_evens - 1), "sum over the evens: %d", sum);
    } else {
        CHECK(evens.comm == MPI_COMM_NULL, "a rank outside the group has a communicator");
    }

    CHECK(ARMCIX_Group_split(&world, me % 2, me, &parity) == 0, "split");
    int parity_size = me % 2 == 0 ? n_evens : nproc / 2;
    MPI_Comm_size(parity.comm, &size);
    MPI_Comm_rank(parity.comm, &rank);
    CHECK(size == parity_size && rank == me / 2, "parity: MPI size %d rank %d", size, rank);

    ARMCI_Group_free(&parity);
    ARMCI_Group_free(&evens);
    free(pids);
    ARMCI_Finalize();
    printf("armci_group_comm ok rank %d of %d\n", me, nproc);
    MPI_Finalize();
    return 0;
}
