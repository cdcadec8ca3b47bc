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
use super::{ShmTransport, Watched};
use crate::error::{Error, Result};

/// The sending side of an [`exchange`](ShmTransport::exchange) in progress: `done`
/// bytes of `data` sent (a zero-length message is one empty chunk).
struct Outgoing<'d> {
    peer: u32,
    data: &'d [u8],
    done: usize,
    started: bool,
}

impl Outgoing<'_> {
    fn finished(&self) -> bool {
        self.started && self.done == self.data.len()
    }
}

/// What becomes of a message received: copied into a buffer, or combined into one
/// (`combine(acc, piece)`, each piece a whole number of elements: the chunks are).
pub(crate) enum Sink<'d> {
    /// As much of the message as fits is copied here.
    Copy(&'d mut [u8]),
    /// The message, exactly as long as the buffer, is combined into it piece by piece,
    /// straight from the channel (no copy first).
    Combine(&'d mut [u8], &'d mut dyn FnMut(&mut [u8], &[u8])),
}

impl Sink<'_> {
    /// Bytes of the buffer.
    pub(crate) fn len(&self) -> usize {
        match self {
            Sink::Copy(data) | Sink::Combine(data, _) => data.len(),
        }
    }
}

/// The receiving side: `done` bytes of the sender's message of `total` bytes (known from
/// its first chunk) consumed, as much of it as fits delivered to `sink`.
struct Incoming<'d> {
    peer: u32,
    sink: Sink<'d>,
    total: Option<usize>,
    done: usize,
}

impl Incoming<'_> {
    fn finished(&self) -> bool {
        self.total == Some(self.done)
    }
}

impl ShmTransport {
    /// A word of the collective area of `rank`'s segment, at byte `offset`.
    pub(super) fn channel_word(&self, rank: u32, offset: u64) -> &AtomicU64 {
        // SAFETY: `offset` comes from the layout's channel offsets, which lie inside every
        // segment of the job (checked against the mapping's length when attaching) and are
        // 8-byte aligned; the words are only ever accessed atomically, by every process.
        unsafe { &*(self.peers[rank as usize].base.add(offset as usize) as *const AtomicU64) }
    }

    /// Byte offset of the chunk slot that chunk number `chunk` of the channel from
    /// `source` uses in its receiver's segment.
    fn slot(&self, source: u32, chunk: u64) -> u64 {
        self.layout
            .channels
            .chunk_slot(source, chunk % CHANNEL_DEPTH)
    }

