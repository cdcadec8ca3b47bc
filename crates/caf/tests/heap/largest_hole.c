/* largest_hole: the size in bytes of the largest free chunk of glibc's main malloc arena
   other than the top chunk (0 when there is none): a hole between live blocks, which a
   request of that size or less would be carved from instead of the top; -1 when the walk
   does not end exactly at the top chunk (a layout this walker does not understand).
   The arena is the `mallinfo2().arena` bytes below the program break (what malloc took
   with sbrk, nobody else calling sbrk afterwards); its chunks are walked by their size
   words, a chunk being free when the next one's PREV_INUSE bit is clear (chunks in the
   thread cache and the fast bins count as in use). Allocates nothing, and reads the arena
   without its lock: call it while no other thread of the process allocates. */
#include <malloc.h>
#include <stdint.h>
#include <unistd.h>

long largest_hole(void) {
  uintptr_t hi = (uintptr_t)sbrk(0);
  struct mallinfo2 info = mallinfo2();
  if (info.arena == 0 || info.arena > hi) return -1;
  uintptr_t p = hi - info.arena;
  long largest = 0;
  while (p + 16 <= hi) {
    uintptr_t size = *(uintptr_t *)(p + 8) & ~(uintptr_t)7;
    if (size < 32 || size > hi - p) return -1;
    uintptr_t next = p + size;
    if (next == hi) return largest; /* the top chunk */
    if (next + 16 > hi) return -1;
    int in_use = *(uintptr_t *)(next + 8) & 1;
    if (!in_use && (long)size > largest) largest = (long)size;
    p = next;
  }
  return -1;
}
