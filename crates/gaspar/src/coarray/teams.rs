//! Teams (Fortran 2018): `form team`, `change team`, `end team`, `sync team`,
//! `team_number`, `get_team`. A formed team is a split of the current team by the
//! world layer (its collectives then run on it); inside `change team` image numbers,
//! `sync all`, `sync images` and the collectives are the team's.
//!
//! Coarrays allocated inside `change team` are blocks of each member's own heap (the
//! symmetric heap's allocations are collectives of the whole job), with the offsets
//! exchanged among the members; they are freed at `end team`.

use crate::world;

use super::error::{CoError, CoResult};
use super::team::Team;
use super::{Coarrays, Image, Placement, Purpose, Token, NOT_MEMBER};

/// A team variable (Fortran's `type(team_type)`): the initial team, or a team made by
/// [`Coarrays::form_team`]. Only meaningful with the engine that made it.
///
/// ```
/// use gaspar::coarray::{Coarrays, TeamId, TeamLevel};
/// let mut co = Coarrays::init()?;
/// assert_eq!(co.get_team(TeamLevel::Current), TeamId::INITIAL);
/// let odd: TeamId = co.form_team(1 + i64::from(co.this_image() % 2), None)?;
/// co.change_team(odd)?;
/// assert_eq!(co.get_team(TeamLevel::Current), odd);
/// co.end_team()?;
/// co.finalize()?;
/// # Ok::<(), gaspar::coarray::CoError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TeamId(usize);

impl TeamId {
    /// The initial team (every image of the job).
    ///
    /// ```
    /// use gaspar::coarray::{Coarrays, TeamId};
    /// let co = Coarrays::init()?;
    /// assert_eq!(co.team_number(Some(TeamId::INITIAL))?, -1);
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub const INITIAL: TeamId = TeamId(0);
}

/// Which team `get_team` names.
///
/// ```
/// use gaspar::coarray::{Coarrays, TeamId, TeamLevel};
/// let mut co = Coarrays::init()?;
/// let t = co.form_team(5, None)?;
/// co.change_team(t)?;
/// assert_eq!(co.get_team(TeamLevel::Parent), TeamId::INITIAL);
/// assert_eq!(co.get_team(TeamLevel::Initial), TeamId::INITIAL);
/// co.end_team()?;
/// co.finalize()?;
/// # Ok::<(), gaspar::coarray::CoError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TeamLevel {
    /// `INITIAL_TEAM`.
    Initial,
    /// `PARENT_TEAM`: the team the current one was formed from.
    Parent,
    /// `CURRENT_TEAM`.
    Current,
}

/// A team this image belongs to.
pub(crate) struct Formed {
    /// `team_number` (-1 for the initial team).
    number: i64,
    /// The world layer's team (`None`: the initial team, the world's own).
    world: Option<world::Team>,
    /// Its images, as job ranks.
    images: Team,
    /// The team it was formed from.
    parent: usize,
}

impl Formed {
    /// The initial team of a job of `procs` ranks, seen from `rank`.
    pub(crate) fn initial(rank: u32, procs: u32) -> Formed {
        Formed {
            number: -1,
            world: None,
            images: Team::initial(rank, procs),
            parent: 0,
        }
    }
}

impl Coarrays {
    /// The index of the current team in `formed`.
    fn current_team(&self) -> usize {
        self.stack.last().copied().unwrap_or(0)
    }

    /// The world layer's team the collectives of the current team run on.
    pub(crate) fn collective_team(&self) -> &world::Team {
        match &self.formed[self.current_team()].world {
            Some(team) => team,
            None => self.rt.team(),
        }
    }

    /// Whether a `change team` is active.
    pub(crate) fn in_team(&self) -> bool {
        self.stack.len() > 1
    }

    /// The job ranks of the current team's images other than this one.
    fn team_partners(&self) -> Vec<u32> {
        let me = self.rt.rank();
        self.team
            .ranks()
            .iter()
            .copied()
            .filter(|&r| r != me)
            .collect()
    }

