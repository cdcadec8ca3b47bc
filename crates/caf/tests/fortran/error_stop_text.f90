! ERROR STOP with a message on image 1 while the others wait: exit status 1 (gfortran's
! for a character stop code) and the message on stderr.
program error_stop_text
  implicit none
  integer :: x[*]
  x = 0
  if (this_image() == 1) error stop "halo exchange broken"
  sync all
  print *, "an image passed a sync all its failed peer never reached"
end program
