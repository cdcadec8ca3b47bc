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
//! * [`Transport::get`] and [`Transport::atomic`] return when the value has arrived, and
//!   an atomic's write is then complete at its target (no flush needed for it).
//! * A get after a put from the same rank to the same location sees the put.
//! * Remote atomics are atomic with respect to each other; on `shm`, and on `mpi` when
//!   every rank maps every other's window (one host), they are the processor's atomic
//!   instructions ([`processor_atomics`]), so also atomic with respect to the owner's own
//!   processor atomics on the same word.
//! * [`Transport::accumulate`] completes as a put does; each element's update is atomic
//!   with respect to other accumulates from any rank; one rank's accumulates to one
//!   target are applied in issue order, and its later operations there see them.

pub(crate) mod accumulate;
mod any;
pub(crate) mod barrier;
pub(crate) mod cpu_quota;
#[cfg(feature = "mpi")]
pub mod mpi;
pub(crate) mod processor_atomics;
pub(crate) mod run_queue;
pub(crate) mod seqlock;
pub mod shm;
pub(crate) mod team;
pub(crate) mod wait;

/// Which writes can end a wait (see [`Transport::wait`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Writers {
    /// Puts as well as atomics: a sleeper must make every core's pending stores visible
    /// before it looks a last time (on `shm`, `membarrier`, an interrupt on every core
    /// that runs a rank), since a put looks whether to ring without a fence of its own.
    Any,
    /// Only atomics of this library (a sequentially consistent read-modify-write, then a
    /// look at the bell): a fence of the sleeper's own completes the handshake, and no
    /// other core is interrupted.
    ///
    /// Why no wake-up is lost (C++20's rules for the single order S of sequentially
    /// consistent operations, [atomics.order] 4, which Rust's atomics follow): the
    /// sleeper raises the flag (R, SeqCst), fences (X, SeqCst) and reads the word (B);
    /// the writer adds to the word (A, SeqCst) and reads the flag (L, SeqCst). Were both
    /// to miss, B read the word before A, so X precedes A in S (4.3), and L read the
    /// flag before R, so L precedes R (4.1); with program order, A before L and R before
    /// X, that is the cycle X, A, L, R, X in S, which cannot be. (loom, which models
    /// SeqCst loads and read-modify-writes as acquire-release, cannot check this; its
    /// model of the doorbell has a fence on both sides.)
    Atomics,
}

pub use self::accumulate::{AccKind, AccShape};
pub use self::any::AnyTransport;
/// Local copies (packing buffers) with the copy engine the CPU was calibrated for.
pub(crate) use self::shm::copy::copy_slice as copy_local;
use self::team::{TeamCall, TransportTeam};
use crate::addr::{GlobalAddr, Segment};
use crate::error::{Error, Result};

/// A physical place in the job's memory: the resolved form of a [`GlobalAddr`].
///
/// Every field is a whole word: the rank and the segment share one
/// ([`rank`](Self::rank), [`segment`](Self::segment)). A location is built on every
/// transfer's path and often copied whole on the way down (out of a `Result`, into a
/// transport's call) with 8-byte loads; had the 4-byte rank and the segment's two bytes
/// been stored separately, the load spanning them could not be forwarded from the stores
/// (a store-forwarding stall: a blocking 8-byte put took 18.4 ns instead of 11.5 on an
/// Intel Xeon Sapphire Rapids, in a build with the `mpi` feature).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    /// Byte offset in that segment.
    pub offset: u64,
    /// The address the caller used, for error messages.
    pub ga: GlobalAddr,
    /// The physical rank that owns the memory (low 32 bits) and which of its segments
    /// (above them: [`Segment::code`]).
    place: u64,
}

impl Location {
    /// `offset` in `segment` of physical rank `rank`, reached through `ga`.
    #[inline(always)]
    pub fn new(rank: u32, segment: Segment, offset: u64, ga: GlobalAddr) -> Location {
        Location {
            offset,
            ga,
            place: u64::from(rank) | segment.code() << 32,
        }
    }

    /// The physical rank that owns the memory.
    #[inline(always)]
    pub fn rank(&self) -> u32 {
        self.place as u32
    }

    /// Which of its segments.
    #[inline(always)]
    pub fn segment(&self) -> Segment {
        // Never code 0 (no segment): `new` stored a segment's code.
        Segment::from_code(self.place >> 32).unwrap_or(Segment::Heap)
    }

