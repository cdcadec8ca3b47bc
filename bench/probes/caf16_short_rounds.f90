! Rounds of ITERS section puts `buf(1:n)[2] = src(1:n)` (N words, a run-time length) from
! image 1 with SYNC ALL between them, as bench/caf/bench.f90 times its bandwidth rows, over
! 4 MiB arrays; image 1 prints ITERS and the median ns per statement over 11 rounds. For
! how the waiting image's polling budget moves short rounds (figures in
! bench/probes/README.md). Built and run in the sid chroot (scripts/sid-chroot run -- ...):
!   FC=gfortran-16 target/release/gaspar caf -O2 bench/caf/timing.f90 bench/probes/caf16_short_rounds.f90 -o rounds-gaspar
!   gfortran-16 -O2 -fcoarray=shared bench/caf/timing.f90 bench/probes/caf16_short_rounds.f90 -o rounds-shmem -lcaf_shmem
!   GASPAR_SPIN_LIMIT=0 target/release/gaspar run -n 2 ./rounds-gaspar 5000 8   (or 100000000, or unset)
!   GFORTRAN_NUM_IMAGES=2 ./rounds-shmem 5000 8
program caf16_short_rounds
  use iso_fortran_env, only: real64
  use bench_timing, only: start_round, per_iteration, median
  implicit none
  real(real64), allocatable :: buf(:)[:], src(:)
  real(real64) :: t, s(11)
  integer :: it, iters, rep, n
  character(len=16) :: arg
  call get_command_argument(1, arg)
  read (arg, *) iters
  call get_command_argument(2, arg)
  read (arg, *) n
  allocate (buf(524288)[*], src(524288))
  src = 1
  do rep = 1, 11
    call start_round(t)
    if (this_image() == 1) then
      do it = 1, iters
        buf(1:n)[2] = src(1:n)
      end do
      sync memory
    end if
    s(rep) = per_iteration(t, iters)
  end do
  if (this_image() == 1) print '(i8, f8.2)', iters, median(s) * 1d9
end program
