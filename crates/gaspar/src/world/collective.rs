//! Typed collectives on a team: broadcast, reduce to a root, allreduce (builtin operators
//! or a closure), allgather and alltoall over slices of plain-old-data elements, and the
//! untyped byte forms other layers (the coarray engine) call. Before moving any data the
//! members check that they all made the same call with the same sizes: a call that
//! differs is reported on every member as [`Error::MismatchedCollective`], and nothing
//! is moved.

use bytemuck::Pod;

use super::{Team, World};
use crate::error::{Collective, Error, Result};
pub use crate::transport::team::{ReduceOp, Scalar};
use crate::transport::team::{Reduction, TeamCall};
use crate::transport::Transport;

/// An element type the builtin operators ([`ReduceOp`]) reduce: the integer types of up
/// to 64 bits and the floats (which have no bitwise operators).
///
/// ```
/// use gaspar::{ReduceOp, Reducible};
/// fn total<T: Reducible>(values: &[T]) -> Option<T> {
///     let mut it = values.iter().copied();
///     let first = it.next()?;
///     it.try_fold(first, |acc, v| T::combine(ReduceOp::Sum, acc, v))
/// }
/// assert_eq!(total(&[1.5f64, 2.0]), Some(3.5));
/// ```
pub trait Reducible: Pod {
    /// The type, as the transport names it.
    ///
    /// ```
    /// use gaspar::world::Scalar;
    /// use gaspar::Reducible;
    /// assert_eq!(<f32 as Reducible>::SCALAR, Scalar::F32);
    /// ```
    const SCALAR: Scalar;
    /// `acc ⊕ other`, or `None` when the type has no such operator.
    ///
    /// ```
    /// use gaspar::{ReduceOp, Reducible};
    /// assert_eq!(u8::combine(ReduceOp::Sum, 250, 10), Some(4)); // wrapping
    /// assert_eq!(i32::combine(ReduceOp::Max, -3, 2), Some(2));
    /// assert_eq!(f64::combine(ReduceOp::Xor, 1.0, 2.0), None); // not defined on floats
    /// ```
    fn combine(op: ReduceOp, acc: Self, other: Self) -> Option<Self>;
}

macro_rules! reducible_integers {
    ($($t:ty => $scalar:ident),*) => {$(
        impl Reducible for $t {
            const SCALAR: Scalar = Scalar::$scalar;
            #[inline]
            fn combine(op: ReduceOp, acc: Self, other: Self) -> Option<Self> {
                Some(match op {
                    ReduceOp::Sum => acc.wrapping_add(other),
                    ReduceOp::Min => acc.min(other),
                    ReduceOp::Max => acc.max(other),
                    ReduceOp::And => acc & other,
                    ReduceOp::Or => acc | other,
                    ReduceOp::Xor => acc ^ other,
                })
            }
        }
    )*};
}

reducible_integers!(i8 => I8, i16 => I16, i32 => I32, i64 => I64,
    u8 => U8, u16 => U16, u32 => U32, u64 => U64);

macro_rules! reducible_floats {
    ($($t:ty => $scalar:ident),*) => {$(
        impl Reducible for $t {
            const SCALAR: Scalar = Scalar::$scalar;
            #[inline]
            fn combine(op: ReduceOp, acc: Self, other: Self) -> Option<Self> {
                match op {
                    ReduceOp::Sum => Some(acc + other),
                    ReduceOp::Min => Some(acc.min(other)),
                    ReduceOp::Max => Some(acc.max(other)),
                    ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => None,
                }
            }
        }
    )*};
}

reducible_floats!(f32 => F32, f64 => F64);

