! RANDOM_INIT: with IMAGE_DISTINCT=.false. every image draws the same numbers, with
! .true. they differ; REPEATABLE=.true. repeats the sequence when called again.
program random_init_images
  implicit none
  real(8) :: r(4)[*], first(4)
  integer :: me, n, i

  me = this_image()
  n = num_images()
  call random_init(repeatable=.true., image_distinct=.false.)
  call random_number(r)
  first = r
  call random_init(repeatable=.true., image_distinct=.false.)
  call random_number(r)
  if (any(r /= first)) error stop "repeatable random_init did not repeat"
  sync all
  do i = 1, n
    if (any(r(:)[i] /= r)) error stop "image_distinct=.false.: images differ"
  end do
  sync all
  call random_init(repeatable=.true., image_distinct=.true.)
  call random_number(r)
  sync all
  do i = 1, n
    if (i /= me .and. all(r(:)[i] == r)) error stop "image_distinct=.true.: two images draw the same"
  end do
  sync all
  if (me == 1) print '(a,i0)', "random_init ok on ", n
end program
