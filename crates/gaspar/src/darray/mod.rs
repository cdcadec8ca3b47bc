//! Distributed arrays with user-driven prefetching (LAPPS, see DESIGN.md's `darray`).
//!
//! A [`Darrays`] context owns the runtime's layers, the rank's prefetch buffer (one list
//! of entries for every array of the rank) and the acquire counter that every
//! synchronization ([`Darrays::barrier`]) bumps. A [`DistArray`] is a `D`-dimensional
//! array (D = 1, 2, 3) of plain data, block-distributed over every rank on a [`Grid`]
//! (chosen as Chapel's `Block` chooses it, or given); it is built and freed collectively.
//! Its elements are read and written by global index, and a read is served from the
//! local block, from prefetched data, or by a get from the owner, without the caller
//! knowing which.
//!
//! Prefetching: the program says once what it will read (a pattern:
//! [`DistArray::stencil_prefetch`], row- or column-wise, transpose, all-to-all, custom;
//! or the low-level [`DistArray::request_prefetch`] of one slice of one rank's block), and
//! later reads of those elements cost a local read. With automatic consistency an entry
//! is stale after every synchronization and refilled on its first read after it (its first
//! fill is deferred to its first read); with manual consistency only
//! [`DistArray::update_prefetch`] refills it. Writes to prefetched elements go to the
//! owner and to the prefetched copy (write-through). Entries are filled with one-sided
//! strided gets; the owner takes no part.
//!
//! ```no_run
//! use gaspar::darray::{Darrays, DistArray, Prefetch};
//! let ctx = Darrays::init()?;
//! let a = DistArray::<f64, 2>::new(&ctx, [64, 64])?;
//! for index in a.local_domain().iter() {
//!     a.set(index, (index[0] + index[1]) as f64)?;
//! }
//! a.stencil_prefetch(1, false, Prefetch::AUTOMATIC)?;
//! ctx.barrier()?;
//! let [x, y] = [a.local_domain().lo[0], a.local_domain().lo[1]];
//! if x > 0 {
//!     // Read from the prefetched halo (refilled after the barrier), not from the owner.
//!     assert_eq!(a.get([x - 1, y])?, (x - 1 + y) as f64);
//! }
//! a.free()?;
//! ctx.finalize()?;
//! # Ok::<(), gaspar::Error>(())
//! ```

mod array;
mod distribution;
mod domain;
mod patterns;
mod prefetch;
mod stencil;

use std::sync::atomic::{AtomicU64, Ordering};

pub use self::array::DistArray;
pub use self::distribution::{Block, Grid};
pub use self::domain::{Domain, DomainIter};
pub use self::prefetch::Prefetch;
use self::prefetch::PrefetchBuffer;
use crate::error::Result;
use crate::strided::Strided;
use crate::Runtime;

/// The distributed-array context of one rank: the runtime's layers, the rank's prefetch
/// buffer and its acquire counter. Arrays borrow it, so it cannot be finalized while one
/// lives.
pub struct Darrays {
    rt: Strided,
    /// Synchronizations so far: an automatically consistent entry filled at an older
    /// count is stale.
    acquires: AtomicU64,
    buffer: PrefetchBuffer,
    /// Arrays constructed so far (the same on every rank: construction is collective);
    /// names each array's entries in the buffer.
    arrays: AtomicU64,
}

impl Darrays {
    /// Joins the job (as [`crate::init`] does) and sets up the context.
    pub fn init() -> Result<Darrays> {
        Ok(Darrays::with_runtime(crate::init()?))
    }

    /// The context on a runtime already started.
    pub fn with_runtime(rt: Runtime) -> Darrays {
        Darrays {
            rt: rt.into_acp(),
            acquires: AtomicU64::new(0),
            buffer: PrefetchBuffer::default(),
            arrays: AtomicU64::new(0),
        }
    }

    /// This rank.
    pub fn rank(&self) -> u32 {
        self.rt.rank()
    }

    /// Ranks in the job.
    pub fn procs(&self) -> u32 {
        self.rt.procs()
    }

    /// The layers under the context (ACP's interface), for gaspar's other calls.
    pub fn runtime(&self) -> &Strided {
        &self.rt
    }

    /// Collective: a barrier over every rank, an acquire: automatically consistent
    /// prefetched data is stale after it.
    pub fn barrier(&self) -> Result<()> {
        self.rt.barrier()?;
        self.acquires.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Bytes of prefetched data this rank holds, for every array.
    pub fn prefetch_bytes(&self) -> usize {
        self.buffer.bytes()
    }

    /// Leaves the job (collective).
    pub fn finalize(self) -> Result<()> {
        self.rt.finalize()
    }

    /// The acquire counter now.
    fn acquires(&self) -> u64 {
        self.acquires.load(Ordering::Acquire)
    }

    /// A new array's id.
    fn next_array(&self) -> u64 {
        self.arrays.fetch_add(1, Ordering::Relaxed)
    }
}
