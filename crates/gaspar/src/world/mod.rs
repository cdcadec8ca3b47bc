//! Infrastructure (ACP's table 1): init, finalize, rank, procs, barrier, abort, and
//! reset's rank remap. The world owns the transport and maps the ranks the program sees
//! (logical) to the transport's (physical). The world is a [`Team`]; every other team is
//! split from it, and teams carry the typed collectives.

mod collective;
mod team;

use std::sync::atomic::{AtomicBool, Ordering};

pub use self::collective::{ReduceOp, Reducible, Scalar};
pub use self::team::Team;

use crate::error::{Error, Result};
use crate::transport::{self, AnyTransport, Transport, Writers};

/// Only one runtime may be alive in a process at a time.
static ALIVE: AtomicBool = AtomicBool::new(false);

/// The job as this process sees it. Leave it with [`World::finalize`] on every rank:
/// dropping it unfinalized (an early return, say by `?`) ends the whole job with a
/// message, since the other ranks would otherwise wait for this one in their next
/// collective (a drop while panicking just lets the panic end the process).
///
/// ```
/// use gaspar::world::World;
/// let world = World::init()?;
/// world.barrier()?;
/// world.finalize()?;
/// # Ok::<(), gaspar::Error>(())
/// ```
pub struct World {
    transport: AnyTransport,
    /// Number of ranks.
    procs: u32,
    /// `physical[logical]`: the transport rank of each logical rank, once a reset has
    /// renumbered them; `None` while every rank is its own physical rank (no lookup on
    /// every transfer's path).
    physical: Option<Box<[u32]>>,
    /// This process's logical rank.
    rank: u32,
    /// Every rank, numbered as the world.
    team: Team,
    finalized: bool,
}

