! Atomic subroutines on image 1's variables from every image: atomic_define/ref,
! atomic_add/and/or/xor, the fetch forms, atomic_cas (a spin lock built on it), integer
! and logical atomics, with STAT=.
program atomics
  use iso_fortran_env, only: atomic_int_kind, atomic_logical_kind
  implicit none
  integer(atomic_int_kind) :: counter[*], bits[*], word[*], guard[*], total[*]
  logical(atomic_logical_kind) :: flag[*]
  integer(atomic_int_kind) :: old, value
  logical(atomic_logical_kind) :: lval
  integer :: me, n, i, st, expect_and

  me = this_image()
  n = num_images()
  if (me == 1) then
    call atomic_define(counter, 0)
    call atomic_define(bits, 0)
    call atomic_define(word, -1)
    call atomic_define(guard, 0)
    call atomic_define(total, 0)
    call atomic_define(flag, .false.)
  end if
  sync all
  do i = 1, 1000
    call atomic_add(counter[1], 1, stat=st)
    if (st /= 0) error stop "atomic_add stat"
  end do
  call atomic_or(bits[1], ishft(1, me - 1))
  call atomic_and(word[1], not(ishft(1, me - 1)))
  call atomic_fetch_add(counter[1], 0, old)
  if (old < 1000) error stop "atomic_fetch_add before this image's adds were visible"
  ! a spin lock made of atomic_cas around a non-atomic read-modify-write of total
  do i = 1, 100
    do
      call atomic_cas(guard[1], old, 0, me)
      if (old == 0) exit
    end do
    call atomic_ref(value, total[1])
    call atomic_define(total[1], value + 1)
    call atomic_define(guard[1], 0)
  end do
  sync all
  call atomic_ref(value, counter[1], stat=st)
  if (st /= 0 .or. value /= 1000 * n) error stop "atomic_add total"
  call atomic_ref(value, bits[1])
  if (value /= 2**n - 1) error stop "atomic_or"
  expect_and = not(2**n - 1)
  call atomic_ref(value, word[1])
  if (value /= expect_and) error stop "atomic_and"
  call atomic_ref(value, total[1])
  if (value /= 100 * n) error stop "atomic_cas spin lock lost updates"
  sync all
  ! fetch forms: each image xors its bit twice (restoring), fetching the old value
  call atomic_fetch_xor(bits[1], ishft(1, me - 1), old)
  if (iand(old, ishft(1, me - 1)) == 0) error stop "atomic_fetch_xor old value"
  call atomic_fetch_xor(bits[1], ishft(1, me - 1), old)
  if (iand(old, ishft(1, me - 1)) /= 0) error stop "atomic_fetch_xor second old value"
  call atomic_fetch_or(word[1], 0, old)
  call atomic_fetch_and(word[1], -1, old)
  if (old /= expect_and) error stop "atomic_fetch_and old value"
  call atomic_fetch_add(counter[1], -1000, old)
  sync all
  call atomic_ref(value, counter[1])
  if (value /= 0) error stop "atomic_fetch_add back to zero"
  call atomic_ref(value, bits[1])
  if (value /= 2**n - 1) error stop "atomic_fetch_xor restores"
  ! logical atomic: the last image sets a flag the others wait for
  if (me == n) call atomic_define(flag[1], .true.)
  do
    call atomic_ref(lval, flag[1])
    if (lval) exit
  end do
  ! atomic_cas on a logical
  sync all
  if (me == 1) then
    call atomic_cas(flag[1], lval, .true., .false.)
    if (.not. lval) error stop "logical atomic_cas old"
    call atomic_ref(lval, flag[1])
    if (lval) error stop "logical atomic_cas new"
  end if
  sync all
  if (me == 1) print '(a,i0)', "atomics ok on ", n
end program
