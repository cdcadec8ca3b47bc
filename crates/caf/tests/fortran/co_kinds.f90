! co_sum, co_min and co_max of every integer, real and complex kind.
program co_kinds
  use iso_fortran_env, only: int8, int16, int32, int64, real32, real64
  implicit none
  integer :: me, n
  integer(int8) :: i1
  integer(int16) :: i2
  integer(int32) :: i4
  integer(int64) :: i8
  real(real32) :: r4
  real(real64) :: r8
  complex(real32) :: c4
  complex(real64) :: c8
  me = this_image(); n = num_images()
  i1 = int(me, int8); call co_sum(i1); if (i1 /= n * (n + 1) / 2) error stop 1
  i2 = int(me, int16); call co_sum(i2); if (i2 /= n * (n + 1) / 2) error stop 2
  i4 = me; call co_sum(i4); if (i4 /= n * (n + 1) / 2) error stop 3
  i8 = me; call co_sum(i8); if (i8 /= n * (n + 1) / 2) error stop 4
  r4 = me; call co_sum(r4); if (r4 /= n * (n + 1) / 2) error stop 5
  r8 = me; call co_sum(r8); if (r8 /= n * (n + 1) / 2) error stop 6
  c4 = cmplx(me, -me, real32); call co_sum(c4)
  if (c4 /= cmplx(n * (n + 1) / 2, -n * (n + 1) / 2, real32)) error stop 7
  c8 = cmplx(me, -me, real64); call co_sum(c8)
  if (c8 /= cmplx(n * (n + 1) / 2, -n * (n + 1) / 2, real64)) error stop 8
  i1 = int(me, int8); call co_min(i1); if (i1 /= 1) error stop 11
  i2 = int(me, int16); call co_max(i2); if (i2 /= n) error stop 12
  i4 = me; call co_min(i4); if (i4 /= 1) error stop 13
  i8 = me; call co_max(i8); if (i8 /= n) error stop 14
  r4 = me; call co_min(r4); if (r4 /= 1) error stop 15
  r8 = me; call co_max(r8); if (r8 /= n) error stop 16
  i4 = me; call co_sum(i4, result_image=1)
  if (me == 1 .and. i4 /= n * (n + 1) / 2) error stop 17
  if (me == 1) print '(a,i0)', "co_kinds ok on ", num_images()
end program
