! STOP 5, QUIET=.TRUE.: exit status 5 and no "STOP" line (expected: exit 5, quiet).
program stop_quiet
  implicit none
  integer :: x[*]
  x = 1
  sync all
  stop 5, quiet=.true.
end program
