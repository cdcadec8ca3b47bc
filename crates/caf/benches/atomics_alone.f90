! Run: FC=gfortran-16 target/release/gaspar caf -O2 bench/caf/timing.f90
!      crates/caf/benches/atomics_alone.f90 -o aa && target/release/gaspar run -n 2 ./aa
!      (inside scripts/sid-chroot run -- ...); beside: gfortran-16 -O2 -fcoarray=shared
!      bench/caf/timing.f90 crates/caf/benches/atomics_alone.f90 -o aa-shmem -lcaf_shmem
!      && GFORTRAN_NUM_IMAGES=2 ./aa-shmem
! Cost of one atomic_add on image 1's counter and of one LOCK + UNLOCK of image 1's lock,
! by image 1 alone (the other images wait at the next SYNC ALL): the call itself, without
! another image contending for the word as in bench/caf/bench.f90. Medians of 11 loops.
program atomics_alone
  use iso_fortran_env, only: real64, atomic_int_kind, lock_type
  use bench_timing, only: start_round, per_iteration, median
  implicit none
  integer(atomic_int_kind) :: counter[*]
  type(lock_type) :: lk[*]
  real(real64) :: t, s(11), u(11)
  integer :: rep, it, me
  me = this_image()
  do rep = 1, 11
    call start_round(t)
    if (me == 1) then
      do it = 1, 5000
        call atomic_add(counter[1], 1)
      end do
    end if
    s(rep) = per_iteration(t, 5000)
    call start_round(t)
    if (me == 1) then
      do it = 1, 2000
        lock (lk[1])
        unlock (lk[1])
      end do
    end if
    u(rep) = per_iteration(t, 2000)
  end do
  sync all
  if (me == 1 .and. counter /= 11 * 5000) error stop "atomics_alone: lost atomic_add updates"
  if (me == 1) print '(a,f8.4,a,f8.4,a)', 'alone: atomic_add ', 1d6*median(s), ' us, lock_unlock ', 1d6*median(u), ' us'
end program
