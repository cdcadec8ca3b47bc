//! Notes: the small messages of the team collectives (the members' agreement on a call,
//! small allreduces and broadcasts), each one write of a few cache lines and, at the
//! other end, one wait, with no acknowledgement.
//!
//! Every ordered pair of ranks has a ring of [`NOTE_RING`] bytes in the receiver's inbox
//! (see `layout::ChannelLayout::note_ring`), where the sender writes its notes one after
//! the other, each on whole cache lines: its header (a start word, tag and length), then
//! its payload. Lines are numbered from 0 over the life of the job; line l lies at l mod
//! the ring's lines. A note's start word, stored last, holds the number of its first
//! line plus one. Its receiver copies it out, zeroes the first word of each of its lines
//! but the first (so that no word of an old payload looks like the start of a later note
//! that begins there; a start word left from an earlier turn of the ring names a line
//! number smaller than the one awaited), and publishes the number of lines it has read
//! on a line of its own. Both sides count the lines of the pair in their own memory.
//!
//! A note is never overwritten before it is read: a sender checks that the ring has room
//! against the last read count it saw (acquired from the receiver's line, so the
//! receiver's reads of those lines happened before), and looks again, waiting if it must,
//! only when that says no. In the calls where two ranks send each other one note each
//! way or none (agreements, small allreduces) it never waits: a sender writes the note of
//! a call after it left the previous call with its partner's note, which the partner sent
//! after it had read this sender's note of the call before; so at most two notes are
//! unread, and two of the largest fill the ring. A one-way broadcast's root sends
//! without receiving: it waits only when a member is a ring behind (128 broadcasts of a
//! few values). Either looks at the receiver's line about once a ring.
//!
//! Unlike a chunk of a channel, a note needs no acknowledgement message: its sender
//! waits only as flow control, and its receiver is woken at most once (with more ranks
//! than cores, every wake-up costs a switch of a core).

use std::sync::atomic::{AtomicU64, Ordering};

use super::layout::{NOTE_LEN, NOTE_RING};
use super::{ShmTransport, Watched};
use crate::error::{Error, Result};

/// Bytes in front of a note's payload: its start word, tag and length.
const NOTE_HEADER: u64 = 24;
/// Largest payload of a note.
pub(crate) const NOTE_PAYLOAD: usize = (NOTE_LEN - NOTE_HEADER) as usize;
/// Bytes of a line of the ring.
const LINE: u64 = 64;
/// Lines of a ring.
const RING_LINES: u64 = NOTE_RING / LINE;

/// Lines a note of `len` payload bytes takes.
fn lines_of(len: usize) -> u64 {
    (NOTE_HEADER + len as u64).div_ceil(LINE)
}

/// The (ring offset, length) pieces that `len` bytes from byte `at` of the ring's
/// numbering take: one, or two when they run past the ring's end.
fn pieces(at: u64, len: usize) -> [(u64, usize); 2] {
    let at = at % NOTE_RING;
    let first = len.min((NOTE_RING - at) as usize);
    [(at, first), (0, len - first)]
}

/// How many note lines this rank wrote to and read from each rank (kept in process
/// memory: only this rank's collectives, which run one at a time, touch them).
pub(crate) struct NoteCounts {
    sent: Box<[AtomicU64]>,
    received: Box<[AtomicU64]>,
    /// Per rank, how many of the lines sent to it it had read when this rank last looked.
    seen_read: Box<[AtomicU64]>,
}

impl NoteCounts {
    /// No note sent or received yet, in a job of `procs` ranks.
    pub(crate) fn new(procs: u32) -> NoteCounts {
        let zeros = || (0..procs).map(|_| AtomicU64::new(0)).collect();
        NoteCounts {
            sent: zeros(),
            received: zeros(),
            seen_read: zeros(),
        }
    }
}

