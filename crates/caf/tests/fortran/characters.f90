! Character coarrays: kind 1 and kind 4 (UCS-4), whole strings, substrings of coindexed
! strings, assignment of shorter and longer values (blank padding, truncation).
!
! Two constructs are avoided because gfortran 12 passes libcaf wrong descriptors for them
! (-fdump-tree-original shows it): a concatenation as the source of a coindexed
! assignment gets elem_len=0 (the library cannot know the source's length), so the values
! are built in a variable first; a substring destination `a(3)[k](3:5) = ...` gets the
! full string length (8) with the address of character 3, so the put would write 8 bytes
! from there (and `a(3:3)[k](3:5)` is an internal compiler error), so that string is read,
! changed and put back whole. Likewise a substring of a coindexed string as a value
! (`a(1)[k](1:5)`) gets a destination temporary with elem_len=0: it is read whole first.
program characters
  implicit none
  character(len=8, kind=1) :: a(3)[*]
  character(len=6, kind=4) :: u(3)[*]
  character(len=8) :: expect
  character(len=6, kind=4) :: uexpect, uvalue
  character(len=6) :: short
  character(len=8) :: changed
  integer :: me, n, right, left, j

  me = this_image()
  n = num_images()
  right = merge(1, me + 1, me == n)
  left = merge(n, me - 1, me == 1)
  a = repeat('.', 8)
  u = repeat(4_'.', 6)
  sync all
  short = 'image' // achar(48 + mod(me, 10))
  a(1)[right] = short                                    ! shorter: padded with blanks
  a(2)[right] = 'truncated-here'                         ! longer: truncated
  changed = a(3)[right]
  changed(3:5) = 'XYZ'
  a(3)[right] = changed
  do j = 1, 3
    uvalue = 4_'k4:' // char(945 + j, 4) // char(64 + me, 4)
    u(j)[right] = uvalue
  end do
  sync all
  expect = 'image' // achar(48 + mod(left, 10))
  if (a(1) /= expect) error stop "character(kind=1) put (padding)"
  if (a(1)(7:8) /= '  ') error stop "character(kind=1) put not blank padded"
  if (a(2) /= 'truncate') error stop "character(kind=1) put (truncation)"
  if (a(3) /= '..XYZ...') error stop "character(kind=1) substring put"
  do j = 1, 3
    uexpect = 4_'k4:' // char(945 + j, 4) // char(64 + left, 4)
    if (u(j) /= uexpect) error stop "character(kind=4) put"
  end do
  changed = a(1)[right]
  if (changed(1:5) /= 'image') error stop "character(kind=1) substring get"
  if (a(3)[right] /= '..XYZ...') error stop "character(kind=1) get"
  uexpect = 4_'k4:' // char(948, 4) // char(64 + me, 4)
  if (u(3)[right] /= uexpect) error stop "character(kind=4) get"
  uvalue = u(2)[right]
  if (uvalue(4:4) /= char(947, 4)) error stop "character(kind=4) substring get"
  sync all
  if (me == 1) print '(a,i0)', "characters ok on ", n
end program
