! Image 1 alone on image 2's lock and counter while image 2 waits in SYNC ALL: 200 000
! atomic_add(counter[2], 1), then 200 000 lock(lk[2]) / unlock(lk[2]), then 200 000
! event post(ev[2]) (image 2 then waits for them all), ns per statement.
! The waiting image is what made the difference: before 2026-11-30 each UNLOCK woke it
! from its SYNC ALL (it slept on its own memory), to find nothing and sleep again.
!   gaspar, shm:  target/release/gaspar caf -O2 bench/probes/caf_lock_atomic_alone.f90 -o /tmp/la
!                 target/release/gaspar run -n 2 /tmp/la
!   gaspar, mpi:  (gaspar built with --features gaspar/mpi,gaspar-caf/mpi) the same caf
!                 line, then mpirun -n 2 /tmp/la
!   caf_shmem:    in scripts/sid-chroot: gfortran-16 -O2 -fcoarray=shared
!                 caf_lock_atomic_alone.f90 -o sh -lcaf_shmem; GFORTRAN_NUM_IMAGES=2 ./sh
program caf_lock_atomic_alone
  use iso_fortran_env
  implicit none
  integer(atomic_int_kind) :: counter[*]
  type(lock_type) :: lk[*]
  type(event_type) :: ev[*]
  integer :: it, n, me
  integer(int64) :: t0, t1, rate
  me = this_image()
  n = 200000
  counter = 0
  sync all
  if (me == 1) then
    call atomic_add(counter[2], 1)
    call system_clock(t0, rate)
    do it = 1, n
      call atomic_add(counter[2], 1)
    end do
    call system_clock(t1)
    print '(a,f8.2,a)', 'uncontended atomic_add ', 1d9*dble(t1-t0)/dble(rate)/n, ' ns'
    lock(lk[2]); unlock(lk[2])
    call system_clock(t0, rate)
    do it = 1, n
      lock(lk[2])
      unlock(lk[2])
    end do
    call system_clock(t1)
    print '(a,f8.2,a)', 'uncontended lock+unlock ', 1d9*dble(t1-t0)/dble(rate)/n, ' ns'
    call system_clock(t0, rate)
    do it = 1, n
      event post (ev[2])
    end do
    call system_clock(t1)
    print '(a,f8.2,a)', 'event post to a waiting image ', 1d9*dble(t1-t0)/dble(rate)/n, ' ns'
  end if
  sync all
  if (me == 2) event wait (ev, until_count=n)
  if (me == 2 .and. counter /= n + 1) error stop 'wrong count'
end program caf_lock_atomic_alone