    /// The same place `offset` bytes into its segment.
    #[inline(always)]
    pub fn at_offset(self, offset: u64) -> Location {
        Location { offset, ..self }
    }
}

/// Width of an atomic word.
///
/// ```
/// use gaspar::{AtomicWord, Width};
/// assert_eq!(u32::WIDTH, Width::W4);
/// assert_eq!(Width::W8.bytes(), 8);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// 4 bytes.
    W4,
    /// 8 bytes.
    W8,
}

impl Width {
    /// Bytes in the word.
    ///
    /// ```
    /// use gaspar::Width;
    /// assert_eq!(Width::W4.bytes(), 4);
    /// ```
    pub const fn bytes(self) -> u32 {
        match self {
            Width::W4 => 4,
            Width::W8 => 8,
        }
    }
}

/// A read-modify-write on one word. Operands of 4-byte atomics use the low 32 bits.
///
/// ```
/// use gaspar::{AtomicOp, Width};
/// let rt = gaspar::init()?;
/// let acp = rt.acp();
/// let word = acp.starter_ga(0)?;
/// acp.atomic_blocking(word, Width::W8, AtomicOp::Store(5))?;
/// // Returns the previous value.
/// assert_eq!(acp.atomic_blocking(word, Width::W8, AtomicOp::Add(2))?, 5);
/// let cas = AtomicOp::CompareSwap { expected: 7, new: 0 };
/// assert_eq!(acp.atomic_blocking(word, Width::W8, cas)?, 7);
/// assert_eq!(acp.atomic_blocking(word, Width::W8, AtomicOp::Load)?, 0);
/// rt.finalize()?;
/// # Ok::<(), gaspar::Error>(())
/// ```
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

impl AtomicOp {
    /// The operation as scalars (see [`from_parts`](Self::from_parts)).
    #[inline(always)]
    pub(crate) fn parts(self) -> (u8, u64, u64) {
        match self {
            AtomicOp::CompareSwap { expected, new } => (0, expected, new),
            AtomicOp::Swap(v) => (1, v, 0),
            AtomicOp::Add(v) => (2, v, 0),
            AtomicOp::Xor(v) => (3, v, 0),
            AtomicOp::Or(v) => (4, v, 0),
            AtomicOp::And(v) => (5, v, 0),
            AtomicOp::Load => (6, 0, 0),
            AtomicOp::Store(v) => (7, v, 0),
        }
    }

    /// The operation [`parts`](Self::parts) took apart (`code` is one it returned).
    pub(crate) fn from_parts(code: u8, a: u64, b: u64) -> AtomicOp {
        match code {
            0 => AtomicOp::CompareSwap {
                expected: a,
                new: b,
            },
            1 => AtomicOp::Swap(a),
            2 => AtomicOp::Add(a),
            3 => AtomicOp::Xor(a),
            4 => AtomicOp::Or(a),
            5 => AtomicOp::And(a),
            6 => AtomicOp::Load,
            7 => AtomicOp::Store(a),
            _ => unreachable!("{code} is no code `AtomicOp::parts` gives"),
        }
    }
}

/// One contiguous piece of a noncontiguous transfer: `len` bytes at byte `local` of the
/// local buffer and at byte `remote` after the remote location.
///
/// ```
/// use gaspar::{Handle, Run};
/// let rt = gaspar::init()?;
/// let acp = rt.acp();
/// let runs = [Run { local: 0, remote: 8, len: 2 }, Run { local: 2, remote: 0, len: 2 }];
/// let h = acp.put_runs(acp.starter_ga(0)?, &[1, 1, 2, 2], &runs, Handle::NULL)?;
/// acp.complete(h)?;
/// let mut out = [0u8; 2];
/// acp.get_blocking(&mut out, acp.starter_ga(0)?)?;
/// assert_eq!(out, [2, 2]);
/// rt.finalize()?;
/// # Ok::<(), gaspar::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Run {
    /// Offset in the local buffer.
    pub local: u64,
    /// Offset from the remote location.
    pub remote: u64,
    /// Bytes.
    pub len: u64,
}

/// The remote extent of `runs` (one past the furthest byte after the remote location),
/// after checking that each run lies inside a local buffer of `local_len` bytes; `what`
/// names the operation in the error.
pub(crate) fn runs_extent(runs: &[Run], local_len: usize, what: &'static str) -> Result<u64> {
    let mut extent = 0u64;
    for run in runs {
        let local_end = run.local.checked_add(run.len);
        let remote_end = run.remote.checked_add(run.len);
        match (local_end, remote_end) {
            (Some(l), Some(r)) if l <= local_len as u64 => extent = extent.max(r),
            (Some(_), Some(_)) => return Err(Error::invalid(what, "run outside the local buffer")),
            _ => return Err(Error::LengthOverflow { what: "run offset" }),
        }
    }
    Ok(extent)
}

