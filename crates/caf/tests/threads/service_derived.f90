! A coarray of a derived type, static (registered before the program starts) and one
! allocated later: reads through their allocatable components, which run on the owner's
! accessor service when the parts are not at their owners' addresses
! (GASPAR_SHM_PLACEMENT=anywhere), so the service must have started on every image
! (tests/accessor_threads.rs).
program service_derived
  implicit none
  type t
    real, allocatable :: v(:)
  end type
  type(t) :: d[*]
  type(t), allocatable :: e[:]
  integer :: me, n, right
  me = this_image()
  n = num_images()
  right = mod(me, n) + 1
  allocate (d%v(4))
  d%v = real(me)
  sync all
  if (d[right]%v(2) /= real(right)) error stop 1
  allocate (e[*])
  allocate (e%v(3))
  e%v = 2.0*me
  sync all
  if (e[right]%v(3) /= 2.0*right) error stop 2
  write (*, '(a,i0,a,i0)') 'image ', me, ' threads ', thread_count()
contains
  include 'thread_count.inc'
end program
