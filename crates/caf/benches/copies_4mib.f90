! Run: FC=gfortran-16 target/release/gaspar caf -O2 bench/caf/timing.f90
!      crates/caf/benches/copies_4mib.f90 -o c4 && target/release/gaspar run -n 2 ./c4
!      (inside scripts/sid-chroot run -- ...); beside: gfortran-16 -O2 -fcoarray=shared
!      bench/caf/timing.f90 crates/caf/benches/copies_4mib.f90 -o c4-shmem -lcaf_shmem
!      && GFORTRAN_NUM_IMAGES=2 ./c4-shmem
! Three copies of 4 MiB by image 1, alternating in each of 15 rounds: a put to its own part
! (buf(:)[1]), a put to image 2's part (buf(:)[2]) and a local copy into its own part;
! medians. The three move the same bytes between the same kinds of memory, so a gap between
! them that changes from one run to the next is the machine's, not the library's.
program copies_4mib
  use iso_fortran_env, only: real64
  use bench_timing, only: start_round, per_iteration, median
  implicit none
  integer, parameter :: words = 524288
  real(real64), allocatable :: buf(:)[:], src(:)
  real(real64) :: t, s(3, 15)
  integer :: rep, it, me, k
  me = this_image()
  allocate (buf(words)[*], src(words))
  src = 1
  do rep = 1, 15
    do k = 1, 3
      call start_round(t)
      if (me == 1) then
        do it = 1, 10
          if (k == 1) buf(1:words)[1] = src(1:words)
          if (k == 2) buf(1:words)[2] = src(1:words)
          if (k == 3) buf(1:words) = src(1:words)
        end do
        sync memory
      end if
      s(k, rep) = per_iteration(t, 10)
    end do
  end do
  if (me == 1) print '(a,3f8.2)', ' put [1], put [2], local (GB/s):', (8 * words / median(s(k, :)) / 1d9, k = 1, 3)
end program