/// A regular noncontiguous transfer: `chunk` contiguous bytes, repeated over levels whose
/// counts are `counts` (innermost first), `local_strides[k]` / `remote_strides[k]` bytes
/// apart on each side. (On MPI this is a derived datatype; on shared memory, nested loops.)
///
/// ```
/// use gaspar::Pattern;
/// // 3 chunks of 4 bytes: dense locally, 10 bytes apart remotely.
/// let p = Pattern { chunk: 4, counts: &[3], local_strides: &[4], remote_strides: &[10] };
/// assert_eq!(p.extent(p.remote_strides), Some(24));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Pattern<'a> {
    /// Contiguous bytes per chunk.
    pub chunk: u64,
    /// Repetitions per level, innermost first.
    pub counts: &'a [u64],
    /// Local byte stride per level.
    pub local_strides: &'a [u64],
    /// Remote byte stride per level.
    pub remote_strides: &'a [u64],
}

impl Pattern<'_> {
    /// Bytes from the first to one past the last byte of one side, or `None` on overflow.
    ///
    /// ```
    /// use gaspar::Pattern;
    /// let p = Pattern { chunk: 8, counts: &[2, 3], local_strides: &[8, 16], remote_strides: &[32, 128] };
    /// assert_eq!(p.extent(p.local_strides), Some(48));
    /// assert_eq!(p.extent(p.remote_strides), Some(8 + 32 + 256));
    /// ```
    pub fn extent(&self, strides: &[u64]) -> Option<u64> {
        self.counts
            .iter()
            .zip(strides)
            .try_fold(self.chunk, |acc, (&c, &s)| {
                acc.checked_add(c.checked_sub(1)?.checked_mul(s)?)
            })
    }

    /// Checks the pattern's shape and returns its (local, remote) extents; the local one
    /// must fit a buffer of `local_len` bytes. Every transport checks a pattern this way
    /// before moving anything.
    #[inline]
    pub(crate) fn checked_extents(&self, local_len: usize) -> Result<(u64, u64)> {
        // The errors are built out of line: their formatting in this function gave it a
        // frame that cost more than its loop.
        #[cold]
        #[inline(never)]
        fn malformed() -> crate::error::Error {
            crate::error::Error::invalid("pattern transfer", "malformed pattern")
        }
        #[cold]
        #[inline(never)]
        fn past_buffer(local: u64, local_len: usize) -> crate::error::Error {
            crate::error::Error::invalid(
                "pattern transfer",
                format!("local side spans {local} bytes of a {local_len}-byte buffer"),
            )
        }
        let levels = self.counts.len();
        if self.local_strides.len() != levels || self.remote_strides.len() != levels || levels > 31
        {
            return Err(malformed());
        }
        // Both sides in one pass (every strided transfer comes through here twice, and
        // separate passes with their own checks cost 80 instructions at one level).
        let (mut local, mut remote) = (self.chunk, self.chunk);
        for k in 0..levels {
            let Some(repeats) = self.counts[k].checked_sub(1) else {
                return Err(malformed());
            };
            let grown = |extent: u64, stride: u64| extent.checked_add(repeats.checked_mul(stride)?);
            let (Some(l), Some(r)) = (
                grown(local, self.local_strides[k]),
                grown(remote, self.remote_strides[k]),
            ) else {
                return Err(crate::error::Error::LengthOverflow {
                    what: "pattern extent",
                });
            };
            (local, remote) = (l, r);
        }
        if local > local_len as u64 {
            return Err(past_buffer(local, local_len));
        }
        Ok((local, remote))
    }

    /// Calls `f(local offset, remote offset)` for every chunk, in order.
    ///
    /// ```
    /// use gaspar::Pattern;
    /// let p = Pattern { chunk: 4, counts: &[2, 2], local_strides: &[4, 8], remote_strides: &[100, 1000] };
    /// let mut chunks = Vec::new();
    /// p.for_each(|local, remote| {
    ///     chunks.push((local, remote));
    ///     Ok::<(), ()>(())
    /// })
    /// .unwrap();
    /// assert_eq!(chunks, [(0, 0), (4, 100), (8, 1000), (12, 1100)]);
    /// ```
    #[inline]
    pub fn for_each<E>(&self, mut f: impl FnMut(u64, u64) -> Result<(), E>) -> Result<(), E> {
        let levels = self.counts.len();
        // No level: one chunk.
        let (inner_count, inner_local, inner_remote) = match levels {
            0 => (1, 0, 0),
            _ => (
                self.counts[0],
                self.local_strides[0],
                self.remote_strides[0],
            ),
        };
        if levels <= 1 {
            // One row (a 2-D transfer): without the outer levels' index, whose zeroing
            // was a fifth of this function at two chunks.
            let (mut l, mut r) = (0, 0);
            for _ in 0..inner_count {
                f(l, r)?;
                l += inner_local;
                r += inner_remote;
            }
            return Ok(());
        }
        let mut index = [0u64; 32];
        let (mut local_base, mut remote_base) = (0u64, 0u64);
        loop {
            let (mut l, mut r) = (local_base, remote_base);
            for _ in 0..inner_count {
                f(l, r)?;
                l += inner_local;
                r += inner_remote;
            }
            let mut k = 1;
            loop {
                if k >= levels {
                    return Ok(());
                }
                index[k] += 1;
                local_base += self.local_strides[k];
                remote_base += self.remote_strides[k];
                if index[k] < self.counts[k] {
                    break;
                }
                local_base -= self.counts[k] * self.local_strides[k];
                remote_base -= self.counts[k] * self.remote_strides[k];
                index[k] = 0;
                k += 1;
            }
        }
    }
}

