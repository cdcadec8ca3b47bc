! STOP with a code on every image: the job's exit status is the code (expected: exit 3,
! "STOP 3" on stderr).
program stop_code
  implicit none
  integer :: x[*]
  x = this_image()
  sync all
  if (x[merge(1, this_image() + 1, this_image() == num_images())] < 1) error stop "bad value"
  stop 3
end program
