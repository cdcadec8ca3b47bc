! Coarrays of derived type: plain components (put/get of a whole element and of one
! component), and allocatable components of a derived-type coarray (allocated on each
! image with its own size; put and get through the component, allocated() of a remote
! component, a copy between two other images' components).
program derived_types
  implicit none
  type :: point
    integer :: id
    real(8) :: xy(2)
    character(len=4) :: tag
  end type
  type :: bag
    integer, allocatable :: vals(:)
    real, allocatable :: scalar
    integer :: count
  end type
  type(point) :: p(3)[*]
  type(bag) :: b[*]
  type(point) :: q
  integer :: me, n, right, left, i
  integer, allocatable :: got(:)

  me = this_image()
  n = num_images()
  right = merge(1, me + 1, me == n)
  left = merge(n, me - 1, me == 1)
  sync all
  p(2)[right] = point(me, [1d0 * me, -1d0 * me], 'im' // achar(48 + mod(me, 10)) // '!')
  p(3)[right]%id = 10 * me
  p(3)[right]%xy(2) = 0.5d0 * me
  sync all
  if (p(2)%id /= left .or. any(p(2)%xy /= [1d0 * left, -1d0 * left])) error stop "derived put"
  if (p(2)%tag /= 'im' // achar(48 + mod(left, 10)) // '!') error stop "derived put (character)"
  if (p(3)%id /= 10 * left .or. p(3)%xy(2) /= 0.5d0 * left) error stop "component put"
  q = p(2)[right]
  if (q%id /= me) error stop "derived get"
  if (p(3)[right]%xy(2) /= 0.5d0 * me) error stop "component get"

  ! allocatable components: each image allocates its own, of length me + 2
  allocate (b%vals(me + 2))
  b%vals = [(me * 10 + i, i = 1, me + 2)]
  b%count = me + 2
  sync all
  if (.not. allocated(b[right]%vals)) error stop "remote allocated component not allocated"
  if (allocated(b[right]%scalar)) error stop "remote unallocated component allocated"
  got = b[right]%vals                                     ! a get through the component
  if (size(got) /= right + 2) error stop "size of a remote allocatable component"
  if (any(got /= [(right * 10 + i, i = 1, right + 2)])) error stop "allocatable component get"
  if (b[right]%vals(2) /= right * 10 + 2) error stop "allocatable component element get"
  if (b[right]%count /= right + 2) error stop "plain component beside an allocatable one"
  sync all
  b[right]%vals(1) = -me                                  ! a put through the component
  b[right]%vals(2:3) = [7, 8] * me
  sync all
  if (b%vals(1) /= -left .or. any(b%vals(2:3) /= [7, 8] * left)) error stop "allocatable component put"
  sync all
  ! a third-party copy from one image's allocatable component to another's
  if (me == 1) b[right]%vals(1) = b[left]%vals(2)
  sync all
  if (me == right) then
    if (b%vals(1) /= 7 * merge(n, n - 1, n == 1)) error stop "component to component copy"
  end if
  sync all
  if (me == 1) print '(a,i0)', "derived_types ok on ", n
end program