/// The local side of a noncontiguous put ([`Transport::put_pieces`]): the bytes to write
/// and where each piece lands after the remote location.
///
/// One call for every shape instead of a put/get pair per shape. The contiguous transfer
/// keeps calls of its own ([`Transport::put`], [`Transport::get`]): a shape to match on
/// measurably slowed the 2-3 ns small put and get on shm (by 0.2-0.3 ns, 7-10 %, as
/// measured with `gaspar bench`), which programs issue in tight loops.
#[derive(Debug, Clone, Copy)]
pub enum Outgoing<'a> {
    /// Runs of one buffer at arbitrary offsets on both sides.
    Runs {
        /// The local buffer.
        src: &'a [u8],
        /// Where each run lies in it and after the remote location.
        runs: &'a [Run],
    },
    /// An I/O vector: `srcs[k]` to byte `offsets[k]` after the remote location.
    Segments {
        /// The local pieces.
        srcs: &'a [&'a [u8]],
        /// Their remote offsets, one per piece.
        offsets: &'a [u64],
    },
    /// A regular pattern of one buffer (a derived datatype on MPI, nested loops on shm).
    Pattern {
        /// The local buffer.
        src: &'a [u8],
        /// The pattern on both sides.
        pattern: &'a Pattern<'a>,
    },
}

/// The local side of a noncontiguous get ([`Transport::get_pieces`]): the buffers to fill
/// and where each piece comes from after the remote location (the mirror of
/// [`Outgoing`]).
#[derive(Debug)]
pub enum Incoming<'a, 'b> {
    /// Runs of one buffer at arbitrary offsets on both sides.
    Runs {
        /// The local buffer.
        dst: &'a mut [u8],
        /// Where each run lies in it and after the remote location.
        runs: &'a [Run],
    },
    /// An I/O vector: byte `offsets[k]` after the remote location into `dsts[k]`.
    Segments {
        /// The local pieces.
        dsts: &'a mut [&'b mut [u8]],
        /// Their remote offsets, one per piece.
        offsets: &'a [u64],
    },
    /// A regular pattern of one buffer.
    Pattern {
        /// The local buffer.
        dst: &'a mut [u8],
        /// The pattern on both sides.
        pattern: &'a Pattern<'a>,
    },
}

/// The extent of an I/O vector on its remote side: one past the furthest byte any segment
/// touches, counted from the remote location. Checks that there is one offset per segment
/// and that no end overflows; the caller checks the extent against the segment once.
#[inline]
pub(crate) fn segments_extent(
    lens: impl ExactSizeIterator<Item = usize>,
    offsets: &[u64],
) -> Result<u64> {
    if lens.len() != offsets.len() {
        return Err(crate::error::Error::invalid(
            "vector transfer",
            format!(
                "{} local segments but {} remote offsets",
                lens.len(),
                offsets.len()
            ),
        ));
    }
    let mut extent = 0u64;
    let mut overflow = false;
    for (len, &offset) in lens.zip(offsets) {
        let (end, o) = offset.overflowing_add(len as u64);
        overflow |= o;
        extent = extent.max(end);
    }
    if overflow {
        return Err(crate::error::Error::LengthOverflow {
            what: "vector segment offset",
        });
    }
    Ok(extent)
}

