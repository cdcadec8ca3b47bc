! A derived-type coarray whose parts change what they point to from one segment to the
! next. While h%p points at h%a, an allocatable component (memory the library allocates in
! coarray memory), an accessor of h[other] may run in the image that makes the access
! (the shm segments are mapped at their owners' addresses); once the owner points h%p at
! its ordinary memory, the next segment's accesses must run in the owner again (a verdict
! kept from the segment before would follow the owner's pointer here: wrong values or
! SIGSEGV), and after the owner points it back, in the caller once more. (A component of a
! derived type that holds pointers, allocated in the library's component arena, cannot be
! tested: gfortran 15 and 16 end its ALLOCATE with an internal compiler error in
! gfc_get_descriptor_field; and gfortran 16 reads h[i]%p of a scalar pointer component
! wrongly even with -fcoarray=single.)
program pointer_retargeted
  implicit none
  type holder
    integer, allocatable :: a(:)
    integer, pointer :: p(:) => null()
  end type
  type(holder), target :: h[*]
  integer, target :: ordinary(3)
  integer :: me, n, other, x, round
  me = this_image(); n = num_images()
  other = merge(1, me + 1, me == n)
  allocate(h%a(3)); h%a = [1, 2, 3] * me
  ordinary = [10, 20, 30] * me
  h%p => h%a
  sync all
  do round = 1, 3
    x = h[other]%p(2)
    if (x /= 2 * other) error stop 1
    h[other]%p(3) = -round
    sync all
    if (h%a(3) /= -round) error stop 2
    h%p => ordinary
    sync all
    x = h[other]%p(3)
    if (x /= 30 * other) error stop 3
    x = h[other]%a(1)
    if (x /= other) error stop 4
    h[other]%p(1) = 100 * round
    sync all
    if (ordinary(1) /= 100 * round) error stop 5
    h%p => h%a
    sync all
  end do
  if (me == 1) print '(a,i0)', "pointer_retargeted ok on ", num_images()
end program
