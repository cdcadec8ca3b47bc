! FORM TEAM, CHANGE TEAM / END TEAM, TEAM_NUMBER, SYNC TEAM: odd and even images form two
! teams; inside, this_image/num_images are the team's, coindices address team images,
! collectives and SYNC ALL stay within the team; afterwards the initial team is back.
program teams
  use iso_fortran_env, only: team_type
  implicit none
  type(team_type) :: half
  integer :: x[*], me, n, tn, tme, tn_images, total, expect, i

  me = this_image()
  n = num_images()
  tn = 2 - mod(me, 2)                            ! 1 for odd images, 2 for even ones
  if (team_number() /= -1) error stop "team_number() of the initial team is not -1"
  form team (tn, half)
  x = 0
  sync all
  change team (half)
    tme = this_image()
    tn_images = num_images()
    if (team_number() /= tn) error stop "team_number() inside the team"
    if (tme /= (me + 1) / 2) error stop "this_image() inside the team"
    if (tn_images /= merge((n + 1) / 2, n / 2, tn == 1)) error stop "num_images() inside the team"
    ! coindices are team image indices: write to team image 1
    x[1] = 0
    sync all
    critical
      x[1] = x[1] + me
    end critical
    sync all
    total = me
    call co_sum(total)
    expect = 0
    do i = tn, n, 2
      expect = expect + i
    end do
    if (total /= expect) error stop "co_sum inside the team"
    if (x[1] /= expect) error stop "coindexed accumulation inside the team"
    sync team (half)
  end team
  if (this_image() /= me .or. num_images() /= n) error stop "the initial team is not back"
  sync all
  if (me == 1) print '(a,i0)', "teams ok on ", n
end program
