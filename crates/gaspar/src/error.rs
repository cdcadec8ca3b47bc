//! The one error type of the runtime.

use crate::addr::GlobalAddr;

/// Everything that can go wrong in a gaspar call. Bad user input is always reported
/// through one of these variants, never by a panic or a wild memory access.
///
/// ```
/// use gaspar::Error;
/// let rt = gaspar::init()?;
/// let slot = rt.alloc::<u64>(1)?;
/// match slot.get(rt.procs(), 0) {
///     Err(Error::RankOutOfRange { rank, procs }) => assert_eq!(rank, procs),
///     other => panic!("expected RankOutOfRange, got {other:?}"),
/// }
/// slot.free()?;
/// rt.finalize()?;
/// # Ok::<(), gaspar::Error>(())
/// ```
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A rank number outside `0..procs`.
    #[error("rank {rank} is out of range: the job has {procs} ranks")]
    RankOutOfRange {
        /// The rank that was asked for.
        rank: u32,
        /// The number of ranks in the job.
        procs: u32,
    },
    /// A global address whose segment is not registered (or was unregistered).
    #[error("global address {ga} names no registered memory")]
    NotRegistered {
        /// The address that was decoded.
        ga: GlobalAddr,
    },
    /// An access that runs past the end of the memory its address names.
    #[error(
        "access of {len} bytes at {ga} runs past the end of its segment ({segment_len} bytes)"
    )]
    OutOfBounds {
        /// Start of the access.
        ga: GlobalAddr,
        /// Length of the access.
        len: u64,
        /// Length of the segment the address points into.
        segment_len: u64,
    },
    /// An atomic on a word that is not aligned to its width.
    #[error("atomic of {width} bytes at {ga} is not {width}-byte aligned")]
    MisalignedAtomic {
        /// The target of the atomic.
        ga: GlobalAddr,
        /// Width of the atomic in bytes (4 or 8).
        width: u32,
    },
    /// A remote atomic on memory that cannot take one on this transport.
    #[error("atomic at {ga}: {reason}")]
    AtomicUnsupported {
        /// The target of the atomic.
        ga: GlobalAddr,
        /// Why it is not possible.
        reason: &'static str,
    },
    /// A length or an address computation that does not fit in 64 bits / the address layout.
    #[error("length overflow: {what}")]
    LengthOverflow {
        /// What overflowed.
        what: &'static str,
    },
    /// The symmetric heap has no free block large enough.
    #[error("symmetric heap exhausted: asked for {requested} bytes, largest free block is {largest_free} of {heap_len}")]
    HeapExhausted {
        /// Bytes asked for.
        requested: u64,
        /// Largest free block.
        largest_free: u64,
        /// Whole heap size.
        heap_len: u64,
    },
    /// A symmetric allocation would land at different offsets on different ranks, because
    /// local allocations shaped their heaps differently.
    #[error("symmetric allocation of {len} bytes would land at heap offset {offset:#x} here but {} on rank {other_rank}: local (group) allocations have shaped the heaps differently; nothing was allocated", match other_offset { Some(o) => format!("{o:#x}"), None => "nowhere (its heap is full)".to_string() })]
    HeapDiverged {
        /// Bytes asked for.
        len: u64,
        /// Where it would land here.
        offset: u64,
        /// A rank where it would land elsewhere.
        other_rank: u32,
        /// Where, or `None` when that rank's heap has no room.
        other_offset: Option<u64>,
    },
    /// A call from another thread while MPI runs below MPI_THREAD_MULTIPLE.
    #[error("MPI was initialized at thread level {level}, not MPI_THREAD_MULTIPLE: gaspar may be used only from the thread that started it")]
    WrongThread {
        /// The MPI thread level in force.
        level: i32,
    },
    /// Ranks made different collective calls, or the same allocation call with different
    /// arguments. Every rank in the call gets this error, and the call does nothing.
    #[error("mismatched collective: rank {rank} called {call} while rank {other_rank} called {other_call}")]
    MismatchedCollective {
        /// This rank.
        rank: u32,
        /// The call this rank made.
        call: Collective,
        /// A rank that disagrees.
        other_rank: u32,
        /// The call that rank made.
        other_call: Collective,
    },
    /// A handle to a heap allocation that was freed (or forgotten by a reset): nothing
    /// is done through it, even when a newer allocation lies at the same offset.
    #[error("the allocation of {len} bytes at heap offset {offset:#x} was freed (or forgotten by a reset): its handle is stale")]
    FreedAllocation {
        /// Where the allocation was.
        offset: u64,
        /// Its length.
        len: u64,
    },
    /// An access to the heap that is not inside one live allocation: past the end of the
    /// allocation it starts in, or where no allocation is. Nothing was moved.
    #[error("access of {len} bytes at {ga} is not inside one live heap allocation: {}", match allocation { Some((o, l)) => format!("it runs past the end of the allocation of {l} bytes at heap offset {o:#x}"), None => "no live allocation is there".to_string() })]
    OutsideAllocation {
        /// Start of the access.
        ga: GlobalAddr,
        /// Length of the access.
        len: u64,
        /// The live allocation the access starts in, as (heap offset, length), if any.
        allocation: Option<(u64, u64)>,
    },
    /// Elements `index..index + count` of a symmetric array of `len` elements per rank:
    /// past its end. Nothing was moved.
    #[error("elements {index}..{} are out of range: the symmetric array has {len} per rank", *index as u128 + *count as u128)]
    IndexOutOfRange {
        /// First element of the access.
        index: u64,
        /// Number of elements.
        count: u64,
        /// Elements per rank.
        len: u64,
    },
    /// A registration key that is not (or no longer) valid.
    #[error("invalid registration key {0}")]
    InvalidKey(u64),
    /// Every registration slot of this rank is in use.
    #[error("registration table full ({0} regions); unregister memory first")]
    RegistrationTableFull(usize),
    /// An argument that no valid call has.
    #[error("invalid argument to {call}: {reason}")]
    InvalidArgument {
        /// The call.
        call: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// Another rank failed or aborted the job; this rank cannot go on.
    #[error("the job was aborted{}", .rank.map(|r| format!(" by rank {r}")).unwrap_or_default())]
    JobAborted {
        /// The rank that caused it, when known.
        rank: Option<u32>,
    },
    /// The rank this one waits for left the job: it exited, or finalized while this rank
    /// was still in a collective or a wait that needs it.
    #[error("rank {rank} {} while this rank was waiting for it", if *.finalized { "finalized" } else { "exited" })]
    RankGone {
        /// The rank that left.
        rank: u32,
        /// It finalized (rather than exited without finalizing).
        finalized: bool,
    },
    /// Ranks disagree about a collective: some finalized while others called another
    /// collective (barrier, alloc, free, ...).
    #[error("{call}: {reason}")]
    CollectiveMismatch {
        /// The call of this rank.
        call: &'static str,
        /// What the other ranks did.
        reason: &'static str,
    },
    /// `init` was called while a runtime is alive in this process.
    #[error("gaspar is already initialized in this process")]
    AlreadyInitialized,
    /// The process environment does not describe a valid job.
    #[error("bad job environment: {0}")]
    Environment(String),
    /// A call into the communication library (MPI) failed.
    #[error("{call} failed with error code {code}")]
    Transport {
        /// The call.
        call: &'static str,
        /// Its error code.
        code: i32,
    },
    /// A distributed-array call whose arguments do not fit the array.
    #[error(transparent)]
    Darray(#[from] crate::darray::DarrayError),
    /// An operating-system call failed.
    #[error("{call}: {source}")]
    Os {
        /// The call that failed.
        call: &'static str,
        /// The error it returned.
        #[source]
        source: std::io::Error,
    },
}

/// The message, as `Display` gives it: a `main` that returns [`Result`] prints its error
/// through `Debug` (`Error: ...`), and a user reads one line naming what went wrong, not
/// the variant's fields.
impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl Error {
    pub(crate) fn os(call: &'static str, source: impl Into<std::io::Error>) -> Self {
        Error::Os {
            call,
            source: source.into(),
        }
    }

    pub(crate) fn invalid(call: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidArgument {
            call,
            reason: reason.into(),
        }
    }

    /// Another rank finalized while this rank was in collective `call`.
    pub(crate) fn finalized_during(call: &'static str) -> Self {
        Error::CollectiveMismatch {
            call,
            reason: "another rank finalized while this rank was in a collective (barrier, \
                     alloc, free, ...); every rank must make the same collective calls",
        }
    }

    /// This rank finalized while another rank was in another collective call.
    pub(crate) fn finalize_during_collective() -> Self {
        Error::CollectiveMismatch {
            call: "finalize",
            reason: "another rank was in a collective (barrier, alloc, free, ...) while this \
                     rank finalized; every rank must make the same collective calls",
        }
    }
}

/// Result with gaspar's [`Error`].
///
/// ```
/// fn ring_neighbour(rt: &gaspar::Runtime) -> gaspar::Result<u32> {
///     Ok((rt.rank() + 1) % rt.procs())
/// }
/// let rt = gaspar::init()?;
/// assert_eq!(ring_neighbour(&rt)?, 0); // one rank: its own neighbour
/// rt.finalize()?;
/// # Ok::<(), gaspar::Error>(())
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A transport's boxed error (the transport returns errors boxed, so results fit in registers) unboxed.
impl From<Box<Error>> for Error {
    fn from(boxed: Box<Error>) -> Error {
        *boxed
    }
}

/// A collective call of the memory layer, as ranks exchange it to check that they all made
/// the same one (and as [`Error::MismatchedCollective`] reports it). Its encoding is
/// [`gmem`](crate::gmem)'s.
///
/// ```
/// use gaspar::gmem::Collective;
/// assert_eq!(Collective::Alloc { len: 4096 }.to_string(), "alloc(4096)");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collective {
    /// [`GlobalMemory::barrier`](crate::gmem::GlobalMemory::barrier).
    Barrier,
    /// [`GlobalMemory::alloc`](crate::gmem::GlobalMemory::alloc) of `len` bytes.
    Alloc {
        /// Bytes asked for.
        len: u64,
    },
    /// [`GlobalMemory::free`](crate::gmem::GlobalMemory::free) of the block at heap offset `offset`.
    Free {
        /// The block's heap offset.
        heap_offset: u64,
    },
    /// [`GlobalMemory::reset`](crate::gmem::GlobalMemory::reset) to rank `rank`.
    Reset {
        /// The rank asked for.
        rank: u32,
    },
    /// [`Team::split`](crate::world::Team::split).
    Split,
    /// A team broadcast of `len` bytes from team rank `root`.
    Broadcast {
        /// Bytes broadcast.
        len: u64,
        /// The team rank broadcasting.
        root: u32,
    },
    /// A team reduction of `len` bytes, to team rank `root` (`None`: to every member).
    Reduce {
        /// Bytes reduced.
        len: u64,
        /// The team rank receiving the result, if one.
        root: Option<u32>,
        /// The builtin operator and element type, or `None` for a combination of the
        /// caller's own ([`Team::reduce_bytes`](crate::world::Team::reduce_bytes)).
        op: Option<(crate::world::ReduceOp, crate::world::Scalar)>,
    },
    /// A team allgather of `len` bytes per member.
    Allgather {
        /// Bytes each member contributes.
        len: u64,
    },
    /// A team alltoall of `len` bytes per pair of members.
    Alltoall {
        /// Bytes each member sends each member.
        len: u64,
    },
    /// Finalize, on transports where it agrees on its call as the others do (`mpi`; on
    /// `shm` the barrier carries a finalizing flag instead).
    Finalize,
    /// [`GlobalMemory::exchange_u64`](crate::gmem::GlobalMemory::exchange_u64) with `tag`.
    Exchange {
        /// What the exchange is for.
        tag: ExchangeTag,
    },
    /// Something else: another collective call of the runtime, or a rank that was not in
    /// the same (n-th) collective call at all.
    Other,
}

