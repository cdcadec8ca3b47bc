/*
 * heapwalk.c -- prints glibc's main malloc heap chunk by chunk (offset from the heap's
 * start, size, used / FREE / top, and the first bytes as text), from inside a program:
 * for seeing whether the heap a program's temporaries come from has free chunks (holes)
 * between live blocks. Call it from Fortran as `call heapwalk()` (a gfortran external
 * name, heapwalk_) at the point of interest, and link the object:
 *
 *   gcc -O2 -c bench/probes/heapwalk.c -o heapwalk.o
 *   FC=gfortran-16 target/release/gaspar caf -O2 prog.f90 heapwalk.o -o prog
 *
 * A chunk in a thread-cache bin counts as used (glibc marks it so). It starts at the
 * [heap] mapping's first byte, where a dynamically linked program's arena begins (a static
 * one puts its TLS there first: see crates/caf/tests/heap/largest_hole.c for a walker that
 * finds the arena from the program break and checks that it ends at the top chunk). Figures and the
 * session they come from: bench/probes/README.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
void heapwalk_(void) {
  FILE *f = fopen("/proc/self/maps", "r"); char line[512]; unsigned long lo = 0, hi = 0;
  while (fgets(line, sizeof line, f)) if (strstr(line, "[heap]")) { sscanf(line, "%lx-%lx", &lo, &hi); break; }
  fclose(f);
  if (!lo) { fprintf(stderr, "no heap\n"); return; }
  unsigned long p = lo;
  while (p + 16 < hi) {
    unsigned long size = *(unsigned long *)(p + 8) & ~7UL;
    if (!size) break;
    unsigned long next = p + size;
    int inuse = next + 16 <= hi ? (*(unsigned long *)(next + 8) & 1) : -1;
    char txt[33]; unsigned char *d = (unsigned char *)(p + 16);
    for (int i = 0; i < 32; i++) txt[i] = (i + 16 < (long)size && isprint(d[i])) ? d[i] : '.';
    txt[32] = 0;
    fprintf(stderr, "%8lx %7lu %s %s\n", p - lo, size, inuse == 1 ? "used" : inuse == 0 ? "FREE" : "top ", txt);
    p = next;
  }
}
