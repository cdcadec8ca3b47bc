//! Teams as a transport runs their collectives: the members (physical ranks, in team rank
//! order), and on `mpi` the team's communicator. The world layer decides who is in a team
//! and describes each call in a word; the transport checks that the members passed the
//! same word and moves the bytes (on `shm` through its collective channels, on `mpi` with
//! MPI's collectives).

use std::sync::atomic::{AtomicU64, Ordering};

/// A builtin reduction operator.
///
/// ```
/// use gaspar::ReduceOp;
/// let rt = gaspar::init()?;
/// let mut flags = [0b0110u8];
/// rt.team().allreduce(rt.world(), &mut flags, ReduceOp::Or)?;
/// assert_eq!(flags[0], 0b0110);
/// rt.finalize()?;
/// # Ok::<(), gaspar::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    /// Sum (wrapping for integers).
    Sum,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Bitwise and (integers only).
    And,
    /// Bitwise or (integers only).
    Or,
    /// Bitwise exclusive or (integers only).
    Xor,
}

/// The element types builtin operators reduce.
///
/// ```
/// use gaspar::world::Scalar;
/// use gaspar::Reducible;
/// assert_eq!(<i16 as Reducible>::SCALAR, Scalar::I16);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar {
    /// `i8`.
    I8,
    /// `i16`.
    I16,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `u8`.
    U8,
    /// `u16`.
    U16,
    /// `u32`.
    U32,
    /// `u64`.
    U64,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
}

/// How a reduction combines two contributions: `combine(acc, other)` makes each element
/// of `acc` the result of `acc ⊕ other`, where `acc` holds the lower-ranked ranks'
/// contributions. `builtin`, when set, names the same operation as one MPI has built in.
pub(crate) struct Reduction<'a> {
    /// Bytes of one element (`acc` and `other` hold whole elements).
    pub(crate) elem_len: usize,
    /// The builtin operator and element type the combination is, if any (a builtin
    /// operator is commutative).
    pub(crate) builtin: Option<(ReduceOp, Scalar)>,
    /// The combination.
    pub(crate) combine: &'a mut dyn FnMut(&mut [u8], &[u8]),
}

/// One collective call on a team, with its buffers. Every member also passes a word that
/// describes its call (kind and sizes): the call moves data only when every member passed
/// the same word, and tells every member whether they did.
pub(crate) enum TeamCall<'a, 'r> {
    /// Only the agreement on the word.
    Agree {
        /// Also a barrier: every write a member issued before the call is visible to
        /// every member (to plain loads too) after it.
        barrier: bool,
    },
    /// `buf` of team rank `root` is copied into every member's `buf`.
    Broadcast {
        /// The data (the root's is read, the others' written).
        buf: &'a mut [u8],
        /// The team rank whose data is broadcast.
        root: u32,
        /// Whether the members may check the call on the receiving side only, so that the
        /// root need not wait for them: a mismatched call is then an error on the members
        /// that receive, not necessarily on the root (a transport may agree anyway).
        one_way: bool,
    },
    /// `buf` becomes the reduction of every member's `buf`, in team rank order: on team
    /// rank `root` only, or on every member when `root` is `None`.
    Reduce {
        /// The data.
        buf: &'a mut [u8],
        /// How elements combine.
        reduction: Reduction<'r>,
        /// Where the result goes (`None`: everywhere).
        root: Option<u32>,
    },
    /// `out[r * mine.len()..]` receives team rank r's `mine`.
    Allgather {
        /// This member's block.
        mine: &'a [u8],
        /// One block per member.
        out: &'a mut [u8],
    },
    /// Block r of `send` goes to team rank r, whose block (this rank) of `recv` receives it.
    Alltoall {
        /// One block per member, to send.
        send: &'a [u8],
        /// One block per member, received.
        recv: &'a mut [u8],
    },
}

/// A team as the transport sees it.
pub struct TransportTeam {
    /// Physical ranks of the members, by team rank.
    pub(crate) members: Box<[u32]>,
    /// This process's team rank.
    pub(crate) rank: u32,
    /// Equal on every member, different for every team of the job (messages carry it).
    pub(crate) id: u64,
    /// Collective calls made on the team so far.
    calls: AtomicU64,
    /// The team's own communicator (`None`: the transport's, for the world team).
    #[cfg(feature = "mpi")]
    pub(crate) comm: Option<super::mpi::Communicator>,
}

impl TransportTeam {
    /// A team of the transport's own communicator (the world team, or any team on shm).
    pub(crate) fn new(members: Box<[u32]>, rank: u32, id: u64) -> TransportTeam {
        TransportTeam {
            members,
            rank,
            id,
            calls: AtomicU64::new(0),
            #[cfg(feature = "mpi")]
            comm: None,
        }
    }

    /// Number of members.
    pub(crate) fn size(&self) -> u32 {
        self.members.len() as u32
    }

    /// The tag of the next collective call on the team: equal on every member for the same
    /// call, different from the tags of this team's other calls (an odd multiplier maps
    /// distinct counts to distinct words) and, but for a negligible chance, of other
    /// teams' calls (their identifiers are hashes). The caller holds its transport's
    /// collective lock, so the count moves on without a locked read-modify-write; one
    /// multiply, not two SplitMix rounds: both were a tenth of a co_sum of one value at 1
    /// image (AMD Zen 4).
    pub(crate) fn next_tag(&self) -> u64 {
        let call = self.calls.load(Ordering::Relaxed);
        self.calls.store(call + 1, Ordering::Relaxed);
        self.id
            .wrapping_add(call.wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }

    /// The identifier of the `color` team split from this one by its current call.
    pub(crate) fn child_id(&self, color: u32) -> u64 {
        let call = self.calls.load(Ordering::Relaxed);
        mix(self.id.wrapping_add(mix(call ^ u64::from(color) << 32)))
    }
}

/// SplitMix64's finalizer: spreads the bits of `x` over the whole word.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}