impl Collective {
    /// The call's name, as [`Error::CollectiveMismatch`] reports it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Collective::Barrier => "barrier",
            Collective::Alloc { .. } => "alloc",
            Collective::Free { .. } => "free",
            Collective::Reset { .. } => "reset",
            Collective::Finalize => "finalize",
            Collective::Exchange { .. } => "exchange",
            Collective::Split => "split",
            Collective::Broadcast { .. } => "broadcast",
            Collective::Reduce { root: Some(_), .. } => "reduce",
            Collective::Reduce { root: None, .. } => "allreduce",
            Collective::Allgather { .. } => "allgather",
            Collective::Alltoall { .. } => "alltoall",
            Collective::Other => "collective",
        }
    }
}

/// What a tagged exchange of words is for ([`Collective::Exchange`]): up to
/// [`ExchangeTag::MAX_LEN`] printable ASCII bytes, carried whole in the word ranks agree on,
/// so that a rank names another rank's exchange even if it never made that one itself.
///
/// ```
/// use gaspar::gmem::ExchangeTag;
/// const TAG: ExchangeTag = match ExchangeTag::new("halo") {
///     Some(tag) => tag,
///     None => panic!("a valid tag"),
/// };
/// let rt = gaspar::init()?;
/// let mut widths = vec![0u64; rt.procs() as usize];
/// rt.acp().exchange_u64(TAG, 16, &mut widths)?;
/// assert_eq!(widths[rt.rank() as usize], 16);
/// rt.finalize()?;
/// # Ok::<(), gaspar::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExchangeTag([u8; ExchangeTag::MAX_LEN]);

