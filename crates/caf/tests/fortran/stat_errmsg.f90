! STAT= and ERRMSG= on error conditions: ALLOCATE of an allocated coarray, DEALLOCATE of an
! unallocated one, SYNC IMAGES with an image index out of range or listed twice; STAT=0
! and ERRMSG untouched when there is no error.
program stat_errmsg
  implicit none
  integer, allocatable :: a(:)[:]
  integer :: me, n, st
  character(len=80) :: msg

  me = this_image()
  n = num_images()
  msg = 'untouched'
  allocate (a(4)[*], stat=st, errmsg=msg)
  if (st /= 0 .or. msg /= 'untouched') error stop "allocate: stat or errmsg set without an error"
  allocate (a(4)[*], stat=st, errmsg=msg)
  if (st == 0) error stop "allocate of an allocated coarray: no stat"
  if (msg == 'untouched') error stop "allocate of an allocated coarray: no errmsg"
  msg = 'untouched'
  deallocate (a, stat=st, errmsg=msg)
  if (st /= 0 .or. msg /= 'untouched') error stop "deallocate: stat or errmsg set without an error"
  deallocate (a, stat=st, errmsg=msg)
  if (st == 0) error stop "deallocate of an unallocated coarray: no stat"
  if (msg == 'untouched') error stop "deallocate of an unallocated coarray: no errmsg"
  msg = 'untouched'
  sync images (n + 1, stat=st, errmsg=msg)
  if (st == 0) error stop "sync images beyond num_images(): no stat"
  if (msg == 'untouched') error stop "sync images beyond num_images(): no errmsg"
  msg = 'untouched'
  sync images ([me, me], stat=st, errmsg=msg)
  if (st == 0) error stop "sync images with an image twice: no stat"
  msg = 'untouched'
  sync all (stat=st, errmsg=msg)
  if (st /= 0 .or. msg /= 'untouched') error stop "sync all: stat or errmsg set without an error"
  if (me == 1) print '(a,i0)', "stat_errmsg ok on ", n
end program
