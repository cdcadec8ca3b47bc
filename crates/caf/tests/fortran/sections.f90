! Array sections of coindexed objects: contiguous, strided, negative strides, 2-d and 3-d
! sections, vector subscripts, on both sides of the assignment (put and get), and a put to
! the own image whose source overlaps its destination.
program sections
  implicit none
  integer, parameter :: m = 8
  integer :: a(m, m)[*], v(20)[*], c(4, 5, 6)[*], loc(m, m), w(20), idx(4)
  integer :: me, n, right, left, i, j

  me = this_image()
  n = num_images()
  right = merge(1, me + 1, me == n)
  left = merge(n, me - 1, me == 1)
  a = 0
  v = 0
  c = 0
  sync all
  ! strided put: every other column, and every third row of the rest
  loc = reshape([(me * 1000 + i, i = 1, m * m)], [m, m])
  a(:, 1:m:2)[right] = loc(:, 1:m:2)
  a(2:m:3, 2)[right] = loc(2:m:3, 2)
  ! negative stride: reversed
  v(20:11:-1)[right] = [(me * 100 + i, i = 1, 10)]
  ! vector subscript on the target
  idx = [2, 7, 5, 3]
  v(idx)[right] = -[(me * 10 + i, i = 1, 4)]
  ! 3-d section with strides in two dimensions
  c(1:4:3, 2, 1:6:2)[right] = reshape([(me * 100 + i, i = 1, 6)], [2, 3])
  sync all
  loc = reshape([(left * 1000 + i, i = 1, m * m)], [m, m])
  do j = 1, m
    do i = 1, m
      if (mod(j, 2) == 1) then
        if (a(i, j) /= loc(i, j)) error stop "strided put (columns)"
      else if (j == 2 .and. mod(i - 2, 3) == 0) then
        if (a(i, j) /= loc(i, j)) error stop "strided put (rows)"
      else
        if (a(i, j) /= 0) error stop "strided put wrote between the strides"
      end if
    end do
  end do
  if (any(v(20:11:-1) /= [(left * 100 + i, i = 1, 10)])) error stop "negative-stride put"
  if (any(v(idx) /= -[(left * 10 + i, i = 1, 4)])) error stop "vector-subscript put"
  if (v(1) /= 0 .or. v(4) /= 0 .or. v(6) /= 0 .or. v(8) /= 0) error stop "vector put wrote elsewhere"
  if (any(c(1:4:3, 2, 1:6:2) /= reshape([(left * 100 + i, i = 1, 6)], [2, 3]))) error stop "3-d put"
  if (sum(c) /= sum([(left * 100 + i, i = 1, 6)])) error stop "3-d put wrote elsewhere"
  ! gets: strided, negative stride, vector subscript, 3-d
  loc = reshape([(me * 1000 + i, i = 1, m * m)], [m, m])
  if (any(a(:, m - 1:1:-2)[right] /= loc(:, m - 1:1:-2))) error stop "negative-stride 2-d get"
  if (any(a(1:m:4, 3)[right] /= loc(1:m:4, 3))) error stop "strided get"
  w(1:10) = v(11:20)[right]
  if (any(w(1:10) /= [(me * 100 + i, i = 10, 1, -1)])) error stop "contiguous get"
  w(1:4) = v([3, 2, 7, 5])[right]
  if (any(w(1:4) /= -[me * 10 + 4, me * 10 + 1, me * 10 + 2, me * 10 + 3])) error stop "vector-subscript get"
  if (any(c(4, 2, 5:1:-2)[right] /= [me * 100 + 6, me * 100 + 4, me * 100 + 2])) error stop "3-d get"
  ! a get into a strided local section
  w = 0
  w(1:20:2) = v(11:20)[right]
  if (any(w(1:20:2) /= [(me * 100 + i, i = 10, 1, -1)]) .or. any(w(2:20:2) /= 0)) error stop "get into strided"
  sync all
  ! a put to this image whose source overlaps its destination (the same coarray)
  v = [(i, i = 1, 20)]
  v(2:11)[me] = v(1:10)
  sync memory
  if (any(v(2:11) /= [(i, i = 1, 10)]) .or. v(1) /= 1 .or. v(12) /= 12) error stop "overlapping put"
  sync all
  if (me == 1) print '(a,i0)', "sections ok on ", n
end program
