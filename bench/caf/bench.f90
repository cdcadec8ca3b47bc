! The coarray benchmark: the same program built with OpenCoarrays (caf, cafrun) and with
! gaspar (gaspar caf, gaspar run); scripts/bench-caf runs both and prints the ratios.
!
! Image 1 prints one line per figure, "NAME VALUE UNIT", each the median of REPS timed
! loops. Point-to-point figures are between images 1 and 2 (the others wait); collective
! ones involve every image. Every put is complete at its target before the loop's time is
! taken (SYNC MEMORY after the loop, as Fortran's segment ordering asks). The timing is
! bench/caf/timing.f90's, compiled first:
!
!   gaspar caf -O2 bench/caf/timing.f90 bench/caf/bench.f90 -o bench
!   bench [REPS]        (default 11)
program bench
  use iso_fortran_env, only: real64, atomic_int_kind, lock_type, event_type
  use bench_timing, only: start_round, per_iteration, median
  implicit none
  integer, parameter :: max_bytes = 4 * 1024 * 1024, max_words = max_bytes / 8
  integer, parameter :: big = 1024 * 1024, cols = 256, rows = 256
  real(real64), allocatable :: buf(:)[:], src(:), grid(:, :)[:], local_grid(:, :), vec(:)
  real(real64) :: x[*], y, t
  integer(atomic_int_kind) :: counter[*]
  type(lock_type) :: lk[*]
  type(event_type) :: ping[*]
  real(real64), allocatable :: samples(:)
  integer :: me, n, reps, rep, it, iters, bytes, words, left, right
  character(len=32) :: arg

  me = this_image()
  n = num_images()
  reps = 11
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) reps
  end if
  allocate (samples(reps), buf(max_words)[*], src(max_words), grid(rows, cols)[*])
  allocate (local_grid(rows, cols), vec(big))
  src = 1
  local_grid = 2
  left = merge(n, me - 1, me == 1)
  right = merge(1, me + 1, me == n)
  if (n < 2) error stop "bench: run it on 2 or more images"

  ! scalar put and get latency (image 1 -> image 2)
  iters = 20000
  do rep = 1, reps
    call start_round(t)
    if (me == 1) then
      do it = 1, iters
        x[2] = it
      end do
      sync memory
    end if
    samples(rep) = per_iteration(t, iters)
  end do
  call report("put_latency_8B", 1d6 * median(samples), "us")
  do rep = 1, reps
    call start_round(t)
    if (me == 1) then
      do it = 1, iters
        y = x[2]
      end do
    end if
    samples(rep) = per_iteration(t, iters)
  end do
  call report("get_latency_8B", 1d6 * median(samples), "us")

  ! contiguous put and get bandwidth, 8 B to 4 MiB
  bytes = 8
  do while (bytes <= max_bytes)
    words = bytes / 8
    iters = max(10, min(5000, 256 * 1024 * 1024 / 16 / bytes))
    do rep = 1, reps
      call start_round(t)
      if (me == 1) then
        do it = 1, iters
          buf(1:words)[2] = src(1:words)
        end do
        sync memory
      end if
      samples(rep) = per_iteration(t, iters)
    end do
    call report("put_bw_" // size_name(bytes), bytes / median(samples) / 1d6, "MB/s")
    do rep = 1, reps
      call start_round(t)
      if (me == 1) then
        do it = 1, iters
          src(1:words) = buf(1:words)[2]
        end do
      end if
      samples(rep) = per_iteration(t, iters)
    end do
    call report("get_bw_" // size_name(bytes), bytes / median(samples) / 1d6, "MB/s")
    bytes = bytes * 8
    if (bytes > max_bytes .and. bytes / 8 < max_bytes) bytes = max_bytes
  end do

  ! memcpy: a local copy of the same 4 MiB into the coarray's own part, timed the same way
  ! (the figure the 4 MiB put and get are measured against; the first word changes every
  ! iteration, so no copy is the same as the last)
  iters = max(10, 256 * 1024 * 1024 / 16 / max_bytes)
  do rep = 1, reps
    call start_round(t)
    if (me == 1) then
      do it = 1, iters
        src(1) = it
        buf(1:max_words) = src(1:max_words)
      end do
    end if
    samples(rep) = per_iteration(t, iters)
  end do
  if (me == 1 .and. buf(1) /= iters) error stop "bench: memcpy result"
  src(1) = 1
  call report("memcpy_" // size_name(max_bytes), max_bytes / median(samples) / 1d6, "MB/s")

  ! strided put: every other column of a 256 x 256 real(8) array (256 KiB moved)
  iters = 50
  do rep = 1, reps
    call start_round(t)
    if (me == 1) then
      do it = 1, iters
        grid(:, 1:cols:2)[2] = local_grid(:, 1:cols:2)
      end do
      sync memory
    end if
    samples(rep) = per_iteration(t, iters)
  end do
  call report("strided_put_256x128", 1d6 * median(samples), "us")

  ! sync all, and sync images with the two neighbours of a ring
  iters = 2000
  do rep = 1, reps
    call start_round(t)
    do it = 1, iters
      sync all
    end do
    samples(rep) = per_iteration(t, iters)
  end do
  call report("sync_all", 1d6 * median(samples), "us")
  do rep = 1, reps
    call start_round(t)
    do it = 1, iters
      if (left == right) then
        sync images (left)
      else
        sync images ([left, right])
      end if
    end do
    samples(rep) = per_iteration(t, iters)
  end do
  call report("sync_images_ring", 1d6 * median(samples), "us")

  ! co_sum of 1 and of 1 Mi doubles; co_broadcast of 1 and of 1 Mi doubles
  iters = 1000
  do rep = 1, reps
    call start_round(t)
    do it = 1, iters
      y = me
      call co_sum(y)
    end do
    samples(rep) = per_iteration(t, iters)
  end do
  if (y /= n * (n + 1) / 2) error stop "bench: co_sum result"
  call report("co_sum_1", 1d6 * median(samples), "us")
  iters = 5
  do rep = 1, reps
    vec = me
    call start_round(t)
    do it = 1, iters
      call co_sum(vec)
    end do
    samples(rep) = per_iteration(t, iters)
  end do
  call report("co_sum_1Mi", 1d3 * median(samples), "ms")
  iters = 1000
  do rep = 1, reps
    call start_round(t)
    do it = 1, iters
      y = me
      call co_broadcast(y, 1)
    end do
    samples(rep) = per_iteration(t, iters)
  end do
  if (y /= 1) error stop "bench: co_broadcast result"
  call report("co_broadcast_1", 1d6 * median(samples), "us")
  iters = 2
  do rep = 1, reps
    call start_round(t)
    do it = 1, iters
      call co_broadcast(vec, 1)
    end do
    samples(rep) = per_iteration(t, iters)
  end do
  call report("co_broadcast_1Mi", 1d3 * median(samples), "ms")

  ! atomic_add on image 1's counter, and lock/unlock of image 1's lock, by every image
  iters = 5000
  do rep = 1, reps
    call start_round(t)
    do it = 1, iters
      call atomic_add(counter[1], 1)
    end do
    samples(rep) = per_iteration(t, iters)
  end do
  call report("atomic_add", 1d6 * median(samples), "us")
  iters = 2000
  do rep = 1, reps
    call start_round(t)
    do it = 1, iters
      lock (lk[1])
      unlock (lk[1])
    end do
    samples(rep) = per_iteration(t, iters)
  end do
  call report("lock_unlock", 1d6 * median(samples), "us")

  ! event ping-pong between images 1 and 2 (a round trip per iteration)
  iters = 2000
  do rep = 1, reps
    call start_round(t)
    do it = 1, iters
      if (me == 1) then
        event post (ping[2])
        event wait (ping)
      else if (me == 2) then
        event wait (ping)
        event post (ping[1])
      end if
    end do
    samples(rep) = per_iteration(t, iters)
  end do
  call report("event_pingpong", 1d6 * median(samples), "us")
  sync all

contains

  !> "8B", "4KiB", "4MiB".
  function size_name(b) result(s)
    integer, intent(in) :: b
    character(len=:), allocatable :: s
    character(len=16) :: t
    if (b >= 1024 * 1024) then
      write (t, '(i0,a)') b / (1024 * 1024), 'MiB'
    else if (b >= 1024) then
      write (t, '(i0,a)') b / 1024, 'KiB'
    else
      write (t, '(i0,a)') b, 'B'
    end if
    s = trim(t)
  end function

  !> Image 1 prints one figure.
  subroutine report(name, value, unit)
    character(len=*), intent(in) :: name, unit
    real(real64), intent(in) :: value
    if (me == 1) print '(a,1x,es12.5,1x,a)', name, value, unit
  end subroutine
end program
