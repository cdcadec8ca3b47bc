! Coindexed substrings of a character coarray: gfortran passes the parent's length as the
! element length with the substring's offset, and the destination's length.
program substring_gets
  implicit none
  character(len=8) :: s[*]
  character(len=3) :: t
  character(len=5) :: u
  character(len=2) :: w
  integer :: j
  s = 'ABCDEFGH'
  if (this_image() == num_images()) s = 'abcdefgh'
  sync all
  j = num_images()
  t = s[j](3:5)
  if (t /= 'cde') error stop "s[j](3:5)"
  u = s[j](4:)
  if (u /= 'defgh') error stop "s[j](4:)"
  w = s[j](7:8)
  if (w /= 'gh') error stop "s[j](7:8)"
  t = s[j](1:3)
  if (t /= 'abc') error stop "s[j](1:3)"
  sync all
  if (this_image() == 1) print '(a,i0)', 'substring_gets ok on ', num_images()
end program
