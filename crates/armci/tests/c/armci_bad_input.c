/* Bad input must end the job with a one-line message naming the call, never a crash. */
#include <armci.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    ARMCI_Init();
    int nproc = armci_msg_nproc();
    void **base = malloc(sizeof(void *) * nproc);
    ARMCI_Malloc(base, 1024);
    char local[64];
    const char *what = argc > 1 ? argv[1] : "";
    if (strcmp(what, "address") == 0) {
        ARMCI_Put(local, local, 8, 0);              /* not ARMCI memory */
    } else if (strcmp(what, "past-end") == 0) {
        int stride[1] = {4096}, count[2] = {8, 1000000};
        ARMCI_PutS(local, stride, base[0], stride, count, 1, 0);
    } else if (strcmp(what, "gets-past-end") == 0) {
        int stride[1] = {4096}, count[2] = {8, 1000000};
        ARMCI_GetS(base[0], stride, local, stride, count, 1, 0);
    } else if (strcmp(what, "gets-null-local") == 0) {
        int src[1] = {64}, dst[1] = {8}, count[2] = {8, 4};
        ARMCI_GetS(base[0], src, NULL, dst, count, 1, 0);
    } else if (strcmp(what, "gets-local-past-heap") == 0) {
        /* The local rows start in this rank's ARMCI memory and run far past its end. */
        int src[1] = {8}, dst[1] = {0x7fffffff}, count[2] = {8, 100};
        ARMCI_GetS(base[0], src, base[armci_msg_me()], dst, count, 1, 0);
    } else if (strcmp(what, "puts-local-past-heap") == 0) {
        int src[1] = {0x7fffffff}, dst[1] = {8}, count[2] = {8, 100};
        ARMCI_PutS(base[armci_msg_me()], src, base[0], dst, count, 1, 0);
    } else if (strcmp(what, "acc-null-scale") == 0) {
        ARMCI_Acc(ARMCI_ACC_DBL, NULL, local, base[0], 8, 0);
    } else if (strcmp(what, "zero-bytes-rank") == 0) {
        ARMCI_Get(base[0], local, 0, -1);           /* moves nothing, still a bad rank */
    } else if (strcmp(what, "acc-zero-datatype") == 0) {
        double one = 1;
        ARMCI_Acc(12345, &one, local, base[0], 0, 0);
    } else if (strcmp(what, "putv-zero-rank") == 0) {
        void *src[1] = {local}, *dst[1] = {base[0]};
        armci_giov_t iov = {src, dst, 0, 1};
        ARMCI_PutV(&iov, 1, nproc);
    } else if (strcmp(what, "negative-stride") == 0) {
        int stride[1] = {-8}, count[2] = {8, 2};
        ARMCI_PutS(local, stride, base[0], stride, count, 1, 0);
    } else if (strcmp(what, "rank") == 0) {
        ARMCI_Put(local, base[0], 8, nproc + 5);
    } else if (strcmp(what, "overlap") == 0) {
        int src[1] = {8}, dst[1] = {4}, count[2] = {8, 4};
        ARMCI_PutS(local, src, base[0], dst, count, 1, 0);
    } else if (strcmp(what, "vector-past-end") == 0) {
        /* The third segment lies far past the end of rank 0's ARMCI memory. */
        void *src[3] = {local, local + 8, local + 16};
        void *dst[3] = {base[0], (char *)base[0] + 8, (char *)base[0] + (1L << 40)};
        armci_giov_t iov = {src, dst, 8, 3};
        ARMCI_PutV(&iov, 1, 0);
    } else if (strcmp(what, "vector-null") == 0) {
        void *src[2] = {local, NULL}, *dst[2] = {base[0], (char *)base[0] + 8};
        armci_giov_t iov = {dst, src, 8, 2};
        ARMCI_GetV(&iov, 1, 0);
    } else if (strcmp(what, "null-count") == 0) {
        int stride[1] = {8};
        ARMCI_PutS(local, stride, base[0], stride, NULL, 1, 0);
    } else if (strcmp(what, "null-pointer-array") == 0) {
        void *dst[2] = {base[0], (char *)base[0] + 8};
        armci_giov_t iov = {NULL, dst, 8, 2};
        ARMCI_PutV(&iov, 1, 0);
    } else if (strcmp(what, "null-iov") == 0) {
        ARMCI_GetV(NULL, 1, 0);
    } else if (strcmp(what, "null-pack-count") == 0) {
        int stride[1] = {8};
        armci_read_strided(local, 1, stride, NULL, local + 32);
    } else if (strcmp(what, "malloc-vs-barrier") == 0) {
        /* Rank 0 allocates while rank 1 synchronizes: both must name the other's call. */
        if (armci_msg_me() == 0) ARMCI_Malloc(base, 64);
        else ARMCI_Barrier();
    } else if (strcmp(what, "freed") == 0) {
        ARMCI_Free(base[armci_msg_me()]);
        ARMCI_Put(local, base[0], 8, 0);            /* the block is gone */
    } else if (strcmp(what, "never-allocated") == 0) {
        ARMCI_Put(local, (char *)base[0] + 64 * 1024, 8, 0);
    } else if (strcmp(what, "past-block") == 0) {
        ARMCI_Put(local, (char *)base[0] + 1000, 64, 0);
    } else if (strcmp(what, "past-own-size") == 0) {
        /* Rank 0 asks for 64 bytes, rank 1 for 1024: rank 0 has only 64. */
        void **small = malloc(sizeof(void *) * nproc);
        ARMCI_Malloc(small, armci_msg_me() == 0 ? 64 : 1024);
        char big[512];
        ARMCI_Put(big, small[0], sizeof big, 0);
    } else if (strcmp(what, "group-pid") == 0) {
        int pids[2] = {0, 99};
        ARMCI_Group g;
        ARMCI_Group_create(2, pids, &g);
    } else if (strcmp(what, "group-duplicate") == 0) {
        int pids[2] = {0, 0};
        ARMCI_Group g;
        ARMCI_Group_create(2, pids, &g);
    } else if (strcmp(what, "mutex-elsewhere") == 0) {
        /* Rank 0 has a mutex, rank 1 none: mutex 0 names a mutex on rank 0 only. */
        ARMCI_Create_mutexes(armci_msg_me() == 0 ? 1 : 0);
        ARMCI_Lock(0, 1);
    }
    printf("not reached\n");
    ARMCI_Finalize();
    return 0;
}
