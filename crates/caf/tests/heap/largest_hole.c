/* largest_hole: the size in bytes of the largest free chunk of glibc's main malloc heap
   that is not the top chunk (0 when there is none): a hole between live blocks, which a
   temporary of that size or less would be carved from instead of the top. Walks the
   [heap] mapping chunk by chunk; reads /proc/self/maps with read(2) into a static buffer,
   so that it allocates nothing itself. Chunks in the thread cache count as in use. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char maps[1 << 16];

long largest_hole(void) {
  int fd = open("/proc/self/maps", O_RDONLY);
  if (fd < 0) return -1;
  long got = 0, n;
  while (got < (long)sizeof maps - 1 && (n = read(fd, maps + got, sizeof maps - 1 - got)) > 0) got += n;
  close(fd);
  maps[got] = 0;
  char *heap = strstr(maps, "[heap]");
  if (!heap) return -1;
  while (heap > maps && heap[-1] != '\n') heap--;
  unsigned long lo = strtoul(heap, &heap, 16), hi = strtoul(heap + 1, NULL, 16);
  long largest = 0;
  for (unsigned long p = lo; p + 16 < hi;) {
    unsigned long size = *(unsigned long *)(p + 8) & ~7UL;
    if (!size || p + size + 16 > hi) break; /* the top chunk: nothing after it */
    int in_use = *(unsigned long *)(p + size + 8) & 1;
    if (!in_use && (long)size > largest) largest = (long)size;
    p += size;
  }
  return largest;
}
