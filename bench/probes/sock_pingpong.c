/*
 * sock_pingpong.c -- the round trip of an 8-byte request and reply over a Unix socketpair
 * between two processes, with blocking reads and with reads that poll first (MSG_DONTWAIT
 * until data is there): the floor of libcaf_gaspar's accessor service path
 * (crates/caf/src/accessor/service.rs), where each call on a derived-type coarray whose
 * accessor must run in the owner is such a round trip to the owner's service thread, and
 * both ends poll before they sleep (crates/caf/src/accessor/spin.rs).
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
static void get(int fd,char*b,int spin){if(spin)while(recv(fd,b,8,MSG_DONTWAIT)<=0);else read(fd,b,8);}
static void round_trips(int n,int spin){int sv[2];socketpair(AF_UNIX,SOCK_STREAM,0,sv);char b[64]={0};
 if(fork()==0){for(int i=0;i<n;i++){get(sv[1],b,spin);write(sv[1],b,8);}_exit(0);}
 double s=now(); for(int i=0;i<n;i++){write(sv[0],b,8);get(sv[0],b,spin);}
 printf("unix socket round trip (%s): %.0f ns\n",spin?"polling":"blocking",(now()-s)/n); wait(0);close(sv[0]);close(sv[1]);}
int main(int argc,char**argv){int n=argc>1?atoi(argv[1]):20000;round_trips(n,0);round_trips(n,1);}
