! After the library's start-up and a few 4 KiB section puts (each with its temporary from
! malloc), image 1 prints the largest free chunk of its malloc heap other than the top
! chunk ("largest hole: N"): the library must leave no hole that gfortran's temporaries
! would be carved from (tests/gfortran_versions.rs).
program heap_shape
  use iso_c_binding, only: c_long
  implicit none
  interface
    function largest_hole() bind(c)
      import :: c_long
      integer(c_long) :: largest_hole
    end function
  end interface
  real(8), allocatable :: buf(:)[:]
  real(8) :: src(512)
  integer(c_long) :: hole
  integer :: it
  allocate (buf(512)[*])
  src = this_image()
  sync all
  if (this_image() == 1) then
    do it = 1, 10
      buf(1:512)[2] = src(1:512)
    end do
  end if
  hole = largest_hole()
  sync all
  if (this_image() == 1) print '(a, i0)', 'largest hole: ', hole
  if (this_image() == 2 .and. any(buf /= 1)) error stop 'the puts did not arrive'
end program
