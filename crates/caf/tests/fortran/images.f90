! this_image, num_images, image_index, this_image(coarray[, dim]), lcobound and ucobound
! with several codimensions and non-default cobounds; every image checks every index.
program images
  implicit none
  integer :: a[2:3, -1:*]
  real :: b(4)[0:1, 5:6, *]
  integer :: me, n, i, sub(2), sub3(3), expect(2), expect3(3), below

  me = this_image()
  n = num_images()
  if (me < 1 .or. me > n) error stop "this_image() out of range"
  if (num_images() /= n) error stop "num_images() changed"

  ! [2:3, -1:*]: image i has cosubscripts (2 + mod(i-1, 2), -1 + (i-1)/2)
  expect = [2 + mod(me - 1, 2), -1 + (me - 1) / 2]
  sub = this_image(a)
  if (any(sub /= expect)) error stop "this_image(a) wrong"
  if (this_image(a, 1) /= expect(1)) error stop "this_image(a, 1) wrong"
  if (this_image(a, 2) /= expect(2)) error stop "this_image(a, 2) wrong"
  if (any(lcobound(a) /= [2, -1])) error stop "lcobound(a) wrong"
  if (ucobound(a, 1) /= 3) error stop "ucobound(a, 1) wrong"
  if (ucobound(a, 2) /= -1 + (n - 1) / 2) error stop "ucobound(a, 2) wrong"
  do i = 1, n
    if (image_index(a, [2 + mod(i - 1, 2), -1 + (i - 1) / 2]) /= i) error stop "image_index(a) wrong"
  end do
  ! cosubscripts past the last image give 0
  if (mod(n, 2) == 1) then
    if (image_index(a, [3, -1 + n / 2]) /= 0) error stop "image_index past the end not 0"
  end if
  below = -2
  if (image_index(a, [2, below]) /= 0) error stop "image_index below the bounds not 0"

  ! [0:1, 5:6, *]: three codimensions
  expect3 = [mod(me - 1, 2), 5 + mod((me - 1) / 2, 2), 1 + (me - 1) / 4]
  sub3 = this_image(b)
  if (any(sub3 /= expect3)) error stop "this_image(b) wrong"
  if (image_index(b, expect3) /= me) error stop "image_index(b) wrong"
  if (any(lcobound(b) /= [0, 5, 1])) error stop "lcobound(b) wrong"
  if (ucobound(b, 3) /= 1 + (n - 1) / 4) error stop "ucobound(b, 3) wrong"

  ! the index computed locally addresses the image that says it is that image
  a = me
  sync all
  do i = 1, n
    if (a[2 + mod(i - 1, 2), -1 + (i - 1) / 2] /= i) error stop "a[cosubscripts] is not image i"
  end do
  b = real(me)
  sync all
  if (b(3)[expect3(1), expect3(2), expect3(3)] /= real(me)) error stop "b[cosubscripts] wrong"
  sync all
  if (me == 1) print '(a,i0)', "images ok on ", n
end program