impl ShmTransport {
    /// Sends `data` (at most [`NOTE_PAYLOAD`] bytes) to physical rank `peer` as its next
    /// note, part of the collective call `tag`, once the ring has room for it (see the
    /// module's header). Ends with an error when the job aborts or `peer` is gone
    /// meanwhile.
    pub(crate) fn send_note(&self, peer: u32, data: &[u8], tag: u64) -> Result<()> {
        debug_assert!(data.len() <= NOTE_PAYLOAD);
        let len = data.len().min(NOTE_PAYLOAD);
        let sent = &self.notes.sent[peer as usize];
        let first = sent.load(Ordering::Relaxed);
        let end = first + lines_of(len);
        sent.store(end, Ordering::Relaxed);
        let seen_read = &self.notes.seen_read[peer as usize];
        if seen_read.load(Ordering::Relaxed) + RING_LINES < end {
            let read = self.channel_word(peer, self.layout.channels.notes_read(self.rank));
            let has_room = || read.load(Ordering::Acquire) + RING_LINES >= end;
            if !has_room() {
                self.wait_for(Watched::Collective, &[peer], || Ok(has_room()))?;
            }
            seen_read.store(read.load(Ordering::Acquire), Ordering::Relaxed);
        }
        let ring = self.layout.channels.note_ring(self.rank);
        let start = ring + (first % RING_LINES) * LINE;
        self.channel_word(peer, start + 8)
            .store(tag, Ordering::Relaxed);
        self.channel_word(peer, start + 16)
            .store(len as u64, Ordering::Relaxed);
        let mut done = 0;
        for (at, piece) in pieces(first * LINE + NOTE_HEADER, len) {
            // SAFETY: the piece lies inside the ring of the peer's inbox from this rank
            // (`pieces` keeps it within the ring's bytes), which only this rank writes;
            // the peer has read every note that lay there before (the room checked
            // above, or the calls' order: the module's header), and reads this one only
            // after the release store of its start word below.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    data[done..].as_ptr(),
                    self.peers[peer as usize].base.add((ring + at) as usize),
                    piece,
                );
            }
            done += piece;
        }
        self.channel_word(peer, start)
            .store(first + 1, Ordering::Release);
        self.ring_collective(peer);
        Ok(())
    }

    /// Waits for the next note from physical rank `peer`, part of the collective call
    /// `tag`, and copies as much of it as fits into `data`; returns the note's length.
    /// Ends with an error when the note belongs to another call, when the job aborts, or
    /// when `peer` is gone.
    pub(crate) fn receive_note(&self, peer: u32, data: &mut [u8], tag: u64) -> Result<usize> {
        let received = &self.notes.received[peer as usize];
        let first = received.load(Ordering::Relaxed);
        let ring = self.layout.channels.note_ring(peer);
        let start = ring + (first % RING_LINES) * LINE;
        let start_word = self.channel_word(self.rank, start);
        self.wait_for(Watched::Collective, &[peer], || {
            Ok(start_word.load(Ordering::Acquire) == first + 1)
        })?;
        let their_tag = self
            .channel_word(self.rank, start + 8)
            .load(Ordering::Relaxed);
        let len = (self
            .channel_word(self.rank, start + 16)
            .load(Ordering::Relaxed) as usize)
            .min(NOTE_PAYLOAD);
        let end = first + lines_of(len);
        received.store(end, Ordering::Relaxed);
        if their_tag != tag {
            // Counted as read, so that the sender's next notes do not wait for it.
            self.mark_read(peer, first..end);
            return Err(Error::CollectiveMismatch {
                call: "team collective",
                reason: "a member of the team is in another collective call: the members of \
                         a team must make the same collective calls in the same order",
            });
        }
        let fits = len.min(data.len());
        let mut done = 0;
        for (at, piece) in pieces(first * LINE + NOTE_HEADER, fits) {
            // SAFETY: the piece lies inside the ring of this rank's inbox from `peer`
            // (`pieces` keeps it within the ring's bytes); the sender wrote it before its
            // release store of the start word read above with acquire, and does not write
            // it again before this rank marks it read.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    self.peers[self.rank as usize]
                        .base
                        .add((ring + at) as usize),
                    data[done..].as_mut_ptr(),
                    piece,
                );
            }
            done += piece;
        }
        self.mark_read(peer, first..end);
        Ok(len)
    }

    /// Marks the note on `lines` of the ring from `peer` read: zeroes the first word of
    /// each line but the first (the module's header), publishes the count of lines read, and wakes `peer` if it sleeps on it:
    /// in a send's flow control (its collective bell) or before it leaves the job (its
    /// memory bell, see [`sent_notes_read`](Self::sent_notes_read)).
    fn mark_read(&self, peer: u32, lines: std::ops::Range<u64>) {
        let ring = self.layout.channels.note_ring(peer);
        let end = lines.end;
        for line in lines.start + 1..lines.end {
            self.channel_word(self.rank, ring + (line % RING_LINES) * LINE)
                .store(0, Ordering::Relaxed);
        }
        self.channel_word(self.rank, self.layout.channels.notes_read(peer))
            .store(end, Ordering::Release);
        self.ring_collective(peer);
        self.wake(peer);
    }

    /// Whether physical rank `peer` has read every note this rank sent it.
    pub(crate) fn sent_notes_read(&self, peer: u32) -> bool {
        let sent = self.notes.sent[peer as usize].load(Ordering::Relaxed);
        self.channel_word(peer, self.layout.channels.notes_read(self.rank))
            .load(Ordering::Acquire)
            == sent
    }
}
