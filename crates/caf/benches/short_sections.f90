! Run: FC=gfortran-16 target/release/gaspar caf -O2 bench/caf/timing.f90
!      crates/caf/benches/short_sections.f90 -o ss && target/release/gaspar run -n 2 ./ss
!      (inside scripts/sid-chroot run -- ...); beside: gfortran-16 -O2 -fcoarray=shared
!      bench/caf/timing.f90 crates/caf/benches/short_sections.f90 -o ss-shmem -lcaf_shmem
!      && GFORTRAN_NUM_IMAGES=2 ./ss-shmem
! Cost of one coindexed put and get of a short contiguous section of real(8), image 1 to
! and from image 2, in ns per statement (median of 11 loops): 1, 8 and 64 elements, with
! the length known at run time only (`buf(1:n)[2] = src(1:n)`: gfortran 16 passes a
! destination it may reallocate, which the getter allocates and the caller copies) and
! as a constant (`src(1:8) = buf(1:8)[2]`: a destination that may not be reallocated,
! which the getter may fill in place).
program short_sections
  use iso_fortran_env, only: real64
  use bench_timing, only: start_round, per_iteration, median
  implicit none
  integer, parameter :: reps = 11, iters = 100000
  real(real64), allocatable :: buf(:)[:]
  real(real64) :: src(64), t, put(reps), get(reps)
  integer :: rep, it, me, n, k
  character(len=256) :: line
  me = this_image()
  allocate(buf(64)[*])
  buf = me
  src = me
  line = ''
  do k = 1, 3
    n = 8**(k - 1)
    do rep = 1, reps
      call start_round(t)
      if (me == 1) then
        do it = 1, iters
          buf(1:n)[2] = src(1:n)
        end do
        sync memory
      end if
      put(rep) = per_iteration(t, iters)
      call start_round(t)
      if (me == 1) then
        do it = 1, iters
          src(1:n) = buf(1:n)[2]
        end do
      end if
      get(rep) = per_iteration(t, iters)
    end do
    call add('n', n, put, get)
  end do
  do rep = 1, reps
    call start_round(t)
    if (me == 1) then
      do it = 1, iters
        buf(1:8)[2] = src(1:8)
      end do
      sync memory
    end if
    put(rep) = per_iteration(t, iters)
    call start_round(t)
    if (me == 1) then
      do it = 1, iters
        src(1:8) = buf(1:8)[2]
      end do
    end if
    get(rep) = per_iteration(t, iters)
  end do
  call add('const', 8, put, get)
  do rep = 1, reps
    call start_round(t)
    if (me == 1) then
      do it = 1, iters
        buf(1:64)[2] = src(1:64)
      end do
      sync memory
    end if
    put(rep) = per_iteration(t, iters)
    call start_round(t)
    if (me == 1) then
      do it = 1, iters
        src(1:64) = buf(1:64)[2]
      end do
    end if
    get(rep) = per_iteration(t, iters)
  end do
  call add('const', 64, put, get)
  sync all
  ! image 1 put its own values (1) and read them back; image 2 holds them
  if (me == 1 .and. any(src /= 1)) error stop "short_sections: a get read wrong values"
  if (me == 2 .and. any(buf /= 1)) error stop "short_sections: a put wrote wrong values"
  if (me == 1) print '(a)', trim(line)
contains
  !> Adds `<how> <n>: put # get #` (ns) to the line image 1 prints, after ` | `.
  subroutine add(how, n, put, get)
    character(len=*), intent(in) :: how
    integer, intent(in) :: n
    real(real64), intent(in) :: put(:), get(:)
    character(len=64) :: part
    write(part, '(a,1x,i0,a,f0.1,a,f0.1)') how, n, ': put ', 1d9 * median(put), &
      ' get ', 1d9 * median(get)
    if (len_trim(line) > 0) line = trim(line) // ' |'
    line = trim(line) // ' ' // trim(part)
  end subroutine
end program
