! Only an allocatable coarray of a derived type, allocated after the program started: its
! registration must start the accessor service on every image, since the reads through
! its allocatable component run on the owner's service when the parts are not at their
! owners' addresses (GASPAR_SHM_PLACEMENT=anywhere) (tests/accessor_threads.rs).
program service_alloc_derived
  implicit none
  type t
    real, allocatable :: v(:)
  end type
  type(t), allocatable :: e[:]
  integer :: me, n, right
  me = this_image()
  n = num_images()
  right = mod(me, n) + 1
  allocate (e[*])
  allocate (e%v(3))
  e%v = 2.0*me
  sync all
  if (e[right]%v(3) /= 2.0*right) error stop 1
  write (*, '(a,i0,a,i0)') 'image ', me, ' threads ', thread_count()
contains
  include 'thread_count.inc'
end program