    /// Sends `send.1` to physical rank `send.0` and receives the next message from
    /// physical rank `recv.0` into `recv.1`, both as part of the collective call `tag`,
    /// moving chunks in whichever direction can go on so that two ranks that send to each
    /// other do not wait for each other. Returns the length of the message received (0
    /// when none): the whole message is consumed, and as much of it as fits copied. Ends
    /// with an error when the peer sent a message of another call, when the job aborts, or
    /// when a peer is gone.
    pub(crate) fn exchange(
        &self,
        send: Option<(u32, &[u8])>,
        recv: Option<(u32, Sink<'_>)>,
        tag: u64,
    ) -> Result<usize> {
        let mut outgoing = send.map(|(peer, data)| Outgoing {
            peer,
            data,
            done: 0,
            started: false,
        });
        let mut incoming = recv.map(|(peer, sink)| Incoming {
            peer,
            sink,
            total: None,
            done: 0,
        });
        let mut peers = [0u32; 2];
        let mut awaited = 0;
        for peer in outgoing
            .iter()
            .map(|o| o.peer)
            .chain(incoming.iter().map(|i| i.peer))
        {
            peers[awaited] = peer;
            awaited += 1;
        }
        loop {
            let mut moved = false;
            if let Some(o) = outgoing.as_mut() {
                moved |= self.try_send(o, tag);
            }
            if let Some(i) = incoming.as_mut() {
                moved |= self.try_receive(i, tag)?;
            }
            let sent = outgoing.as_ref().is_none_or(Outgoing::finished);
            let received = incoming.as_ref().is_none_or(Incoming::finished);
            if sent && received {
                return Ok(incoming.map_or(0, |i| i.done));
            }
            if moved {
                continue;
            }
            self.wait_for(Watched::Collective, &peers[..awaited], || {
                Ok(outgoing
                    .as_ref()
                    .is_some_and(|o| !o.finished() && self.can_send(o.peer))
                    || incoming
                        .as_ref()
                        .is_some_and(|i| !i.finished() && self.can_receive(i.peer)))
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

    /// Sends the next chunk if the channel has room; whether it did.
    fn try_send(&self, o: &mut Outgoing<'_>, tag: u64) -> bool {
        if o.finished() || !self.can_send(o.peer) {
            return false;
        }
        let channels = &self.layout.channels;
        let counter = self.channel_word(o.peer, channels.inbox(self.rank));
        let chunk = counter.load(Ordering::Relaxed);
        let slot = self.slot(self.rank, chunk);
        let piece = (o.data.len() - o.done).min(channels.chunk as usize);
        self.channel_word(o.peer, slot)
            .store(tag, Ordering::Relaxed);
        self.channel_word(o.peer, slot + 8)
            .store(o.data.len() as u64, Ordering::Relaxed);
        // SAFETY: the slot's payload (`chunk` bytes after its header) lies inside the
        // peer's collective area; only this rank writes it, and the receiver reads it
        // only after the release store of the counter below and acknowledges it before
        // this rank writes the slot again (`can_send`).
        unsafe {
            std::ptr::copy_nonoverlapping(
                o.data.as_ptr().add(o.done),
                self.peers[o.peer as usize]
                    .base
                    .add((slot + CHUNK_HEADER) as usize),
                piece,
            );
        }
        counter.store(chunk + 1, Ordering::Release);
        self.ring_collective(o.peer);
        o.done += piece;
        o.started = true;
        true
    }

    /// Receives the next chunk if one has arrived; whether it did.
    fn try_receive(&self, i: &mut Incoming<'_>, tag: u64) -> Result<bool> {
        if i.finished() || !self.can_receive(i.peer) {
            return Ok(false);
        }
        let channels = &self.layout.channels;
        let ack = self.channel_word(i.peer, channels.ack(self.rank));
        let chunk = ack.load(Ordering::Relaxed);
        let slot = self.slot(i.peer, chunk);
        let their_tag = self.channel_word(self.rank, slot).load(Ordering::Relaxed);
        let their_len = self
            .channel_word(self.rank, slot + 8)
            .load(Ordering::Relaxed) as usize;
        if their_tag != tag || i.total.is_some_and(|total| total != their_len) {
            return Err(Error::CollectiveMismatch {
                call: "team collective",
                reason: "a member of the team is in another collective call: the members of \
                         a team must make the same collective calls in the same order",
            });
        }
        let total = *i.total.get_or_insert(their_len);
        let piece = (total - i.done).min(channels.chunk as usize);
        let fits = piece.min(i.sink.len().saturating_sub(i.done));
        let at = i.done.min(i.sink.len());
        // SAFETY: the slot's payload lies inside this rank's collective area; the sender
        // wrote it before its release store of the counter that `can_receive` read with
        // acquire, and does not write it again until the acknowledgement below, so
        // nobody writes it while the slice lives.
        let payload = unsafe {
            std::slice::from_raw_parts(
                self.peers[self.rank as usize]
                    .base
                    .add((slot + CHUNK_HEADER) as usize),
                fits,
            )
        };
        match &mut i.sink {
            Sink::Copy(data) => data[at..at + fits].copy_from_slice(payload),
            Sink::Combine(acc, combine) => combine(&mut acc[at..at + fits], payload),
        }
        ack.store(chunk + 1, Ordering::Release);
        self.ring_collective(i.peer);
        i.done += piece;
        Ok(true)
    }
}
