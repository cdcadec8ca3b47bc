! Static (saved) coarrays of the intrinsic types and kinds of 1 to 8 bytes (wide_kinds.f90
! has the 10- and 16-byte ones,
! characters.f90 character kind 4): each image puts its values into its right neighbour's
! coarrays and gets them back.
program static_types
  implicit none
  integer(1) :: i1(3)[*]
  integer(2) :: i2(3)[*]
  integer(4) :: i4(3)[*]
  integer(8) :: i8(3)[*]
  real(4) :: r4(3)[*]
  real(8) :: r8(3)[*]
  complex(4) :: c4(3)[*]
  complex(8) :: c8(3)[*]
  logical(1) :: l1(3)[*]
  logical(2) :: l2(3)[*]
  logical(4) :: l4(3)[*]
  logical(8) :: l8(3)[*]
  character(len=5, kind=1) :: s1(3)[*]
  character(len=5) :: text
  integer :: me, n, right, left, j

  me = this_image()
  n = num_images()
  right = merge(1, me + 1, me == n)
  left = merge(n, me - 1, me == 1)
  sync all
  do j = 1, 3
    i1(j)[right] = int(me * 10 + j, 1)
    i2(j)[right] = int(-1000 * me - j, 2)
    i4(j)[right] = 100000 * me + j
    i8(j)[right] = 2_8**40 * me + j
    r4(j)[right] = 1.5 * me + j
    r8(j)[right] = 1.25d0 * me + j
    c4(j)[right] = cmplx(me, -j, 4)
    c8(j)[right] = cmplx(me, -j, 8)
    l1(j)[right] = logical(mod(me + j, 2) == 0, 1)
    l2(j)[right] = logical(mod(me + j, 2) == 0, 2)
    l4(j)[right] = mod(me + j, 2) == 0
    l8(j)[right] = logical(mod(me + j, 2) == 0, 8)
    write (text, '(a,i2.2,i1)') 'ab', me, j
    s1(j)[right] = text
  end do
  sync all
  do j = 1, 3
    if (i1(j) /= left * 10 + j) error stop "integer(1) put"
    if (i2(j) /= -1000 * left - j) error stop "integer(2) put"
    if (i4(j) /= 100000 * left + j) error stop "integer(4) put"
    if (i8(j) /= 2_8**40 * left + j) error stop "integer(8) put"
    if (r4(j) /= 1.5 * left + j) error stop "real(4) put"
    if (r8(j) /= 1.25d0 * left + j) error stop "real(8) put"
    if (c4(j) /= cmplx(left, -j, 4)) error stop "complex(4) put"
    if (c8(j) /= cmplx(left, -j, 8)) error stop "complex(8) put"
    if (l1(j) .neqv. logical(mod(left + j, 2) == 0, 1)) error stop "logical(1) put"
    if (l2(j) .neqv. logical(mod(left + j, 2) == 0, 2)) error stop "logical(2) put"
    if (l4(j) .neqv. mod(left + j, 2) == 0) error stop "logical(4) put"
    if (l8(j) .neqv. logical(mod(left + j, 2) == 0, 8)) error stop "logical(8) put"
  end do
  if (s1(2) /= 'ab' // achar(48 + left / 10) // achar(48 + mod(left, 10)) // '2') &
    error stop "character(kind=1) put"
  ! gets of the right neighbour's values (which this image put there)
  if (any(i1(:)[right] /= int(me * 10 + [1, 2, 3], 1))) error stop "integer(1) get"
  if (any(i2(:)[right] /= int(-1000 * me - [1, 2, 3], 2))) error stop "integer(2) get"
  if (any(i8(:)[right] /= 2_8**40 * me + [1, 2, 3])) error stop "integer(8) get"
  if (any(i4(:)[right] /= 100000 * me + [1, 2, 3])) error stop "integer(4) get"
  if (any(r4(:)[right] /= 1.5 * me + [1, 2, 3])) error stop "real(4) get"
  if (any(r8(:)[right] /= 1.25d0 * me + [1, 2, 3])) error stop "real(8) get"
  if (any(c4(:)[right] /= cmplx(me, -[1, 2, 3], 4))) error stop "complex(4) get"
  if (any(c8(:)[right] /= cmplx(me, -[1, 2, 3], 8))) error stop "complex(8) get"
  if (any(l4(:)[right] .neqv. mod(me + [1, 2, 3], 2) == 0)) error stop "logical(4) get"
  if (s1(3)[right] /= text) error stop "character(kind=1) get"
  if (any(l1(:)[right] .neqv. logical(mod(me + [1, 2, 3], 2) == 0, 1))) error stop "logical(1) get"
  if (any(l8(:)[right] .neqv. logical(mod(me + [1, 2, 3], 2) == 0, 8))) error stop "logical(8) get"
  sync all
  if (me == 1) print '(a,i0)', "static_types ok on ", n
end program
