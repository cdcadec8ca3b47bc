! CO_SUM, CO_MIN, CO_MAX, CO_BROADCAST and CO_REDUCE: scalars and arrays of integer, real
! and complex kinds, RESULT_IMAGE=, STAT= and ERRMSG=, CO_BROADCAST of characters and of a derived type, CO_REDUCE with a user function.
program collectives
  implicit none
  type :: pair
    integer :: a
    real(8) :: b(2)
  end type
  integer :: me, n, i, st, isum(3), imin, k
  integer(8) :: i8
  integer(1) :: i1(2)
  real(4) :: r4(2)
  real(8) :: d, big(100000)
  complex(8) :: z(2)
  character(len=6) :: word
  character(len=40) :: msg
  type(pair) :: pr

  me = this_image()
  n = num_images()
  isum = [me, 2 * me, -me]
  call co_sum(isum, stat=st, errmsg=msg)
  if (st /= 0) error stop "co_sum stat"
  if (any(isum /= [1, 2, -1] * (n * (n + 1) / 2))) error stop "co_sum integer array"
  i8 = 2_8**40 * me
  call co_sum(i8)
  if (i8 /= 2_8**40 * (n * (n + 1) / 2)) error stop "co_sum integer(8)"
  i1 = int([me, -me], 1)
  call co_sum(i1)
  if (any(i1 /= int([1, -1] * (n * (n + 1) / 2), 1))) error stop "co_sum integer(1)"
  z = [cmplx(me, 1, 8), cmplx(0, -me, 8)]
  call co_sum(z)
  if (any(z /= [cmplx(n * (n + 1) / 2, n, 8), cmplx(0, -n * (n + 1) / 2, 8)])) error stop "co_sum complex"
  ! result_image: only that image's value is defined afterwards
  d = 0.5d0 * me
  call co_sum(d, result_image=n)
  if (me == n .and. d /= 0.25d0 * n * (n + 1)) error stop "co_sum result_image"
  big = me
  call co_sum(big)
  if (any(big /= n * (n + 1) / 2)) error stop "co_sum of 100000 reals"
  imin = 10 - me
  call co_min(imin)
  if (imin /= 10 - n) error stop "co_min integer"
  r4 = [real(me), -real(me)]
  call co_max(r4)
  if (any(r4 /= [real(n), -1.0])) error stop "co_max real array"
  r4 = [real(me), -real(me)]
  call co_min(r4, result_image=1)
  if (me == 1 .and. any(r4 /= [1.0, -real(n)])) error stop "co_min result_image"
  ! broadcast of a character and a derived type
  word = 'none'
  if (me == n) word = 'hello!'
  call co_broadcast(word, source_image=n)
  if (word /= 'hello!') error stop "co_broadcast character"
  pr = pair(0, [0d0, 0d0])
  if (me == 1) pr = pair(42, [1.5d0, -2.5d0])
  call co_broadcast(pr, source_image=1, stat=st)
  if (st /= 0 .or. pr%a /= 42 .or. any(pr%b /= [1.5d0, -2.5d0])) error stop "co_broadcast derived type"
  big = 0
  if (me == 1) big = [(dble(k), k = 1, size(big))]
  call co_broadcast(big, 1)
  if (big(size(big)) /= size(big) .or. big(7) /= 7) error stop "co_broadcast of 100000 reals"
  ! co_reduce with a user function: product, and max of absolute values
  k = me
  call co_reduce(k, multiply)
  if (k /= product([(i, i = 1, n)])) error stop "co_reduce product"
  d = dble(me) * merge(-1, 1, mod(me, 2) == 0)
  call co_reduce(d, absmax, result_image=1)
  if (me == 1 .and. d /= dble(n)) error stop "co_reduce result_image"
  isum = [me, 1, 2]
  call co_reduce(isum, multiply)
  if (any(isum /= [product([(i, i = 1, n)]), 1, 2**n])) error stop "co_reduce array"
  sync all
  if (me == 1) print '(a,i0)', "collectives ok on ", n
contains
  pure function multiply(a, b) result(c)
    integer, intent(in) :: a, b
    integer :: c
    c = a * b
  end function
  pure function absmax(a, b) result(c)
    real(8), intent(in) :: a, b
    real(8) :: c
    c = max(abs(a), abs(b))
  end function
end program
