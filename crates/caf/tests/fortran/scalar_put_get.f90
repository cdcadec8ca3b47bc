! Scalar put and get of coindexed objects: to and from every image, element of an array
! coarray, and an image's own coarray through a coindex (image == this_image()).
program scalar_put_get
  implicit none
  integer :: x[*], arr(10)[*], me, n, i, right, left
  real(8) :: d[*]

  me = this_image()
  n = num_images()
  right = merge(1, me + 1, me == n)
  left = merge(n, me - 1, me == 1)
  x = 0
  arr = 0
  d = 0
  sync all
  x[right] = 100 + me                 ! put a scalar
  arr(me)[right] = me                 ! put one element
  d[right] = 0.5d0 * me
  sync all
  if (x /= 100 + left) error stop "scalar put wrong"
  if (arr(left) /= left) error stop "element put wrong"
  if (count(arr /= 0) /= 1 .and. n <= 10) error stop "element put touched other elements"
  if (d /= 0.5d0 * left) error stop "real(8) put wrong"
  ! gets from every image
  do i = 1, n
    if (x[i] /= 100 + merge(n, i - 1, i == 1)) error stop "scalar get wrong"
    if (d[i] /= 0.5d0 * merge(n, i - 1, i == 1)) error stop "real(8) get wrong"
  end do
  if (arr(left)[me] /= left) error stop "get from this image wrong"
  sync all
  x[me] = -me                         ! a coindexed put to this image
  if (x /= -me) error stop "put to this image wrong"
  sync all
  if (me == 1) print '(a,i0)', "scalar_put_get ok on ", n
end program
