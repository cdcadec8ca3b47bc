! FAIL IMAGE on the last image while the others SYNC ALL without STAT=: the job ends at
! once, with a non-zero status and one line naming the failed image (F2018 11.6.11: an
! error in an image control statement without STAT= is an error termination).
program image_failed_no_stat
  implicit none
  integer :: n

  n = num_images()
  if (n == 1) then
    print '(a,i0)', "image_failed_no_stat ok on ", n
    stop
  end if
  if (this_image() == n) fail image
  sync all
  error stop "sync all without STAT= went on past a failed image"
end program
