/*
 * page_alias.c -- how fast the C library's memcpy copies when the destination sits a
 * given number of bytes ahead of the source within a 4 KiB page (4K aliasing: a forward
 * copy's loads run ahead of its stores at page offsets those stores share).
 *
 * Source and destination are in two page-aligned 16 MiB buffers, both at page offset
 * 64; the destination is moved `ahead` bytes further (mod 4096) for each line printed.
 * Each figure is the best of 5 runs of 64 MiB copied in copies of LEN bytes.
 *
 *   gcc -O2 -Wall -o /tmp/page_alias bench/probes/page_alias.c
 *   /tmp/page_alias 8192        # LEN (default 8192)
 *
 * What it showed (bench/probes/README.md): on an AMD EPYC (family 25 model 17) with
 * glibc 2.36, whose memcpy copies such sizes with `rep movsb`, 8 KiB copies 1-15 bytes
 * ahead ran at 2.2-3.5 GB/s and 16-31 bytes ahead at 30-46 GB/s, against 75-107 GB/s at
 * the other distances (two runs). gaspar's copy engine therefore calibrates "less than a line ahead" as
 * a placement of its own (transport/shm/copy/table.rs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
    size_t len = argc > 1 ? strtoul(argv[1], NULL, 10) : 8192;
    const size_t area = 16 << 20;
    if (len == 0 || len > area / 2) {
        fprintf(stderr, "page_alias: LEN must be 1..%zu\n", area / 2);
        return 1;
    }
    char *a = aligned_alloc(4096, area), *b = aligned_alloc(4096, area);
    if (!a || !b) {
        perror("aligned_alloc");
        return 1;
    }
    memset(a, 1, area);
    memset(b, 2, area);
    const int aheads[] = {0,    1,    2,    8,    15,   16,   31,   32,   48,   63,
                          64,   65,   128,  129,  1023, 1024, 2048, 3072, 4032, 4095};
    for (size_t i = 0; i < sizeof aheads / sizeof aheads[0]; i++) {
        char *src = a + 64, *dst = b + 64 + aheads[i];
        long iterations = (64l << 20) / (long)len;
        double best = 1e30;
        for (int run = 0; run < 5; run++) {
            double t = now_ns();
            for (long k = 0; k < iterations; k++) {
                memcpy(dst, src, len);
                __asm__ volatile("" ::"r"(dst) : "memory");
            }
            t = now_ns() - t;
            if (t < best) best = t;
        }
        printf("ahead %4d: %6.1f GB/s\n", aheads[i], (double)len * iterations / best);
    }
    free(a);
    free(b);
    return 0;
}
