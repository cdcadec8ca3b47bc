! bench.f90's strided put (every other column of a 256 x 256 real(8) array into image 2's
! part, 2000 statements a round, 12 rounds; image 1 prints ns per statement), with the
! local source moved OFF elements (the first argument) inside a larger allocation: the
! statement's time moves with where the source lies relative to the coarray's part (their
! distance modulo a page), in either runtime. Session 35 (bench/probes/README.md):
!   FC=gfortran-16 target/release/gaspar caf -O2 bench/probes/caf_strided_offsets.f90 -o so-g
!   gfortran-16 -O2 -fcoarray=shared bench/probes/caf_strided_offsets.f90 -o so-s -lcaf_shmem
!   for off in 0 14 22 30; do target/release/gaspar run -n 4 ./so-g $off; GFORTRAN_NUM_IMAGES=4 ./so-s $off; done
program caf_strided_offsets
  use iso_fortran_env, only: real64, int64
  implicit none
  real(real64), allocatable :: grid(:, :)[:]
  real(real64), allocatable, target :: local_big(:)
  real(real64), pointer :: local_grid(:, :)
  integer(int64), allocatable :: a(:)[:]
  integer(int64) :: c0, c1, rate
  real(real64) :: t(12)
  integer :: off, it, rep
  character(len=8) :: arg
  call get_command_argument(1, arg)
  read (arg, *) off
  allocate (a(4)[*], grid(256, 256)[*], local_big(256 * 256 + 1024))
  local_grid(1:256, 1:256) => local_big(1 + off:)
  grid = 0
  local_big = 1
  sync all
  do rep = 1, 12
    if (this_image() == 1) then
      call system_clock(c0, rate)
      do it = 1, 2000
        grid(:, 1:256:2)[2] = local_grid(:, 1:256:2)
      end do
      sync memory
      call system_clock(c1)
      t(rep) = real(c1 - c0, real64) / rate / 2000 * 1e9
    end if
    sync all
  end do
  if (this_image() == 1) print '(a, 12f9.1)', 'x', t
end program caf_strided_offsets
