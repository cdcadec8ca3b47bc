/*
 * malloc_trace.c -- an LD_PRELOAD shim that records every malloc, calloc, realloc and free
 * of the rank gaspar run starts as rank 0 (GASPAR_RANK=0): operation, size, address and
 * caller, kept in memory and written at exit to /tmp/malloc_trace.PID (one line each:
 * "m|c|r|f SIZE ADDRESS CALLER"). For seeing what a process allocates between two points
 * (replay the lines up to an event to know which blocks are live and which free).
 *
 *   gcc -O2 -shared -fPIC -o /tmp/malloc_trace.so bench/probes/malloc_trace.c -ldl
 *   LD_PRELOAD=/tmp/malloc_trace.so target/release/gaspar run -n 2 ./prog
 *
 * Up to 6 M events; dlsym's own allocations come from a static buffer.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
typedef struct { char op; size_t size; void *p; void *caller; } ev;
#define N 6000000
static ev evs[N]; static long n;
static void *(*real_malloc)(size_t); static void (*real_free)(void*);
static void *(*real_realloc)(void*, size_t); static void *(*real_calloc)(size_t,size_t);
static int on = -1;
static char tmpbuf[65536]; static size_t tmppos;
static void init(void){ if(!real_malloc){ real_malloc=dlsym(RTLD_NEXT,"malloc"); real_free=dlsym(RTLD_NEXT,"free"); real_realloc=dlsym(RTLD_NEXT,"realloc"); real_calloc=dlsym(RTLD_NEXT,"calloc"); } if(on<0){ char*e=getenv("GASPAR_RANK"); on = e && e[0]=='0'; } }
static void rec(char op,size_t s,void*p,void*c){ if(on>0 && n<N){ evs[n].op=op; evs[n].size=s; evs[n].p=p; evs[n].caller=c; n++; } }
void *malloc(size_t s){ if(!real_malloc){ /* dlsym bootstrap */ void*p=tmpbuf+tmppos; tmppos+=(s+15)&~15; return p;} init(); void*p=real_malloc(s); rec('m',s,p,__builtin_return_address(0)); return p; }
void free(void*p){ if((char*)p>=tmpbuf && (char*)p<tmpbuf+sizeof tmpbuf) return; init(); rec('f',0,p,__builtin_return_address(0)); real_free(p); }
void *realloc(void*q,size_t s){ init(); if((char*)q>=tmpbuf && (char*)q<tmpbuf+sizeof tmpbuf){ void*p=real_malloc(s); memcpy(p,q,s); return p; } void*p=real_realloc(q,s); rec('r',s,p,__builtin_return_address(0)); return p; }
void *calloc(size_t a,size_t b){ if(!real_calloc){ void*p=tmpbuf+tmppos; tmppos+=(a*b+15)&~15; memset(p,0,a*b); return p;} init(); void*p=real_calloc(a,b); rec('c',a*b,p,__builtin_return_address(0)); return p; }
__attribute__((destructor)) static void dump(void){ if(on<=0) return; on=0; char path[64]; snprintf(path,64,"/tmp/malloc_trace.%d",getpid()); FILE*f=fopen(path,"w"); if(!f) return; for(long i=0;i<n;i++) fprintf(f,"%c %zu %p %p\n",evs[i].op,evs[i].size,evs[i].p,evs[i].caller); fclose(f); }
