//! Team collectives on `shm`, over the point-to-point notes (`notes`, small messages) and
//! channels (`channel`, any size), each in O(log n) rounds but alltoall:
//! * the members' agreement on the call (a barrier too) and a small allreduce, which
//!   agrees in its own notes: all to all in a team of up to [`ALL_TO_ALL`] members,
//!   recursive doubling in larger ones (the ranks beyond the largest power of two folded
//!   into their left neighbours first, as MPICH does); a small broadcast is such an
//!   allreduce that keeps the root's buffer, or, when the caller asks for it one way (and
//!   the team has up to [`ALL_TO_ALL`] members), a note from the root to each member with
//!   its call word, checked by the receivers only;
//! * a larger allreduce in the channels: reduce-scatter and allgather (Rabenseifner)
//!   under a builtin operator and a large buffer, else recursive doubling;
//! * binomial trees for broadcast and reduce to a root, Bruck's algorithm for allgather,
//!   and pairwise exchange for alltoall (n - 1 rounds: every rank has a block for every
//!   other).
//!
//! Large messages move in chunks through the channels, a chunk in flight while the next
//! is copied.
//!
//! Reductions combine contributions in team rank order (`lower ⊕ higher`; builtin
//! operators, which commute, in either order) along a tree that depends only on the
//! team's size and the buffer's length, each result computed once and copied to the
//! members that need it or computed alike by each, so a float reduction gives the same
//! bits on every member and in every run, and a user operator need only be associative.

use super::channel::Sink;
use super::notes::NOTE_PAYLOAD;
use super::ShmTransport;
use crate::error::{Error, Result};
use crate::transport::team::{Reduction, TeamCall, TransportTeam};
use crate::transport::Transport;

/// Bytes in front of the payload of an agreeing allreduce's note: the sender's call word
/// and whether every member it heard from passed the same.
const AGREEING_HEAD: usize = 16;

/// The largest buffer an allreduce that agrees in its own notes reduces.
const FUSED: usize = NOTE_PAYLOAD - AGREEING_HEAD;

/// The smallest buffer a builtin (commutative) allreduce reduces by reduce-scatter and
/// allgather: below, recursive doubling's fewer rounds cost less than its larger
/// messages and combinations.
const SCATTERED_ALLREDUCE: usize = 32 * 1024;

/// Scratch space up to this many bytes lives on the stack: the most common small
/// collectives (a few scalars) allocate nothing.
const STACK_SCRATCH: usize = 128;

/// Runs `f` on `len` zeroed bytes of scratch space, on the stack when they fit.
fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [u8]) -> R) -> R {
    if len <= STACK_SCRATCH {
        f(&mut [0u8; STACK_SCRATCH][..len])
    } else {
        f(&mut vec![0u8; len])
    }
}

/// Teams of up to this many members make their small allreduces (and agreements) all to
/// all: each member sends its note to every other and folds all contributions itself.
/// With more ranks than cores, a member that waits for the others one after the other
/// lets any of them run ahead (as `sync all`'s counted signals do), where recursive
/// doubling's rounds wait for one partner at a time. Measured at 4 ranks on 2 cores
/// (co_sum of one double): 0.78 yields of the core per member and call instead of 1.09,
/// 5.5 us a call instead of 8.3 (medians of 16 alternating runs on a loaded machine);
/// at 3 ranks, instead of a fold and an unfold around the rounds, 2.2-3.5 us instead of
/// 4.9.
const ALL_TO_ALL: u32 = 8;

/// A part of `buf` to read and a disjoint part to write.
fn read_and_write(
    buf: &mut [u8],
    read: std::ops::Range<usize>,
    write: std::ops::Range<usize>,
) -> (&[u8], &mut [u8]) {
    if read.end <= write.start {
        let (low, high) = buf.split_at_mut(write.start);
        (&low[read], &mut high[..write.len()])
    } else {
        let (low, high) = buf.split_at_mut(read.start);
        (&high[..read.len()], &mut low[write])
    }
}

