! Coarrays of the 10- and 16-byte kinds: integer(16), real(10), real(16), complex(10),
! complex(16), static and allocatable, put to the right neighbour and got back.
program wide_kinds
  implicit none
  integer(16) :: i16(3)[*]
  real(10) :: r10(3)[*]
  real(16) :: r16(3)[*]
  complex(10) :: c10(3)[*]
  complex(16) :: c16(3)[*]
  integer(16), allocatable :: ai16(:)[:]
  real(16), allocatable :: ar16(:)[:]
  complex(10), allocatable :: ac10(:)[:]
  integer :: me, n, right, left, j

  me = this_image()
  n = num_images()
  right = merge(1, me + 1, me == n)
  left = merge(n, me - 1, me == 1)
  allocate (ai16(3)[*], ar16(3)[*], ac10(3)[*])
  do j = 1, 3
    i16(j)[right] = 2_16**100 * me + j
    r10(j)[right] = 1.125_10 * me + j
    r16(j)[right] = 1.0625_16 * me + j
    c10(j)[right] = cmplx(me, -j, 10)
    c16(j)[right] = cmplx(me, -j, 16)
  end do
  ai16(:)[right] = -2_16**90 * me - [1, 2, 3]
  ar16(:)[right] = 1.0_16 / 3.0_16 * me + [1, 2, 3]
  ac10(:)[right] = cmplx(-me, [1, 2, 3], 10)
  sync all
  do j = 1, 3
    if (i16(j) /= 2_16**100 * left + j) error stop "integer(16) put"
    if (r10(j) /= 1.125_10 * left + j) error stop "real(10) put"
    if (r16(j) /= 1.0625_16 * left + j) error stop "real(16) put"
    if (c10(j) /= cmplx(left, -j, 10)) error stop "complex(10) put"
    if (c16(j) /= cmplx(left, -j, 16)) error stop "complex(16) put"
  end do
  if (any(ai16 /= -2_16**90 * left - [1, 2, 3])) error stop "allocatable integer(16) put"
  if (any(ar16 /= 1.0_16 / 3.0_16 * left + [1, 2, 3])) error stop "allocatable real(16) put"
  if (any(ac10 /= cmplx(-left, [1, 2, 3], 10))) error stop "allocatable complex(10) put"
  if (any(i16(:)[right] /= 2_16**100 * me + [1, 2, 3])) error stop "integer(16) get"
  if (any(r10(:)[right] /= 1.125_10 * me + [1, 2, 3])) error stop "real(10) get"
  if (any(r16(:)[right] /= 1.0625_16 * me + [1, 2, 3])) error stop "real(16) get"
  if (any(c16(:)[right] /= cmplx(me, -[1, 2, 3], 16))) error stop "complex(16) get"
  if (any(ar16(:)[right] /= 1.0_16 / 3.0_16 * me + [1, 2, 3])) error stop "allocatable real(16) get"
  sync all
  if (me == 1) print '(a,i0)', "wide_kinds ok on ", n
end program