impl World {
    /// Joins the job this process was started in (ACP's `acp_init`).
    ///
    /// ```
    /// let world = gaspar::world::World::init()?; // alone: one rank on shm
    /// assert_eq!(world.procs(), 1);
    /// world.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn init() -> Result<World> {
        if ALIVE.swap(true, Ordering::AcqRel) {
            return Err(Error::AlreadyInitialized);
        }
        let transport = match transport::select() {
            Ok(t) => t,
            Err(e) => {
                ALIVE.store(false, Ordering::Release);
                return Err(e);
            }
        };
        let rank = transport.rank();
        let procs = transport.procs();
        Ok(World {
            procs,
            physical: None,
            rank,
            team: Team::world(procs, rank),
            transport,
            finalized: false,
        })
    }

    /// This process's rank (ACP's `acp_rank`).
    ///
    /// ```
    /// let world = gaspar::world::World::init()?;
    /// assert!(world.rank() < world.procs());
    /// world.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// Number of ranks in the job (ACP's `acp_procs`).
    ///
    /// ```
    /// let world = gaspar::world::World::init()?;
    /// assert_eq!(world.team().size(), world.procs());
    /// world.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn procs(&self) -> u32 {
        self.procs
    }

    /// The team of every rank, numbered as the world: the team every other is split from.
    ///
    /// ```
    /// use gaspar::ReduceOp;
    /// let world = gaspar::world::World::init()?;
    /// let mut n = [1u32];
    /// world.team().allreduce(&world, &mut n, ReduceOp::Sum)?;
    /// assert_eq!(n[0], world.procs());
    /// world.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn team(&self) -> &Team {
        &self.team
    }

    /// Waits until every rank has reached the barrier (ACP's `acp_sync`). Every put
    /// issued before it is visible everywhere after it.
    ///
    /// ```
    /// let world = gaspar::world::World::init()?;
    /// world.barrier()?; // every rank arrived
    /// world.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn barrier(&self) -> Result<()> {
        Ok(self.transport.barrier()?)
    }

    /// Waits until `ready()` returns true, the way every wait of gaspar does: polls it
    /// briefly, then sleeps until memory of rank `watched` (the memory `ready` looks at)
    /// is written by an atomic or by a put that is then completed, and looks again. Ends
    /// with [`Error::JobAborted`] when the job is aborted and with [`Error::RankGone`] when
    /// rank `awaited` (whose action the wait expects, if one rank's) finalizes or exits
    /// first.
    ///
    /// ```
    /// let world = gaspar::world::World::init()?;
    /// let mut polls = 0;
    /// // Waits for memory of rank 0 (here a counter stands in for a flag a put would set).
    /// world.wait(0, None, || {
    ///     polls += 1;
    ///     Ok(polls == 3)
    /// })?;
    /// assert_eq!(polls, 3);
    /// world.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn wait(
        &self,
        watched: u32,
        awaited: Option<u32>,
        ready: impl FnMut() -> Result<bool>,
    ) -> Result<()> {
        self.wait_for_writers(watched, awaited, Writers::Any, ready)
    }

    /// [`wait`](Self::wait) for a `ready` that only atomics of this library (of any rank)
    /// can make true, such as a counter that other ranks add to: it sleeps without
    /// interrupting the cores of the ranks still working (an atomic's sequentially
    /// consistent read-modify-write is the writer's half of the handshake with a
    /// sleeper, whose own fence is the other half, where a put needs `membarrier`). A
    /// put that `ready` would wait for may go unnoticed until the next atomic on that
    /// rank's memory wakes it.
    ///
    /// ```
    /// let world = gaspar::world::World::init()?;
    /// let mut polls = 0;
    /// world.wait_for_atomics(0, None, || {
    ///     polls += 1;
    ///     Ok(polls == 3)
    /// })?;
    /// assert_eq!(polls, 3);
    /// world.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn wait_for_atomics(
        &self,
        watched: u32,
        awaited: Option<u32>,
        ready: impl FnMut() -> Result<bool>,
    ) -> Result<()> {
        self.wait_for_writers(watched, awaited, Writers::Atomics, ready)
    }

    /// [`wait`](Self::wait) that `writers` may end.
    fn wait_for_writers(
        &self,
        watched: u32,
        awaited: Option<u32>,
        writers: Writers,
        mut ready: impl FnMut() -> Result<bool>,
    ) -> Result<()> {
        let watched = self.physical(watched)?;
        let awaited = awaited.map(|r| self.physical(r)).transpose()?;
        Ok(self.transport.wait(watched, awaited, writers, &mut ready)?)
    }

    /// With `report`, asks that this rank's death (an exit without finalize, a signal) be
    /// reported to the other ranks, whose waits for it then end with
    /// [`Error::RankGone`], instead of ending the job (`gaspar run` only; a coarray job's
    /// failed images); without, its death ends the job again. Returns whether the
    /// transport does so (under MPI the job always ends).
    pub(crate) fn report_failure_instead_of_abort(&self, report: bool) -> bool {
        self.transport.report_failure_instead_of_abort(report)
    }

    /// Whether rank `rank` exited without finalizing (always `false` under MPI).
    pub(crate) fn rank_failed(&self, rank: u32) -> Result<bool> {
        let physical = self.physical(rank)?;
        Ok(self.transport.rank_failed(physical))
    }

    /// Counts a departure of this rank (it is about to stop or fail on purpose) in every
    /// rank's [`departures`](Self::departures); nothing where the transport keeps no
    /// count (MPI).
    pub(crate) fn note_departure(&self) {
        self.transport.note_departure()
    }

    /// How many departures of ranks this rank has been told of: ranks that noted one and
    /// ranks whose process ended without finalizing (`gaspar run`'s launcher counts
    /// those); `None` where the transport keeps no count (MPI, where a rank's exit ends
    /// the job).
    #[inline]
    pub(crate) fn departures(&self) -> Option<u64> {
        self.transport.departures()
    }

    /// Whether rank `rank` has taken in every message this rank sent it without waiting
    /// for it (a one-way broadcast's): a rank that leaves the job waits for this first
    /// (with [`wait`](Self::wait) on its own memory: the taking in wakes it).
    pub(crate) fn sent_messages_taken(&self, rank: u32) -> Result<bool> {
        let physical = self.physical(rank)?;
        Ok(self.transport.sent_messages_taken(physical))
    }

    /// Ends the whole job with `message` (ACP's `acp_abort`).
    ///
    /// ```no_run
    /// let world = gaspar::world::World::init()?;
    /// if std::env::args().count() > 5 {
    ///     world.abort("too many arguments"); // ends every rank of the job
    /// }
    /// world.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn abort(&self, message: &str) -> ! {
        self.transport.abort(message)
    }

    /// Whether the job is being ended (another rank aborted it, or the launcher).
    ///
    /// ```
    /// let world = gaspar::world::World::init()?;
    /// assert!(!world.job_aborted());
    /// world.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn job_aborted(&self) -> bool {
        self.transport.job_aborted()
    }

    /// Ends the whole job on purpose (a Fortran ERROR STOP); the job's exit status is
    /// `status`. `line` is printed unless another rank ended the job first, so that a job
    /// says why it ended once.
    pub(crate) fn end_job(&self, status: i32, line: Option<&str>) -> ! {
        self.transport.end_job(status, line)
    }

    /// The transport rank of logical rank `rank`, or an error if there is none.
    #[inline]
    pub(crate) fn physical(&self, rank: u32) -> Result<u32> {
        // Compared widened, as when ranks arrived as u64: the same result, and the form
        // the transfers' inlined path was measured in (`gaspar bench`, put_bw 8 B: the
        // 32-bit compare built ~4% slower, most likely by code placement).
        let rank = u64::from(rank);
        if rank >= u64::from(self.procs) {
            return Err(Error::RankOutOfRange {
                rank: rank as u32,
                procs: self.procs,
            });
        }
        Ok(match &self.physical {
            None => rank as u32,
            Some(physical) => physical[rank as usize],
        })
    }

    /// Collective: every rank contributes one word; `out[r]` receives (logical) rank r's
    /// word. `out` must hold one word per rank.
    ///
    /// ```
    /// let world = gaspar::world::World::init()?;
    /// let mut all = vec![0u64; world.procs() as usize];
    /// world.allgather_u64(u64::from(world.rank()) * 10, &mut all)?;
    /// assert_eq!(all[world.rank() as usize], u64::from(world.rank()) * 10);
    /// world.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn allgather_u64(&self, value: u64, out: &mut [u64]) -> Result<()> {
        self.transport.allgather_u64(value, out)?;
        if let Some(physical) = &self.physical {
            let by_physical = out.to_vec();
            for (word, &p) in out.iter_mut().zip(physical.iter()) {
                *word = by_physical[p as usize];
            }
        }
        Ok(())
    }

    /// The transport this process reaches the other ranks through, named as
    /// [`crate::transports`] names it: `"shm"` (where [`mapped_address`] reaches every
    /// rank and the runtime's atomics are the CPU's atomics on that memory) or `"mpi"`.
    ///
    /// [`mapped_address`]: crate::gmem::GlobalMemory::mapped_address
    pub fn transport_name(&self) -> &'static str {
        match &self.transport {
            AnyTransport::Shm(_) => "shm",
            #[cfg(feature = "mpi")]
            AnyTransport::Mpi(_) => "mpi",
        }
    }

    /// The cores this job's ranks on this host may keep busy at once: the union of their
    /// affinity masks, fewer under a control group's CPU quota (as a container's CPU limit
    /// sets one). A wait spins while the ranks awake fit them, and yields its core between
    /// looks while they outnumber them.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// assert!(rt.world().usable_cores() >= 1);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn usable_cores(&self) -> usize {
        self.transport.usable_cores()
    }

    /// The transport under this world.
    #[inline]
    pub(crate) fn transport(&self) -> &AnyTransport {
        &self.transport
    }

    /// Collective: this process becomes logical rank `new_rank` (ACP's `acp_reset` rank
    /// remap). Every rank must pass a different rank in `0..procs`; otherwise every rank
    /// gets the same error and the old numbering stays.
    pub(crate) fn remap(&mut self, new_rank: u32) -> Result<()> {
        let procs = self.procs();
        let mut wanted = vec![0u64; procs as usize];
        self.transport
            .allgather_u64(u64::from(new_rank), &mut wanted)?;
        let mut physical = vec![u32::MAX; procs as usize];
        for (p, &logical) in wanted.iter().enumerate() {
            let slot = usize::try_from(logical)
                .ok()
                .and_then(|l| physical.get_mut(l))
                .ok_or(Error::RankOutOfRange {
                    // Each word is a u32 rank, widened for the exchange.
                    rank: logical as u32,
                    procs,
                })?;
            if *slot != u32::MAX {
                return Err(Error::invalid(
                    "reset",
                    format!("ranks {} and {p} both asked for rank {logical}", *slot),
                ));
            }
            *slot = p as u32;
        }
        self.team = self.team.renumbered(self, new_rank)?;
        self.physical = Some(physical.into_boxed_slice());
        self.rank = new_rank;
        Ok(self.transport.barrier()?)
    }

    /// Leaves the job (ACP's `acp_finalize`): waits until every rank finalizes.
    ///
    /// ```
    /// let world = gaspar::world::World::init()?;
    /// world.finalize()?; // collective: waits for every rank
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn finalize(mut self) -> Result<()> {
        self.finalize_once()
    }

    /// Leaves the job without waiting for the other ranks, when a rank failed and the
    /// others went on without it (that rank never joins a finalize); the process must then
    /// exit without using the runtime again.
    pub(crate) fn finalize_alone(&self) -> Result<()> {
        Ok(self.transport.finalize_alone()?)
    }

    fn finalize_once(&mut self) -> Result<()> {
        if std::mem::replace(&mut self.finalized, true) {
            return Ok(());
        }
        let result = self.transport.finalize();
        ALIVE.store(false, Ordering::Release);
        Ok(result?)
    }
}

impl Drop for World {
    fn drop(&mut self) {
        if self.finalized {
            return;
        }
        ALIVE.store(false, Ordering::Release);
        if std::thread::panicking() {
            // The panic ends the process with a failing status and the launcher (or
            // mpirun) stops the job.
            return;
        }
        if self.transport.job_aborted() {
            // The job is ending already (this rank learned it as `JobAborted`); its cause
            // has been reported.
            std::process::exit(1);
        }
        // Not an orderly finalize: joining the finalize barrier here would meet whatever
        // collective the other ranks are in. End the job instead, as `run_job` does.
        self.transport.abort(
            "the runtime was dropped without finalize (an early return, e.g. by `?`); \
             call finalize on every rank, or use gaspar::run_job",
        )
    }
}
