//! Team collectives on `shm`, over the point-to-point channels (`channel`), each in
//! ceil(log2 n) rounds but alltoall: dissemination for barrier and agreement (Hensgen,
//! Finkel and Manber), binomial trees for broadcast and reduce to a root, recursive
//! doubling for allreduce (the ranks beyond the largest power of two folded into their
//! left neighbours first, as MPICH does), Bruck's algorithm for allgather, and pairwise
//! exchange for alltoall (n - 1 rounds: every rank has a block for every other). Large
//! messages move in chunks through the channels, a chunk in flight while the next is
//! copied.
//!
//! Reductions combine contributions in team rank order (`lower ⊕ higher`) along a tree
//! that depends only on the team's size, so a float reduction gives the same bits on
//! every member and in every run, and a user operator need only be associative.

use super::ShmTransport;
use crate::error::Result;
use crate::transport::team::{Reduction, TeamCall, TransportTeam};
use crate::transport::Transport;

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

    fn exchange(&self, send: Option<(u32, &[u8])>, recv: Option<(u32, &mut [u8])>) -> Result<()> {
        let physical = |team_rank: u32| self.team.members[team_rank as usize];
        self.shm.exchange(
            send.map(|(to, data)| (physical(to), data)),
            recv.map(|(from, data)| (physical(from), data)),
            self.tag,
        )
    }

    fn send(&self, to: u32, data: &[u8]) -> Result<()> {
        self.exchange(Some((to, data)), None)
    }

    fn receive(&self, from: u32, data: &mut [u8]) -> Result<()> {
        self.exchange(None, Some((from, data)))
    }

    /// Dissemination: in round k, a message to the rank 2^k after and one from the rank
    /// 2^k before. Returns whether every member passed the same `word` (each message
    /// carries the sender's word and whether everybody it heard from passed it too; see
    /// `barrier::dissemination`, whose reasoning this is).
    fn disseminate(&self, word: u64) -> Result<bool> {
        let mut same = true;
        let mut distance = 1u32;
        while distance < self.size() {
            let outgoing = [word, u64::from(same)];
            let mut incoming = [0u64; 2];
            self.exchange(
                Some((self.after(distance), bytemuck::bytes_of(&outgoing))),
                Some((self.before(distance), bytemuck::bytes_of_mut(&mut incoming))),
            )?;
            same = same && incoming[0] == word && incoming[1] != 0;
            distance = distance.saturating_mul(2);
        }
        Ok(same)
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

    /// Recursive doubling. With n = 2^k + extra, ranks 2i and 2i+1 (i < extra) first
    /// combine into rank 2i, which takes part for both and hands the result back at the end.
    fn allreduce(&self, buf: &mut [u8], reduction: &mut Reduction<'_>) -> Result<()> {
        let (n, rank) = (self.size(), self.rank());
        let doubling = 1u32 << (u32::BITS - 1 - n.leading_zeros());
        let extra = n - doubling;
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
    /// Runs `call` on `team` (see [`TeamCall`]), serialized with this rank's other
    /// collectives.
    pub(crate) fn run_team_call(&self, team: &TransportTeam, call: TeamCall<'_, '_>) -> Result<()> {
        let _serialized = self.collectives.enter();
        let call_on_team = Call {
            shm: self,
            team,
            tag: team.next_tag(),
        };
        let c = &call_on_team;
        match call {
            TeamCall::Agree {
                word,
                same,
                barrier,
            } => {
                if barrier {
                    self.flush_all()?;
                }
                *same = c.disseminate(word)?;
                Ok(())
            }
            TeamCall::Broadcast { buf, root } => c.broadcast(buf, root),
            TeamCall::Reduce {
                buf,
                mut reduction,
                root: Some(root),
            } => c.reduce(buf, &mut reduction, root),
            TeamCall::Reduce {
                buf,
                mut reduction,
                root: None,
            } => c.allreduce(buf, &mut reduction),
            TeamCall::Allgather { mine, out } => c.allgather(mine, out),
            TeamCall::Alltoall { send, recv } => c.alltoall(send, recv),
        }
    }
}
