//! Teams: subsets of the job's ranks with their own rank numbering, barrier and
//! collectives (MPI's communicators, OpenSHMEM's teams). The world is a team; every other
//! team is split from one (`split`, as `MPI_Comm_split` and `shmem_team_split_strided`).

use super::World;
use crate::error::{Collective, Error, Result};
use crate::transport::team::TransportTeam;
use crate::transport::Transport;

/// A team of ranks. Its members number themselves `0..size()` in the order their split
/// gave them, and know each other's world ranks as the world numbered them then (a later
/// reset renumbers the world team only); every collective call on a team must be made by
/// all of its members, in the same order (calls that differ are reported on every member as
/// [`Error::MismatchedCollective`]). A member that leaves the job while others wait for
/// it ends their wait with an error ([`Error::RankGone`], [`Error::JobAborted`]),
/// never a hang.
///
/// A team is used with the [`World`] it came from (`Runtime::world`):
/// ```no_run
/// let rt = gaspar::init()?;
/// let world = rt.world();
/// let parity = rt.team().split(world, Some(rt.rank() % 2), 0)?.expect("every rank has a color");
/// let mut sum = [u64::from(rt.rank())];
/// parity.allreduce(world, &mut sum, gaspar::ReduceOp::Sum)?;
/// parity.barrier(world)?;
/// # Ok::<(), gaspar::Error>(())
/// ```
pub struct Team {
    pub(super) transport: TransportTeam,
    /// The world rank of each member, by team rank.
    world_ranks: Box<[u32]>,
}

impl std::fmt::Debug for Team {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Team")
            .field("rank", &self.rank())
            .field("world_ranks", &self.world_ranks)
            .finish()
    }
}

impl Team {
    /// The team of every rank of the job, numbered as the transport numbers them.
    pub(super) fn world(procs: u32, rank: u32) -> Team {
        Team {
            transport: TransportTeam::new((0..procs).collect(), rank, 0),
            world_ranks: (0..procs).collect(),
        }
    }

    /// This process's rank in the team.
    ///
    /// ```
    /// let rt = gaspar::init()?;
    /// assert_eq!(rt.team().rank(), rt.rank()); // the world's team numbers as the world
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn rank(&self) -> u32 {
        self.transport.rank
    }

    /// Number of members.
    ///
    /// ```
    /// let rt = gaspar::init()?;
    /// let odd = rt.team().split(rt.world(), Some(rt.rank() % 2), 0)?.expect("a member");
    /// assert_eq!(odd.size(), (rt.procs() + 1 - rt.rank() % 2) / 2);
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn size(&self) -> u32 {
        self.transport.size()
    }

    /// The world rank of team rank `team_rank`.
    ///
    /// ```
    /// let rt = gaspar::init()?;
    /// // Reversed numbering: key = procs - rank.
    /// let team = rt.team().split(rt.world(), Some(0), rt.procs() - rt.rank())?.expect("a member");
    /// assert_eq!(team.world_rank(0)?, rt.procs() - 1);
    /// assert!(team.world_rank(rt.procs()).is_err());
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn world_rank(&self, team_rank: u32) -> Result<u32> {
        self.world_ranks
            .get(team_rank as usize)
            .copied()
            .ok_or(Error::RankOutOfRange {
                rank: team_rank,
                procs: self.size(),
            })
    }

    /// The team rank of world rank `world_rank`, or `None` when it is not a member.
    ///
    /// ```
    /// let rt = gaspar::init()?;
    /// let team = rt.team().split(rt.world(), Some(0), 0)?.expect("a member");
    /// assert_eq!(team.team_rank(rt.rank()), Some(team.rank()));
    /// assert_eq!(team.team_rank(rt.procs()), None);
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn team_rank(&self, world_rank: u32) -> Option<u32> {
        self.world_ranks
            .iter()
            .position(|&w| w == world_rank)
            .map(|r| r as u32)
    }

