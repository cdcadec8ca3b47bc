//! Notes: the small messages of the team collectives (the members' agreement on a call,
//! small allreduces and broadcasts), each one write of a few cache lines and, at the
//! other end, one wait, with no acknowledgement.
//!
//! Every ordered pair of ranks has [`NOTES`] notes in the receiver's inbox (see
//! `layout::ChannelLayout::note`), used in turn: note number m of the pair lies in note
//! m mod 2, and its sequence word says m + 1 once the note is written, and m + 1 with
//! [`READ`] once the receiver has read it. Both sides count the notes of the pair in
//! their own memory. A note is never overwritten before it is read. In the calls where two
//! ranks send each other one note each way or none (agreements, small allreduces), that
//! needs nothing: a sender writes note m + 2 of a pair in a later call than note m + 1,
//! after it left the call of note m + 1 with its partner's note of that call, which the
//! partner sent after it left the call of note m, having read note m. A one-way
//! broadcast's root sends without receiving: from its note on until the mark of that note
//! is seen, the sender of each note to that rank first waits for the mark of the note two
//! before (flow control), so a root waits only when a member is two broadcasts behind.
//!
//! Unlike a chunk of a channel, a note needs no acknowledgement message: its sender
//! waits only as flow control, and its receiver is woken at most once (with more ranks
//! than cores, every wake-up costs a switch of a core).

use std::sync::atomic::{AtomicU64, Ordering};

use super::layout::{NOTES, NOTE_LEN};
use super::ShmTransport;
use crate::error::{Error, Result};

/// Bytes in front of a note's payload: its sequence word, tag and length.
const NOTE_HEADER: u64 = 24;
/// The bit of a note's sequence word that says its receiver has read it.
const READ: u64 = 1 << 63;
/// Largest payload of a note.
pub(crate) const NOTE_PAYLOAD: usize = (NOTE_LEN - NOTE_HEADER) as usize;

/// How many notes this rank sent to and received from each rank (kept in process
/// memory: only this rank's collectives, which run one at a time, touch them).
pub(crate) struct NoteCounts {
    sent: Box<[AtomicU64]>,
    received: Box<[AtomicU64]>,
    /// Per rank, 1 + the number of the last one-way note sent to it that may be unread;
    /// 0 when none: only then may a note skip the flow control (see the module's header).
    one_way_unread: Box<[AtomicU64]>,
}

impl NoteCounts {
    /// No note sent or received yet, in a job of `procs` ranks.
    pub(crate) fn new(procs: u32) -> NoteCounts {
        let zeros = || (0..procs).map(|_| AtomicU64::new(0)).collect();
        NoteCounts {
            sent: zeros(),
            received: zeros(),
            one_way_unread: zeros(),
        }
    }

    /// The number of the next note to or from `peer` in `counts`, which moves on.
    fn next(counts: &[AtomicU64], peer: u32) -> u64 {
        let count = &counts[peer as usize];
        let number = count.load(Ordering::Relaxed);
        count.store(number + 1, Ordering::Relaxed);
        number
    }
}

