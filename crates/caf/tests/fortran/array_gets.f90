! Coindexed reads of arrays into destinations of every layout: other lower bounds, rank 2,
! strided and reversed sources, a strided destination, a kind and a type conversion,
! complex and logical, a fixed-size section. Each image reads from the next one (itself
! at one image), so gets run against its own part and against another image's.
program array_gets
  implicit none
  integer, parameter :: n = 6
  real(8), allocatable :: a(:, :)[:]
  integer, allocatable :: k(:)[:]
  complex(8) :: z(3)[*], zz(0:2)
  logical :: l(4)[*], ll(-1:2)
  real(8) :: d2(0:n - 1, -1:n - 2), d1(10:10 + n - 1), ds(2 * n), kr(n)
  integer :: ki(-3:n - 4)
  integer(8) :: k8(n)
  integer :: me, np, other, i, j

  me = this_image()
  np = num_images()
  other = merge(1, me + 1, me == np)
  allocate (a(n, n)[*], k(n)[*])
  do j = 1, n
    do i = 1, n
      a(i, j) = 100 * me + 10 * i + j
    end do
  end do
  k = [(1000 * me + i, i = 1, n)]
  z = [(cmplx(me, i, 8), i = 1, 3)]
  l = [(mod(me + i, 2) == 0, i = 1, 4)]
  sync all

  d2 = a(:, :)[other]                                  ! whole rank 2, lower bounds 0 and -1
  do j = 1, n
    do i = 1, n
      if (d2(i - 1, j - 2) /= 100 * other + 10 * i + j) error stop "array_gets: rank 2"
    end do
  end do
  d1 = a(:, 3)[other]                                  ! a column, lower bound 10
  if (any(d1 /= [(100 * other + 10 * i + 3, i = 1, n)])) error stop "array_gets: column"
  d1 = a(2, :)[other]                                  ! a row: a strided source
  if (any(d1 /= [(100 * other + 20 + j, j = 1, n)])) error stop "array_gets: row"
  d1 = a(n:1:-1, 1)[other]                             ! reversed
  if (any(d1 /= [(100 * other + 10 * i + 1, i = n, 1, -1)])) error stop "array_gets: reversed"
  ds = 0
  ds(1:2 * n:2) = a(:, 4)[other]                       ! into a strided destination
  if (any(ds(1:2 * n:2) /= [(100 * other + 10 * i + 4, i = 1, n)])) &
    error stop "array_gets: strided destination"
  if (any(ds(2:2 * n:2) /= 0)) error stop "array_gets: strided destination's gaps"
  d1(10:12) = a(1:3, 5)[other]                         ! a fixed-size section
  if (any(d1(10:12) /= [(100 * other + 10 * i + 5, i = 1, 3)])) error stop "array_gets: fixed"
  ki = k(:)[other]                                     ! integer, lower bound -3
  if (any(ki /= [(1000 * other + i, i = 1, n)])) error stop "array_gets: integer"
  k8 = k(:)[other]                                     ! kind conversion
  if (any(k8 /= [(1000_8 * other + i, i = 1, n)])) error stop "array_gets: kind"
  kr = k(:)[other]                                     ! type conversion
  if (any(kr /= [(1000d0 * other + i, i = 1, n)])) error stop "array_gets: type"
  zz = z(:)[other]
  if (any(zz /= [(cmplx(other, i, 8), i = 1, 3)])) error stop "array_gets: complex"
  ll = l(:)[other]
  if (any(ll .neqv. [(mod(other + i, 2) == 0, i = 1, 4)])) error stop "array_gets: logical"
  sync all
  if (me == 1) print '(a,i0)', "array_gets ok on ", np
end program