    /// The world ranks of the members, by team rank.
    ///
    /// ```
    /// let rt = gaspar::init()?;
    /// let all: Vec<u32> = (0..rt.procs()).collect();
    /// assert_eq!(rt.team().world_ranks(), all);
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn world_ranks(&self) -> &[u32] {
        &self.world_ranks
    }

    /// Collective over the members: splits the team into one new team per `color`. The
    /// members of a new team are numbered by ascending `key`, ties broken by their rank in
    /// this team. A member passing `None` joins no team and gets `None`. Colors and keys
    /// must lie in `0..=i32::MAX` (MPI's range).
    ///
    /// ```
    /// let rt = gaspar::init()?;
    /// // Color None: this rank joins no new team.
    /// assert!(rt.team().split(rt.world(), None, 0)?.is_none());
    /// let rows = rt.team().split(rt.world(), Some(rt.rank() / 2), rt.rank())?.expect("a member");
    /// assert_eq!(rows.rank(), rt.rank() % 2);
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn split(&self, world: &World, color: Option<u32>, key: u32) -> Result<Option<Team>> {
        const LARGEST: u32 = i32::MAX as u32;
        if color.is_some_and(|c| c > LARGEST) || key > LARGEST {
            return Err(Error::invalid(
                "Team::split",
                format!("color {color:?} or key {key} exceeds {LARGEST}"),
            ));
        }
        self.agree(world, Collective::Split, false)?;
        let mine = u64::from(color.map_or(0, |c| c + 1)) << 32 | u64::from(key);
        let mut all = vec![0u64; self.size() as usize];
        self.gather_words(world, mine, &mut all)?;
        let team = color.map(|color| {
            let mut members: Vec<(u32, u32)> = all
                .iter()
                .enumerate()
                .filter(|&(_, &word)| word >> 32 == u64::from(color) + 1)
                .map(|(parent_rank, &word)| (word as u32, parent_rank as u32))
                .collect();
            members.sort_unstable();
            let rank = members
                .iter()
                .position(|&(_, parent_rank)| parent_rank == self.rank())
                .unwrap_or_default() as u32;
            let physical = members
                .iter()
                .map(|&(_, p)| self.transport.members[p as usize])
                .collect();
            Team {
                transport: TransportTeam::new(physical, rank, self.transport.child_id(color)),
                world_ranks: members
                    .iter()
                    .map(|&(_, p)| self.world_ranks[p as usize])
                    .collect(),
            }
        });
        let (transport_team, world_ranks) = match team {
            Some(Team {
                transport,
                world_ranks,
            }) => (Some(transport), Some(world_ranks)),
            None => (None, None),
        };
        let split = world
            .transport()
            .split_team(&self.transport, color, key, transport_team)?;
        Ok(split.zip(world_ranks).map(|(transport, world_ranks)| Team {
            transport,
            world_ranks,
        }))
    }

    /// Collective over the world team: the world team numbered as a remap to `new_rank`
    /// numbers the world (split from this one, so that on `mpi` its communicator ranks
    /// the members in the new order).
    pub(super) fn renumbered(&self, world: &World, new_rank: u32) -> Result<Team> {
        let split = self
            .split(world, Some(0), new_rank)?
            .ok_or_else(|| Error::invalid("reset", "no world team after the remap"))?;
        Ok(Team {
            transport: split.transport,
            world_ranks: (0..self.size()).collect(),
        })
    }

    /// Collective over the members: waits until every member has reached the barrier.
    /// Every put a member issued before it is visible to every member after it.
    ///
    /// ```
    /// let rt = gaspar::init()?;
    /// let team = rt.team().split(rt.world(), Some(rt.rank() % 2), 0)?.expect("a member");
    /// team.barrier(rt.world())?; // every member arrived; other teams go on
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn barrier(&self, world: &World) -> Result<()> {
        self.agree(world, Collective::Barrier, true)
    }
}
