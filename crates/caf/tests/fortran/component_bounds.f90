! A subscript outside the bounds of another image's allocatable component is refused with
! a message (it would reach the memory of the next component there); within the bounds
! the same statement works. An invalid program: gfortran 15+ index inside the accessor it
! generates, unchecked, as GCC 16's caf_shmem does.
program component_bounds
  implicit none
  type t
    integer, allocatable :: c1(:)
    integer, allocatable :: c2(:)
  end type
  type(t) :: a[*]
  integer :: j, k
  allocate(a%c1(3), a%c2(3))
  a%c1 = 1
  a%c2 = 2
  sync all
  j = num_images()
  if (this_image() == 1) then
    a[j]%c1(3) = 7
    if (a[j]%c1(3) /= 7) error stop "a subscript within the bounds"
    k = 4
    a[j]%c1(k) = -4
  end if
  sync all
  if (this_image() == 1) print '(a,i0)', 'component_bounds ok on ', num_images()
end program
