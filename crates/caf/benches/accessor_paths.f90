! Run: FC=gfortran-16 target/release/gaspar caf -O2 crates/caf/benches/accessor_paths.f90 -o ap
!      && target/release/gaspar run -n 2 ./ap   (inside scripts/sid-chroot run -- ...)
! Cost of one coindexed read/write of an integer, by path: a plain integer coarray (run in
! the caller against the mapped part), and a pointer component into ordinary memory of
! the other image (run by the owner's service thread; caf_shmem crashes there). Image 1 times, image 2 owns.
program accessor_paths
  implicit none
  type box
    integer, pointer :: data(:) => null()
  end type
  integer, parameter :: nfast = 200000, nslow = 5000
  integer :: s[*], x, i, total
  type(box) :: b[*]
  integer, target :: ordinary(4)
  integer(8) :: t0, t1, rate
  ordinary = this_image(); b%data => ordinary; s = this_image()
  sync all
  if (this_image() == 1) then
    total = 0
    call system_clock(t0, rate)
    do i = 1, nfast
      x = s[2]; total = total + x
    end do
    call system_clock(t1)
    print '(a,f10.1,a)', 'plain get        ', 1d9 * (t1 - t0) / rate / nfast, ' ns'
    call system_clock(t0)
    do i = 1, nfast
      s[2] = i
    end do
    call system_clock(t1)
    print '(a,f10.1,a)', 'plain put        ', 1d9 * (t1 - t0) / rate / nfast, ' ns'
    call system_clock(t0)
    do i = 1, nslow
      x = b[2]%data(2); total = total + x
    end do
    call system_clock(t1)
    print '(a,f10.1,a)', 'pointer-comp get ', 1d9 * (t1 - t0) / rate / nslow, ' ns'
    call system_clock(t0)
    do i = 1, nslow
      b[2]%data(3) = i
    end do
    call system_clock(t1)
    print '(a,f10.1,a)', 'pointer-comp put ', 1d9 * (t1 - t0) / rate / nslow, ' ns'
    if (total /= 2 * nfast + 2 * nslow) error stop 1
  end if
  sync all
end program
