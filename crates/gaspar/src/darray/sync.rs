//! [`Darrays`]: the distributed-array context of one rank: its synchronizations (barrier
//! and locks, each bumping the acquire counter that automatic consistency checks), the
//! account of its prefetch buffers, and the report of arrays dropped without `free`.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use super::error::DarrayError;
use crate::error::Result;
use crate::gmem::SymmetricAlloc;
use crate::strided::Strided;
use crate::{AtomicOp, Runtime, Width};

/// The distributed-array context of one rank: the runtime's layers, the acquire counter,
/// one lock per rank and the prefetch buffers' account. Arrays borrow it, so it cannot be
/// finalized while one lives.
///
/// ```
/// use gaspar::darray::{Darrays, DistArray};
/// let ctx = Darrays::init()?;
/// let a = DistArray::<u32, 1>::new(&ctx, [8])?;
/// a.set([3], 7)?;
/// ctx.barrier()?;
/// assert_eq!(a.get([3])?, 7);
/// a.free()?;
/// ctx.finalize()?;
/// # Ok::<(), gaspar::Error>(())
/// ```
pub struct Darrays {
    rt: Strided,
    /// Synchronizations so far: an automatically consistent entry filled at an older
    /// count is stale.
    acquires: AtomicU64,
    /// One 8-byte lock word on every rank: 0 free, else 1 + the holder's rank.
    locks: SymmetricAlloc,
    /// Bytes of prefetched data this rank holds now, and the most it held.
    prefetched: AtomicUsize,
    prefetched_peak: AtomicUsize,
    /// Set when a [`DistArray`](super::DistArray) was dropped without `free`; the
    /// descriptions are in `leaks`.
    leaked: AtomicBool,
    leaks: Mutex<Vec<String>>,
}

impl Darrays {
    /// Joins the job (as [`crate::init`] does) and sets up the context (collective).
    ///
    /// ```
    /// let ctx = gaspar::darray::Darrays::init()?;
    /// assert_eq!((ctx.rank(), ctx.procs()), (0, 1)); // started alone: one rank
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn init() -> Result<Darrays> {
        Darrays::with_runtime(crate::init()?)
    }