    /// `allocate` inside `change team`: a block of each member's own heap, whose offsets
    /// the members exchange (the symmetric heap's allocations are collectives of the
    /// whole job). Same size on every member, zeroed, synchronized.
    pub(super) fn allocate_in_team(&mut self, bytes: usize, purpose: Purpose) -> CoResult<Token> {
        let size = self.team.num_images() as usize;
        let mut sizes = vec![0u64; size];
        self.collective_team()
            .allgather(&self.rt, &[bytes as u64], &mut sizes)?;
        if let Some(image) = sizes.iter().position(|&s| s != bytes as u64) {
            return Err(CoError::invalid(
                "allocate",
                format!(
                    "image {} of the team asked for {} bytes, this image for {bytes}",
                    image + 1,
                    sizes[image]
                ),
            ));
        }
        let block = self.rt.alloc_local(bytes.max(1) as u64);
        let mine = block.as_ref().map_or(NOT_MEMBER, |b| b.heap_offset());
        let mut offsets = vec![0u64; size];
        let exchanged = self
            .collective_team()
            .allgather(&self.rt, &[mine], &mut offsets);
        let block = match (block, exchanged) {
            (Ok(block), Ok(())) if !offsets.contains(&NOT_MEMBER) => block,
            (block, exchanged) => {
                if let Ok(block) = block {
                    self.rt.free_local(block)?;
                }
                exchanged?;
                return Err(CoError::invalid(
                    "allocate",
                    "an image of the team has no room for the coarray",
                ));
            }
        };
        self.zero_own_part(block.ga(), bytes)?;
        let mut by_rank = vec![NOT_MEMBER; self.rt.procs() as usize].into_boxed_slice();
        for (&rank, &offset) in self.team.ranks().iter().zip(&offsets) {
            by_rank[rank as usize] = offset;
        }
        let id = self.next_team_block;
        self.next_team_block += 1;
        self.team_blocks.push((id, self.current_team(), block));
        self.signal_and_wait(&self.team_partners())?;
        Ok(Token {
            placement: Placement::Team {
                id,
                offsets: by_rank,
            },
            bytes,
            purpose,
        })
    }

    /// `deallocate` of a coarray allocated inside the current team: once every member is
    /// done with it.
    pub(super) fn deallocate_in_team(&mut self, id: u64) -> CoResult<()> {
        let index = self
            .team_blocks
            .iter()
            .position(|&(i, team, _)| i == id && team == self.current_team())
            .ok_or_else(|| {
                CoError::invalid(
                    "deallocate",
                    "the coarray was allocated in another team, or freed at its END TEAM",
                )
            })?;
        self.signal_and_wait(&self.team_partners())?;
        let (_, _, block) = self.team_blocks.swap_remove(index);
        Ok(self.rt.free_local(block)?)
    }

    /// Checks that `token` may still be used: a coarray allocated inside a team is gone
    /// after its `end team`.
    #[inline]
    pub(crate) fn usable(&self, token: &Token) -> CoResult<()> {
        match token.placement {
            Placement::Symmetric(_) => Ok(()),
            _ => self.usable_otherwise(token),
        }
    }

    /// [`usable`](Self::usable) for a team's or registered coarray.
    #[inline(never)]
    fn usable_otherwise(&self, token: &Token) -> CoResult<()> {
        match token.placement {
            Placement::Symmetric(_) => Ok(()),
            Placement::Registered { id, .. } if self.registered_live(id) => Ok(()),
            Placement::Registered { .. } => Err(CoError::invalid(
                "coarray access",
                "the coarray was freed (deallocated)",
            )),
            Placement::Team { id, .. } => {
                if self.team_blocks.iter().any(|&(i, _, _)| i == id) {
                    Ok(())
                } else {
                    Err(CoError::invalid(
                        "coarray access",
                        "the coarray was freed (deallocated, or at the END TEAM of its team)",
                    ))
                }
            }
        }
    }

