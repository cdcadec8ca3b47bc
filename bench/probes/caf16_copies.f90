! What gfortran 16's generated code costs a 4 MiB coindexed copy, whatever the library:
! image 1 moves 4 MiB to or from image 2 in each mode, timed as bench/caf/bench.f90 times
! (median of 11 rounds of ITERS), and prints GB/s and its peak resident memory.
!   mode 1: buf(1:w)[2] = src(1:w)   w a constant: the accessor copies the section itself
!   mode 2: src(1:w) = buf(1:w)[2]   w a constant: gfortran 16 mallocs a temporary it never
!                                    frees, so every call faults fresh pages in
!   mode 3: buf(1:n)[2] = src(1:n)   n a variable: copied into a temporary first
!   mode 4: src(1:n) = buf(1:n)[2]   n a variable: the getter allocates, the caller copies
!   mode 5: buf(1:w) = src(1:w)      the local copy the others are set against
! Built and run in the sid chroot (scripts/sid-chroot), on gaspar and on caf_shmem:
!   scripts/sid-chroot run -- bash -c 'cd target && cp ../bench/caf/timing.f90 ../bench/probes/caf16_copies.f90 . &&
!     FC=gfortran-16 ../target/release/gaspar caf -O2 timing.f90 caf16_copies.f90 -o copies-gaspar &&
!     gfortran-16 -O2 -fcoarray=shared timing.f90 caf16_copies.f90 -o copies-shmem -lcaf_shmem &&
!     for m in 1 2 3 4 5; do ../target/release/gaspar run -n 2 ./copies-gaspar $m 10;
!       GFORTRAN_NUM_IMAGES=2 ./copies-shmem $m 10; done'
program caf16_copies
  use bench_timing, only: start_round, per_iteration, median
  implicit none
  integer, parameter :: w = 524288
  real(8), allocatable :: buf(:)[:], src(:)
  real(8) :: t, samples(11)
  integer :: it, rep, mode, iters, n
  character(len=64) :: arg
  call get_command_argument(1, arg)
  read (arg, *) mode
  call get_command_argument(2, arg)
  read (arg, *) iters
  n = w
  allocate (buf(w)[*], src(w))
  src = 1
  buf = 0
  do rep = 1, 11
    call start_round(t)
    if (this_image() == 1) then
      do it = 1, iters
        src(1) = it
        select case (mode)
        case (1); buf(1:w)[2] = src(1:w)
        case (2); src(1:w) = buf(1:w)[2]
        case (3); buf(1:n)[2] = src(1:n)
        case (4); src(1:n) = buf(1:n)[2]
        case (5); buf(1:w) = src(1:w)
        end select
      end do
      sync memory
    end if
    samples(rep) = per_iteration(t, iters)
  end do
  if (this_image() == 1) then
    print '(a,i0,a,f8.2,a)', 'mode ', mode, ': ', dble(w) * 8 / median(samples) / 1d9, ' GB/s'
    write (arg, '(a,i0,a)') 'grep VmHWM /proc/', getpid(), '/status'
    call execute_command_line(trim(arg))
  end if
  sync all
end program
