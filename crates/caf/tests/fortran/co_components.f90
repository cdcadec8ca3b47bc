! CO_BROADCAST of a derived-type scalar with allocatable components: gfortran broadcasts
! each component through a temporary descriptor of its own, whose span gfortran 12 leaves
! unset (a stack address: the library must count strides in elements there).
program co_components
  implicit none
  type holder
    integer, allocatable :: c(:)
    real(8), allocatable :: r(:, :)
  end type
  type(holder) :: h
  integer :: me, n, i, src
  me = this_image()
  n = num_images()
  src = n
  allocate(h%c(3), h%r(2, 3))
  h%c = [(me * 10 + i, i = 1, 3)]
  h%r = me + 0.5d0
  call co_broadcast(h, src)
  if (any(h%c /= [(src * 10 + i, i = 1, 3)])) error stop "co_broadcast of an integer component"
  if (any(h%r /= src + 0.5d0)) error stop "co_broadcast of a rank-2 real component"
  sync all
  if (this_image() == 1) print '(a,i0)', 'co_components ok on ', num_images()
end program