    /// `form team (number, t, new_index=)`: collective over the current team; the images
    /// passing the same `number` (1 or more) form a team, numbered by `new_index` (every
    /// image of the new team passes a different one, 1..=its size) or, without it, in
    /// the order of the current team.
    ///
    /// ```
    /// use gaspar::coarray::Coarrays;
    /// let mut co = Coarrays::init()?;
    /// // form team (number, t, new_index=1): alone, this image is image 1 of team 3.
    /// let t = co.form_team(3, Some(1))?;
    /// assert_eq!(co.team_number(Some(t))?, 3);
    /// assert!(co.form_team(0, None).is_err()); // numbers start at 1
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn form_team(&mut self, number: i64, new_index: Option<Image>) -> CoResult<TeamId> {
        let color = u32::try_from(number)
            .ok()
            .filter(|&c| c >= 1 && c <= i32::MAX as u32)
            .ok_or_else(|| {
                CoError::invalid("form team", format!("team number {number} is not positive"))
            })?;
        let key = new_index.unwrap_or(self.this_image());
        if key == 0 {
            return Err(CoError::invalid("form team", "new_index 0"));
        }
        self.complete_puts()?;
        self.all_images_running()?;
        let split = self
            .collective_team()
            .split(&self.rt, Some(color), key - 1)?
            .ok_or_else(|| CoError::invalid("form team", "this image joined no team"))?;
        let this_image = split.rank() + 1;
        if new_index.is_some_and(|i| i != this_image) {
            return Err(CoError::invalid(
                "form team",
                format!(
                    "new_index {} is not one of 1..={} given once",
                    key,
                    split.size()
                ),
            ));
        }
        let images = Team::of_ranks(split.world_ranks().to_vec(), this_image);
        self.formed.push(Formed {
            number,
            world: Some(split),
            images,
            parent: self.current_team(),
        });
        Ok(TeamId(self.formed.len() - 1))
    }

    fn formed_team(&self, call: &'static str, team: TeamId) -> CoResult<&Formed> {
        self.formed
            .get(team.0)
            .ok_or_else(|| CoError::invalid(call, format!("{team:?} was not formed here")))
    }

