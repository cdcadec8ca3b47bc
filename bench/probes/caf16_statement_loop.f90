! One coindexed statement in a loop, image 1 to or from image 2, for timing it alone and
! for counting the instructions it runs under callgrind (this VM has no CPU counters):
!   MODE put:    buf(1:n)[2] = src(1:n)    (n from the command line, 1 by default: gfortran
!                16 packs the section into a malloc'ed temporary, then send_to_remote)
!   MODE get:    src(1:n) = buf(1:n)[2]    (the getter allocates, the caller copies out)
!   MODE scalar: buf(1)[2] = src(1)
! prints ns per statement. Built and run in the sid chroot (scripts/sid-chroot run -- ...),
! gaspar beside caf_shmem:
!   FC=gfortran-16 target/release/gaspar caf -O2 bench/probes/caf16_statement_loop.f90 -o loop-gaspar
!   gfortran-16 -O2 -fcoarray=shared bench/probes/caf16_statement_loop.f90 -o loop-shmem -lcaf_shmem
!   target/release/gaspar run -n 2 ./loop-gaspar put 5000000 [n]
!   GFORTRAN_NUM_IMAGES=2 ./loop-shmem put 5000000 [n]
! Instructions per statement (figures in bench/probes/README.md): run each with ITERS and
! 2 x ITERS under `valgrind --tool=callgrind` (gaspar: image 1 only, through a wrapper
! that execs valgrind when GASPAR_RANK is 0; caf_shmem: --trace-children=yes, the
! largest output is image 1's) and divide each function's difference by ITERS.
program caf16_statement_loop
  use iso_fortran_env, only: int64, real64
  implicit none
  real(real64), allocatable :: buf(:)[:]
  real(real64) :: src(1024)
  integer :: it, iters, n, me
  integer(int64) :: c0, c1, rate
  character(len=16) :: mode, arg

  call get_command_argument(1, mode)
  call get_command_argument(2, arg)
  read (arg, *) iters
  n = 1
  if (command_argument_count() > 2) then
    call get_command_argument(3, arg)
    read (arg, *) n
  end if
  me = this_image()
  allocate (buf(1024)[*])
  buf = me
  src = me
  sync all
  call system_clock(c0, rate)
  if (me == 1) then
    select case (mode)
    case ('put')
      do it = 1, iters
        buf(1:n)[2] = src(1:n)
      end do
    case ('get')
      do it = 1, iters
        src(1:n) = buf(1:n)[2]
      end do
    case ('scalar')
      do it = 1, iters
        buf(1)[2] = src(1)
      end do
    case default
      error stop 'MODE is put, get or scalar'
    end select
  end if
  call system_clock(c1)
  sync all
  if (me == 1) print '(a, a, f8.2, a)', trim(mode), ': ', real(c1 - c0, real64) / rate / iters * 1d9, ' ns'
end program
