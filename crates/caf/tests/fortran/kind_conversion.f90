! Puts and gets whose two sides have different types or kinds: integer kinds, real kinds,
! integer <-> real, real -> complex, logical kinds, character kinds 1 <-> 4.
program kind_conversion
  implicit none
  integer(1) :: i1(3)[*]
  integer(2) :: i2[*]
  integer(4) :: i4(3)[*]
  integer(8) :: i8(3)[*]
  real(4) :: r4(3)[*]
  real(8) :: r8(3)[*]
  complex(4) :: c4(1)[*]   ! an array: gfortran 12 miscompiles scalar complex coarrays
  complex(8) :: c8(2)[*]
  logical(1) :: l1(2)[*]
  logical(8) :: l8(2)[*]
  character(len=3, kind=1) :: s1[*]
  character(len=3, kind=4) :: s4[*]
  integer(8) :: big(3)
  real(8) :: dloc(3)
  integer :: me, n, right

  me = this_image()
  n = num_images()
  right = merge(1, me + 1, me == n)
  sync all
  ! puts converting on the way
  i8(:)[right] = [1, -2, 3] * me                         ! integer(4) -> integer(8)
  i1(:)[right] = [-7_8, 8_8, 127_8]                      ! integer(8) -> integer(1)
  i2[right] = 30000_4                                    ! integer(4) -> integer(2)
  r8(:)[right] = [0.5, 1.5, -2.5] * me                   ! real(4) -> real(8)
  r4(:)[right] = [0.25d0, 1d10, -3d0]                    ! real(8) -> real(4)
  i4(:)[right] = [2.9d0, -2.9d0, 1d3]                    ! real(8) -> integer(4) (truncates)
  c8(:)[right] = [1.5, -0.5]                             ! real(4) -> complex(8)
  c4(1)[right] = (2d0, -3d0)                             ! complex(8) -> complex(4)
  l1(:)[right] = [.true._8, .false._8]                   ! logical(8) -> logical(1)
  l8(:)[right] = [.false._1, .true._1]                   ! logical(1) -> logical(8)
  s4[right] = 'abc'                                      ! kind 1 -> kind 4
  s1[right] = 4_'xyz'                                    ! kind 4 -> kind 1
  sync all
  if (any(i8 /= [1, -2, 3] * merge(n, me - 1, me == 1))) error stop "integer(4) -> integer(8) put"
  if (any(i1 /= [-7, 8, 127])) error stop "integer(8) -> integer(1) put"
  if (i2 /= 30000) error stop "integer(4) -> integer(2) put"
  if (any(r8 /= [0.5d0, 1.5d0, -2.5d0] * merge(n, me - 1, me == 1))) error stop "real(4) -> real(8) put"
  if (any(r4 /= [0.25, 1e10, -3.0])) error stop "real(8) -> real(4) put"
  if (any(i4 /= [2, -2, 1000])) error stop "real(8) -> integer put"
  if (any(c8 /= [(1.5d0, 0d0), (-0.5d0, 0d0)])) error stop "real -> complex put"
  if (c4(1) /= (2.0, -3.0)) error stop "complex(8) -> complex(4) put"
  if (.not. l1(1) .or. l1(2)) error stop "logical(8) -> logical(1) put"
  if (l8(1) .or. .not. l8(2)) error stop "logical(1) -> logical(8) put"
  if (s4 /= 4_'abc') error stop "character kind 1 -> 4 put"
  if (s1 /= 'xyz') error stop "character kind 4 -> 1 put"
  ! gets converting on the way
  big = i1(:)[right]                                     ! integer(1) -> integer(8)
  if (any(big /= [-7, 8, 127])) error stop "integer(1) -> integer(8) get"
  dloc = r4(:)[right]                                    ! real(4) -> real(8)
  if (any(dloc /= [0.25d0, 1d10, -3d0])) error stop "real(4) -> real(8) get"
  dloc = i4(:)[right]                                    ! integer -> real(8)
  if (any(dloc /= [2d0, -2d0, 1d3])) error stop "integer -> real(8) get"
  sync all
  if (me == 1) print '(a,i0)', "kind_conversion ok on ", n
end program
