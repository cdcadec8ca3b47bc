! LOCK/UNLOCK on lock variables of several images, ACQUIRED_LOCK=, STAT= (STAT_LOCKED,
! unlocking an unlocked lock), and CRITICAL protecting a non-atomic read-modify-write on image 1.
program locks
  use iso_fortran_env, only: lock_type, stat_locked, stat_unlocked
  implicit none
  type(lock_type) :: lk[*], pair(2)[*]
  integer :: total[*], crit[*], me, n, i, st, right
  logical :: got

  me = this_image()
  n = num_images()
  right = merge(1, me + 1, me == n)
  total = 0
  crit = 0
  sync all
  do i = 1, 100
    lock (lk[1])
    total[1] = total[1] + 1
    unlock (lk[1])
  end do
  do i = 1, 100
    critical
      crit[1] = crit[1] + 1
    end critical
  end do
  sync all
  if (me == 1 .and. total /= 100 * n) error stop "lock lost updates"
  if (me == 1 .and. crit /= 100 * n) error stop "critical lost updates"
  ! locking a lock this image holds, and unlocking one it does not, give STAT
  lock (pair(1)[me])
  lock (pair(1)[me], stat=st)
  if (st /= stat_locked) error stop "lock of a held lock: not STAT_LOCKED"
  unlock (pair(1)[me])
  unlock (pair(1)[me], stat=st)
  ! an error condition; gfortran 12 defines STAT_UNLOCKED as 0 (GCC's GFC_STAT_UNLOCKED),
  ! the value of success, so only a non-zero STAT shows that the error was reported
  if (st == 0 .or. (stat_unlocked /= 0 .and. st /= stat_unlocked)) &
    error stop "unlock of an unlocked lock: no error reported"
  sync all
  ! ACQUIRED_LOCK: image 1 holds pair(2)[1]; the others try and fail
  if (me == 1) lock (pair(2)[1])
  sync all
  if (me /= 1) then
    lock (pair(2)[1], acquired_lock=got)
    if (got) error stop "acquired a lock another image holds"
  end if
  sync all
  if (me == 1) unlock (pair(2)[1])
  sync all
  ! now exactly one image gets it
  lock (pair(2)[1], acquired_lock=got)
  if (got) then
    total[1] = -me
    unlock (pair(2)[1])
  end if
  sync all
  if (me == 1 .and. (total > -1 .or. total < -n)) error stop "acquired_lock: nobody got it"
  ! locks on other images' lock variables
  lock (pair(1)[right])
  unlock (pair(1)[right])
  sync all
  if (me == 1) print '(a,i0)', "locks ok on ", n
end program