/// Bytes of the flag in front of each member's buffer in a small broadcast.
const ROOT_FLAG: usize = 8;

/// Bytes of the call word in front of the buffer in a one-way broadcast's note.
const CALL_WORD: usize = 8;

/// The largest buffer a broadcast sends one way in notes.
const ONE_WAY: usize = NOTE_PAYLOAD - CALL_WORD;

/// Whether a broadcast of `len` bytes on `team` that may go one way does (in notes from
/// the root straight to every member: a small buffer, a team of up to [`ALL_TO_ALL`]).
pub(crate) fn sends_one_way(team: &TransportTeam, len: usize) -> bool {
    len <= ONE_WAY && team.size() <= ALL_TO_ALL
}

/// What a one-way broadcast's notes change in their call's tag (by exclusive or).
const ONE_WAY_TAG: u64 = 0x6f6e_652d_7761_7921;

/// One collective call on a team: its members, this rank's place, and its tag.
struct Call<'t> {
    shm: &'t ShmTransport,
    team: &'t TransportTeam,
    tag: u64,
}

impl Call<'_> {
    fn size(&self) -> u32 {
        self.team.size()
    }

    fn rank(&self) -> u32 {
        self.team.rank
    }

    /// The team rank `distance` places after this one, around the team.
    fn after(&self, distance: u32) -> u32 {
        ((u64::from(self.rank()) + u64::from(distance)) % u64::from(self.size())) as u32
    }

    /// The team rank `distance` places before this one, around the team.
    fn before(&self, distance: u32) -> u32 {
        let n = u64::from(self.size());
        ((u64::from(self.rank()) + n - u64::from(distance) % n) % n) as u32
    }

    /// The physical rank of a team rank.
    fn physical(&self, team_rank: u32) -> u32 {
        self.team.members[team_rank as usize]
    }

    /// Sends a note (at most [`NOTE_PAYLOAD`] bytes) to a team rank.
    fn send_note(&self, to: u32, data: &[u8]) -> Result<()> {
        self.shm.send_note(self.physical(to), data, self.tag)
    }

    /// Receives a note from a team rank; returns its length, which may differ from the
    /// buffer's (see [`ShmTransport::receive_note`]).
    fn receive_note(&self, from: u32, data: &mut [u8]) -> Result<usize> {
        self.shm.receive_note(self.physical(from), data, self.tag)
    }

    /// Sends to and receives from team ranks through the channels a message that fills
    /// the receive buffer exactly, as every message after the members' agreement does.
    fn exchange(&self, send: Option<(u32, &[u8])>, recv: Option<(u32, &mut [u8])>) -> Result<()> {
        self.exchange_into(send, recv.map(|(from, data)| (from, Sink::Copy(data))))
    }

    /// [`exchange`](Self::exchange) into any [`Sink`].
    fn exchange_into(
        &self,
        send: Option<(u32, &[u8])>,
        recv: Option<(u32, Sink<'_>)>,
    ) -> Result<()> {
        let expected = recv.as_ref().map_or(0, |(_, sink)| sink.len());
        let received = self.shm.exchange(
            send.map(|(to, data)| (self.physical(to), data)),
            recv.map(|(from, sink)| (self.physical(from), sink)),
            self.tag,
        )?;
        if received != expected {
            return Err(Error::CollectiveMismatch {
                call: "team collective",
                reason: "a member of the team sent a message of another length",
            });
        }
        Ok(())
    }

    fn send(&self, to: u32, data: &[u8]) -> Result<()> {
        self.exchange(Some((to, data)), None)
    }

    fn receive(&self, from: u32, data: &mut [u8]) -> Result<()> {
        self.exchange(None, Some((from, data)))
    }

    /// The agreement on `word` alone (a barrier when the caller flushed first): the
    /// rounds of [`allreduce_agreeing`](Self::allreduce_agreeing) with no data, so that
    /// every call, whether it agrees alone or in its allreduce, sends the same messages to
    /// the same ranks, and members making different calls find out instead of waiting for
    /// messages that never come.
    fn agree(&self, word: u64) -> Result<bool> {
        let mut nothing = |_: &mut [u8], _: &[u8]| {};
        let mut reduction = Reduction {
            elem_len: 1,
            builtin: None,
            combine: &mut nothing,
        };
        self.allreduce_agreeing(word, &mut [], &mut reduction)
    }

    /// Binomial tree from `root`: each rank receives from its parent, then sends to its
    /// children, farthest first.
    fn broadcast(&self, buf: &mut [u8], root: u32) -> Result<()> {
        let n = self.size();
        let relative = (self.rank() + n - root) % n;
        let mut mask = 1u32;
        while mask < n {
            if relative & mask != 0 {
                self.receive((relative - mask + root) % n, buf)?;
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        while mask > 0 {
            if relative + mask < n {
                self.send((relative + mask + root) % n, buf)?;
            }
            mask >>= 1;
        }
        Ok(())
    }

    /// Binomial tree to team rank 0, each rank combining the block of ranks after its own
    /// into a copy of its buffer, then from rank 0 to `root` (only the root's buffer
    /// changes).
    fn reduce(&self, buf: &mut [u8], reduction: &mut Reduction<'_>, root: u32) -> Result<()> {
        let (n, rank) = (self.size(), self.rank());
        let mut acc = buf.to_vec();
        let mut other = vec![0u8; buf.len()];
        let mut mask = 1u32;
        while mask < n {
            if rank & mask != 0 {
                self.send(rank - mask, &acc)?;
                break;
            }
            if rank + mask < n {
                self.receive(rank + mask, &mut other)?;
                (reduction.combine)(&mut acc, &other);
            }
            mask <<= 1;
        }
        match (rank, root) {
            (0, 0) => buf.copy_from_slice(&acc),
            (0, _) => self.send(root, &acc)?,
            (r, _) if r == root => self.receive(0, buf)?,
            _ => {}
        }
        Ok(())
    }

    /// The ranks of recursive doubling: with n = 2^k + extra, ranks 2i and 2i+1 (i <
    /// extra) first combine into rank 2i, which takes part for both and hands the result
    /// back at the end. Returns (2^k, extra).
    fn doubling(&self) -> (u32, u32) {
        let n = self.size();
        let doubling = 1u32 << (u32::BITS - 1 - n.leading_zeros());
        (doubling, n - doubling)
    }

    /// Recursive doubling (see [`doubling`](Self::doubling)).
    fn allreduce(&self, buf: &mut [u8], reduction: &mut Reduction<'_>) -> Result<()> {
        let rank = self.rank();
        let (doubling, extra) = self.doubling();
        let mut other = vec![0u8; buf.len()];
        let folded = rank < 2 * extra;
        if folded && rank % 2 == 1 {
            self.send(rank - 1, buf)?;
            return self.receive(rank - 1, buf);
        }
        if folded {
            self.receive(rank + 1, &mut other)?;
            (reduction.combine)(buf, &other);
        }
        let virtual_rank = if folded { rank / 2 } else { rank - extra };
        let real = |v: u32| if v < extra { 2 * v } else { v + extra };
        let mut mask = 1u32;
        while mask < doubling {
            let partner = virtual_rank ^ mask;
            self.exchange(
                Some((real(partner), &*buf)),
                Some((real(partner), &mut other)),
            )?;
            if partner < virtual_rank {
                (reduction.combine)(&mut other, buf);
                buf.copy_from_slice(&other);
            } else {
                (reduction.combine)(buf, &other);
            }
            mask <<= 1;
        }
        if folded {
            self.send(rank + 1, buf)?;
        }
        Ok(())
    }

    /// Rabenseifner's allreduce for a large buffer under a commutative operator:
    /// reduce-scatter by recursive halving, each rank left with the reduction of one
    /// block, then allgather of the blocks by recursive doubling (ranks beyond the
    /// largest power of two folded in first, as in [`allreduce`](Self::allreduce)). Each
    /// rank sends and combines about the buffer's size once instead of log n times, and
    /// every received piece is combined straight from the channel. Each block is reduced
    /// by one rank along a tree fixed by the team's size, so every member gets the same
    /// bits, in every run.
    fn allreduce_scattered(&self, buf: &mut [u8], reduction: &mut Reduction<'_>) -> Result<()> {
        let rank = self.rank();
        let (doubling, extra) = self.doubling();
        let combine = &mut *reduction.combine;
        let folded = rank < 2 * extra;
        if folded && rank % 2 == 1 {
            self.send(rank - 1, buf)?;
            return self.receive(rank - 1, buf);
        }
        if folded {
            self.exchange_into(None, Some((rank + 1, Sink::Combine(buf, combine))))?;
        }
        let virtual_rank = if folded { rank / 2 } else { rank - extra };
        let real = |v: u32| if v < extra { 2 * v } else { v + extra };
        let elem_len = reduction.elem_len.max(1);
        let elems = buf.len() / elem_len;
        // Byte offset of block b (of `doubling`), a whole number of elements.
        let at = |b: u32| elems * b as usize / doubling as usize * elem_len;
        let (mut low, mut high) = (0u32, doubling);
        let mut mask = doubling / 2;
        while mask > 0 {
            let partner = virtual_rank ^ mask;
            let middle = low + mask;
            let (keep, give) = if virtual_rank & mask == 0 {
                ((low, middle), (middle, high))
            } else {
                ((middle, high), (low, middle))
            };
            let (send, acc) = read_and_write(buf, at(give.0)..at(give.1), at(keep.0)..at(keep.1));
            self.exchange_into(
                Some((real(partner), send)),
                Some((real(partner), Sink::Combine(acc, combine))),
            )?;
            (low, high) = keep;
            mask /= 2;
        }
        let mut mask = 1u32;
        while mask < doubling {
            let partner = virtual_rank ^ mask;
            let theirs = if virtual_rank & mask == 0 {
                (high, high + mask)
            } else {
                (low - mask, low)
            };
            let (send, recv) = read_and_write(buf, at(low)..at(high), at(theirs.0)..at(theirs.1));
            self.exchange(Some((real(partner), send)), Some((real(partner), recv)))?;
            (low, high) = (low.min(theirs.0), high.max(theirs.1));
            mask *= 2;
        }
        if folded {
            self.send(rank + 1, buf)?;
        }
        Ok(())
    }

    /// [`allreduce`](Self::allreduce) of a small buffer (at most [`FUSED`] bytes) and the
    /// agreement on `word` in the same notes: each note is the sender's word, whether
    /// every member it heard from passed it too, and its partial result. Recursive
    /// doubling is an allreduce of that flag as well, so every member learns the same
    /// answer; `buf` changes only when every member passed the same word.
    fn allreduce_agreeing(
        &self,
        word: u64,
        buf: &mut [u8],
        reduction: &mut Reduction<'_>,
    ) -> Result<bool> {
        let len = AGREEING_HEAD + buf.len();
        if self.size() <= ALL_TO_ALL {
            return with_scratch(3 * len, |space| {
                let (mine, rest) = space.split_at_mut(len);
                let (other, acc) = rest.split_at_mut(len);
                self.all_to_all_agreeing_in(word, buf, reduction, [mine, other, acc])
            });
        }
        with_scratch(2 * len, |space| {
            let (mine, other) = space.split_at_mut(len);
            self.allreduce_agreeing_in(word, buf, reduction, mine, other)
        })
    }

    /// [`allreduce_agreeing`](Self::allreduce_agreeing) of a small team, all to all
    /// (see [`ALL_TO_ALL`]): each member sends its word and buffer to every other, then
    /// receives theirs in team rank order and folds the buffers left to right, so every
    /// member computes the same expression and gets the same bits. `space` holds this
    /// member's note, a received one, and the fold.
    fn all_to_all_agreeing_in(
        &self,
        word: u64,
        buf: &mut [u8],
        reduction: &mut Reduction<'_>,
        space: [&mut [u8]; 3],
    ) -> Result<bool> {
        const HEAD: usize = AGREEING_HEAD;
        let [mine, other, acc] = space;
        let (n, rank) = (self.size(), self.rank());
        mine[..8].copy_from_slice(&word.to_ne_bytes());
        mine[HEAD..].copy_from_slice(buf);
        for distance in 1..n {
            self.send_note(self.after(distance), mine)?;
        }
        let mut same = true;
        for member in 0..n {
            let contribution = if member == rank {
                &mine[HEAD..]
            } else {
                let received = self.receive_note(member, other)?;
                same = same && received == other.len() && other[..8] == mine[..8];
                &other[HEAD..]
            };
            // Every note is received even after a mismatch: the next call's notes follow.
            if !same {
                continue;
            }
            if member == 0 {
                acc[HEAD..].copy_from_slice(contribution);
            } else {
                (reduction.combine)(&mut acc[HEAD..], contribution);
            }
        }
        if same {
            buf.copy_from_slice(&acc[HEAD..]);
        }
        Ok(same)
    }

    /// [`allreduce_agreeing`](Self::allreduce_agreeing) with its two messages' space.
    fn allreduce_agreeing_in(
        &self,
        word: u64,
        buf: &mut [u8],
        reduction: &mut Reduction<'_>,
        mine: &mut [u8],
        other: &mut [u8],
    ) -> Result<bool> {
        const HEAD: usize = AGREEING_HEAD;
        let rank = self.rank();
        let (doubling, extra) = self.doubling();
        mine[..8].copy_from_slice(&word.to_ne_bytes());
        mine[8..HEAD].copy_from_slice(&1u64.to_ne_bytes());
        mine[HEAD..].copy_from_slice(buf);
        let agrees = |message: &[u8], received: usize| {
            let word_at = |k: usize| {
                u64::from_ne_bytes(message[8 * k..8 * k + 8].try_into().unwrap_or_default())
            };
            received == message.len() && word_at(0) == word && word_at(1) != 0
        };
        let mut same = true;
        let folded = rank < 2 * extra;
        if folded && rank % 2 == 1 {
            self.send_note(rank - 1, mine)?;
            let received = self.receive_note(rank - 1, other)?;
            let same = agrees(other, received);
            if same {
                buf.copy_from_slice(&other[HEAD..]);
            }
            return Ok(same);
        }
        if folded {
            let received = self.receive_note(rank + 1, other)?;
            same = agrees(other, received);
            if same {
                (reduction.combine)(&mut mine[HEAD..], &other[HEAD..]);
            }
        }
        let virtual_rank = if folded { rank / 2 } else { rank - extra };
        let real = |v: u32| if v < extra { 2 * v } else { v + extra };
        let mut mask = 1u32;
        while mask < doubling {
            let partner = virtual_rank ^ mask;
            mine[8..HEAD].copy_from_slice(&u64::from(same).to_ne_bytes());
            self.send_note(real(partner), mine)?;
            let received = self.receive_note(real(partner), other)?;
            same = same && agrees(other, received);
            if same && partner < virtual_rank {
                (reduction.combine)(&mut other[HEAD..], &mine[HEAD..]);
                mine[HEAD..].copy_from_slice(&other[HEAD..]);
            } else if same {
                (reduction.combine)(&mut mine[HEAD..], &other[HEAD..]);
            }
            mask <<= 1;
        }
        if folded {
            mine[8..HEAD].copy_from_slice(&u64::from(same).to_ne_bytes());
            self.send_note(rank + 1, mine)?;
        }
        if same {
            buf.copy_from_slice(&mine[HEAD..]);
        }
        Ok(same)
    }

    /// A small broadcast in a small team (see [`sends_one_way`]), one way: the root
    /// sends its call word and buffer in a note to every other member and leaves without
    /// waiting for anyone beyond the notes' flow control. Each member checks the root's
    /// word against its own: a mismatch is an error where the note arrives (the root
    /// learns of it only when its own later calls meet the mismatched member's notes). A
    /// member depends on the root alone, which is what lets the coarray layer ask only
    /// whether the root still runs.
    ///
    /// Its notes carry the call's tag changed by [`ONE_WAY_TAG`], so that a member in
    /// another call that expects a note from the root (or the root's note in such a call)
    /// fails at once instead of taking one for the other.
    fn broadcast_one_way(&self, word: u64, buf: &mut [u8], root: u32) -> Result<()> {
        let one_way = Call {
            shm: self.shm,
            team: self.team,
            tag: self.tag ^ ONE_WAY_TAG,
        };
        with_scratch(CALL_WORD + buf.len(), |note| {
            one_way.broadcast_one_way_in(word, buf, root, note)
        })
    }

    /// [`broadcast_one_way`](Self::broadcast_one_way) with the note's space.
    fn broadcast_one_way_in(
        &self,
        word: u64,
        buf: &mut [u8],
        root: u32,
        note: &mut [u8],
    ) -> Result<()> {
        if self.rank() != root {
            let received = self.receive_note(root, note)?;
            if received != note.len() || note[..CALL_WORD] != word.to_ne_bytes() {
                return Err(Error::CollectiveMismatch {
                    call: "team broadcast",
                    reason: "the source of the broadcast made another call (another \
                             collective, source or length): the members of a team must make \
                             the same collective calls in the same order",
                });
            }
            buf.copy_from_slice(&note[CALL_WORD..]);
            return Ok(());
        }
        note[..CALL_WORD].copy_from_slice(&word.to_ne_bytes());
        note[CALL_WORD..].copy_from_slice(buf);
        for distance in 1..self.size() {
            self.send_note(self.after(distance), note)?;
        }
        Ok(())
    }

    /// A small broadcast (at most [`FUSED`] bytes with its flag) as an allreduce that
    /// agrees on `word` in its own rounds (one round trip at two ranks, instead of the
    /// agreement's and then the tree's): each member contributes its buffer behind a flag
    /// saying whether it is the root's, and the combination keeps the flagged one.
    fn broadcast_agreeing(&self, word: u64, buf: &mut [u8], root: u32) -> Result<bool> {
        with_scratch(ROOT_FLAG + buf.len(), |flagged| {
            self.broadcast_agreeing_in(word, buf, root, flagged)
        })
    }

    /// [`broadcast_agreeing`](Self::broadcast_agreeing) with the flagged buffer's space.
    fn broadcast_agreeing_in(
        &self,
        word: u64,
        buf: &mut [u8],
        root: u32,
        flagged: &mut [u8],
    ) -> Result<bool> {
        flagged[..ROOT_FLAG].copy_from_slice(&u64::from(self.rank() == root).to_ne_bytes());
        flagged[ROOT_FLAG..].copy_from_slice(buf);
        let mut keep_the_roots = |acc: &mut [u8], other: &[u8]| {
            if other[..ROOT_FLAG].iter().any(|&b| b != 0) {
                acc.copy_from_slice(other);
            }
        };
        let mut reduction = Reduction {
            elem_len: flagged.len(),
            builtin: None,
            combine: &mut keep_the_roots,
        };
        let same = self.allreduce_agreeing(word, flagged, &mut reduction)?;
        if same {
            buf.copy_from_slice(&flagged[ROOT_FLAG..]);
        }
        Ok(same)
    }

    /// Bruck's allgather: in round k each rank passes on the (up to) 2^k blocks it holds,
    /// its own first, to the rank 2^k before it.
    fn allgather(&self, mine: &[u8], out: &mut [u8]) -> Result<()> {
        let (n, block) = (self.size(), mine.len());
        let mut held = vec![0u8; out.len()];
        held[..block].copy_from_slice(mine);
        let mut distance = 1u32;
        while distance < n {
            let count = distance.min(n - distance) as usize;
            let (have, fill) = held.split_at_mut(distance as usize * block);
            self.exchange(
                Some((self.before(distance), &have[..count * block])),
                Some((self.after(distance), &mut fill[..count * block])),
            )?;
            distance = distance.saturating_mul(2);
        }
        for (i, piece) in held.chunks_exact(block.max(1)).enumerate().take(n as usize) {
            let owner = self.after(i as u32) as usize;
            out[owner * block..(owner + 1) * block].copy_from_slice(&piece[..block]);
        }
        Ok(())
    }

    /// Pairwise exchange: in step s, the block for the rank s after goes there while the
    /// block from the rank s before arrives.
    fn alltoall(&self, send: &[u8], recv: &mut [u8]) -> Result<()> {
        let n = self.size();
        let block = send.len() / n as usize;
        let of = |r: u32| r as usize * block..(r as usize + 1) * block;
        let rank = self.rank();
        recv[of(rank)].copy_from_slice(&send[of(rank)]);
        for step in 1..n {
            let (to, from) = (self.after(step), self.before(step));
            self.exchange(Some((to, &send[of(to)])), Some((from, &mut recv[of(from)])))?;
        }
        Ok(())
    }
}

impl ShmTransport {
    /// Runs `call` on `team` if every member passed the same `word` (see
    /// [`TeamCall`]), serialized with this rank's other collectives; whether they did.
    pub(crate) fn run_team_call(
        &self,
        team: &TransportTeam,
        word: u64,
        call: &mut TeamCall<'_, '_>,
    ) -> Result<bool> {
        let _serialized = self.collectives.enter();
        let call_on_team = Call {
            shm: self,
            team,
            tag: team.next_tag(),
        };
        let c = &call_on_team;
        // A small allreduce or broadcast agrees in its own notes.
        match call {
            TeamCall::Reduce {
                buf,
                reduction,
                root: None,
            } if buf.len() <= FUSED => c.allreduce_agreeing(word, buf, reduction),
            TeamCall::Broadcast {
                buf,
                root,
                one_way: true,
            } if sends_one_way(team, buf.len()) => {
                c.broadcast_one_way(word, buf, *root).map(|()| true)
            }
            TeamCall::Broadcast {
                buf,
                root,
                one_way: false,
            } if buf.len() + ROOT_FLAG <= FUSED => c.broadcast_agreeing(word, buf, *root),
            call => {
                if let TeamCall::Agree { barrier: true } = call {
                    self.flush_all()?;
                }
                if !c.agree(word)? {
                    return Ok(false);
                }
                match call {
                    TeamCall::Agree { .. } => Ok(()),
                    TeamCall::Broadcast { buf, root, .. } => c.broadcast(buf, *root),
                    TeamCall::Reduce {
                        buf,
                        reduction,
                        root: Some(root),
                    } => c.reduce(buf, reduction, *root),
                    TeamCall::Reduce {
                        buf,
                        reduction,
                        root: None,
                    } if reduction.builtin.is_some() && buf.len() >= SCATTERED_ALLREDUCE => {
                        c.allreduce_scattered(buf, reduction)
                    }
                    TeamCall::Reduce {
                        buf,
                        reduction,
                        root: None,
                    } => c.allreduce(buf, reduction),
                    TeamCall::Allgather { mine, out } => c.allgather(mine, out),
                    TeamCall::Alltoall { send, recv } => c.alltoall(send, recv),
                }?;
                Ok(true)
            }
        }
    }
}