/// Applies `f` to each pair of elements of two byte buffers holding `T`s, in place in
/// `acc` (reading and writing unaligned elements when the buffers are not aligned for
/// `T`).
fn combine_elements<T: Pod>(acc: &mut [u8], other: &[u8], f: &mut impl FnMut(&mut T, &T)) {
    if let (Ok(acc), Ok(other)) = (
        bytemuck::try_cast_slice_mut::<u8, T>(acc),
        bytemuck::try_cast_slice::<u8, T>(other),
    ) {
        for (a, b) in acc.iter_mut().zip(other) {
            f(a, b);
        }
        return;
    }
    let size = std::mem::size_of::<T>();
    for (a, b) in acc.chunks_exact_mut(size).zip(other.chunks_exact(size)) {
        let mut value: T = bytemuck::pod_read_unaligned(a);
        f(&mut value, &bytemuck::pod_read_unaligned(b));
        a.copy_from_slice(bytemuck::bytes_of(&value));
    }
}

/// The builtin operators and element types, in the order of their codes in a call's word.
const OPS: [ReduceOp; 6] = [
    ReduceOp::Sum,
    ReduceOp::Min,
    ReduceOp::Max,
    ReduceOp::And,
    ReduceOp::Or,
    ReduceOp::Xor,
];
const SCALARS: [Scalar; 10] = [
    Scalar::I8,
    Scalar::I16,
    Scalar::I32,
    Scalar::I64,
    Scalar::U8,
    Scalar::U16,
    Scalar::U32,
    Scalar::U64,
    Scalar::F32,
    Scalar::F64,
];
/// Bits of a call's length in its word (longer lengths saturate: 128 GiB).
const LEN_BITS: u32 = 37;

/// What a member contributes to the agreement on a call: the kind (4 bits), the root plus
/// one (16 bits, 0 for none; saturated), a reduction's operator plus one (3 bits, 0 for
/// the caller's own combination) and element type (4 bits), and the length (37 bits,
/// saturated).
fn encode(call: Collective) -> u64 {
    let (kind, root, op, len) = match call {
        Collective::Barrier => (1, None, None, 0),
        Collective::Split => (2, None, None, 0),
        Collective::Broadcast { len, root } => (3, Some(root), None, len),
        Collective::Reduce {
            len,
            root: Some(root),
            op,
        } => (4, Some(root), op, len),
        Collective::Reduce {
            len,
            root: None,
            op,
        } => (5, None, op, len),
        Collective::Allgather { len } => (6, None, None, len),
        Collective::Alltoall { len } => (7, None, None, len),
        _ => (0, None, None, 0),
    };
    let root = root.map_or(0, |r| u64::from(r).saturating_add(1).min(0xffff));
    // The enums' own discriminants: OPS and SCALARS list them in declaration order.
    let op = op.map_or(0, |(op, scalar)| (op as u64 + 1) << 4 | scalar as u64);
    kind << 60 | root << 44 | op << LEN_BITS | len.min((1 << LEN_BITS) - 1)
}

/// The call another member made, from its word.
fn decode(word: u64) -> Collective {
    let (len, root) = (word & ((1 << LEN_BITS) - 1), ((word >> 44) & 0xffff) as u32);
    let root = root.checked_sub(1);
    let op_code = ((word >> (LEN_BITS + 4)) & 0x7) as usize;
    let op = op_code.checked_sub(1).and_then(|o| {
        let scalar = ((word >> LEN_BITS) & 0xf) as usize;
        Some((*OPS.get(o)?, *SCALARS.get(scalar)?))
    });
    match (word >> 60, root) {
        (1, _) => Collective::Barrier,
        (2, _) => Collective::Split,
        (3, Some(root)) => Collective::Broadcast { len, root },
        (4, Some(root)) => Collective::Reduce {
            len,
            root: Some(root),
            op,
        },
        (5, _) => Collective::Reduce {
            len,
            root: None,
            op,
        },
        (6, _) => Collective::Allgather { len },
        (7, _) => Collective::Alltoall { len },
        _ => Collective::Other,
    }
}

