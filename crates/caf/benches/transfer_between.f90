! Run: FC=gfortran-16 target/release/gaspar caf -O2 bench/caf/timing.f90
!      crates/caf/benches/transfer_between.f90 -o tb && target/release/gaspar run -n 2 ./tb
!      (inside scripts/sid-chroot run -- ...); beside: gfortran-16 -O2 -fcoarray=shared
!      bench/caf/timing.f90 crates/caf/benches/transfer_between.f90 -o tb-shmem -lcaf_shmem
!      && GFORTRAN_NUM_IMAGES=2 ./tb-shmem
! Cost of one coindexed copy between two images' parts, x[2] = y[n], by image 1: gfortran
! 15/16 call transfer_between_remotes (a getter, then a receiver). Median of 11 loops.
program transfer_between
  use iso_fortran_env, only: real64
  use bench_timing, only: start_round, per_iteration, median
  implicit none
  integer, parameter :: iters = 20000
  real(real64) :: x[*], y[*], t, s(11)
  integer :: rep, it, me, n
  me = this_image()
  n = num_images()
  x = 0
  y = me
  do rep = 1, 11
    call start_round(t)
    if (me == 1) then
      do it = 1, iters
        x[2] = y[n]
      end do
    end if
    s(rep) = per_iteration(t, iters)
  end do
  sync all
  if (me == 2 .and. x /= n) error stop "transfer_between: wrong value"
  if (me == 1) print '(a,f9.4,a)', ' x[2] = y[n]: ', 1d6 * median(s), ' us'
end program
