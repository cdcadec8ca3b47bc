! 2-D heat diffusion (Jacobi iteration) with coarray halo exchange.
!
! The plate is nx x ny interior points; its top edge is held at 100 degrees, the other
! edges at 0. The columns are split between the images; after each sweep an image puts its
! first and last columns into its neighbours' halo columns and synchronizes with them
! only (SYNC IMAGES). At the end image 1 gathers the plate and checks it against a serial
! run of the same sweeps: the two must agree exactly.
!
!   gaspar caf -O2 heat.f90 -o heat && gaspar run -n 4 ./heat
program heat
  implicit none
  integer, parameter :: nx = 60, ny = 90, sweeps = 400
  real(8), allocatable :: u(:, :)[:], next(:, :), plate(:, :), serial(:, :)
  integer :: me, n, cols, first, left, right, i, it
  integer, allocatable :: neighbours(:)
  real(8) :: diff

  me = this_image()
  n = num_images()
  if (n > ny) error stop "heat: more images than columns"
  call columns_of(me, first, cols)
  ! every image allocates the same shape (the largest share); halo columns 0 and cols + 1
  allocate (u(0:nx + 1, 0:(ny + n - 1) / n + 1)[*], next(nx, cols))
  u = 0
  u(0, :) = 100                                        ! the hot top edge
  left = me - 1
  right = merge(0, me + 1, me == n)
  neighbours = pack([left, right], [left, right] > 0)
  sync all
  do it = 1, sweeps
    next = 0.25d0 * (u(0:nx - 1, 1:cols) + u(2:nx + 1, 1:cols) &
                   + u(1:nx, 0:cols - 1) + u(1:nx, 2:cols + 1))
    sync images (neighbours)                           ! they have read my halo columns
    u(1:nx, 1:cols) = next
    if (left > 0) u(1:nx, last_column(left) + 1)[left] = u(1:nx, 1)
    if (right > 0) u(1:nx, 0)[right] = u(1:nx, cols)
    sync images (neighbours)                           ! my halo columns are written
  end do

  sync all
  if (me == 1) then
    allocate (plate(nx, ny))
    do i = 1, n
      call columns_of(i, first, cols)
      plate(:, first:first + cols - 1) = u(1:nx, 1:cols)[i]
    end do
    serial = serial_run()
    diff = maxval(abs(plate - serial(1:nx, 1:ny)))
    print '(a,i0,a,i0,a,i0,a,i0,a)', "heat: ", nx, "x", ny, " plate, ", sweeps, " sweeps on ", n, " images"
    print '(a,f12.8)', "heat: temperature at the centre ", plate(nx / 2, ny / 2)
    print '(a,es10.3)', "heat: max |parallel - serial| ", diff
    if (diff /= 0) error stop "heat: the parallel result differs from the serial one"
    print '(a,i0)', "heat ok on ", n
  end if

contains

  !> The first global column and the number of columns of image img.
  subroutine columns_of(img, first_col, ncols)
    integer, intent(in) :: img
    integer, intent(out) :: first_col, ncols
    ncols = ny / n + merge(1, 0, img <= mod(ny, n))
    first_col = (img - 1) * (ny / n) + min(img - 1, mod(ny, n)) + 1
  end subroutine

  !> The number of columns image img owns (its last interior column).
  integer function last_column(img)
    integer, intent(in) :: img
    integer :: f
    call columns_of(img, f, last_column)
  end function

  !> The same sweeps over the whole plate on one image.
  function serial_run() result(t)
    real(8), allocatable :: t(:, :), tn(:, :)
    integer :: s
    allocate (t(0:nx + 1, 0:ny + 1), tn(nx, ny))
    t = 0
    t(0, :) = 100
    do s = 1, sweeps
      tn = 0.25d0 * (t(0:nx - 1, 1:ny) + t(2:nx + 1, 1:ny) + t(1:nx, 0:ny - 1) + t(1:nx, 2:ny + 1))
      t(1:nx, 1:ny) = tn
    end do
    t = t(1:nx, 1:ny)
  end function
end program
