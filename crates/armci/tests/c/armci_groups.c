/* Groups the way ARMCI-MPI programs use them: odd/even children of the world, group
 * memory, group collectives, a default group, a grandchild; every check aborts on
 * failure. */
#include <armci.h>
#include <message.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int me, nproc;


int main(int argc, char **argv) {
    ARMCI_Init_args(&argc, &argv);
    me = armci_msg_me();
    nproc = armci_msg_nproc();

    ARMCI_Group world, odd, even;
    ARMCI_Group_get_world(&world);
    int r, n;
    ARMCI_Group_rank(&world, &r);
    ARMCI_Group_size(&world, &n);
    CHECK(r == me && n == nproc, "world group rank %d size %d", r, n);

    /* Both creations are collective over the world: every rank makes both. */
    int *procs = malloc(sizeof(int) * nproc);
    int n_odd = 0, n_even = 0;
    for (int i = 1; i < nproc; i += 2) procs[n_odd++] = i;
    ARMCI_Group_create_child(n_odd, procs, &odd, &world);
    for (int i = 0; i < nproc; i += 2) procs[n_even++] = i;
    ARMCI_Group_create_child(n_even, procs, &even, &world);
    ARMCI_Group *mine = me % 2 ? &odd : &even, *other = me % 2 ? &even : &odd;
    int size = me % 2 ? n_odd : n_even;
    ARMCI_Group_rank(mine, &r);
    ARMCI_Group_size(mine, &n);
    CHECK(r == me / 2 && n == size, "own group rank %d size %d", r, n);
    ARMCI_Group_rank(other, &r);
    ARMCI_Group_size(other, &n);
    CHECK(r == -1 && n == 0, "other group rank %d size %d", r, n);
    for (int g = 0; g < size; g++)
        CHECK(ARMCI_Absolute_id(mine, g) == 2 * g + me % 2, "absolute id of %d", g);

    /* Group memory: each member puts its world rank into the next member's block. */
    int **blocks = malloc(sizeof(int *) * size);
    CHECK(ARMCI_Malloc_group((void **)blocks, 16 * sizeof(int), mine) == 0, "malloc_group");
    int gr = me / 2, next = (gr + 1) % size;
    blocks[gr][0] = -1;
    armci_msg_group_barrier(mine);
    int value = me;
    ARMCI_Put(&value, blocks[next], sizeof(int), ARMCI_Absolute_id(mine, next));
    ARMCI_Fence(ARMCI_Absolute_id(mine, next));
    armci_msg_group_barrier(mine);
    int prev = (gr + size - 1) % size;
    CHECK(blocks[gr][0] == ARMCI_Absolute_id(mine, prev), "group block holds %d", blocks[gr][0]);

    /* Group collectives. */
    int sum = me;
    armci_msg_group_igop(&sum, 1, "+", mine);
    int want = 0;
    for (int g = 0; g < size; g++) want += 2 * g + me % 2;
    CHECK(sum == want, "group sum %d, want %d", sum, want);
    double mx[2] = {me, -me};
    armci_msg_group_dgop(mx, 2, "max", mine);
    CHECK(mx[0] == 2 * (size - 1) + me % 2 && mx[1] == -(me % 2), "group max %g %g", mx[0], mx[1]);
    long word = me == ARMCI_Absolute_id(mine, size - 1) ? 4242 + me : 0;
    /* The root is an absolute rank, as in ARMCI-MPI. */
    armci_msg_group_bcast_scope(SCOPE_ALL, &word, sizeof word, ARMCI_Absolute_id(mine, size - 1), mine);
    CHECK(word == 4242 + ARMCI_Absolute_id(mine, size - 1), "group bcast %ld", word);
    CHECK(ARMCI_Free_group(blocks[gr], mine) == 0, "free_group");

    /* A default group: ARMCI_Malloc then allocates over it, indexed by group rank. */
    ARMCI_Group_set_default(mine);
    ARMCI_Group dflt;
    ARMCI_Group_get_default(&dflt);
    ARMCI_Group_size(&dflt, &n);
    CHECK(n == size, "default group size %d", n);
    long **longs = malloc(sizeof(long *) * size);
    CHECK(ARMCI_Malloc((void **)longs, sizeof(long)) == 0, "malloc over the default group");
    longs[gr][0] = 7 * me;
    armci_msg_group_barrier(mine);
    long seen = 0;
    ARMCI_Get(longs[next], &seen, sizeof seen, ARMCI_Absolute_id(mine, next));
    CHECK(seen == 7 * ARMCI_Absolute_id(mine, next), "get from the default group saw %ld", seen);
    armci_msg_group_barrier(mine);
    CHECK(ARMCI_Free(longs[gr]) == 0, "free over the default group");
    ARMCI_Group_set_default(&world);

    /* A grandchild: group rank 0 of my group alone (collective over my group). */
    int first = 0;
    ARMCI_Group solo;
    ARMCI_Group_create_child(1, &first, &solo, mine);
    ARMCI_Group_size(&solo, &n);
    CHECK(n == (gr == 0 ? 1 : 0), "grandchild size %d", n);
    if (gr == 0) {
        CHECK(ARMCI_Absolute_id(&solo, 0) == me, "grandchild member");
        armci_msg_group_barrier(&solo);
    }
    ARMCI_Group_free(&solo);

    /* World allocations still land at one offset everywhere. */
    void **world_blocks = malloc(sizeof(void *) * nproc);
    CHECK(ARMCI_Malloc(world_blocks, 256) == 0, "world malloc after groups");
    ARMCI_Free(world_blocks[me]);

    /* Freeing the default group makes the world the default again. */
    for (int i = 0; i < nproc; i++) procs[i] = nproc - 1 - i;
    ARMCI_Group reversed, after;
    ARMCI_Group_create(nproc, procs, &reversed);
    ARMCI_Group_rank(&reversed, &r);
    CHECK(r == nproc - 1 - me, "reversed group rank %d", r);
    ARMCI_Group_set_default(&reversed);
    ARMCI_Group_free(&reversed);
    ARMCI_Group_get_default(&after);
    ARMCI_Group_rank(&after, &r);
    CHECK(r == me && ARMCI_Absolute_id(&after, me) == me, "default after free: rank %d", r);

    ARMCI_Group_free(&odd);
    ARMCI_Group_free(&even);
    ARMCI_Barrier();
    printf("armci_groups ok rank %d of %d\n", me, nproc);
    ARMCI_Finalize();
    return 0;
}