/// The state of a rank's memory that the runtime above needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentSizes {
    /// Bytes of starter memory.
    pub starter: u64,
    /// Bytes of symmetric heap.
    pub heap: u64,
}

/// What a transport call returns. The error is boxed so that a result fits in registers:
/// a `Result<(), Error>` is 64 bytes and comes back through memory, which every transfer
/// would pay for; only a failing call pays for the box. `?` converts both ways.
pub type TransportResult<T> = std::result::Result<T, Box<Error>>;

/// [`Transport::agree_u64`] through [`Transport::allgather_u64`]: whether every rank
/// passed `value`. No allocation for the usual job sizes (a barrier is on many programs'
/// hot path).
pub(crate) fn agree_by_allgather<T: Transport + ?Sized>(
    transport: &T,
    value: u64,
) -> TransportResult<bool> {
    let procs = transport.procs() as usize;
    let mut small = [0u64; 16];
    let mut large = Vec::new();
    let all = if procs <= small.len() {
        &mut small[..procs]
    } else {
        large.resize(procs, 0);
        &mut large[..]
    };
    transport.allgather_u64(value, all)?;
    Ok(all.iter().all(|&word| word == value))
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
    fn put(&self, dst: Location, src: &[u8]) -> TransportResult<()>;
    /// Writes `src` to `dst` and returns when the write is complete at the target (a put
    /// plus a flush to that rank, which transports can do in one step).
    fn put_flushed(&self, dst: Location, src: &[u8]) -> TransportResult<()>;
    /// Reads `dst.len()` bytes at `src`. Returns when the data is in `dst`.
    fn get(&self, src: Location, dst: &mut [u8]) -> TransportResult<()>;
    /// Writes the pieces of `data` after `dst`, in order, in one call. The shape is
    /// checked as a whole against both sides before any byte moves. Returns at local
    /// completion.
    fn put_pieces(&self, dst: Location, data: Outgoing<'_>) -> TransportResult<()>;
    /// Reads the pieces `data` names after `src` into its buffers, in one call (checked
    /// as [`put_pieces`](Self::put_pieces) checks). Returns when the data has arrived.
    fn get_pieces(&self, src: Location, data: Incoming<'_, '_>) -> TransportResult<()>;
    /// Checks that `len` bytes at `loc` lie in registered memory, without moving any.
    fn check_range(&self, loc: Location, len: u64) -> TransportResult<()>;
    /// Copies `len` bytes between two locations, neither of which need be local.
    /// Returns at local completion.
    fn copy(&self, dst: Location, src: Location, len: u64) -> TransportResult<()>;
    /// Does `op` on the word at `target` and returns the word's previous value.
    fn atomic(&self, target: Location, width: Width, op: AtomicOp) -> TransportResult<u64>;
    /// [`atomic`](Self::atomic) on a word whose change no wait is watching for (a lock
    /// word taken, or released with nobody waiting: the coarray layer's waiters bit), so
    /// the target's sleepers need no wake-up: on `shm` it skips the ring of the target's
    /// memory doorbell that `atomic` makes whenever a thread sleeps on that memory.
    fn atomic_unwatched(
        &self,
        target: Location,
        width: Width,
        op: AtomicOp,
    ) -> TransportResult<u64>;
    /// [`atomic`](Self::atomic) on the word `offset` bytes into physical rank `rank`'s
    /// symmetric heap: for a caller that knows the segment (a typed array), so that
    /// nothing decodes it. `ga` gives the address the caller used, for an error's message;
    /// only a path that fails calls it (computing it cost a few instructions per call).
    #[inline(always)]
    fn atomic_heap(
        &self,
        rank: u32,
        offset: u64,
        ga: impl FnOnce() -> GlobalAddr,
        width: Width,
        op: AtomicOp,
    ) -> TransportResult<u64> {
        self.atomic(Location::new(rank, Segment::Heap, offset, ga()), width, op)
    }
    /// [`put_flushed`](Self::put_flushed) to `offset` bytes into physical rank `rank`'s
    /// symmetric heap (see [`atomic_heap`](Self::atomic_heap)).
    #[inline(always)]
    fn put_heap(
        &self,
        rank: u32,
        offset: u64,
        ga: impl FnOnce() -> GlobalAddr,
        src: &[u8],
    ) -> TransportResult<()> {
        self.put_flushed(Location::new(rank, Segment::Heap, offset, ga()), src)
    }
    /// [`get`](Self::get) from `offset` bytes into physical rank `rank`'s symmetric heap
    /// (see [`atomic_heap`](Self::atomic_heap)).
    #[inline(always)]
    fn get_heap(
        &self,
        rank: u32,
        offset: u64,
        ga: impl FnOnce() -> GlobalAddr,
        dst: &mut [u8],
    ) -> TransportResult<()> {
        self.get(Location::new(rank, Segment::Heap, offset, ga()), dst)
    }
    /// Adds `scale * src` to the elements of `kind` at `dst` (ARMCI's accumulate),
    /// `shape` saying where they lie on both sides (checked as a whole first; `scale` is
    /// one element). Completes as [`put`](Self::put) does; see the module documentation
    /// for its atomicity and order. By default each run is read, updated and written back
    /// under the target's [`accumulate_lock`](Self::accumulate_lock).
    fn accumulate(
        &self,
        dst: Location,
        src: &[u8],
        shape: AccShape<'_>,
        kind: AccKind,
        scale: &[u8],
    ) -> TransportResult<()> {
        Ok(accumulate::under_lock(self, dst, src, shape, kind, scale)?)
    }
    /// Does `op` on `rank`'s accumulate lock and returns its previous value: an 8-byte
    /// word of the runtime's own, outside the starter memory and the heap, that no global
    /// address names (so no user transfer can touch it). Zero when the job starts.
    fn accumulate_lock(&self, rank: u32, op: AtomicOp) -> TransportResult<u64>;
    /// Makes every earlier write to `rank` visible there.
    fn flush(&self, rank: u32) -> TransportResult<()>;
    /// Makes every earlier write visible at its target.
    fn flush_all(&self) -> TransportResult<()>;
    /// Without waiting: whether every earlier write is visible at its target.
    fn test_all(&self) -> TransportResult<bool>;
    /// Waits until every rank has called `barrier`; implies `flush_all` and makes every
    /// earlier write visible to plain loads on every rank.
    fn barrier(&self) -> TransportResult<()>;
    /// Collective: every rank contributes one word; `out[r]` receives rank r's word.
    /// Implies a [`barrier`](Self::barrier).
    fn allgather_u64(&self, value: u64, out: &mut [u64]) -> TransportResult<()>;
    /// Collective: a [`barrier`](Self::barrier) that also tells whether every rank passed
    /// the same `value` (every rank gets the same answer). The runtime's collectives
    /// agree on their call through it. By default an [`allgather_u64`](Self::allgather_u64);
    /// the shm transport (and mpi, when the job's ranks share one host) carries the words
    /// through its barrier's signals instead.
    fn agree_u64(&self, value: u64) -> TransportResult<bool> {
        agree_by_allgather(self, value)
    }
    /// Makes `len` bytes of this process's memory at `base` reachable by other ranks as
    /// registration slot `slot`.
    fn publish_region(&self, slot: u8, base: usize, len: u64, color: u32) -> TransportResult<()>;
    /// Makes registration slot `slot` unreachable.
    fn retract_region(&self, slot: u8) -> TransportResult<()>;
    /// This process's address of the `len` bytes at `loc` when plain loads and stores
    /// reach them (OpenSHMEM's `shmem_ptr`): the starter memory and heap of this rank on
    /// every transport, and of every rank on `shm` and on `mpi` when its window is shared
    /// (every rank on one host). `None` otherwise, or out of bounds.
    fn mapped_address(&self, loc: Location, len: u64) -> Option<usize>;
    /// True when this process maps rank `rank`'s memory (what [`mapped_address`] reaches)
    /// at the address `rank` itself uses, so that pointers `rank` stores into that memory
    /// are valid here. Always true of this rank.
    ///
    /// [`mapped_address`]: Transport::mapped_address
    fn maps_at_home(&self, rank: u32) -> bool {
        rank == self.rank()
    }
    /// True when this transport's atomics on the word at `loc` are the processor's atomic
    /// instructions on the memory [`mapped_address`] gives for it, so that a program's own
    /// atomics through that address are atomic with them: starter memory and the heap on
    /// `shm`, and on `mpi` when every rank of the job uses the shared window
    /// (`GASPAR_MPI_DIRECT`, agreed at start-up).
    ///
    /// [`mapped_address`]: Transport::mapped_address
    fn processor_atomics_at(&self, loc: Location) -> bool;
    /// The cores the job's ranks on this host may keep busy at once (the union of their
    /// affinity masks, fewer under a CPU quota), which waits weigh the ranks awake against.
    fn usable_cores(&self) -> usize;
    /// Ends the whole job with `message`; never returns.
    fn abort(&self, message: &str) -> !;
    /// Ends the whole job on purpose, with exit status `status` for the job (a Fortran
    /// ERROR STOP), printing `line` (one write) unless another rank ended the job first
    /// (where the transport can tell), so that a job says why it ended once; never
    /// returns.
    fn end_job(&self, status: i32, line: Option<&str>) -> !;
    /// Whether the job is already being ended (a rank aborted it, or the launcher).
    fn job_aborted(&self) -> bool;
    /// With `report`, asks that this rank's death be reported to the other ranks (their
    /// waits for it end with [`Error::RankGone`]) instead of ending the job; without, its
    /// death ends the job again. `false` where the transport cannot go on without a rank
    /// (MPI without fault tolerance).
    fn report_failure_instead_of_abort(&self, _report: bool) -> bool {
        false
    }
    /// Leaves the job as a finalize does, but without waiting for the other ranks: a rank
    /// that failed while the others went on never joins the finalize barrier (only where
    /// [`report_failure_instead_of_abort`](Self::report_failure_instead_of_abort) holds;
    /// elsewhere nothing). The process must exit without using the transport again.
    fn finalize_alone(&self) -> TransportResult<()> {
        Ok(())
    }
    /// Whether `rank` (a transport rank) exited without finalizing; `false` where the
    /// transport cannot tell.
    fn rank_failed(&self, _rank: u32) -> bool {
        false
    }
    /// Counts a departure of this rank (it is about to stop or fail on purpose) in every
    /// rank's count of [`departures`](Self::departures); nothing where the transport
    /// keeps no count.
    fn note_departure(&self) {}
    /// How many departures this rank has been told of: ranks that noted one
    /// ([`note_departure`](Self::note_departure)) and ranks whose process ended without
    /// finalizing (counted by the launcher after it recorded the exit). 0 while every
    /// rank runs, so that a check of every rank is needed only once it is not; `None`
    /// where the transport keeps no count.
    fn departures(&self) -> Option<u64> {
        None
    }
    /// Whether `rank` (a transport rank) has taken in every message this rank sent it
    /// that this rank did not wait for (a one-way broadcast's); `true` where the
    /// transport sends none. A rank that leaves the job first waits for it, so that its
    /// messages are not lost with it. The receiver's taking one in is a write to this
    /// rank's memory for [`wait`](Self::wait).
    fn sent_messages_taken(&self, _rank: u32) -> bool {
        true
    }
    /// Whether a broadcast of `len` bytes on `team` asked for one way
    /// ([`TeamCall::Broadcast`]'s `one_way`) is sent so: from the root straight to each
    /// member, every member depending on the root alone, the root on nobody.
    fn broadcasts_one_way(&self, _team: &TransportTeam, _len: usize) -> bool {
        false
    }
    /// Waits until `ready()` returns true (the one wait of gaspar, see [`wait`]).
    /// `ready` looks at memory of rank `watched`; the wait may sleep until that memory
    /// is written by an atomic or by a put that is then flushed (`writers` says which
    /// may end it). Ends with an error when the job aborts, or when rank `awaited`
    /// (whose action the wait expects) finalizes or exits first.
    fn wait(
        &self,
        watched: u32,
        awaited: Option<u32>,
        writers: Writers,
        ready: &mut dyn FnMut() -> Result<bool>,
    ) -> TransportResult<()>;
    /// Collective over the members of `parent`: completes the team the world layer worked
    /// out for this rank's `color` and `key` (`team`, `None` when `color` is `None`) with
    /// what the transport needs to run its collectives (on `mpi`, a communicator split
    /// from the parent's).
    fn split_team(
        &self,
        parent: &TransportTeam,
        color: Option<u32>,
        key: u32,
        team: Option<TransportTeam>,
    ) -> TransportResult<Option<TransportTeam>>;
    /// Collective over the members of `team`: runs `call` if every member passed the same
    /// `word` (which describes the call: its kind and sizes), and returns whether they
    /// did; when not, no buffer has changed. Ends with an error when the job aborts or a
    /// member is gone.
    fn team_call(
        &self,
        team: &TransportTeam,
        word: u64,
        call: &mut TeamCall<'_, '_>,
    ) -> TransportResult<bool>;
    /// Leaves the job: waits for every rank to finalize, then releases resources.
    fn finalize(&self) -> TransportResult<()>;
}

/// The word `finalize` contributes to an agreement of the ranks' collective calls
/// ([`Transport::agree_u64`]) on a transport that agrees on it (`mpi`): the memory
/// layer's encoding of [`Collective::Finalize`](crate::error::Collective::Finalize), a
/// kind of call no other word has.
pub(crate) const FINALIZE_AGREEMENT: u64 = 5 << 60;

/// Picks and starts the transport for this process from its environment: the `shm`
/// transport of a `gaspar run` job, or a private 1-rank job when there is no launcher.
pub(crate) fn select() -> Result<AnyTransport> {
    if std::env::var_os(shm::env::JOB).is_none() {
        if let Some(size) = mpirun_size() {
            return under_mpirun(size);
        }
    }
    Ok(AnyTransport::Shm(shm::ShmTransport::attach_from_env()?))
}

/// Whether this process was started by neither `gaspar run` nor an MPI launcher: it
/// would run as a private job of one rank.
pub(crate) fn started_alone() -> bool {
    std::env::var_os(shm::env::JOB).is_none() && mpirun_size().is_none()
}

/// The transport of a process that mpirun started as one of `size` ranks.
#[cfg(feature = "mpi")]
fn under_mpirun(_size: u64) -> Result<AnyTransport> {
    Ok(AnyTransport::Mpi(mpi::MpiTransport::start()?))
}

/// Without the `mpi` feature, a rank of a larger mpirun job is an error, not one private
/// job per process (which would run N copies of the program side by side, silently).
#[cfg(not(feature = "mpi"))]
fn under_mpirun(size: u64) -> Result<AnyTransport> {
    if size == 1 {
        return Ok(AnyTransport::Shm(shm::ShmTransport::attach_from_env()?));
    }
    Err(crate::error::Error::Environment(format!(
        "started by mpirun as one of {} ranks, but this program was built without gaspar's \
         `mpi` feature: rebuild it with `--features mpi`, or start it with `gaspar run`",
        if size == 0 {
            "several".to_string()
        } else {
            size.to_string()
        }
    )))
}

/// The job size when the environment says mpirun (OpenMPI, MPICH/Hydra or PMIx) started
/// this process (0 when it does not say how many ranks).
fn mpirun_size() -> Option<u64> {
    let size = |v: &str| std::env::var(v).ok().and_then(|s| s.parse().ok());
    if let Some(n) = size("OMPI_COMM_WORLD_SIZE").or_else(|| size("PMI_SIZE")) {
        return Some(n);
    }
    ["PMIX_RANK", "MPI_LOCALNRANKS"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
        .then_some(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_gives_back_its_rank_segment_and_offset() {
        let segments = [Segment::Starter, Segment::Heap]
            .into_iter()
            .chain((0..=u8::MAX).map(Segment::Registered));
        for segment in segments {
            for rank in [0, 1, 7, u32::MAX - 1, u32::MAX] {
                let ga = GlobalAddr::NULL;
                let loc = Location::new(rank, segment, 4096, ga);
                assert_eq!(
                    (loc.rank(), loc.segment(), loc.offset, loc.ga),
                    (rank, segment, 4096, ga)
                );
                let moved = loc.at_offset(u64::MAX);
                assert_eq!(
                    (moved.rank(), moved.segment(), moved.offset),
                    (rank, segment, u64::MAX)
                );
            }
        }
    }

    #[test]
    fn an_atomic_op_taken_apart_is_put_back_together() {
        let ops = [
            AtomicOp::CompareSwap {
                expected: 3,
                new: u64::MAX,
            },
            AtomicOp::Swap(5),
            AtomicOp::Add(u64::MAX),
            AtomicOp::Xor(7),
            AtomicOp::Or(9),
            AtomicOp::And(11),
            AtomicOp::Load,
            AtomicOp::Store(13),
        ];
        let mut codes = std::collections::BTreeSet::new();
        for op in ops {
            let (code, a, b) = op.parts();
            assert!(codes.insert(code), "{op:?}: code {code} used twice");
            assert_eq!(AtomicOp::from_parts(code, a, b), op);
        }
    }
}