impl ShmTransport {
    /// Sends `data` (at most [`NOTE_PAYLOAD`] bytes) to physical rank `peer` as its next
    /// note, part of the collective call `tag`, once `peer` has read the note that was in
    /// its place (see the module's header); `one_way` when the call does not wait for a
    /// note from `peer` (a one-way broadcast's root). Ends with an error when the job
    /// aborts or `peer` is gone meanwhile.
    pub(crate) fn send_note(&self, peer: u32, data: &[u8], tag: u64, one_way: bool) -> Result<()> {
        debug_assert!(data.len() <= NOTE_PAYLOAD);
        let len = data.len().min(NOTE_PAYLOAD);
        let number = NoteCounts::next(&self.notes.sent, peer);
        let at = self.layout.channels.note(self.rank, number % NOTES);
        let unread = &self.notes.one_way_unread[peer as usize];
        let one_way_before = unread.load(Ordering::Relaxed);
        if one_way {
            unread.store(number + 1, Ordering::Relaxed);
        }
        // Only while a one-way note may be unread: between calls that exchange notes
        // both ways, the place is always free, and the mark is not looked at (it lies in
        // a cache line the peer wrote last).
        if let Some(before) = number.checked_sub(NOTES).filter(|_| one_way_before != 0) {
            let sequence = self.channel_word(peer, at);
            let read = (before + 1) | READ;
            if sequence.load(Ordering::Acquire) != read {
                let bell = &self.header(self.rank).collective_bell;
                self.wait_for(bell, &[peer], || {
                    Ok(sequence.load(Ordering::Acquire) == read)
                })?;
            }
            if !one_way && before + 1 >= one_way_before {
                // The last one-way note is read (it was this place's, or an earlier one).
                unread.store(0, Ordering::Relaxed);
            }
        }
        self.channel_word(peer, at + 8)
            .store(tag, Ordering::Relaxed);
        self.channel_word(peer, at + 16)
            .store(len as u64, Ordering::Relaxed);
        // SAFETY: the note's payload (`NOTE_PAYLOAD` bytes after its header) lies inside
        // the peer's collective area; only this rank writes it, and the peer has read it
        // before this rank writes it again (the module's header), reading it only after
        // the release store of the sequence word below.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                self.peers[peer as usize]
                    .base
                    .add((at + NOTE_HEADER) as usize),
                len,
            );
        }
        self.channel_word(peer, at)
            .store(number + 1, Ordering::Release);
        self.ring_if_asleep(&self.header(peer).collective_bell);
        Ok(())
    }

    /// Waits for the next note from physical rank `peer`, part of the collective call
    /// `tag`, and copies as much of it as fits into `data`; returns the note's length.
    /// Ends with an error when the note belongs to another call, when the job aborts, or
    /// when `peer` is gone.
    pub(crate) fn receive_note(&self, peer: u32, data: &mut [u8], tag: u64) -> Result<usize> {
        let number = NoteCounts::next(&self.notes.received, peer);
        let at = self.layout.channels.note(peer, number % NOTES);
        let sequence = self.channel_word(self.rank, at);
        let bell = &self.header(self.rank).collective_bell;
        self.wait_for(bell, &[peer], || {
            Ok(sequence.load(Ordering::Acquire) & !READ > number)
        })?;
        let their_tag = self.channel_word(self.rank, at + 8).load(Ordering::Relaxed);
        if their_tag != tag {
            // Counted as read, so that the sender's next notes do not wait for it.
            self.mark_read(sequence, number, peer);
            return Err(Error::CollectiveMismatch {
                call: "team collective",
                reason: "a member of the team is in another collective call: the members of \
                         a team must make the same collective calls in the same order",
            });
        }
        let len = (self
            .channel_word(self.rank, at + 16)
            .load(Ordering::Relaxed) as usize)
            .min(NOTE_PAYLOAD);
        let fits = len.min(data.len());
        // SAFETY: the payload lies inside this rank's collective area; the sender wrote it
        // before its release store of the sequence word read above with acquire, and does
        // not write it again before this rank's next note to it (the module's header).
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.peers[self.rank as usize]
                    .base
                    .add((at + NOTE_HEADER) as usize),
                data.as_mut_ptr(),
                fits,
            );
        }
        // The payload is copied out: the sender may write this note's place again (it
        // waits for this mark only after this rank left it behind by two notes, or when
        // it leaves the job, so a sender asleep on it is rare, but must be woken).
        self.mark_read(sequence, number, peer);
        Ok(len)
    }

    /// Marks note `number` from `peer` read, and wakes `peer` if it sleeps on it: in a
    /// send's flow control (its collective bell) or before it leaves the job (its memory
    /// bell, see [`sent_notes_read`](Self::sent_notes_read)).
    fn mark_read(&self, sequence: &AtomicU64, number: u64, peer: u32) {
        sequence.store((number + 1) | READ, Ordering::Release);
        self.ring_if_asleep(&self.header(peer).collective_bell);
        self.wake(peer);
    }

    /// Whether physical rank `peer` has read every note this rank sent it.
    pub(crate) fn sent_notes_read(&self, peer: u32) -> bool {
        let sent = self.notes.sent[peer as usize].load(Ordering::Relaxed);
        let Some(last) = sent.checked_sub(1) else {
            return true;
        };
        let at = self.layout.channels.note(self.rank, last % NOTES);
        self.channel_word(peer, at).load(Ordering::Acquire) == sent | READ
    }
}
