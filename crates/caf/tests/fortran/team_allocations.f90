! Coarrays allocated inside CHANGE TEAM and left allocated are deallocated by END TEAM
! (Fortran 2018, 11.1.5.2): afterwards ALLOCATED is false and they can be allocated
! again, with other bounds; one deallocated inside the team is not touched again.
program team_allocations
  use iso_fortran_env, only: team_type
  implicit none
  type(team_type) :: t
  integer, allocatable :: a(:)[:], b(:)[:]
  real, allocatable :: s[:]
  integer :: me
  me = this_image()
  form team(1 + mod(me - 1, 2), t)
  change team(t)
    allocate(a(4)[*], b(3)[*], s[*])
    a = me
    b = me
    s = 1.5
    deallocate(b)
  end team
  if (allocated(a)) error stop "a still allocated after END TEAM"
  if (allocated(s)) error stop "s still allocated after END TEAM"
  if (allocated(b)) error stop "b allocated again"
  allocate(a(2)[*], s[*])
  a = me
  s = 2.5
  sync all
  if (a(2)[1] /= 1) error stop "a reallocated: wrong value from image 1"
  if (s[num_images()] /= 2.5) error stop "s reallocated: wrong value"
  deallocate(a, s)
  sync all
  if (me == 1) print '(a,i0)', 'team_allocations ok on ', num_images()
end program
