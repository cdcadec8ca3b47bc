! SYNC ALL, SYNC IMAGES with a list, with one image and with *, SYNC MEMORY, with STAT=
! and ERRMSG=; values written before a sync are seen after it.
program sync
  implicit none
  integer :: x[*], ring[*], me, n, right, left, i, st, round
  character(len=40) :: msg

  me = this_image()
  n = num_images()
  right = merge(1, me + 1, me == n)
  left = merge(n, me - 1, me == 1)
  x = 0
  sync all (stat=st)
  if (st /= 0) error stop "sync all stat"
  ! a token passed around the ring with sync images on the neighbours only
  ring = 0
  sync all
  do round = 1, 3
    if (me == 1) then
      ring[right] = ring + 1
      if (n > 1) then
        sync images (right)
        sync images (left)
      end if
    else
      sync images (left)
      ring[right] = ring + 1
      sync images (right)
    end if
  end do
  sync all
  if (me == 1 .and. ring /= 3 * n) error stop "token around the ring"
  ! image 1 with everyone (a list on the others, * on image 1)
  if (me == 1) then
    do i = 2, n
      x[i] = 42
    end do
    msg = 'untouched'
    sync images (*, stat=st, errmsg=msg)
    if (st /= 0 .or. msg /= 'untouched') error stop "sync images(*) stat or errmsg set"
  else
    sync images ([1])
    if (x /= 42) error stop "value before sync images not seen"
  end if
  ! sync images with an empty list and with this image: no-ops
  sync images ([integer ::])
  sync images (me)
  ! sync memory between a flag and a value (segment ordering on this image)
  x = me
  sync memory (stat=st)
  if (st /= 0) error stop "sync memory stat"
  sync all
  i = x[right]
  if (i /= right) then
    print '(a,i0,a,i0,a,i0)', "image ", me, " got ", i, " from image ", right
    error stop "value after sync memory"
  end if
  sync all                                      ! every image has read before x changes
  ! many barriers in a row
  do i = 1, 200
    x = i
    sync all
    if (x[right] /= i) error stop "sync all in a loop"
    sync all
  end do
  if (me == 1) print '(a,i0)', "sync ok on ", n
end program
