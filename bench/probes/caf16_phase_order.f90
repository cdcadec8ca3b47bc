! bench/caf/bench.f90's contiguous put/get rounds (11 rounds of up to 5000 statements, SYNC
! ALL between rounds, a line printed after each phase) from FIRST bytes up to 4 KiB, after
! a heap block of PAD bytes: how much a 4 KiB section put/get costs depends on what ran
! before it in the process (the heap's shape). Built and run in the sid chroot
! (scripts/sid-chroot run -- ...), gaspar beside caf_shmem:
!   FC=gfortran-16 target/release/gaspar caf -O2 bench/caf/timing.f90 bench/probes/caf16_phase_order.f90 -o order-gaspar
!   gfortran-16 -O2 -fcoarray=shared bench/caf/timing.f90 bench/probes/caf16_phase_order.f90 -o order-shmem -lcaf_shmem
!   target/release/gaspar run -n 2 ./order-gaspar FIRST PAD    (FIRST 8 or 4096; PAD e.g. 1)
!   GFORTRAN_NUM_IMAGES=2 ./order-shmem FIRST PAD
! Prints ns per statement of each phase. Figures in bench/probes/README.md.
program caf16_phase_order
  use iso_fortran_env, only: int64, real64
  use bench_timing, only: start_round, per_iteration, median
  implicit none
  integer, parameter :: max_words = 512 * 1024
  real(real64), allocatable :: buf(:)[:], src(:)
  real(real64) :: t, s(11)
  integer :: it, iters, words, me, rep, bytes, first
  character(len=16) :: arg
  character(len=:), allocatable :: pad
  integer :: padlen
  call get_command_argument(1, arg)
  read (arg, *) first
  call get_command_argument(2, arg)
  read (arg, *) padlen
  allocate (character(len=padlen) :: pad)
  pad(1:1) = 'x'
  me = this_image()
  allocate (buf(max_words)[*], src(max_words))
  buf = me
  src = 1
  bytes = first
  do while (bytes <= 4096)
    words = bytes / 8
    iters = max(10, min(5000, 256 * 1024 * 1024 / 16 / bytes))
    do rep = 1, 11
      call start_round(t)
      if (me == 1) then
        do it = 1, iters
          buf(1:words)[2] = src(1:words)
        end do
        sync memory
      end if
      s(rep) = per_iteration(t, iters)
    end do
    if (me == 1) print '(a, i6, f8.2, a)', 'put ', bytes, median(s) * 1d9, ' ns'
    do rep = 1, 11
      call start_round(t)
      if (me == 1) then
        do it = 1, iters
          src(1:words) = buf(1:words)[2]
        end do
      end if
      s(rep) = per_iteration(t, iters)
    end do
    if (me == 1) print '(a, i6, f8.2, a)', 'get ', bytes, median(s) * 1d9, ' ns'
    bytes = bytes * 8
  end do
  if (me == 1 .and. pad(1:1) /= 'x') print *, 'pad'
end program