impl Team {
    /// Runs `call`, which every member describes as `described`, on the team. When the
    /// descriptions differ, nothing is moved, and every member gets
    /// [`Error::MismatchedCollective`] naming a member whose call differs from its own.
    fn run(&self, world: &World, described: Collective, mut call: TeamCall<'_, '_>) -> Result<()> {
        let word = encode(described);
        // By reference: a moved call is copied in 16-byte pieces of a struct just stored
        // in 8-byte and narrower ones, which the processor cannot forward (it waits for
        // the stores to retire; a tenth of a small co_sum's time on AMD Zen 4).
        if world
            .transport()
            .team_call(&self.transport, word, &mut call)?
        {
            return Ok(());
        }
        let mut all = vec![0u64; self.size() as usize];
        self.gather_words(world, word, &mut all)?;
        let (team_rank, &other) = all
            .iter()
            .enumerate()
            .find(|&(_, &other)| other != word)
            .ok_or_else(|| Error::invalid("team collective", "members disagreed, then agreed"))?;
        Err(Error::MismatchedCollective {
            rank: self.world_rank(self.rank())?,
            call: decode(word),
            other_rank: self.world_rank(team_rank as u32)?,
            other_call: decode(other),
        })
    }

    /// Checks that every member makes `call`; a `barrier` also synchronizes memory (see
    /// [`TeamCall::Agree`]).
    pub(super) fn agree(&self, world: &World, call: Collective, barrier: bool) -> Result<()> {
        self.run(world, call, TeamCall::Agree { barrier })
    }

    /// `out[r]` receives team rank r's `word`.
    pub(super) fn gather_words(&self, world: &World, word: u64, out: &mut [u64]) -> Result<()> {
        self.run(
            world,
            Collective::Allgather { len: 8 },
            TeamCall::Allgather {
                mine: bytemuck::bytes_of(&word),
                out: bytemuck::cast_slice_mut(out),
            },
        )
    }

    /// Checks that `root` is a team rank.
    fn check_root(&self, root: u32) -> Result<()> {
        self.world_rank(root).map(drop)
    }

    /// Collective over the members: copies `buf` of team rank `root` into every member's
    /// `buf`. Every member passes the same length and root.
    ///
    /// ```
    /// let rt = gaspar::init()?;
    /// let mut config = [0.0f64; 2];
    /// if rt.rank() == 0 {
    ///     config = [0.5, 2.0];
    /// }
    /// rt.team().broadcast(rt.world(), &mut config, 0)?;
    /// assert_eq!(config, [0.5, 2.0]);
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn broadcast<T: Pod>(&self, world: &World, buf: &mut [T], root: u32) -> Result<()> {
        self.broadcast_bytes(world, bytemuck::cast_slice_mut(buf), root)
    }

    /// [`broadcast`](Self::broadcast) of bytes.
    ///
    /// ```
    /// let rt = gaspar::init()?;
    /// let mut name = *b"........";
    /// if rt.rank() == 0 {
    ///     name = *b"gaspar!!";
    /// }
    /// rt.team().broadcast_bytes(rt.world(), &mut name, 0)?;
    /// assert_eq!(&name, b"gaspar!!");
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn broadcast_bytes(&self, world: &World, buf: &mut [u8], root: u32) -> Result<()> {
        self.broadcast_as(world, buf, root, false)
    }

    /// [`broadcast_bytes`](Self::broadcast_bytes) where the root need not wait for the
    /// other members: a mismatched call (another collective, root or length) is an error
    /// on the members that receive, not necessarily on the root (Fortran's
    /// `co_broadcast`).
    pub(crate) fn broadcast_bytes_one_way(
        &self,
        world: &World,
        buf: &mut [u8],
        root: u32,
    ) -> Result<()> {
        self.broadcast_as(world, buf, root, true)
    }

    /// Whether [`broadcast_bytes_one_way`](Self::broadcast_bytes_one_way) of `len` bytes
    /// goes one way on this transport and team: straight from the root to each member,
    /// each member depending on the root alone and the root on nobody (otherwise every
    /// member depends on every other).
    pub(crate) fn broadcasts_one_way(&self, world: &World, len: usize) -> bool {
        world.transport().broadcasts_one_way(&self.transport, len)
    }

