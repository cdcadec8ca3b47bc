! Images that allocate one coarray with different bounds (an invalid program) get a
! non-zero STAT= and an ERRMSG= naming two images and what each allocated; nothing is
! allocated, and a matching ALLOCATE afterwards works.
program alloc_mismatch
  implicit none
  real, allocatable :: a(:)[:]
  integer :: st, me, other
  character(len=200) :: msg
  me = this_image()
  msg = ""
  allocate(a(10 * me)[*], stat=st, errmsg=msg)
  if (num_images() > 1) then
    if (st == 0) error stop "mismatched allocate gave stat 0"
    if (allocated(a)) error stop "a allocated by a mismatched allocate"
    if (index(msg, "mismatched collective: image ") /= 1) error stop "errmsg names no image"
    read (msg(30:), *) other
    if (other /= me) error stop "errmsg's first image is not this one"
    if (index(msg, " allocated 40 bytes") == 0 .and. me == 1) error stop "errmsg: no size"
  else
    if (st /= 0) error stop "one image: stat not 0"
    deallocate(a)
  end if
  allocate(a(5)[*])
  a = me
  sync all
  if (a(5)[1] /= 1) error stop "wrong value after a matching allocate"
  deallocate(a)
  if (me == 1) print '(a,i0)', "alloc_mismatch ok on ", num_images()
end program
