! 8-byte coindexed puts (`x[2] = it`) or gets (`y = x[2]`) from image 1, in 12 rounds of
! 2 000 000 statements with SYNC ALL between them; image 1 prints each round's ns per
! statement. Modes put and get use a scalar coarray (no descriptor), aput and aget an
! element of an allocatable array coarray (`a(3)[2]`: gfortran passes its descriptor),
! strided bench.f90's strided put (every other column of a 256 x 256 real(8) array,
! 2000 statements a round).
! For comparing runtimes on a VM whose speed moves between two states for seconds at a
! time (bench/probes/README.md): pool the rounds of several alternated jobs of each
! runtime and compare their distributions, not one job's median. Built and run in
! the sid chroot (scripts/sid-chroot run -- ...) for gfortran 16:
!   FC=gfortran-16 target/release/gaspar caf -O2 bench/probes/caf_latency_rounds.f90 -o lat-gaspar
!   gfortran-16 -O2 -fcoarray=shared bench/probes/caf_latency_rounds.f90 -o lat-shmem -lcaf_shmem
!   target/release/gaspar run -n 4 ./lat-gaspar put      (or get, aput, aget)
!   GFORTRAN_NUM_IMAGES=4 ./lat-shmem put
! bench/probes/caf_latency_pooled builds both, alternates their jobs and pools the rounds.
program caf_latency_rounds
  use iso_fortran_env, only: int64, real64
  implicit none
  integer(int64) :: x[*], y
  integer(int64), allocatable :: a(:)[:]
  real(real64), allocatable :: grid(:, :)[:], local_grid(:, :)
  integer(int64) :: c0, c1, rate
  integer :: it, rep
  integer, parameter :: n_latency = 2000000, n_strided = 2000
  integer :: n
  real(real64) :: t(12)
  character(len=8) :: mode
  call get_command_argument(1, mode)
  allocate (a(4)[*], grid(256, 256)[*], local_grid(256, 256))
  grid = 0
  local_grid = 1
  n = merge(n_strided, n_latency, mode == 'strided')
  x = this_image()
  a = this_image()
  y = 0
  sync all
  do rep = 1, 12
    if (this_image() == 1) then
      call system_clock(c0, rate)
      if (mode == 'get') then
        do it = 1, n
          y = y + x[2]
        end do
      else if (mode == 'aget') then
        do it = 1, n
          y = y + a(3)[2]
        end do
      else if (mode == 'strided') then
        do it = 1, n
          grid(:, 1:256:2)[2] = local_grid(:, 1:256:2)
        end do
        sync memory
      else if (mode == 'aput') then
        do it = 1, n
          a(3)[2] = it
        end do
      else
        do it = 1, n
          x[2] = it
        end do
      end if
      call system_clock(c1)
      t(rep) = real(c1 - c0, real64) / rate / n * 1e9
    end if
    sync all
  end do
  if (this_image() == 1) print '(a, 12f9.1, i12)', trim(mode), t, y
end program