    fn broadcast_as(&self, world: &World, buf: &mut [u8], root: u32, one_way: bool) -> Result<()> {
        self.check_root(root)?;
        self.run(
            world,
            Collective::Broadcast {
                len: buf.len() as u64,
                root,
            },
            TeamCall::Broadcast { buf, root, one_way },
        )
    }

    /// Collective over the members: on team rank `root`, `buf` becomes the element-wise
    /// `op` of every member's `buf` (the others' `buf` is left as it was). The result has
    /// the same bits in every run of the same job: on `shm` floats are combined in team
    /// rank order along a tree fixed by the team's size; on `mpi` by `MPI_Reduce` or
    /// `MPI_Allreduce` with MPI's builtin operator on the team's communicator, whose
    /// order of operations the library fixes from the team's size and the count alone
    /// (the standard's advice to implementors, which OpenMPI and MPICH follow), so it is
    /// the same in every run with the same library, ranks and count, though not
    /// necessarily `shm`'s order.
    ///
    /// ```
    /// use gaspar::ReduceOp;
    /// let rt = gaspar::init()?;
    /// let mut hi = [rt.rank(), 7];
    /// rt.team().reduce(rt.world(), &mut hi, ReduceOp::Max, 0)?;
    /// if rt.rank() == 0 {
    ///     assert_eq!(hi, [rt.procs() - 1, 7]);
    /// }
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn reduce<T: Reducible>(
        &self,
        world: &World,
        buf: &mut [T],
        op: ReduceOp,
        root: u32,
    ) -> Result<()> {
        self.check_root(root)?;
        self.reduce_builtin(world, buf, op, Some(root))
    }

    /// Collective over the members: `buf` becomes the element-wise `op` of every member's
    /// `buf`, with the same bits on every member (see [`reduce`](Self::reduce)).
    ///
    /// ```
    /// use gaspar::ReduceOp;
    /// let rt = gaspar::init()?;
    /// let mut sum = [0.25f64];
    /// rt.team().allreduce(rt.world(), &mut sum, ReduceOp::Sum)?;
    /// assert_eq!(sum[0], 0.25 * f64::from(rt.procs()));
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn allreduce<T: Reducible>(
        &self,
        world: &World,
        buf: &mut [T],
        op: ReduceOp,
    ) -> Result<()> {
        self.reduce_builtin(world, buf, op, None)
    }

    fn reduce_builtin<T: Reducible>(
        &self,
        world: &World,
        buf: &mut [T],
        op: ReduceOp,
        root: Option<u32>,
    ) -> Result<()> {
        if T::combine(op, T::zeroed(), T::zeroed()).is_none() {
            return Err(Error::invalid(
                "reduce",
                format!("{op:?} is not defined on {:?} elements", T::SCALAR),
            ));
        }
        let mut combine = |acc: &mut [u8], other: &[u8]| {
            combine_elements::<T>(acc, other, &mut |a, b| {
                *a = T::combine(op, *a, *b).unwrap_or(*a);
            })
        };
        self.reduce_with_reduction(
            world,
            bytemuck::cast_slice_mut(buf),
            Reduction {
                elem_len: std::mem::size_of::<T>(),
                builtin: Some((op, T::SCALAR)),
                combine: &mut combine,
            },
            root,
        )
    }

