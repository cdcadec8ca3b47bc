! ERROR STOP 9, QUIET=.TRUE. on image 1: exit status 9 and no "ERROR STOP" line.
program error_stop_quiet
  implicit none
  integer :: x[*]
  x = 0
  if (this_image() == 1) error stop 9, quiet=.true.
  sync all
  print *, "an image passed a sync all its failed peer never reached"
end program
