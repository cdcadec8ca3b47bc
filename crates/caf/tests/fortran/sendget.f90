! Third-party copies between two other images' coarrays (a(:)[j] = b(:)[k]): scalar,
! contiguous, strided and reversed, with a kind conversion; image 1 drives them all.
program sendget
  implicit none
  integer :: a(10)[*], b(10)[*], s[*], t[*], me, n, i, j, k, pass
  real(8) :: d(4)[*]

  me = this_image()
  n = num_images()
  b = [(me * 100 + i, i = 1, 10)]
  t = -me
  ! Twice: the first copies find each part's address, the second pass's run on the
  ! addresses found (libcaf_gaspar's fast path for gfortran 15/16).
  do pass = 1, 2
    a = 0
    s = 0
    d = 0
    sync all
    if (me == 1) then
      do j = 1, n
        k = merge(1, j + 1, j == n)                    ! image j receives image k's values
        a(1:5)[j] = b(6:10)[k]                         ! contiguous
        a(6:10:2)[j] = b(1:5:2)[k]                     ! strided
        a(10:7:-3)[j] = b(1:2)[k]                      ! reversed into a strided target
        s[j] = t[k]                                    ! scalar
        d(:)[j] = b(1:4)[k]                            ! integer(4) to real(8)
      end do
    end if
    sync all
    k = merge(1, me + 1, me == n)
    if (any(a(1:5) /= [(k * 100 + i, i = 6, 10)])) error stop "contiguous sendget"
    if (a(6) /= k * 100 + 1 .or. a(8) /= k * 100 + 3) error stop "strided sendget"
    if (a(10) /= k * 100 + 1 .or. a(7) /= k * 100 + 2) error stop "reversed sendget"
    if (a(9) /= 0) error stop "sendget wrote between the strides"
    if (s /= -k) error stop "scalar sendget"
    if (any(d /= [(dble(k * 100 + i), i = 1, 4)])) error stop "converting sendget"
    sync all
  end do
  if (me == 1) print '(a,i0)', "sendget ok on ", n
end program