    /// Collective over the members: reduces `buf` with a closure, `f(acc, other)` making
    /// `acc` the combination `acc ⊕ other` of the two elements, where `acc` comes from
    /// lower team ranks than `other`. The result goes to team rank `root`, or to every
    /// member when `root` is `None`. `f` must be associative; it need not be commutative.
    ///
    /// ```
    /// let rt = gaspar::init()?;
    /// // 2 x 2 matrix products (associative, not commutative), in team rank order.
    /// let mut m = [[[1u64, 1], [0, 1]]];
    /// rt.team().reduce_with(rt.world(), &mut m, None, |acc, other| {
    ///     let [[a, b], [c, d]] = *acc;
    ///     let [[e, f], [g, h]] = *other;
    ///     *acc = [[a * e + b * g, a * f + b * h], [c * e + d * g, c * f + d * h]];
    /// })?;
    /// // [[1, 1], [0, 1]] to the power procs.
    /// assert_eq!(m[0], [[1, u64::from(rt.procs())], [0, 1]]);
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn reduce_with<T: Pod>(
        &self,
        world: &World,
        buf: &mut [T],
        root: Option<u32>,
        mut f: impl FnMut(&mut T, &T),
    ) -> Result<()> {
        let mut combine = |acc: &mut [u8], other: &[u8]| combine_elements::<T>(acc, other, &mut f);
        self.reduce_with_reduction(
            world,
            bytemuck::cast_slice_mut(buf),
            Reduction {
                elem_len: std::mem::size_of::<T>(),
                builtin: None,
                combine: &mut combine,
            },
            root,
        )
    }

    /// [`reduce_with`](Self::reduce_with) of bytes: `buf` holds elements of `elem_len`
    /// bytes each, and `combine(acc, other)` combines one element `other` into `acc`.
    ///
    /// ```
    /// let rt = gaspar::init()?;
    /// // Two 3-byte elements, combined byte by byte with the larger byte.
    /// let mut buf = [1u8, 9, 3, 4, 4, 4];
    /// let mut larger = |acc: &mut [u8], other: &[u8]| {
    ///     for (a, b) in acc.iter_mut().zip(other) {
    ///         *a = (*a).max(*b);
    ///     }
    /// };
    /// rt.team().reduce_bytes(rt.world(), &mut buf, 3, &mut larger, None)?;
    /// assert_eq!(buf, [1, 9, 3, 4, 4, 4]);
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn reduce_bytes(
        &self,
        world: &World,
        buf: &mut [u8],
        elem_len: usize,
        combine: &mut dyn FnMut(&mut [u8], &[u8]),
        root: Option<u32>,
    ) -> Result<()> {
        if elem_len == 0 || buf.len() % elem_len != 0 {
            return Err(Error::invalid(
                "reduce_bytes",
                format!(
                    "{} bytes are not a whole number of {elem_len}-byte elements",
                    buf.len()
                ),
            ));
        }
        let mut each = |acc: &mut [u8], other: &[u8]| {
            for (a, b) in acc
                .chunks_exact_mut(elem_len)
                .zip(other.chunks_exact(elem_len))
            {
                combine(a, b);
            }
        };
        self.reduce_with_reduction(
            world,
            buf,
            Reduction {
                elem_len,
                builtin: None,
                combine: &mut each,
            },
            root,
        )
    }

    // Inlined so that `reduction` is built in the call's place, not moved into it (the
    // move is the 16-byte copy `run` explains).
    #[inline(always)]
    fn reduce_with_reduction(
        &self,
        world: &World,
        buf: &mut [u8],
        reduction: Reduction<'_>,
        root: Option<u32>,
    ) -> Result<()> {
        if let Some(root) = root {
            self.check_root(root)?;
        }
        self.run(
            world,
            Collective::Reduce {
                len: buf.len() as u64,
                root,
                op: reduction.builtin,
            },
            TeamCall::Reduce {
                buf,
                reduction,
                root,
            },
        )
    }

    /// Collective over the members: `out` (one block of `mine.len()` elements per member)
    /// receives every member's `mine`, in team rank order.
    ///
    /// ```
    /// let rt = gaspar::init()?;
    /// let mut all = vec![0u32; 2 * rt.procs() as usize];
    /// rt.team().allgather(rt.world(), &[rt.rank(), 100 + rt.rank()], &mut all)?;
    /// assert_eq!(&all[..2], [0, 100]); // team rank 0's part first
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn allgather<T: Pod>(&self, world: &World, mine: &[T], out: &mut [T]) -> Result<()> {
        if out.len() != mine.len() * self.size() as usize {
            return Err(Error::invalid(
                "allgather",
                format!(
                    "the output holds {} elements, not {} ({} per member)",
                    out.len(),
                    mine.len() * self.size() as usize,
                    mine.len()
                ),
            ));
        }
        let (mine, out): (&[u8], &mut [u8]) =
            (bytemuck::cast_slice(mine), bytemuck::cast_slice_mut(out));
        self.run(
            world,
            Collective::Allgather {
                len: mine.len() as u64,
            },
            TeamCall::Allgather { mine, out },
        )
    }

