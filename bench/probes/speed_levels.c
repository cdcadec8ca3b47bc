/* The VM's two speed levels: 12 rounds of 2 M iterations of 20 dependent multiply-adds
 * and one 8-byte store, ns per iteration printed per round. Pinned to one core and alone,
 * session 32's Zen 3 VM gave 10.5-11 ns in some rounds and 14-18 in others, switching
 * within a run (bench/probes/README.md).
 *   cc -O2 bench/probes/speed_levels.c -o /tmp/speed_levels && taskset -c 0 /tmp/speed_levels */
#include <stdio.h>
#include <time.h>
#include <stdint.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
volatile uint64_t sink[64];
__attribute__((noinline)) void work(uint64_t i){ uint64_t a=i; for(int k=0;k<20;k++){a=a*6364136223846793005ULL+1442695040888963407ULL;} sink[i&7]=a; }
int main(){ for(int r=0;r<12;r++){ double s=now(); for(uint64_t i=0;i<2000000;i++) work(i); printf("%6.1f",(now()-s)/2e6);} printf("\n"); }
