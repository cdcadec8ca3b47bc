//! Teams (Fortran 2018): `form team`, `change team`, `end team`, `sync team`,
//! `team_number`, `get_team`. A formed team is a split of the current team by the
//! world layer (its collectives then run on it); inside `change team` image numbers,
//! `sync all`, `sync images` and the collectives are the team's.
//!
//! Not yet: allocating or deallocating coarrays inside `change team` (the symmetric heap's
//! allocations are collectives of the whole job); such calls return
//! [`CoError::Unsupported`].

use crate::world;

use super::error::{CoError, CoResult};
use super::team::Team;
use super::{Coarrays, Image};

/// A team variable (Fortran's `type(team_type)`): the initial team, or a team made by
/// [`Coarrays::form_team`]. Only meaningful with the engine that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TeamId(usize);

impl TeamId {
    /// The initial team (every image of the job).
    pub const INITIAL: TeamId = TeamId(0);
}

/// Which team `get_team` names.
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

    /// Allocations are collectives of the whole job: refused inside `change team`.
    pub(crate) fn check_initial_team(&self, call: &str) -> CoResult<()> {
        if self.stack.len() > 1 {
            return Err(CoError::unsupported(format!("{call} inside CHANGE TEAM")));
        }
        Ok(())
    }

    /// `form team (number, t, new_index=)`: collective over the current team; the images
    /// passing the same `number` (1 or more) form a team, numbered by `new_index` (every
    /// image of the new team passes a different one, 1..=its size) or, without it, in
    /// the order of the current team.
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

    /// `change team (t)`: `t` (formed from the current team) becomes the current team,
    /// after its images synchronize.
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
    pub fn end_team(&mut self) -> CoResult<()> {
        if self.stack.len() <= 1 {
            return Err(CoError::invalid("end team", "no change team is active"));
        }
        self.sync_all()?;
        self.stack.pop();
        self.team = self.formed[self.current_team()].images.clone();
        Ok(())
    }

    /// `sync team (t)`: synchronizes the images of `t` (a team this image belongs to).
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
    pub fn team_number(&self, team: Option<TeamId>) -> CoResult<i64> {
        let index = team.map_or(self.current_team(), |t| t.0);
        Ok(self.formed_team("team_number", TeamId(index))?.number)
    }

    /// `get_team(level)`.
    pub fn get_team(&self, level: TeamLevel) -> TeamId {
        let current = self.current_team();
        TeamId(match level {
            TeamLevel::Initial => 0,
            TeamLevel::Current => current,
            TeamLevel::Parent => self.formed[current].parent,
        })
    }
}
