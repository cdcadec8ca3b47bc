! A coarray statement on a thread other than the image's own (an OpenMP worker) is
! refused: with STAT= it gets a non-zero code and ERRMSG= says why; the image's own thread
! goes on with the program. Built with -fopenmp (tests/fortran.rs).
program other_thread
  use omp_lib, only: omp_get_thread_num
  implicit none
  integer :: s, x[*]
  character(len=160) :: msg

  s = -1
  msg = ''
  !$omp parallel num_threads(2)
  if (omp_get_thread_num() == 1) then
    sync all (stat=s, errmsg=msg)
  end if
  !$omp end parallel
  if (s == 0 .or. s == -1) error stop "other_thread: STAT= not set"
  if (index(msg, "own thread") == 0) error stop "other_thread: ERRMSG= does not say why"
  x = this_image()
  sync all
  if (x[1] /= 1) error stop "other_thread: the image's own thread cannot go on"
  if (this_image() == 1) print '(a)', "other_thread ok"
end program