    /// The context on a runtime already started (collective: it allocates the locks).
    ///
    /// ```
    /// let rt = gaspar::init()?;
    /// let ctx = gaspar::darray::Darrays::with_runtime(rt)?;
    /// ctx.barrier()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn with_runtime(rt: Runtime) -> Result<Darrays> {
        let rt = rt.into_acp();
        let locks = rt.alloc(8)?;
        rt.barrier()?;
        Ok(Darrays {
            rt,
            acquires: AtomicU64::new(0),
            locks,
            prefetched: AtomicUsize::new(0),
            prefetched_peak: AtomicUsize::new(0),
            leaked: AtomicBool::new(false),
            leaks: Mutex::new(Vec::new()),
        })
    }

    /// This rank.
    ///
    /// ```
    /// let ctx = gaspar::darray::Darrays::init()?;
    /// assert!(ctx.rank() < ctx.procs());
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn rank(&self) -> u32 {
        self.rt.rank()
    }

    /// Ranks in the job.
    ///
    /// ```
    /// let ctx = gaspar::darray::Darrays::init()?;
    /// assert_eq!(ctx.procs(), 1);
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn procs(&self) -> u32 {
        self.rt.procs()
    }

    /// The layers under the context (ACP's interface), for gaspar's other calls.
    ///
    /// ```
    /// let ctx = gaspar::darray::Darrays::init()?;
    /// assert_eq!(ctx.runtime().procs(), ctx.procs());
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn runtime(&self) -> &Strided {
        &self.rt
    }

    /// Collective: a barrier over every rank, an acquire: automatically consistent
    /// prefetched data is stale after it.
    ///
    /// ```
    /// let ctx = gaspar::darray::Darrays::init()?;
    /// let before = ctx.acquires();
    /// ctx.barrier()?;
    /// assert_eq!(ctx.acquires(), before + 1);
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn barrier(&self) -> Result<()> {
        self.check_leaks();
        self.rt.barrier()?;
        self.acquire();
        Ok(())
    }

    /// Takes the lock that lives on `rank` (waiting while another rank holds it), an
    /// acquire: automatically consistent prefetched data is stale after it. Writes made
    /// before the holder's [`unlock`](Self::unlock) are visible once it returns.
    ///
    /// ```
    /// let ctx = gaspar::darray::Darrays::init()?;
    /// ctx.lock(0)?;
    /// // ... update what the lock on rank 0 guards ...
    /// ctx.unlock(0)?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn lock(&self, rank: u32) -> Result<()> {
        let word = self.lock_word(rank)?;
        let me = u64::from(self.rank()) + 1;
        let take = AtomicOp::CompareSwap {
            expected: 0,
            new: me,
        };
        while self.rt.atomic_blocking(word, Width::W8, take)? != 0 {
            std::thread::yield_now();
        }
        self.acquire();
        Ok(())
    }

    /// Releases the lock on `rank`, which this rank holds ([`DarrayError::LockNotHeld`]
    /// otherwise).
    ///
    /// ```
    /// let ctx = gaspar::darray::Darrays::init()?;
    /// assert!(ctx.unlock(0).is_err()); // not held
    /// ctx.lock(0)?;
    /// ctx.unlock(0)?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn unlock(&self, rank: u32) -> Result<()> {
        let word = self.lock_word(rank)?;
        let me = u64::from(self.rank()) + 1;
        let release = AtomicOp::CompareSwap {
            expected: me,
            new: 0,
        };
        if self.rt.atomic_blocking(word, Width::W8, release)? != me {
            return Err(DarrayError::LockNotHeld { rank }.into());
        }
        Ok(())
    }

    /// Synchronizations (barriers and locks) this rank has made: an automatically
    /// consistent entry filled at an older count is refilled on its next read.
    ///
    /// ```
    /// let ctx = gaspar::darray::Darrays::init()?;
    /// let before = ctx.acquires();
    /// ctx.lock(0)?;
    /// ctx.unlock(0)?;
    /// assert_eq!(ctx.acquires(), before + 1);
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn acquires(&self) -> u64 {
        self.acquires.load(Ordering::Acquire)
    }

    /// Bytes of prefetched data this rank holds now, for every array.
    ///
    /// ```
    /// let ctx = gaspar::darray::Darrays::init()?;
    /// assert_eq!(ctx.prefetch_bytes(), 0); // no array prefetched anything
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn prefetch_bytes(&self) -> usize {
        self.prefetched.load(Ordering::Relaxed)
    }

    /// The most bytes of prefetched data this rank has held at once.
    ///
    /// ```
    /// let ctx = gaspar::darray::Darrays::init()?;
    /// assert!(ctx.prefetch_peak_bytes() >= ctx.prefetch_bytes());
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn prefetch_peak_bytes(&self) -> usize {
        self.prefetched_peak.load(Ordering::Relaxed)
    }

    /// Leaves the job (collective); frees the locks first.
    ///
    /// ```
    /// let ctx = gaspar::darray::Darrays::init()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn finalize(self) -> Result<()> {
        self.check_leaks();
        let Darrays { rt, locks, .. } = self;
        rt.free(locks)?;
        rt.finalize()
    }

    /// Counts one synchronization.
    fn acquire(&self) {
        self.acquires.fetch_add(1, Ordering::AcqRel);
    }

    fn lock_word(&self, rank: u32) -> Result<crate::GlobalAddr> {
        let procs = self.procs();
        if rank >= procs {
            return Err(DarrayError::LockOutOfRange { rank, procs }.into());
        }
        self.locks.ga(rank)
    }

    /// Counts `bytes` more of prefetched data.
    pub(super) fn add_prefetched(&self, bytes: usize) {
        let now = self.prefetched.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.prefetched_peak.fetch_max(now, Ordering::Relaxed);
    }

    /// Counts `bytes` less of prefetched data.
    pub(super) fn remove_prefetched(&self, bytes: usize) {
        self.prefetched.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// Records an array dropped without `free`; the next collective call ends the job.
    pub(super) fn report_leak(&self, description: String) {
        self.leaks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(description);
        self.leaked.store(true, Ordering::Release);
    }

    /// Ends the job if an array was dropped without `free` (as
    /// [`SymmetricArray`](crate::SymmetricArray)'s leaks end it).
    pub(super) fn check_leaks(&self) {
        if !self.leaked.load(Ordering::Acquire) {
            return;
        }
        let leaks = self
            .leaks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .join("; ");
        self.rt.abort(&format!(
            "rank {}: dropped without free: {leaks}. Free distributed arrays collectively \
             with DistArray::free on every rank",
            self.rank()
        ))
    }
}
