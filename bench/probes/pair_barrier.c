/*
 * pair_barrier.c -- the floor of any barrier (and of any allreduce of one value) between
 * two processes on this machine, in C, outside gaspar and MPI.
 *
 * Two processes (the parent and one fork()ed child) share one MAP_SHARED|MAP_ANONYMOUS
 * page. Each owns one counter, on a cache line of its own or (the second layout) beside
 * the other's in one line; a barrier is: bump the own counter (release store), then
 * pause-poll the other's until it reaches the same round (acquire load). Every barrier between two processes must at least move one line each
 * way like this, and so must an allreduce of one value (the value rides in the same
 * line), so no runtime's `sync all` or `co_sum` of one value at 2 images can beat it.
 * The parent prints, for each layout, the median and the minimum over R repetitions of
 * B barriers (which layout is faster depends on the machine and its state: on the Zen 5
 * VM of 2026-11-29 one shared line took 22 ns and one line each 23-41 ns when quiet,
 * 191 and 235 ns in a slow spell).
 *
 *   gcc -O2 -o /tmp/pair_barrier bench/probes/pair_barrier.c
 *   /tmp/pair_barrier [B=1000000] [R=11]
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return (x>y)-(x<y);}
int main(int argc,char**argv){
  long B=argc>1?atol(argv[1]):1000000; int R=argc>2?atoi(argv[2]):11;
  _Atomic long *w=mmap(0,4096,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0);
  if(R>64) R=64;
  int me=fork()==0?1:0; long round=0; double t[64];
  const char *name[2]={"one line each","one shared line"};
  for(int layout=0;layout<2;layout++){
    _Atomic long *c[2]={w+256*layout,w+256*layout+(layout?1:16)};
    round=0;
    for(int r=0;r<R;r++){double s=now();
      for(long i=0;i<B;i++){round++; atomic_store_explicit(c[me],round,memory_order_release);
        while(atomic_load_explicit(c[1-me],memory_order_acquire)<round) __builtin_ia32_pause();}
      t[r]=(now()-s)/B;}
    if(!me){qsort(t,R,sizeof t[0],cmp);
      printf("pair barrier, %s: median %.1f ns, min %.1f ns per barrier (%ld x %d)\n",name[layout],t[R/2],t[0],B,R);}
  }
  if(me){return 0;} wait(0);
}