impl ExchangeTag {
    /// The longest tag.
    ///
    /// ```
    /// use gaspar::gmem::ExchangeTag;
    /// assert!(ExchangeTag::new(&"x".repeat(ExchangeTag::MAX_LEN)).is_some());
    /// assert!(ExchangeTag::new(&"x".repeat(ExchangeTag::MAX_LEN + 1)).is_none());
    /// ```
    pub const MAX_LEN: usize = 6;

    /// The tag `name`; `None` when it is empty, longer than [`MAX_LEN`](Self::MAX_LEN)
    /// bytes, or not printable ASCII.
    ///
    /// ```
    /// use gaspar::gmem::ExchangeTag;
    /// assert!(ExchangeTag::new("sizes").is_some());
    /// assert!(ExchangeTag::new("").is_none());
    /// assert!(ExchangeTag::new("a b").is_none()); // printable ASCII, no spaces
    /// ```
    pub const fn new(name: &str) -> Option<ExchangeTag> {
        let bytes = name.as_bytes();
        if bytes.is_empty() || bytes.len() > Self::MAX_LEN {
            return None;
        }
        let mut tag = [0u8; Self::MAX_LEN];
        let mut k = 0;
        while k < bytes.len() {
            if !bytes[k].is_ascii_graphic() {
                return None;
            }
            tag[k] = bytes[k];
            k += 1;
        }
        Some(ExchangeTag(tag))
    }

