! Run: FC=gfortran-16 target/release/gaspar caf -O2 crates/caf/benches/accessor_paths.f90 -o ap
!      && target/release/gaspar run -n 2 ./ap   (inside scripts/sid-chroot run -- ...)
! Cost of one coindexed read/write of an integer, by path: a plain integer coarray (run in
! the caller against the mapped part), an allocatable component (run in the caller too when
! the shm segments are mapped at one address in every process: GASPAR_SHM_PLACEMENT=same,
! the default; by the owner's service thread with =anywhere), and a pointer component into
! ordinary memory of the other image (run by the owner's service thread; caf_shmem crashes
! there). Image 1 times, image 2 owns.
program accessor_paths
  implicit none
  type box
    integer, pointer :: data(:) => null()
  end type
  integer, parameter :: nfast = 200000, nslow = 5000
  integer :: s[*], x, i, total
  type(box) :: b[*]
  type holder
    integer, allocatable :: a(:)
  end type
  type(holder) :: h[*]
  integer, target :: ordinary(4)
  integer(8) :: t0, t1, rate
  ordinary = this_image(); b%data => ordinary; s = this_image()
  allocate(h%a(4)); h%a = this_image()
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
    do i = 1, nfast
      x = h[2]%a(2); total = total + x
    end do
    call system_clock(t1)
    print '(a,f10.1,a)', 'alloc-comp get   ', 1d9 * (t1 - t0) / rate / nfast, ' ns'
    call system_clock(t0)
    do i = 1, nfast
      h[2]%a(3) = i
    end do
    call system_clock(t1)
    print '(a,f10.1,a)', 'alloc-comp put   ', 1d9 * (t1 - t0) / rate / nfast, ' ns'
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
    if (total /= 4 * nfast + 2 * nslow) error stop 1
  end if
  sync all
  if (this_image() == 2 .and. (h%a(3) /= nfast .or. b%data(3) /= nslow)) error stop 2
end program
