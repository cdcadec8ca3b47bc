//! Point-to-point channels through the segments' collective areas, which the team
//! collectives are built from (see `collective`).
//!
//! Every ordered pair of ranks has one channel: an inbox in the receiver's segment, which
//! only the sender writes (a count of chunks sent, then [`CHANNEL_DEPTH`] chunk slots used
//! in turn), and an acknowledgement word in the sender's segment, which only the receiver
//! writes (a count of chunks consumed). A message is one or more chunks, each slot
//! carrying the message's tag and length beside its piece of the payload, so that a
//! receiver finds out at once when its peer is in another collective call. Each side
//! waits on its own segment's collective doorbell, which the other side rings after
//! writing: data and acknowledgements both land in the waiting rank's own segment.

use std::sync::atomic::{AtomicU64, Ordering};

use super::layout::{CHANNEL_DEPTH, CHUNK_HEADER};
use super::ShmTransport;
use crate::error::{Error, Result};

/// One side of an [`exchange`](ShmTransport::exchange) in progress: a message of
/// `len` bytes, `done` of them moved so far (a zero-length message is one empty chunk).
struct Progress {
    peer: u32,
    len: usize,
    done: usize,
    started: bool,
}

impl Progress {
    fn new(peer: u32, len: usize) -> Progress {
        Progress {
            peer,
            len,
            done: 0,
            started: false,
        }
    }

    fn finished(&self) -> bool {
        self.started && self.done == self.len
    }
}

impl ShmTransport {
    /// A word of the collective area of `rank`'s segment, at byte `offset`.
    fn channel_word(&self, rank: u32, offset: u64) -> &AtomicU64 {
        // SAFETY: `offset` comes from the layout's channel offsets, which lie inside every
        // segment of the job (checked against the mapping's length when attaching) and are
        // 8-byte aligned; the words are only ever accessed atomically, by every process.
        unsafe { &*(self.peers[rank as usize].base.add(offset as usize) as *const AtomicU64) }
    }

    /// Byte offset of the chunk slot that chunk number `chunk` of the channel from
    /// `source` uses in its receiver's segment.
    fn slot(&self, source: u32, chunk: u64) -> u64 {
        let channels = &self.layout.channels;
        channels.inbox(source) + 64 + (chunk % CHANNEL_DEPTH) * (CHUNK_HEADER + channels.chunk)
    }

    /// Sends `send.1` to physical rank `send.0` and receives from physical rank `recv.0`
    /// a message of exactly `recv.1.len()` bytes, both as part of the collective call
    /// `tag`, moving chunks in whichever direction can go on so that two ranks that send
    /// to each other do not wait for each other. Ends with an error when the peer sent a
    /// message of another call or length, when the job aborts, or when a peer is gone.
    pub(crate) fn exchange(
        &self,
        send: Option<(u32, &[u8])>,
        recv: Option<(u32, &mut [u8])>,
        tag: u64,
    ) -> Result<()> {
        let mut outgoing = send.map(|(peer, data)| (Progress::new(peer, data.len()), data));
        let mut incoming = recv.map(|(peer, data)| (Progress::new(peer, data.len()), data));
        let awaited: Vec<u32> = outgoing
            .iter()
            .map(|(p, _)| p.peer)
            .chain(incoming.iter().map(|(p, _)| p.peer))
            .collect();
        loop {
            let mut moved = false;
            if let Some((progress, data)) = outgoing.as_mut() {
                moved |= self.try_send(progress, data, tag);
            }
            if let Some((progress, data)) = incoming.as_mut() {
                moved |= self.try_receive(progress, data, tag)?;
            }
            let sent = outgoing.as_ref().map_or(true, |(p, _)| p.finished());
            let received = incoming.as_ref().map_or(true, |(p, _)| p.finished());
            if sent && received {
                return Ok(());
            }
            if moved {
                continue;
            }
            let bell = &self.header(self.rank).collective_bell;
            self.wait_for(bell, &awaited, || {
                Ok(outgoing
                    .as_ref()
                    .is_some_and(|(p, _)| !p.finished() && self.can_send(p.peer))
                    || incoming
                        .as_ref()
                        .is_some_and(|(p, _)| !p.finished() && self.can_receive(p.peer)))
            })?;
        }
    }

