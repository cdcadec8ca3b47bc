! STOP with a character code on every image: exit status 0 and the text on stderr.
program stop_text
  implicit none
  integer :: x[*]
  x = this_image()
  sync all
  if (this_image() == 1) print '(a,i0)', "stop_text ok on ", num_images()
  stop "all images done"
end program
