! Two coindexed puts whose figures in bench/caf/bench.f90 moved between runs, timed alone,
! on gaspar and on GCC 16's caf_shmem (the same source, gfortran 16):
!   mode 1 N:   buf(1:m)[2] = src(1:m) with m = 1 from the command line (bench.f90's
!               put_bw_8B: gfortran 16 packs the section into a malloc'ed temporary and
!               calls send_to_remote), 20 million times; prints ns per statement
!   mode 2 OFF: buf(1+s:m+s)[2] = src(1:m), m = 512 (4 KiB) with run-time bounds from an
!               allocatable source, image 2's destination shifted to byte OFF of a page;
!               median of 15 rounds of 5000 (timed as bench.f90 times); prints GB/s
! Built and run in the sid chroot (scripts/sid-chroot), alternating the runtimes:
!   scripts/sid-chroot run -- bash -c 'cd target && cp ../bench/caf/timing.f90 ../bench/probes/caf16_small_sections.f90 . &&
!     FC=gfortran-16 ../target/release/gaspar caf -O2 timing.f90 caf16_small_sections.f90 -o small-gaspar &&
!     gfortran-16 -O2 -fcoarray=shared timing.f90 caf16_small_sections.f90 -o small-shmem -lcaf_shmem &&
!     for r in 1 2 3 4 5; do ../target/release/gaspar run -n 2 ./small-gaspar 1 1;
!       GFORTRAN_NUM_IMAGES=2 ./small-shmem 1 1; done'
program caf16_small_sections
  use iso_fortran_env, only: int64, real64
  use bench_timing, only: start_round, per_iteration, median
  implicit none
  integer, parameter :: n = 512, reps = 15
  real(real64), allocatable :: buf(:)[:], src(:)
  real(real64) :: samples(reps), t
  integer :: mode, arg2, m, s, i, rep
  integer(int64) :: t0, t1, rate
  character(len=16) :: arg

  call get_command_argument(1, arg)
  read (arg, *) mode
  call get_command_argument(2, arg)
  read (arg, *) arg2
  allocate (buf(n + 1024)[*], src(n * 1024))
  src = 1
  sync all
  select case (mode)
  case (1)
    m = arg2
    if (this_image() == 1) then
      call system_clock(t0, rate)
      do i = 1, 20000000
        buf(1:m)[2] = src(1:m)
      end do
      call system_clock(t1)
      print '(a,i0,a,f8.2,a)', 'put of ', m, ' element(s), run-time bounds: ', &
        real(t1 - t0, real64) / rate / 20000000 * 1d9, ' ns'
    end if
  case (2)
    ! the same layout on every image: shifting our buf shifts image 2's
    s = int(modulo(arg2 - mod(loc(buf), 4096_int64), 4096_int64) / 8)
    m = min(n, size(src)) ! 512, unknown to the compiler: bounds at run time, as in bench.f90
    do rep = 1, reps
      call start_round(t)
      if (this_image() == 1) then
        do i = 1, 5000
          buf(1 + s:m + s)[2] = src(1:m)
        end do
        sync memory
      end if
      samples(rep) = per_iteration(t, 5000)
    end do
    if (this_image() == 1) print '(a,f6.1,a,i0,a,i0)', 'put 4 KiB: ', 8d0 * n / median(samples) / 1d9, &
      ' GB/s, destination at page byte ', mod(loc(buf(1 + s)), 4096_int64), ', source at ', mod(loc(src), 4096_int64)
  case default
    error stop "mode: 1 (one-element section) or 2 (4 KiB)"
  end select
  sync all
end program