    /// Whether the channel to `peer` has a free slot.
    fn can_send(&self, peer: u32) -> bool {
        let channels = &self.layout.channels;
        let sent = self
            .channel_word(peer, channels.inbox(self.rank))
            .load(Ordering::Relaxed);
        let consumed = self
            .channel_word(self.rank, channels.ack(peer))
            .load(Ordering::Acquire);
        sent - consumed < CHANNEL_DEPTH
    }

    /// Whether the channel from `peer` holds a chunk not yet consumed.
    fn can_receive(&self, peer: u32) -> bool {
        let channels = &self.layout.channels;
        let sent = self
            .channel_word(self.rank, channels.inbox(peer))
            .load(Ordering::Acquire);
        let consumed = self
            .channel_word(peer, channels.ack(self.rank))
            .load(Ordering::Relaxed);
        sent > consumed
    }

    /// Sends the next chunk of `data` if the channel has room; whether it did.
    fn try_send(&self, progress: &mut Progress, data: &[u8], tag: u64) -> bool {
        if progress.finished() || !self.can_send(progress.peer) {
            return false;
        }
        let peer = progress.peer;
        let channels = &self.layout.channels;
        let counter = self.channel_word(peer, channels.inbox(self.rank));
        let chunk = counter.load(Ordering::Relaxed);
        let slot = self.slot(self.rank, chunk);
        let piece = (data.len() - progress.done).min(channels.chunk as usize);
        self.channel_word(peer, slot).store(tag, Ordering::Relaxed);
        self.channel_word(peer, slot + 8)
            .store(data.len() as u64, Ordering::Relaxed);
        // SAFETY: the slot's payload (`chunk` bytes after its header) lies inside the
        // peer's collective area; only this rank writes it, and the receiver reads it
        // only after the release store of the counter below and acknowledges it before
        // this rank writes the slot again (`can_send`).
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr().add(progress.done),
                self.peers[peer as usize]
                    .base
                    .add((slot + CHUNK_HEADER) as usize),
                piece,
            );
        }
        counter.store(chunk + 1, Ordering::Release);
        self.ring_if_asleep(&self.header(peer).collective_bell);
        progress.done += piece;
        progress.started = true;
        true
    }

    /// Receives the next chunk into `data` if one has arrived; whether it did.
    fn try_receive(&self, progress: &mut Progress, data: &mut [u8], tag: u64) -> Result<bool> {
        if progress.finished() || !self.can_receive(progress.peer) {
            return Ok(false);
        }
        let peer = progress.peer;
        let channels = &self.layout.channels;
        let ack = self.channel_word(peer, channels.ack(self.rank));
        let chunk = ack.load(Ordering::Relaxed);
        let slot = self.slot(peer, chunk);
        let their_tag = self.channel_word(self.rank, slot).load(Ordering::Relaxed);
        let their_len = self
            .channel_word(self.rank, slot + 8)
            .load(Ordering::Relaxed);
        if their_tag != tag {
            return Err(Error::CollectiveMismatch {
                call: "team collective",
                reason: "a member of the team is in another collective call: the members of \
                         a team must make the same collective calls in the same order",
            });
        }
        if their_len != data.len() as u64 {
            return Err(Error::CollectiveMismatch {
                call: "team collective",
                reason: "a member of the team sent a message of another length",
            });
        }
        let piece = (data.len() - progress.done).min(channels.chunk as usize);
        // SAFETY: the slot's payload lies inside this rank's collective area; the sender
        // wrote it before its release store of the counter that `can_receive` read with
        // acquire, and does not write it again until the acknowledgement below.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.peers[self.rank as usize]
                    .base
                    .add((slot + CHUNK_HEADER) as usize),
                data.as_mut_ptr().add(progress.done),
                piece,
            );
        }
        ack.store(chunk + 1, Ordering::Release);
        self.ring_if_asleep(&self.header(peer).collective_bell);
        progress.done += piece;
        progress.started = true;
        Ok(true)
    }
}
