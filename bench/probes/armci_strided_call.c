/* ARMCI_PutS + ARMCI_Fence and ARMCI_GetS of ROWS rows of 64 B (remote stride 1 KiB, dense
 * here) from rank 0 to rank 1, each loop of ITERS calls alternated, repetition by
 * repetition, with the same layout copied locally by memcpy in the same direction; prints
 * the medians over 41 repetitions and the ratios. ROWS 1-2 show a call's fixed cost, 256
 * is bench_strided.c's 2-D shape; REMOTE_OFF moves the remote base (placement). Session
 * 32's figures (bench/probes/README.md) came from it. Build and run (shm):
 *   cc -O2 -I crates/armci/include bench/probes/armci_strided_call.c -L target/release -larmci \
 *      -Wl,-rpath,$PWD/target/release -o /tmp/strided_call
 *   target/release/gaspar run -n 2 /tmp/strided_call ROWS [ITERS [REMOTE_OFF]]
 * Instructions per call: the same with ITERS 1000 under callgrind on rank 0 (a wrapper
 * that execs `valgrind --tool=callgrind` when GASPAR_RANK is 0), ARMCI_PutS's and
 * ARMCI_GetS's inclusive counts divided by 41 000. */
#include <armci.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now_ns(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static int cmp(const void*a,const void*b){double x=*(const double*)a,y=*(const double*)b;return (x>y)-(x<y);}
#define REPS 41
int main(int argc,char**argv){
  ARMCI_Init(); int me=armci_msg_me();
  int rows=argc>1?atoi(argv[1]):256; int iters=argc>2?atoi(argv[2]):200;
  void**base=malloc(2*sizeof(void*)); ARMCI_Malloc(base, 256*1024+8192);
  char*r2d=(char*)base[1]+(argc>3?atoi(argv[3]):0); char*l2d=calloc(1,256*64); char*ls=calloc(1,2<<20);
  int sl[1]={64}, sr[1]={1024}, c[2]={64,rows};
  ARMCI_Barrier();
  if(me==0){
    double a[REPS],b[REPS],g[REPS],lg[REPS];
    for(int r=0;r<REPS;r++){
      double s=now_ns(); for(int i=0;i<iters;i++){ARMCI_PutS(l2d,sl,r2d,sr,c,1,1);ARMCI_Fence(1);} a[r]=(now_ns()-s)/iters;
      s=now_ns(); for(int i=0;i<iters;i++){for(int k=0;k<rows;k++)memcpy(ls+k*1024,l2d+k*64,64);} b[r]=(now_ns()-s)/iters;
      s=now_ns(); for(int i=0;i<iters;i++){ARMCI_GetS(r2d,sr,l2d,sl,c,1,1);} g[r]=(now_ns()-s)/iters;
      s=now_ns(); for(int i=0;i<iters;i++){for(int k=0;k<rows;k++)memcpy(l2d+k*64,ls+k*1024,64);} lg[r]=(now_ns()-s)/iters;
    }
    qsort(a,REPS,8,cmp);qsort(b,REPS,8,cmp);qsort(g,REPS,8,cmp);qsort(lg,REPS,8,cmp);
    printf("rows %d puts %.1f local %.1f ratio %.2f | gets %.1f local %.1f ratio %.2f\n",rows,a[REPS/2],b[REPS/2],a[REPS/2]/b[REPS/2],g[REPS/2],lg[REPS/2],g[REPS/2]/lg[REPS/2]);
  }
  ARMCI_Barrier(); ARMCI_Finalize(); return 0;}
