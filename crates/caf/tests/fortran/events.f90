! EVENT POST / EVENT WAIT (with UNTIL_COUNT) / EVENT_QUERY: every image posts to image 1,
! image 1 waits for all; a ping-pong between images 1 and 2; STAT=.
program events
  use iso_fortran_env, only: event_type
  implicit none
  type(event_type) :: ev[*], ping[*], pong[*]
  integer :: me, n, i, cnt, st, x[*]

  me = this_image()
  n = num_images()
  call event_query(ev, cnt, stat=st)
  if (cnt /= 0 .or. st /= 0) error stop "fresh event count not 0"
  sync all
  event post (ev[1])
  event post (ev[1], stat=st)
  if (st /= 0) error stop "event post stat"
  if (me == 1) then
    event wait (ev, until_count=2 * n)
    call event_query(ev, cnt)
    if (cnt /= 0) error stop "count after waiting for all posts"
  end if
  sync all
  ! ping-pong: the value travels with the events that order it
  if (n >= 2) then
    do i = 1, 100
      if (me == 1) then
        x[2] = i
        event post (ping[2])
        event wait (pong)
        if (x /= -i) error stop "pong value"
      else if (me == 2) then
        event wait (ping)
        if (x /= i) error stop "ping value"
        x[1] = -i
        event post (pong[1])
      end if
    end do
  end if
  ! posts from everyone, counted one wait at a time
  sync all
  if (me /= 1) then
    do i = 1, 3
      event post (ev[1])
    end do
  end if
  if (me == 1) then
    do i = 1, 3 * (n - 1)
      event wait (ev)
    end do
    call event_query(ev, cnt)
    if (cnt /= 0) error stop "count after single waits"
  end if
  sync all
  if (me == 1) print '(a,i0)', "events ok on ", n
end program