    /// Collective over the members: `send` holds one block per member (block r for team
    /// rank r); block r of `recv` receives team rank r's block for this member. Both hold
    /// the same number of elements, a multiple of the team's size.
    ///
    /// ```
    /// let rt = gaspar::init()?;
    /// let n = rt.procs();
    /// // Element r goes to team rank r; recv[r] comes from team rank r.
    /// let send: Vec<u32> = (0..n).map(|to| 100 * rt.rank() + to).collect();
    /// let mut recv = vec![0u32; n as usize];
    /// rt.team().alltoall(rt.world(), &send, &mut recv)?;
    /// assert_eq!(recv[0], rt.rank());
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn alltoall<T: Pod>(&self, world: &World, send: &[T], recv: &mut [T]) -> Result<()> {
        let size = self.size() as usize;
        if send.len() != recv.len() || send.len() % size != 0 {
            return Err(Error::invalid(
                "alltoall",
                format!(
                    "{} elements to send and {} to receive: both must be the same multiple of \
                     the team's {size} members",
                    send.len(),
                    recv.len()
                ),
            ));
        }
        let (send, recv): (&[u8], &mut [u8]) =
            (bytemuck::cast_slice(send), bytemuck::cast_slice_mut(recv));
        self.run(
            world,
            Collective::Alltoall {
                len: (send.len() / size) as u64,
            },
            TeamCall::Alltoall { send, recv },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_survive_their_encoding() {
        for call in [
            Collective::Barrier,
            Collective::Split,
            Collective::Broadcast { len: 24, root: 3 },
            Collective::Reduce {
                len: 8 << 20,
                root: Some(0),
                op: Some((ReduceOp::Xor, Scalar::F64)),
            },
            Collective::Reduce {
                len: 8,
                root: None,
                op: None,
            },
            Collective::Reduce {
                len: 8,
                root: None,
                op: Some((ReduceOp::Sum, Scalar::I8)),
            },
            Collective::Allgather { len: 0 },
            Collective::Alltoall { len: 4096 },
        ] {
            assert_eq!(decode(encode(call)), call);
        }
        assert_ne!(
            encode(Collective::Broadcast { len: 8, root: 0 }),
            encode(Collective::Broadcast { len: 8, root: 1 })
        );
        // Every operator and element type of a reduction is told apart.
        let mut words = std::collections::BTreeSet::new();
        for op in OPS {
            for scalar in SCALARS {
                let call = Collective::Reduce {
                    len: 32,
                    root: None,
                    op: Some((op, scalar)),
                };
                assert_eq!(decode(encode(call)), call);
                words.insert(encode(call));
            }
        }
        assert_eq!(words.len(), OPS.len() * SCALARS.len());
    }

    #[test]
    fn unaligned_buffers_combine_like_aligned_ones() {
        let values = [1.5f64, -2.0, 3.25];
        let mut bytes = [0u8; 1 + 24];
        bytes[1..].copy_from_slice(bytemuck::cast_slice(&values));
        let other = bytemuck::cast_slice::<f64, u8>(&values).to_vec();
        combine_elements::<f64>(&mut bytes[1..], &other, &mut |a, b| *a += *b);
        let sum: Vec<f64> = bytes[1..]
            .chunks_exact(8)
            .map(bytemuck::pod_read_unaligned)
            .collect();
        assert_eq!(sum, [3.0, -4.0, 6.5]);
    }
}
