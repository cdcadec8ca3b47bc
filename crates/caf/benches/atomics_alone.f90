! Run: FC=gfortran-16 target/release/gaspar caf -O2 crates/caf/benches/atomics_alone.f90 -o aa
!      && target/release/gaspar run -n 2 ./aa   (inside scripts/sid-chroot run -- ...);
!      beside: gfortran-16 -O2 -fcoarray=shared crates/caf/benches/atomics_alone.f90
!      -o aa-shmem -lcaf_shmem && GFORTRAN_NUM_IMAGES=2 ./aa-shmem
! Cost of one atomic_add on image 1's counter and of one LOCK + UNLOCK of image 1's lock,
! by image 1 alone (the other images wait at the next SYNC ALL): the call itself, without
! another image contending for the word as in bench/caf/bench.f90. Medians of 11 loops.
program atomics_alone
  use iso_fortran_env, only: int64, real64, atomic_int_kind, lock_type
  implicit none
  integer(atomic_int_kind) :: counter[*]
  type(lock_type) :: lk[*]
  real(real64) :: t, s(11), u(11)
  integer :: rep, it, me
  me = this_image()
  do rep = 1, 11
    sync all
    t = now()
    if (me == 1) then
      do it = 1, 5000
        call atomic_add(counter[1], 1)
      end do
    end if
    s(rep) = (now() - t) / 5000
    sync all
    t = now()
    if (me == 1) then
      do it = 1, 2000
        lock (lk[1])
        unlock (lk[1])
      end do
    end if
    u(rep) = (now() - t) / 2000
  end do
  sync all
  if (me == 1 .and. counter /= 11 * 5000) error stop "atomics_alone: lost atomic_add updates"
  if (me == 1) print '(a,f8.4,a,f8.4,a)', 'alone: atomic_add ', 1d6*median(s), ' us, lock_unlock ', 1d6*median(u), ' us'
contains
  real(real64) function now()
    integer(int64) :: count, rate
    call system_clock(count, rate)
    now = real(count, real64) / real(rate, real64)
  end function
  real(real64) function median(a)
    real(real64), intent(inout) :: a(:)
    integer :: i, j
    real(real64) :: x
    do i = 2, size(a)
      x = a(i); j = i - 1
      do while (j >= 1)
        if (a(j) <= x) exit
        a(j + 1) = a(j); j = j - 1
      end do
      a(j + 1) = x
    end do
    median = a((size(a) + 1) / 2)
  end function
end program
