! The program whose job start-up (and end) time scripts/bench-caf measures.
program trivial
  implicit none
  integer :: x[*]
  x = this_image()
  sync all
end program
