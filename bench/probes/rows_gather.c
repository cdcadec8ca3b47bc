/*
 * rows_gather.c -- the 3-D get of bench_strided.c (a 32^3 block of doubles out of a 64^3
 * array: 1024 rows of 256 bytes, 512 bytes apart, planes 32 KiB apart) gathered into a
 * dense buffer by glibc's memcpy (length not known to the compiler) and by the copy a C
 * loop of memcpy(d, s, 256) compiles to (16-byte moves inlined into the loop), with the
 * destination moved 0-4000 bytes into its page. Median of 31 repetitions of 20 gathers,
 * both ways alternated.
 *
 *   gcc -O2 -o /tmp/rows_gather bench/probes/rows_gather.c && /tmp/rows_gather
 *
 * Intel Xeon VM (family 6 model 207), 2026-12-01: memcpy 8.3 us at offset 0, 11.1 us
 * 8-32 bytes ahead, 10.8 at 4000; 16-byte moves 6.5 us at every offset but 8 (9.2).
 * (bench/probes/README.md; README, "Strided and vector transfers through ARMCI".)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now_ns(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
__attribute__((noinline)) void rows_memcpy(char*d,const char*s,size_t len){for(int z=0;z<32;z++)for(int y=0;y<32;y++)memcpy(d+((size_t)z*32+y)*len,s+((size_t)z*64*64+y*64)*8,len);}
__attribute__((noinline)) void rows_const(char*d,const char*s){for(int z=0;z<32;z++)for(int y=0;y<32;y++)memcpy(d+((size_t)z*32+y)*256,s+((size_t)z*64*64+y*64)*8,256);}
int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  size_t len=256; volatile size_t vlen=len;
  char*src=aligned_alloc(4096,4<<20),*dst=aligned_alloc(4096,1<<20);
  memset(src,1,4<<20);memset(dst,2,1<<20);
  int offs[]={0,8,16,32,64,128,256,1024,2048,4000};
  for(int o=0;o<10;o++){char*d=dst+offs[o];double a[31],b[31];
    for(int r=0;r<31;r++){double t=now_ns();for(int i=0;i<20;i++)rows_memcpy(d,src,vlen);a[r]=(now_ns()-t)/20;
      t=now_ns();for(int i=0;i<20;i++)rows_const(d,src);b[r]=(now_ns()-t)/20;}
    qsort(a,31,8,cmp);qsort(b,31,8,cmp);printf("dst +%4d: memcpy %7.0f ns  inline %7.0f ns\n",offs[o],a[15],b[15]);}
}
