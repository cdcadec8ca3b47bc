/*
 * note_pair.c -- the cost of the shm notes' protocol (crates/gaspar/src/transport/shm/
 * notes.rs) between two processes, in C, outside gaspar: the floor of a co_sum of one value
 * at 2 images, to set beside pair_barrier.c's.
 *
 * Two processes (the parent and one fork()ed child) share four 4 KiB note places: each
 * rank's inbox has two, used in turn, as gaspar's are. A round is: write the note (tag,
 * length, an 8-byte payload behind 16 bytes of head, then the sequence word with a release
 * store, all in one cache line of the peer's inbox), pause-poll the own inbox for the
 * peer's note, read its tag and payload, add, and (MARK=1, as gaspar) store the read mark
 * into the note's sequence word. The parent prints the median and minimum over R
 * repetitions of B rounds.
 *
 *   gcc -O2 -o /tmp/note_pair bench/probes/note_pair.c
 *   /tmp/note_pair [B=1000000] [R=7] [MARK=1]
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return (x>y)-(x<y);}
#define READ (1UL<<63)
/* inbox[r][k]: note place k (of 2) in rank r's inbox, from the other rank; 4 KiB each */
int main(int argc,char**argv){
  long B=argc>1?atol(argv[1]):1000000; int R=argc>2?atoi(argv[2]):7; int mark=argc>3?atoi(argv[3]):1;
  char *w=mmap(0,4*4096,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0);
  int me=fork()==0?1:0; long n=0; double t[64]; double x=1.0, sum=0;
  for(int r=0;r<R;r++){double s=now();
    for(long i=0;i<B;i++){
      char *out=w+((1-me)*2+(n%2))*4096, *in=w+(me*2+(n%2))*4096;
      _Atomic unsigned long *oseq=(void*)out,*iseq=(void*)in;
      ((unsigned long*)out)[1]=42; ((unsigned long*)out)[2]=24; memcpy(out+24+16,&x,8);
      atomic_store_explicit(oseq,n+1,memory_order_release);
      while((atomic_load_explicit(iseq,memory_order_acquire)&~READ)<=n) __builtin_ia32_pause();
      double y; if(((unsigned long*)in)[1]!=42) abort(); memcpy(&y,in+24+16,8); sum=x+y;
      if(mark) atomic_store_explicit(iseq,(n+1)|READ,memory_order_release);
      n++;}
    t[r]=(now()-s)/B;}
  if(me){return 0;} wait(0); qsort(t,R,sizeof t[0],cmp);
  printf("note pair mark=%d: median %.1f ns, min %.1f ns (sum %g)\n",mark,t[R/2],t[0],sum);
}
