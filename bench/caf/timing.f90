! The timing the coarray benchmarks share (bench/caf/bench.f90, crates/caf/benches/*.f90):
! compiled before the benchmark in the same command, e.g.
!   target/release/gaspar caf -O2 bench/caf/timing.f90 bench/caf/bench.f90 -o bench
! A figure is the median of timed rounds; a round is
!   call start_round(t)              ! SYNC ALL: every image starts the round together
!   ... what the benchmark times, iters times ...
!   s(rep) = per_iteration(t, iters)
! and the figure median(s).
module bench_timing
  use iso_fortran_env, only: int64, real64
  implicit none
  private
  public :: start_round, per_iteration, median

contains

  !> Seconds since some fixed time, from the monotonic clock.
  real(real64) function now()
    integer(int64) :: count, rate
    call system_clock(count, rate)
    now = real(count, real64) / real(rate, real64)
  end function

  !> Starts a timed round: SYNC ALL, then `t` is the time.
  subroutine start_round(t)
    real(real64), intent(out) :: t
    sync all
    t = now()
  end subroutine

  !> Seconds per iteration of a round of `iters` iterations started at `t`.
  real(real64) function per_iteration(t, iters)
    real(real64), intent(in) :: t
    integer, intent(in) :: iters
    per_iteration = (now() - t) / iters
  end function

  !> The median of a sample (left as it is).
  real(real64) function median(a)
    real(real64), intent(in) :: a(:)
    real(real64) :: b(size(a)), x
    integer :: i, j
    b = a
    do i = 2, size(b)
      x = b(i)
      j = i - 1
      do while (j >= 1)
        if (b(j) <= x) exit
        b(j + 1) = b(j)
        j = j - 1
      end do
      b(j + 1) = x
    end do
    median = b((size(b) + 1) / 2)
  end function
end module
