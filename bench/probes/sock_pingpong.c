/*
 * sock_pingpong.c -- the round trip of an 8-byte request and reply over a Unix socketpair
 * between two processes with blocking reads: the floor of libcaf_gaspar's accessor service
 * path (crates/caf/src/accessor/service.rs), where each call on a derived-type coarray is
 * such a round trip to the owner's service thread, which sleeps in read() between calls.
 *
 *   gcc -O2 -o /tmp/sock_pingpong bench/probes/sock_pingpong.c
 *   /tmp/sock_pingpong [N=20000]
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
int main(int argc,char**argv){int n=argc>1?atoi(argv[1]):20000;int sv[2];socketpair(AF_UNIX,SOCK_STREAM,0,sv);
 char b[64]; if(fork()==0){for(int i=0;i<n;i++){read(sv[1],b,8);write(sv[1],b,8);}return 0;}
 double s=now(); for(int i=0;i<n;i++){write(sv[0],b,8);read(sv[0],b,8);} printf("unix socket round trip (blocking): %.0f ns\n",(now()-s)/n); wait(0);}
