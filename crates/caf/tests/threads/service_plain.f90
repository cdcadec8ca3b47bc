! Coarrays of intrinsic types only: every accessor runs in the caller, so the accessor
! service never starts and each image stays one thread (tests/accessor_threads.rs).
program service_plain
  implicit none
  real, allocatable :: a(:)[:]
  integer :: me, n, right
  allocate (a(8)[*])
  me = this_image()
  n = num_images()
  right = mod(me, n) + 1
  a = real(me)
  sync all
  a(1)[right] = 10.0*me
  sync all
  if (a(2)[right] /= real(right)) error stop 1
  if (a(1) /= 10.0*(mod(me - 2 + n, n) + 1)) error stop 2
  write (*, '(a,i0,a,i0)') 'image ', me, ' threads ', thread_count()
contains
  include 'thread_count.inc'
end program
