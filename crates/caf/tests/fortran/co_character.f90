! Collectives on characters: CO_MAX and CO_MIN (lexical order), CO_REDUCE with a user
! function (the hidden length argument) and CO_BROADCAST of a character array.
program co_character
  implicit none
  character(len=4) :: s, arr(2)
  character(len=6) :: word
  integer :: me, n

  me = this_image()
  n = num_images()
  ! character min and max: 'img001' < 'img002' < ...
  write (word, '(a,i3.3)') 'img', me
  call co_max(word)
  if (word /= 'img' // achar(48 + n / 100) // achar(48 + mod(n / 10, 10)) // achar(48 + mod(n, 10))) &
    error stop "co_max character"
  write (word, '(a,i3.3)') 'img', me
  call co_min(word)
  if (word /= 'img001') error stop "co_min character"
  s = repeat(achar(96 + mod(me - 1, 26) + 1), 4)        ! 'aaaa', 'bbbb', ...
  call co_reduce(s, later)
  if (s /= repeat(achar(96 + mod(n - 1, 26) + 1), 4)) error stop "co_reduce character"
  arr = ['xxxx', 'yyyy']
  if (me == 1) arr = ['one ', 'two ']
  call co_broadcast(arr, 1)
  if (arr(1) /= 'one' .or. arr(2) /= 'two') error stop "co_broadcast character array"
  sync all
  if (me == 1) print '(a,i0)', "co_character ok on ", n
contains
  pure function later(a, b) result(c)
    character(len=4), intent(in) :: a, b
    character(len=4) :: c
    c = merge(a, b, llt(b, a))
  end function
end program
