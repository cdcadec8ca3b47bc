! ERROR STOP 7 on the last image while the others wait in SYNC ALL: the whole job ends
! with status 7 and "ERROR STOP 7" on stderr.
program error_stop_code
  implicit none
  integer :: x[*]
  x = 0
  if (this_image() == num_images()) error stop 7
  sync all
  print *, "an image passed a sync all its failed peer never reached"
end program
