! sync_co_sum.f90 -- time per `co_sum` of one real(8) and per `sync all`, loops of N
! statements, three rounds, printed by image 1: the figures to set beside pair_barrier.c's
! floor (the same two statements are rows of bench/caf/bench.f90, with more around them).
!
!   target/release/gaspar caf -O2 bench/probes/sync_co_sum.f90 -o /tmp/sync_co_sum
!   target/release/gaspar run -n 2 /tmp/sync_co_sum
program sync_co_sum
  implicit none
  integer, parameter :: n = 2000000
  integer :: i, round
  real(8) :: x
  integer(8) :: t0, t1, rate
  do round = 1, 3
    sync all
    call system_clock(t0, rate)
    do i = 1, n
      x = 1.0d0
      call co_sum(x)
    end do
    call system_clock(t1)
    if (x /= num_images()) error stop "co_sum gave a wrong sum"
    if (this_image() == 1) print '(a,f8.1)', 'co_sum of one real(8), ns:', dble(t1 - t0) / rate / n * 1d9
    sync all
    call system_clock(t0, rate)
    do i = 1, n
      sync all
    end do
    call system_clock(t1)
    if (this_image() == 1) print '(a,f8.1)', 'sync all, ns:            ', dble(t1 - t0) / rate / n * 1d9
  end do
end program
