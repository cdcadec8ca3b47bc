! FAIL IMAGE on the last image: the others see it in FAILED_IMAGES(), IMAGE_STATUS gives
! STAT_FAILED_IMAGE, SYNC ALL with STAT= gives STAT_FAILED_IMAGE, and the survivors go on
! (a collective among them, then a normal end).
program image_failed
  use iso_fortran_env, only: stat_failed_image
  implicit none
  integer :: me, n, st, k
  integer, allocatable :: gone(:)

  me = this_image()
  n = num_images()
  if (n == 1) then
    if (size(failed_images()) /= 0) error stop "failed_images() on one image"
    print '(a,i0)', "image_failed ok on ", n
    stop
  end if
  if (me == n) fail image
  do
    sync all (stat=st)
    if (st == stat_failed_image) exit
    if (st /= 0) error stop "sync all stat neither 0 nor STAT_FAILED_IMAGE"
  end do
  if (image_status(n) /= stat_failed_image) error stop "image_status of a failed image"
  gone = failed_images()
  if (size(gone) /= 1) error stop "failed_images() size"
  if (gone(1) /= n) error stop "failed_images() is not the last image"
  if (size(failed_images(kind=8)) /= 1) error stop "failed_images(kind=8)"
  k = 1
  call co_sum(k, stat=st)
  if (st /= stat_failed_image) error stop "co_sum with a failed image: stat"
  ! No survivor stops before every survivor has made its checks: once one has stopped,
  ! a collective gives STAT_STOPPED_IMAGE, which F2018 16.6 puts before STAT_FAILED_IMAGE.
  sync images ([(k, k = 1, n - 1)])
  if (me == 1) print '(a,i0)', "image_failed ok on ", n
end program
