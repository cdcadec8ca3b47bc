! Pointer components of a derived-type coarray pointing at ordinary (non-coarray) memory
! of another image: rg[i]%data(j) read and written, scalar and section (the ragged-data
! idiom; GCC 16's caf_shmem ends in SIGSEGV on it). Also pointer components allocated
! through the coarray (b), also through a vector subscript, and allocatable components.
program pointer_components
  implicit none
  type box
    integer, pointer :: data(:) => null()
  end type
  type cbox
    real, allocatable :: v(:)
  end type
  type(box) :: b[*]
  type(cbox) :: c[*]
  type(box) :: rg[*]
  integer, target, allocatable :: ragged(:)
  integer :: me, n, other, i, x, y(3), idx(2), z(2)
  real :: r(3)
  me = this_image(); n = num_images()
  other = merge(1, me + 1, me == n)
  allocate(b%data(me + 3))
  b%data = [(10 * me + i, i = 1, me + 3)]
  allocate(c%v(3)); c%v = 0.5 * me
  allocate(ragged(me + 2))
  ragged = [(100 * me + i, i = 1, me + 2)]
  rg%data => ragged
  sync all
  x = rg[other]%data(2)
  if (x /= 100 * other + 2) error stop 20
  z = rg[other]%data(other + 1:other + 2)
  if (any(z /= 100 * other + [other + 1, other + 2])) error stop 21
  sync all
  rg[other]%data(1) = -me
  rg[other]%data(2:3) = [-2 * me, -3 * me]
  sync all
  i = merge(n, me - 1, me == 1)
  if (any(ragged(1:3) /= [-i, -2 * i, -3 * i])) error stop 22
  sync all
  x = b[other]%data(2)
  if (x /= 10 * other + 2) error stop x
  y = b[other]%data(2:4)
  if (any(y /= 10 * other + [2, 3, 4])) error stop 2
  idx = [3, 1]
  z = b[other]%data(idx)
  if (any(z /= 10 * other + [3, 1])) error stop 8
  x = size(b[other]%data)
  if (x /= other + 3) error stop 3
  r = c[other]%v
  if (any(r /= 0.5 * other)) error stop 4
  sync all
  b[other]%data(1) = -me
  b[other]%data(2:3) = [-2 * me, -3 * me]
  c[other]%v(2) = 9.0
  sync all
  i = merge(n, me - 1, me == 1)
  if (b%data(1) /= -i) error stop 5
  if (any(b%data(2:3) /= [-2 * i, -3 * i])) error stop 6
  if (c%v(2) /= 9.0) error stop 7
  sync all
  idx = [2, 4]
  b[other]%data(idx) = [100 * me, 200 * me]
  sync all
  if (any(b%data([2, 4]) /= [100 * i, 200 * i])) error stop 9
  sync all
  if (me == 1) print '(a,i0)', "pointer_components ok on ", num_images()
end program
