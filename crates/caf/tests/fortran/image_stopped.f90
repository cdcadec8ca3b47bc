! An image that executes STOP early: the others see it in STOPPED_IMAGES() and
! IMAGE_STATUS (STAT_STOPPED_IMAGE), and SYNC ALL with STAT= gives STAT_STOPPED_IMAGE;
! the job still ends with status 0.
program image_stopped
  use iso_fortran_env, only: stat_stopped_image
  implicit none
  integer :: me, n, st, i
  integer, allocatable :: gone(:)

  me = this_image()
  n = num_images()
  if (me == n .and. n > 1) stop
  if (n > 1) then
    ! wait until the last image has stopped (SYNC ALL reports it once it has)
    do
      sync all (stat=st)
      if (st == stat_stopped_image) exit
      if (st /= 0) then
        print '(a,i0)', "sync all (stat=st) gave st = ", st
        error stop "sync all stat neither 0 nor STAT_STOPPED_IMAGE"
      end if
    end do
    if (image_status(n) /= stat_stopped_image) error stop "image_status of a stopped image"
    gone = stopped_images()
    if (size(gone) /= 1) error stop "stopped_images() size"
    if (gone(1) /= n) error stop "stopped_images() is not the last image"
    do i = 1, n - 1
      if (image_status(i) /= 0) error stop "image_status of a running image"
    end do
    ! No survivor stops before every survivor has made its checks: an image that ends
    ! the program has initiated normal termination, and from then on STOPPED_IMAGES()
    ! (F2018 16.9.183) and IMAGE_STATUS name it too.
    sync images ([(i, i = 1, n - 1)])
  else
    if (size(stopped_images()) /= 0) error stop "stopped_images() on one image"
  end if
  if (me == 1) print '(a,i0)', "image_stopped ok on ", n
end program
