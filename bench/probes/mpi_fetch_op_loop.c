/*
 * mpi_fetch_op_loop.c -- every rank does ITERATIONS MPI_Fetch_and_op(SUM) + MPI_Win_flush
 * on one word of rank 0's window (MPI_Win_allocate, lock_all), then prints its time per
 * operation and the total. What raw MPI costs for gaspar's `counter` example; under MPICH
 * (ch4:ucx) each operation waits for rank 0's MPI progress, and with more ranks than cores
 * the ranks poll for each other's (AMD EPYC VM, 2 cores, 2026-11-29: 4 ranks x 20 000 took
 * 31-161 s, 1.08 us per operation at 2 ranks).
 *
 *   mpicc.mpich -O2 -o /tmp/fop_mpich bench/probes/mpi_fetch_op_loop.c
 *   mpiexec.mpich -n 4 /tmp/fop_mpich 20000
 */
#include <stdlib.h>
#include <mpi.h>
#include <stdio.h>
#include <stdint.h>
int main(int argc,char**argv){
  MPI_Init(&argc,&argv);
  int me,n; MPI_Comm_rank(MPI_COMM_WORLD,&me); MPI_Comm_size(MPI_COMM_WORLD,&n);
  uint64_t *base; MPI_Win win;
  MPI_Win_allocate(8,8,MPI_INFO_NULL,MPI_COMM_WORLD,&base,&win);
  *base=0; MPI_Win_lock_all(0,win); MPI_Barrier(MPI_COMM_WORLD);
  long iters = argc>1? atol(argv[1]):100000;
  uint64_t one=1,old;
  double t=MPI_Wtime();
  for(long i=0;i<iters;i++){ MPI_Fetch_and_op(&one,&old,MPI_UINT64_T,0,0,MPI_SUM,win); MPI_Win_flush(0,win);}
  t=MPI_Wtime()-t;
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Fetch_and_op(&one,&old,MPI_UINT64_T,0,0,MPI_NO_OP,win); MPI_Win_flush(0,win);
  printf("rank %d: %.2f us/op total %lu\n",me,t/iters*1e6,(unsigned long)old);
  MPI_Win_unlock_all(win); MPI_Win_free(&win); MPI_Finalize();}
