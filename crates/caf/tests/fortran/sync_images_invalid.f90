! SYNC IMAGES with an image index beyond NUM_IMAGES() and no STAT=: error termination with
! a non-zero status and a message naming the statement.
program sync_images_invalid
  implicit none
  integer :: x[*]
  x = 1
  sync images (num_images() + 1)
  print *, "sync images with an invalid image returned"
end program
