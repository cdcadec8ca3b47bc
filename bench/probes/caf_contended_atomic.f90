! Every image adds to image 1's counter N times after a SYNC ALL, five rounds; each image
! prints its own ns per atomic_add. bench.f90's atomic_add row (N = 5000) compares
! runtimes whose SYNC ALL releases the images at different moments: caf_shmem's 24 us one
! lets an image run part of its 35-100 us loop alone. With N = 200000 the loops overlap
! whole and the row measures contention only.
!   gaspar:    FC=gfortran-16 target/release/gaspar caf -O2 caf_contended_atomic.f90 -o g
!              target/release/gaspar run -n 2 ./g [N]
!   caf_shmem: gfortran-16 -O2 -fcoarray=shared caf_contended_atomic.f90 -o s -lcaf_shmem
!              GFORTRAN_NUM_IMAGES=2 ./s [N]
!   (gfortran 16 in scripts/sid-chroot; the host's gfortran 12 builds it for gaspar too)
program caf_contended_atomic
  use iso_fortran_env
  implicit none
  integer(atomic_int_kind) :: counter[*]
  integer :: it, n, me, rep
  integer(int64) :: t0, t1, rate
  character(len=32) :: arg
  me = this_image()
  n = 200000
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *) n
  end if
  counter = 0
  do rep = 1, 5
    sync all
    call system_clock(t0, rate)
    do it = 1, n
      call atomic_add(counter[1], 1)
    end do
    call system_clock(t1)
    print '(a,i0,a,f8.2,a)', 'image ', me, ' contended atomic_add ', 1d9*dble(t1-t0)/dble(rate)/n, ' ns'
  end do
  sync all
  if (me == 1 .and. counter /= 5 * n * num_images()) error stop 'wrong count'
end program caf_contended_atomic
