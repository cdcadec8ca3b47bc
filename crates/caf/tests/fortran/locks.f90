! LOCK/UNLOCK on lock variables of several images, ACQUIRED_LOCK=, STAT= (STAT_LOCKED,
! unlocking an unlocked lock), and CRITICAL protecting a non-atomic read-modify-write on image 1.
program locks
  use iso_fortran_env, only: atomic_int_kind, lock_type, stat_locked, stat_unlocked
  implicit none
  type(lock_type) :: lk[*], pair(2)[*]
  integer :: total[*], crit[*], me, n, i, st, right
  logical :: got
  double precision :: x
  integer(atomic_int_kind) :: arrived[*], k

  me = this_image()
  n = num_images()
  right = merge(1, me + 1, me == n)
  total = 0
  call atomic_define(arrived, 0)
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
  ! a lock the others wait for long enough to fall asleep (image 1 computes while it holds
  ! it; past 2 images on 2 cores they sleep): each UNLOCK must wake the next waiter. Nothing
  ! else may wake them meanwhile, so image 1 waits for them by reading its own counter, and
  ! they count with atomics that went through the runtime once before (later ones are plain
  ! CPU atomics, which wake nobody)
  lock (lk[1])
  unlock (lk[1])
  call atomic_add(arrived[1], 0)
  sync all
  if (me == 1) lock (lk[1])
  sync all
  if (me == 1) then
    x = 1d0
    do i = 1, 30000000
      x = x * 1.0000001d0 + 1d-9
    end do
    if (x < 1d0) error stop "the computation went wrong"
    total[1] = 0
    unlock (lk[1])
    do
      call atomic_ref(k, arrived)
      if (k == n - 1) exit
    end do
  else
    lock (lk[1])
    total[1] = total[1] + 1
    unlock (lk[1])
    call atomic_add(arrived[1], 1)
  end if
  sync all
  if (me == 1 .and. total /= n - 1) error stop "waiters for a held lock lost updates"
  if (me == 1) print '(a,i0)', "locks ok on ", n
end program
