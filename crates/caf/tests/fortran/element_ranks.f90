! One element at a time, from and to the next image (itself at one image): allocatable
! coarrays of rank 0 to 4 with lower bounds other than 1, whose descriptors the element
! statements' fast path copies (ranks 0-3) or leaves to the general path (rank 4); a
! fixed-size array coarray and a scalar one, which have no descriptor; a kind conversion
! on the way. Each element is written and read many times, so the first statement on a
! part (through the engine) and the later ones (on its route) are both checked. Then
! sections of the same coarrays: into dense arrays (filled in place, ranks 1-3), into a
! strided one and into an allocatable array that the statement reallocates (through a
! temporary), and section puts from arrays.
program element_ranks
  implicit none
  integer, allocatable :: s0[:]
  integer(8), allocatable :: a1(:)[:], a2(:, :)[:], a3(:, :, :)[:], a4(:, :, :, :)[:]
  integer :: f(5)[*], x[*]
  integer(8) :: v, got
  integer(8) :: d1(6), d2(3, 2), d3(2, 2, 3), d4(2, 2, 2, 2), strided(12)
  integer(8), allocatable :: grown(:), grown3(:, :, :)
  integer :: me, np, next, prev, i, j, k, l, rep, bad

  me = this_image()
  np = num_images()
  next = merge(1, me + 1, me == np)
  prev = merge(np, me - 1, me == 1)
  allocate (s0[*], a1(-2:3)[*], a2(0:2, 4:5)[*], a3(2, -1:0, 3)[*], a4(2, 2, 0:1, 2)[*])
  s0 = 0
  a1 = 0
  a2 = 0
  a3 = 0
  a4 = 0
  f = 0
  x = 0
  sync all

  ! Puts into the next image: its elements then hold a code of the writer and the place.
  do rep = 1, 3
    s0[next] = me
    x[next] = 7 * me
    do i = 1, 5
      f(i)[next] = 10 * me + i
    end do
    do i = -2, 3
      a1(i)[next] = code(me, i, 0, 0, 0)
    end do
    do j = 4, 5
      do i = 0, 2
        a2(i, j)[next] = code(me, i, j, 0, 0)
      end do
    end do
    do k = 1, 3
      do j = -1, 0
        do i = 1, 2
          a3(i, j, k)[next] = code(me, i, j, k, 0)
        end do
      end do
    end do
    do l = 1, 2
      do k = 0, 1
        do j = 1, 2
          do i = 1, 2
            a4(i, j, k, l)[next] = code(me, i, j, k, l)
          end do
        end do
      end do
    end do
  end do
  sync all

  ! Each image checks what the previous one wrote into it, locally.
  bad = 0
  if (s0 /= prev) bad = bad + 1
  if (x /= 7 * prev) bad = bad + 1
  do i = 1, 5
    if (f(i) /= 10 * prev + i) bad = bad + 1
  end do
  do i = -2, 3
    if (a1(i) /= code(prev, i, 0, 0, 0)) bad = bad + 1
  end do
  do j = 4, 5
    do i = 0, 2
      if (a2(i, j) /= code(prev, i, j, 0, 0)) bad = bad + 1
    end do
  end do
  do k = 1, 3
    do j = -1, 0
      do i = 1, 2
        if (a3(i, j, k) /= code(prev, i, j, k, 0)) bad = bad + 1
      end do
    end do
  end do
  do l = 1, 2
    do k = 0, 1
      do j = 1, 2
        do i = 1, 2
          if (a4(i, j, k, l) /= code(prev, i, j, k, l)) bad = bad + 1
        end do
      end do
    end do
  end do
  if (bad /= 0) then
    print '(a, i0, a, i0)', 'image ', me, ': wrong elements after puts: ', bad
    error stop 1
  end if

  ! Gets from the next image, which holds what this image wrote.
  do rep = 1, 3
    got = s0[next]
    if (got /= me) bad = bad + 1
    got = x[next]
    if (got /= 7 * me) bad = bad + 1
    do i = 1, 5
      got = f(i)[next]
      if (got /= 10 * me + i) bad = bad + 1
    end do
    do i = -2, 3
      if (a1(i)[next] /= code(me, i, 0, 0, 0)) bad = bad + 1
    end do
    do j = 4, 5
      do i = 0, 2
        v = a2(i, j)[next]
        if (v /= code(me, i, j, 0, 0)) bad = bad + 1
      end do
    end do
    do k = 1, 3
      do j = -1, 0
        do i = 1, 2
          v = a3(i, j, k)[next]
          if (v /= code(me, i, j, k, 0)) bad = bad + 1
        end do
      end do
    end do
    do l = 1, 2
      do k = 0, 1
        do j = 1, 2
          do i = 1, 2
            v = a4(i, j, k, l)[next]
            if (v /= code(me, i, j, k, l)) bad = bad + 1
          end do
        end do
      end do
    end do
  end do
  if (bad /= 0) then
    print '(a, i0, a, i0)', 'image ', me, ': wrong elements read: ', bad
    error stop 2
  end if

  ! Sections read from the next image.
  do rep = 1, 3
    d1 = a1(:)[next]
    d2 = a2(:, :)[next]
    d3 = a3(:, :, :)[next]
    d4 = a4(:, :, :, :)[next]
    strided(1:12:2) = a1(:)[next]
    allocate (grown(1))
    grown = a1(-1:3:2)[next]
    grown3 = a3(:, 0:0, 2:3)[next]
    do i = -2, 3
      if (d1(i + 3) /= code(me, i, 0, 0, 0)) bad = bad + 1
      if (strided(2 * (i + 3) - 1) /= code(me, i, 0, 0, 0)) bad = bad + 1
    end do
    if (size(grown) /= 3) bad = bad + 1
    do i = 1, size(grown)
      if (grown(i) /= code(me, 2 * i - 3, 0, 0, 0)) bad = bad + 1
    end do
    do j = 4, 5
      do i = 0, 2
        if (d2(i + 1, j - 3) /= code(me, i, j, 0, 0)) bad = bad + 1
      end do
    end do
    if (any(shape(grown3) /= [2, 1, 2])) bad = bad + 1
    do k = 1, 3
      do j = -1, 0
        do i = 1, 2
          if (d3(i, j + 2, k) /= code(me, i, j, k, 0)) bad = bad + 1
          if (j == 0 .and. k >= 2) then
            if (grown3(i, 1, k - 1) /= code(me, i, j, k, 0)) bad = bad + 1
          end if
        end do
      end do
    end do
    do l = 1, 2
      do k = 0, 1
        do j = 1, 2
          do i = 1, 2
            if (d4(i, j, k + 1, l) /= code(me, i, j, k, l)) bad = bad + 1
          end do
        end do
      end do
    end do
    deallocate (grown, grown3)
  end do
  if (bad /= 0) then
    print '(a, i0, a, i0)', 'image ', me, ': wrong sections read: ', bad
    error stop 3
  end if

  ! Section puts from arrays into the next image: each element its negated code.
  sync all
  a1(:)[next] = -d1
  a2(:, :)[next] = -d2
  a3(:, :, :)[next] = -d3
  a4(:, :, :, :)[next] = -d4
  sync all
  if (any(a1 /= -[(code(prev, i, 0, 0, 0), i = -2, 3)])) bad = bad + 1
  do j = 4, 5
    do i = 0, 2
      if (a2(i, j) /= -code(prev, i, j, 0, 0)) bad = bad + 1
    end do
  end do
  do k = 1, 3
    do j = -1, 0
      do i = 1, 2
        if (a3(i, j, k) /= -code(prev, i, j, k, 0)) bad = bad + 1
      end do
    end do
  end do
  do l = 1, 2
    do k = 0, 1
      do j = 1, 2
        do i = 1, 2
          if (a4(i, j, k, l) /= -code(prev, i, j, k, l)) bad = bad + 1
        end do
      end do
    end do
  end do
  if (bad /= 0) then
    print '(a, i0, a, i0)', 'image ', me, ': wrong elements after section puts: ', bad
    error stop 4
  end if
  sync all
  if (me == 1) print '(a, i0)', 'element_ranks ok on ', np

contains

  pure integer(8) function code(image, i, j, k, l)
    integer, intent(in) :: image, i, j, k, l
    code = 100000_8 * image + 10000 * (l + 5) + 1000 * (k + 5) + 100 * (j + 5) + 10 * (i + 5)
  end function code

end program element_ranks