    /// The tag as the 48 low bits of a word.
    pub(crate) fn bits(self) -> u64 {
        self.0
            .iter()
            .fold(0, |word, &byte| (word << 8) | u64::from(byte))
    }

    /// The tag carried in the 48 low bits of `word`, if they hold one.
    pub(crate) fn from_bits(word: u64) -> Option<ExchangeTag> {
        let mut tag = [0u8; Self::MAX_LEN];
        for (k, byte) in tag.iter_mut().enumerate() {
            *byte = (word >> (8 * (Self::MAX_LEN - 1 - k))) as u8;
        }
        let len = tag.iter().position(|&b| b == 0).unwrap_or(Self::MAX_LEN);
        let name = std::str::from_utf8(&tag[..len]).ok()?;
        ExchangeTag::new(name).filter(|t| t.0 == tag)
    }
}

impl std::fmt::Display for ExchangeTag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let len = self.0.iter().position(|&b| b == 0).unwrap_or(Self::MAX_LEN);
        f.write_str(std::str::from_utf8(&self.0[..len]).unwrap_or("?"))
    }
}

impl std::fmt::Display for Collective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Collective::Barrier => write!(f, "barrier"),
            Collective::Alloc { len } => write!(f, "alloc({len})"),
            Collective::Free { heap_offset } => {
                write!(f, "free(the block at heap offset {heap_offset:#x})")
            }
            Collective::Reset { rank } => write!(f, "reset({rank})"),
            Collective::Split => write!(f, "split"),
            Collective::Broadcast { len, root } => write!(f, "broadcast({len} bytes from {root})"),
            Collective::Reduce { len, root, op } => {
                match root {
                    Some(root) => write!(f, "reduce({len} bytes to {root}")?,
                    None => write!(f, "allreduce({len} bytes")?,
                }
                match op {
                    Some((op, scalar)) => write!(f, ", {op:?} of {scalar:?})"),
                    None => write!(f, ", the caller's combination)"),
                }
            }
            Collective::Allgather { len } => write!(f, "allgather({len} bytes each)"),
            Collective::Alltoall { len } => write!(f, "alltoall({len} bytes each)"),
            Collective::Finalize => write!(f, "finalize"),
            Collective::Exchange { tag } => write!(f, "exchange {tag:?}", tag = tag.to_string()),
            Collective::Other => write!(f, "another collective call (or none)"),
        }
    }
}

/// Writes `line` and a newline to stderr in one `write()`, so that it cannot interleave
/// with another process's message.
pub(crate) fn report(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr()
        .lock()
        .write_all(format!("{line}\n").as_bytes());
}
