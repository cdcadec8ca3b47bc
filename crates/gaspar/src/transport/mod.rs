//! The conduit: the only layer that knows how bytes cross between processes.
//!
//! A transport moves bytes and does atomics between `(rank, segment, offset)` locations,
//! reports completion and barriers. The layers above never ask which transport they run
//! on; [`select`] is the one place that picks it.
//!
//! Completion contract (every transport keeps it):
//! * [`Transport::put`] and [`Transport::copy`] return when the source may be reused
//!   (local completion). The write is visible at the target after [`Transport::flush`] to
//!   that rank, [`Transport::flush_all`], or [`Transport::barrier`].
//! * [`Transport::get`] and [`Transport::atomic`] return when the value has arrived.
//! * A get after a put from the same rank to the same location sees the put.
//! * Remote atomics are atomic with respect to each other; on `shm` also with respect to
//!   the owner's own processor atomics on the same word.

pub(crate) mod barrier;
pub mod shm;

use crate::error::Result;
use crate::gmem::{GlobalAddr, Segment};

/// A physical place in the job's memory: the resolved form of a [`GlobalAddr`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    /// Physical rank that owns the memory.
    pub rank: u32,
    /// Which of its segments.
    pub segment: Segment,
    /// Byte offset in that segment.
    pub offset: u64,
    /// The address the caller used, for error messages.
    pub ga: GlobalAddr,
}

/// Width of an atomic word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// 4 bytes.
    W4,
    /// 8 bytes.
    W8,
}

impl Width {
    /// Bytes in the word.
    pub const fn bytes(self) -> u32 {
        match self {
            Width::W4 => 4,
            Width::W8 => 8,
        }
    }
}

/// A read-modify-write on one word. Operands of 4-byte atomics use the low 32 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicOp {
    /// Store `new` if the word equals `expected`.
    CompareSwap {
        /// Value the word must hold.
        expected: u64,
        /// Value stored when it does.
        new: u64,
    },
    /// Store the operand.
    Swap(u64),
    /// Wrapping add.
    Add(u64),
    /// Bitwise exclusive or.
    Xor(u64),
    /// Bitwise or.
    Or(u64),
    /// Bitwise and.
    And(u64),
    /// Read the word atomically.
    Load,
    /// Write the word atomically.
    Store(u64),
}

/// One contiguous piece of a noncontiguous transfer: `len` bytes at byte `local` of the
/// local buffer and at byte `remote` after the remote location.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Run {
    /// Offset in the local buffer.
    pub local: u64,
    /// Offset from the remote location.
    pub remote: u64,
    /// Bytes.
    pub len: u64,
}

/// The state of a rank's memory that the runtime above needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentSizes {
    /// Bytes of starter memory.
    pub starter: u64,
    /// Bytes of symmetric heap.
    pub heap: u64,
}

/// What every transport provides. Ranks here are physical ranks; rank remapping is the
/// world layer's business.
pub trait Transport: Send + Sync {
    /// This process's physical rank.
    fn rank(&self) -> u32;
    /// Number of ranks in the job.
    fn procs(&self) -> u32;
    /// Sizes of the starter memory and symmetric heap (the same on every rank).
    fn sizes(&self) -> SegmentSizes;
    /// Writes `src` to `dst`. Returns at local completion.
    fn put(&self, dst: Location, src: &[u8]) -> Result<()>;
    /// Reads `dst.len()` bytes at `src`. Returns when the data is in `dst`.
    fn get(&self, src: Location, dst: &mut [u8]) -> Result<()>;
    /// Writes many runs of `src` to one remote segment in one call (issue order kept).
    /// Every run is checked against both buffers before it is copied.
    fn put_runs(&self, dst: Location, src: &[u8], runs: &[Run]) -> Result<()>;
    /// Reads many runs from one remote segment into `dst` in one call.
    fn get_runs(&self, src: Location, dst: &mut [u8], runs: &[Run]) -> Result<()>;
    /// Checks that `len` bytes at `loc` lie in registered memory, without moving any.
    fn check_range(&self, loc: Location, len: u64) -> Result<()>;
    /// Copies `len` bytes between two locations, neither of which need be local.
    /// Returns at local completion.
    fn copy(&self, dst: Location, src: Location, len: u64) -> Result<()>;
    /// Does `op` on the word at `target` and returns the word's previous value.
    fn atomic(&self, target: Location, width: Width, op: AtomicOp) -> Result<u64>;
    /// Makes every earlier write to `rank` visible there.
    fn flush(&self, rank: u32) -> Result<()>;
    /// Makes every earlier write visible at its target.
    fn flush_all(&self) -> Result<()>;
    /// Without waiting: whether every earlier write is visible at its target.
    fn test_all(&self) -> Result<bool>;
    /// Waits until every rank has called `barrier`; implies `flush_all` and makes every
    /// earlier write visible to plain loads on every rank.
    fn barrier(&self) -> Result<()>;
    /// Collective: every rank contributes one word; `out[r]` receives rank r's word.
    fn allgather_u64(&self, value: u64, out: &mut [u64]) -> Result<()>;
    /// Makes `len` bytes of this process's memory at `base` reachable by other ranks as
    /// registration slot `slot`.
    fn publish_region(&self, slot: u8, base: usize, len: u64, color: u32) -> Result<()>;
    /// Makes registration slot `slot` unreachable.
    fn retract_region(&self, slot: u8) -> Result<()>;
    /// This process's address of `offset` in its own starter memory or heap.
    fn local_address(&self, segment: Segment, offset: u64) -> Option<usize>;
    /// Ends the whole job with `message`; never returns.
    fn abort(&self, message: &str) -> !;
    /// Leaves the job: waits for every rank to finalize, then releases resources.
    fn finalize(&self) -> Result<()>;
}

/// Picks and starts the transport for this process from its environment: the `shm`
/// transport of a `gaspar run` job, or a private 1-rank job when there is no launcher.
pub(crate) fn select() -> Result<Box<dyn Transport>> {
    Ok(Box::new(shm::ShmTransport::attach_from_env()?))
}
