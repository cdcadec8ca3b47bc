//! [`DarrayError`]: what a distributed-array call reports when its arguments do not fit the
//! array (wrapped in [`crate::Error::Darray`]), so that a caller can tell the cases apart.

/// A distributed-array call that cannot be done as asked. Nothing was moved.
///
/// ```
/// use gaspar::darray::{Darrays, DarrayError, DistArray};
/// let ctx = Darrays::init()?;
/// let a = DistArray::<u8, 1>::new(&ctx, [4])?;
/// match a.get([4]) {
///     Err(gaspar::Error::Darray(DarrayError::IndexOutside { index, extents })) => {
///         assert_eq!((index, extents), (vec![4], vec![4]));
///     }
///     other => panic!("expected IndexOutside, got {other:?}"),
/// }
/// a.free()?;
/// ctx.finalize()?;
/// # Ok::<(), gaspar::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DarrayError {
    /// An index outside the array's index space.
    #[error("index {index:?} lies outside the array's extents {extents:?}")]
    IndexOutside {
        /// The index asked for.
        index: Vec<usize>,
        /// The array's extents.
        extents: Vec<usize>,
    },
    /// A slice that does not lie inside the array.
    #[error("{call}: the slice {lo:?}..{hi:?} is not inside the array's extents {extents:?}")]
    SliceOutside {
        /// The call.
        call: &'static str,
        /// The slice's lows.
        lo: Vec<usize>,
        /// The slice's highs (exclusive).
        hi: Vec<usize>,
        /// The array's extents.
        extents: Vec<usize>,
    },
    /// A bulk write whose values do not cover its slice exactly.
    #[error("{call}: {values} values for a slice of {slice_len} elements")]
    LengthMismatch {
        /// The call.
        call: &'static str,
        /// Values given.
        values: usize,
        /// Elements in the slice.
        slice_len: usize,
    },
    /// A prefetch source that is not a rank of the job.
    #[error("prefetch source rank {source_rank} is out of range: the job has {procs} ranks")]
    SourceOutOfRange {
        /// The rank asked for.
        source_rank: u32,
        /// Ranks in the job.
        procs: u32,
    },
    /// A prefetch from this rank itself: its block is local already.
    #[error("prefetch source rank {source_rank} is this rank: its block is local")]
    SourceIsLocal {
        /// The rank asked for.
        source_rank: u32,
    },
    /// A prefetch slice that is not inside the source rank's block.
    #[error("the prefetch slice {lo:?}..{hi:?} is not inside rank {source_rank}'s block")]
    SliceNotInSource {
        /// The source rank.
        source_rank: u32,
        /// The slice's lows.
        lo: Vec<usize>,
        /// The slice's highs (exclusive).
        hi: Vec<usize>,
    },
    /// A refill (without a static domain) found that the source's published block no
    /// longer holds the prefetched slice.
    #[error("rank {source_rank}'s block no longer holds the prefetched slice {lo:?}..{hi:?}")]
    SourceChanged {
        /// The source rank.
        source_rank: u32,
        /// The slice's lows.
        lo: Vec<usize>,
        /// The slice's highs (exclusive).
        hi: Vec<usize>,
    },
    /// Ranks building one array with different dimensions, element sizes, extents or grids.
    #[error("rank {rank} builds a different array (dimensions, element size, extents, grid: {theirs:?}; this rank: {mine:?})")]
    ShapeMismatch {
        /// A rank that disagrees.
        rank: u32,
        /// Its shape words.
        theirs: Vec<u64>,
        /// This rank's shape words.
        mine: Vec<u64>,
    },
    /// A grid of ranks that does not hold the job's ranks.
    #[error("a {dims:?} grid of ranks does not hold the job's {procs} ranks")]
    GridMismatch {
        /// The grid's ranks along each dimension.
        dims: Vec<u32>,
        /// Ranks in the job.
        procs: u32,
    },
    /// An array of a number of dimensions other than 1, 2 or 3.
    #[error("{dims} dimensions: distributed arrays have 1, 2 or 3")]
    Dimensions {
        /// The dimensions asked for.
        dims: usize,
    },
    /// An unlock of a darray lock this rank does not hold.
    #[error("the darray lock of rank {rank} is not held by this rank")]
    LockNotHeld {
        /// The rank the lock lives on.
        rank: u32,
    },
    /// A lock of a rank that is not in the job.
    #[error("darray lock of rank {rank}: the job has {procs} ranks")]
    LockOutOfRange {
        /// The rank asked for.
        rank: u32,
        /// Ranks in the job.
        procs: u32,
    },
}
