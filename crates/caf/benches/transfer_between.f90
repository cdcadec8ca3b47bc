! Run: FC=gfortran-16 target/release/gaspar caf -O2 crates/caf/benches/transfer_between.f90 -o tb
!      && target/release/gaspar run -n 2 ./tb   (inside scripts/sid-chroot run -- ...);
!      beside: gfortran-16 -O2 -fcoarray=shared crates/caf/benches/transfer_between.f90
!      -o tb-shmem -lcaf_shmem && GFORTRAN_NUM_IMAGES=2 ./tb-shmem
! Cost of one coindexed copy between two images' parts, x[2] = y[n], by image 1: gfortran
! 15/16 call transfer_between_remotes (a getter, then a receiver). Median of 11 loops.
program transfer_between
  use iso_fortran_env, only: int64, real64
  implicit none
  integer, parameter :: iters = 20000
  real(real64) :: x[*], y[*], t, s(11)
  integer :: rep, it, me, n
  me = this_image()
  n = num_images()
  x = 0
  y = me
  do rep = 1, 11
    sync all
    t = now()
    if (me == 1) then
      do it = 1, iters
        x[2] = y[n]
      end do
    end if
    s(rep) = (now() - t) / iters
  end do
  sync all
  if (me == 2 .and. x /= n) error stop "transfer_between: wrong value"
  if (me == 1) print '(a,f9.4,a)', ' x[2] = y[n]: ', 1d6 * median(s), ' us'
contains
  real(real64) function now()
    integer(int64) :: count, rate
    call system_clock(count, rate)
    now = real(count, real64) / real(rate, real64)
  end function
  real(real64) function median(a)
    real(real64), intent(inout) :: a(:)
    integer :: i, j
    real(real64) :: v
    do i = 2, size(a)
      v = a(i); j = i - 1
      do while (j >= 1)
        if (a(j) <= v) exit
        a(j + 1) = a(j); j = j - 1
      end do
      a(j + 1) = v
    end do
    median = a((size(a) + 1) / 2)
  end function
end program