    /// The active team (the current team, or one a CHANGE TEAM construct around it left)
    /// formed with `number` (-1: the initial team), innermost first; `None` when no active
    /// team has that number.
    ///
    /// ```
    /// use gaspar::coarray::{Coarrays, TeamId};
    /// let mut co = Coarrays::init()?;
    /// let t = co.form_team(7, None)?;
    /// assert_eq!(co.active_team_numbered(7), None); // formed, not active
    /// co.change_team(t)?;
    /// assert_eq!(co.active_team_numbered(7), Some(t));
    /// assert_eq!(co.active_team_numbered(-1), Some(TeamId::INITIAL));
    /// co.end_team()?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn active_team_numbered(&self, number: i64) -> Option<TeamId> {
        self.stack
            .iter()
            .rev()
            .copied()
            .find(|&i| self.formed[i].number == number)
            .map(TeamId)
    }

    /// Whether `team` is active: the current team or one a CHANGE TEAM construct around
    /// it left.
    ///
    /// ```
    /// use gaspar::coarray::{Coarrays, TeamId};
    /// let mut co = Coarrays::init()?;
    /// let t = co.form_team(2, None)?;
    /// assert!(!co.is_active(t));
    /// co.change_team(t)?;
    /// assert!(co.is_active(t) && co.is_active(TeamId::INITIAL));
    /// co.end_team()?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn is_active(&self, team: TeamId) -> bool {
        team == TeamId::INITIAL || self.stack.contains(&team.0)
    }

    /// The job rank of `image` numbered in `team`, which must be active.
    pub(crate) fn rank_in(&self, image: Image, team: TeamId) -> CoResult<u32> {
        if !self.is_active(team) {
            return Err(CoError::invalid(
                "coindexed access",
                "TEAM= names a team that is not active",
            ));
        }
        self.formed_team("coindexed access", team)?
            .images
            .rank_of(image)
    }

    /// `change team (t)`: `t` (formed from the current team) becomes the current team,
    /// after its images synchronize.
    ///
    /// ```
    /// use gaspar::coarray::Coarrays;
    /// let mut co = Coarrays::init()?;
    /// let t = co.form_team(1, None)?;
    /// co.change_team(t)?; // change team (t)
    /// assert_eq!(co.team_number(None)?, 1);
    /// let inner = co.allocate(8)?; // freed at end team at the latest
    /// co.deallocate(inner)?;
    /// co.end_team()?; // end team
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn change_team(&mut self, team: TeamId) -> CoResult<()> {
        let formed = self.formed_team("change team", team)?;
        if team == TeamId::INITIAL || formed.parent != self.current_team() {
            return Err(CoError::invalid(
                "change team",
                "the team was not formed from the current team",
            ));
        }
        self.team = formed.images.clone();
        self.stack.push(team.0);
        self.sync_all()
    }

    /// `end team`: the images of the current team synchronize, and the team it was
    /// formed from becomes current again.
    ///
    /// ```
    /// use gaspar::coarray::Coarrays;
    /// let mut co = Coarrays::init()?;
    /// let t = co.form_team(4, None)?;
    /// co.change_team(t)?;
    /// co.end_team()?;
    /// assert_eq!(co.team_number(None)?, -1); // back in the initial team
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn end_team(&mut self) -> CoResult<()> {
        if self.stack.len() <= 1 {
            return Err(CoError::invalid("end team", "no change team is active"));
        }
        self.sync_all()?;
        // Coarrays allocated inside the team end with it.
        let ending = self.current_team();
        let (ended, kept) = std::mem::take(&mut self.team_blocks)
            .into_iter()
            .partition(|&(_, team, _)| team == ending);
        self.team_blocks = kept;
        for (_, _, block) in ended {
            self.rt.free_local(block)?;
        }
        self.stack.pop();
        self.team = self.formed[self.current_team()].images.clone();
        Ok(())
    }

    /// `sync team (t)`: synchronizes the images of `t` (a team this image belongs to).
    ///
    /// ```
    /// use gaspar::coarray::{Coarrays, TeamId};
    /// let mut co = Coarrays::init()?;
    /// let t = co.form_team(1, None)?;
    /// co.sync_team(t)?; // a team this image belongs to, current or not
    /// co.sync_team(TeamId::INITIAL)?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn sync_team(&mut self, team: TeamId) -> CoResult<()> {
        let me = self.rt.rank();
        let partners: Vec<u32> = self
            .formed_team("sync team", team)?
            .images
            .ranks()
            .iter()
            .copied()
            .filter(|&r| r != me)
            .collect();
        self.signal_and_wait(&partners)
    }

    /// `team_number(t)`: the number `t` was formed with (-1 for the initial team);
    /// `None`: of the current team.
    ///
    /// ```
    /// use gaspar::coarray::Coarrays;
    /// let mut co = Coarrays::init()?;
    /// assert_eq!(co.team_number(None)?, -1);
    /// let t = co.form_team(9, None)?;
    /// assert_eq!(co.team_number(Some(t))?, 9);
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn team_number(&self, team: Option<TeamId>) -> CoResult<i64> {
        let index = team.map_or(self.current_team(), |t| t.0);
        Ok(self.formed_team("team_number", TeamId(index))?.number)
    }

    /// `get_team(level)`.
    ///
    /// ```
    /// use gaspar::coarray::{Coarrays, TeamId, TeamLevel};
    /// let co = Coarrays::init()?;
    /// assert_eq!(co.get_team(TeamLevel::Current), TeamId::INITIAL);
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn get_team(&self, level: TeamLevel) -> TeamId {
        let current = self.current_team();
        TeamId(match level {
            TeamLevel::Initial => 0,
            TeamLevel::Current => current,
            TeamLevel::Parent => self.formed[current].parent,
        })
    }
}
