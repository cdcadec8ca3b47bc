! Allocatable coarrays: scalar and array, of integer, real, complex, logical and character
! kinds; allocate with lower bounds and cobounds, allocated(), put/get, deallocate and
! allocate again with another shape.
program alloc_types
  implicit none
  integer(1), allocatable :: i1(:)[:]
  integer(2), allocatable :: i2(:)[:]
  integer(8), allocatable :: i8(:, :)[:, :]
  real(4), allocatable :: r4[:]
  real(8), allocatable :: r8(:)[:]
  complex(8), allocatable :: c8(:)[:]
  logical, allocatable :: l4(:)[:]
  character(len=4), allocatable :: s(:)[:]
  integer :: me, n, right, left, k

  me = this_image()
  n = num_images()
  right = merge(1, me + 1, me == n)
  left = merge(n, me - 1, me == 1)
  if (allocated(i1)) error stop "allocated before allocate"
  allocate (i1(-2:2)[*], i2(5)[*], i8(2:3, 0:4)[0:1, *], r4[*], r8(1000)[*])
  allocate (c8(7)[*], l4(3)[*], s(2)[*])
  if (.not. allocated(i1) .or. .not. allocated(r4)) error stop "allocated() false after allocate"
  if (lbound(i1, 1) /= -2 .or. ubound(i1, 1) /= 2) error stop "bounds of i1"
  if (any(lcobound(i8) /= [0, 1])) error stop "lcobound of i8"
  if (any(this_image(i8) /= [mod(me - 1, 2), 1 + (me - 1) / 2])) error stop "this_image(i8)"
  i1(:)[right] = int([(me * 5 + k, k = -2, 2)], 1)
  i2(:)[right] = int(-me * [1, 2, 3, 4, 5], 2)
  i8(:, :)[mod(right - 1, 2), 1 + (right - 1) / 2] = reshape([(int(k, 8) * me, k = 1, 10)], [2, 5])
  r4[right] = 0.25 * me
  r8(:)[right] = [(dble(k) + me, k = 1, 1000)]
  c8(:)[right] = cmplx(me, [(k, k = 1, 7)], 8)
  l4(:)[right] = [.true., mod(me, 2) == 0, .false.]
  s(:)[right] = ['ab' // achar(48 + mod(me, 10)) // '!', 'wxyz']
  sync all
  if (any(i1 /= int([(left * 5 + k, k = -2, 2)], 1))) error stop "integer(1) allocatable put"
  if (any(i2 /= int(-left * [1, 2, 3, 4, 5], 2))) error stop "integer(2) allocatable put"
  if (any(i8 /= reshape([(int(k, 8) * left, k = 1, 10)], [2, 5]))) error stop "integer(8) 2-d put"
  if (r4 /= 0.25 * left) error stop "scalar allocatable put"
  if (any(r8 /= [(dble(k) + left, k = 1, 1000)])) error stop "real(8) allocatable put"
  if (any(c8 /= cmplx(left, [(k, k = 1, 7)], 8))) error stop "complex allocatable put"
  if (any(l4 .neqv. [.true., mod(left, 2) == 0, .false.])) error stop "logical allocatable put"
  if (s(1) /= 'ab' // achar(48 + mod(left, 10)) // '!' .or. s(2) /= 'wxyz') error stop "character allocatable put"
  if (r4[right] /= 0.25 * me) error stop "scalar allocatable get"
  if (any(r8(995:)[right] /= [(dble(k) + me, k = 995, 1000)])) error stop "real(8) allocatable get"
  if (i8(3, 4)[mod(right - 1, 2), 1 + (right - 1) / 2] /= 10 * me) error stop "integer(8) 2-d get"
  sync all
  deallocate (i1, i2, i8, r4, r8, c8, l4, s)
  if (allocated(r8)) error stop "allocated() true after deallocate"
  ! again, with another size, many times (registration and release must not leak or clash)
  do k = 1, 50
    allocate (r8(k * 100)[*])
    r8 = me
    sync all
    if (r8(k * 100)[right] /= right) error stop "reallocated coarray get"
    sync all
    deallocate (r8)
  end do
  if (me == 1) print '(a,i0)', "alloc_types ok on ", n
end program
