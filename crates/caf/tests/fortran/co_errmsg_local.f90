! CO_* with a fixed-length local ERRMSG= variable, which gfortran 12-16 pass by value (a
! copy the library cannot write; their argument registers shift by one): STAT= is still
! set on an error, nothing crashes, and a character co_max / co_min / co_reduce still gets
! its character length right. With a dummy ERRMSG= (passed by address) the message arrives.
program co_errmsg_local
  implicit none
  integer :: me, n, x, st
  character(len=60) :: msg
  character(len=6) :: word

  me = this_image()
  n = num_images()
  x = me
  msg = 'untouched'
  call co_broadcast(x, n + 1, stat=st, errmsg=msg)
  if (st == 0) error stop "co_broadcast from an image beyond num_images(): no stat"
  call co_sum(x, result_image=n + 1, stat=st, errmsg=msg)
  if (st == 0) error stop "co_sum to an image beyond num_images(): no stat"
  x = me
  call co_sum(x, stat=st, errmsg=msg)
  if (st /= 0 .or. x /= n * (n + 1) / 2) error stop "co_sum with ERRMSG=: wrong sum"

  write (word, '(a,i1)') 'image', mod(me, 10)
  call co_max(word, stat=st, errmsg=msg)
  if (st /= 0) error stop "co_max of characters with ERRMSG=: stat"
  if (word /= 'image' // achar(iachar('0') + mod(n, 10))) error stop "co_max of characters with ERRMSG=: wrong value"
  write (word, '(a,i1)') 'image', mod(me, 10)
  call co_min(word, stat=st, errmsg=msg)
  if (st /= 0 .or. word /= 'image1') error stop "co_min of characters with ERRMSG=: wrong value"
  write (word, '(a,i1)') 'image', mod(me, 10)
  call co_reduce(word, later, stat=st, errmsg=msg)
  if (st /= 0) error stop "co_reduce of characters with ERRMSG=: stat"
  if (word /= 'image' // achar(iachar('0') + mod(n, 10))) error stop "co_reduce of characters with ERRMSG=: wrong value"

  call broadcast_with_dummy_errmsg(msg)
  if (msg == 'untouched') error stop "co_broadcast error with a dummy ERRMSG=: no message"
  if (me == 1) print '(a,i0)', "co_errmsg_local ok on ", n
contains
  pure function later(a, b)
    character(len=6), intent(in) :: a, b
    character(len=6) :: later
    later = max(a, b)
  end function

  subroutine broadcast_with_dummy_errmsg(text)
    character(len=*), intent(inout) :: text
    integer :: y, code
    y = 1
    call co_broadcast(y, num_images() + 1, stat=code, errmsg=text)
    if (code == 0) error stop "co_broadcast with a dummy ERRMSG=: no stat"
  end subroutine
end program
