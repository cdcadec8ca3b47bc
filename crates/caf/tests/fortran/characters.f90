! Character coarrays: kind 1 and kind 4 (UCS-4), whole strings, substrings of coindexed
! strings, assignment of shorter and longer values (blank padding, truncation).
program characters
  implicit none
  character(len=8, kind=1) :: a(3)[*]
  character(len=6, kind=4) :: u(3)[*]
  character(len=8) :: expect
  character(len=6, kind=4) :: uexpect
  integer :: me, n, right, left, j

  me = this_image()
  n = num_images()
  right = merge(1, me + 1, me == n)
  left = merge(n, me - 1, me == 1)
  a = repeat('.', 8)
  u = repeat(4_'.', 6)
  sync all
  a(1)[right] = 'image' // achar(48 + mod(me, 10))      ! shorter: padded with blanks
  a(2)[right] = 'truncated-here'                         ! longer: truncated
  a(3)[right](3:5) = 'XYZ'                               ! a substring of a coindexed string
  do j = 1, 3
    u(j)[right] = 4_'k4:' // char(945 + j, 4) // char(64 + me, 4)
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
  if (a(1)[right](1:5) /= 'image') error stop "character(kind=1) substring get"
  if (a(3)[right] /= '..XYZ...') error stop "character(kind=1) get"
  uexpect = 4_'k4:' // char(948, 4) // char(64 + me, 4)
  if (u(3)[right] /= uexpect) error stop "character(kind=4) get"
  if (u(2)[right](4:4) /= char(947, 4)) error stop "character(kind=4) substring get"
  sync all
  if (me == 1) print '(a,i0)', "characters ok on ", n
end program
