! Run: FC=gfortran-16 target/release/gaspar caf -O2 bench/caf/timing.f90
!      crates/caf/benches/is_present.f90 -o ip && target/release/gaspar run -n 2 ./ip
!      (inside scripts/sid-chroot run -- ...); beside: gfortran-16 -O2 -fcoarray=shared
!      bench/caf/timing.f90 crates/caf/benches/is_present.f90 -o ip-shmem -lcaf_shmem
!      && GFORTRAN_NUM_IMAGES=2 ./ip-shmem
! Cost of one presence test of another image's allocatable component, allocated(o[2]%a),
! by image 1: gfortran 15/16 call is_present_on_remote. Median of 11 loops.
program is_present
  use iso_fortran_env, only: real64
  use bench_timing, only: start_round, per_iteration, median
  implicit none
  type :: holder
    real(real64), allocatable :: a(:)
  end type
  integer, parameter :: iters = 20000
  type(holder) :: o[*]
  real(real64) :: t, s(11)
  integer :: rep, it, me, present_count
  me = this_image()
  if (me == 2) allocate(o%a(4))
  present_count = 0
  do rep = 1, 11
    call start_round(t)
    if (me == 1) then
      do it = 1, iters
        if (allocated(o[2]%a)) present_count = present_count + 1
      end do
    end if
    s(rep) = per_iteration(t, iters)
  end do
  sync all
  if (me == 1 .and. present_count /= 11 * iters) error stop "is_present: wrong answer"
  if (me == 1) print '(a,f9.4,a)', ' allocated(o[2]%a): ', 1d6 * median(s), ' us'
end program
