/* ring.c: each rank puts its rank into its right neighbour's ARMCI memory and checks
 * what its left neighbour put into its own. The README's first ARMCI program:
 *   cargo build --release
 *   cc -I crates/armci/include crates/armci/examples/ring.c -L target/release -larmci \
 *      -Wl,-rpath,$PWD/target/release -o target/ring
 *   target/release/gaspar run -n 4 target/ring
 */
#include <armci.h>
#include <message.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    ARMCI_Init_args(&argc, &argv);
    int me = armci_msg_me(), nproc = armci_msg_nproc();
    int **base = malloc(sizeof(int *) * nproc);
    ARMCI_Malloc((void **)base, sizeof(int));
    int right = (me + 1) % nproc, left = (me + nproc - 1) % nproc;
    ARMCI_Put(&me, base[right], sizeof(int), right);
    ARMCI_Barrier();
    if (*base[me] != left) {
        fprintf(stderr, "rank %d got %d, expected %d\n", me, *base[me], left);
        ARMCI_Error("wrong value", 1);
    }
    printf("ring ok rank %d of %d: got %d\n", me, nproc, *base[me]);
    ARMCI_Free(base[me]);
    free(base);
    ARMCI_Finalize();
    return 0;
}
