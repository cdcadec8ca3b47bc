//! Handle bookkeeping without a shared counter on the hot path.
//!
//! A handle is `(thread slot << 48) | sequence`: each thread numbers its own operations,
//! so issuing one is a thread-local increment, not an atomic read-modify-write that every
//! put would pay for. `complete` flushes the whole transport, so it completes every
//! thread's operations; a thread skips the flush only for its own handles that an
//! earlier flush of its own already covered. A handle from another thread is always
//! flushed for (conservative, never wrong).
//!
//! Thread slots are 16 bits; they are handed out once per thread and reused after 65 534
//! threads, which could make a long-exited thread's handle look like a live thread's.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use super::Handle;

const SEQUENCE_BITS: u32 = 48;
const SEQUENCE_MASK: u64 = (1 << SEQUENCE_BITS) - 1;
/// Slots 0 (so that no handle is NULL) and 0xffff (so that none is ALL) are never used.
const SLOTS: u64 = 0xfffe;

static NEXT_SLOT: AtomicU64 = AtomicU64::new(0);

#[derive(Clone, Copy)]
struct ThreadHandles {
    /// This thread's slot, 0 until the first operation.
    slot: u64,
    /// Sequence number of the last operation issued by this thread.
    issued: u64,
    /// Every operation of this thread up to this sequence number is complete.
    completed: u64,
    /// Whether a write of this thread may not yet be complete at its target (a flush
    /// clears it). Gets and atomics are complete when they return and do not set it.
    writes_in_flight: bool,
}

thread_local! {
    static MINE: Cell<ThreadHandles> = const {
        Cell::new(ThreadHandles { slot: 0, issued: 0, completed: 0, writes_in_flight: false })
    };
}

/// A new handle for an operation this thread just issued.
#[inline]
pub(super) fn issue() -> Handle {
    issue_marking(false)
}

/// A new handle for a write this thread just issued (complete only after a flush).
#[inline]
pub(super) fn issue_write() -> Handle {
    issue_marking(true)
}

/// A new handle; with `write`, this thread has a write in flight from now on. One look
/// at the thread's state, not one per field.
#[inline]
fn issue_marking(write: bool) -> Handle {
    MINE.with(|cell| {
        let mut mine = cell.get();
        if mine.slot == 0 {
            mine.slot = 1 + NEXT_SLOT.fetch_add(1, Ordering::Relaxed) % SLOTS;
        }
        mine.issued = (mine.issued + 1) & SEQUENCE_MASK;
        mine.writes_in_flight |= write;
        cell.set(mine);
        Handle((mine.slot << SEQUENCE_BITS) | mine.issued)
    })
}

/// Whether a write of this thread may still be in flight.
#[inline]
pub(super) fn writes_in_flight() -> bool {
    MINE.with(|cell| cell.get().writes_in_flight)
}

/// Whether `handle` was issued by this thread.
#[inline]
pub(super) fn is_own(handle: Handle) -> bool {
    MINE.with(|cell| {
        let mine = cell.get();
        mine.slot != 0 && handle.0 >> SEQUENCE_BITS == mine.slot
    })
}

/// Whether `handle` is known complete without asking the transport.
#[inline]
pub(super) fn is_complete(handle: Handle) -> bool {
    if handle == Handle::NULL {
        return true;
    }
    MINE.with(|cell| {
        let mine = cell.get();
        handle.0 >> SEQUENCE_BITS == mine.slot
            && mine.slot != 0
            && handle.0 & SEQUENCE_MASK <= mine.completed
    })
}

/// The sequence number of this thread's last operation.
#[inline]
pub(super) fn last_issued() -> u64 {
    MINE.with(|cell| cell.get().issued)
}

/// Records that this thread's operations up to `issued` are complete (after a flush, or
/// when none of them was a write in flight).
#[inline]
pub(super) fn mark_completed(issued: u64) {
    MINE.with(|cell| {
        let mut mine = cell.get();
        mine.completed = mine.completed.max(issued);
        if issued == mine.issued {
            mine.writes_in_flight = false;
        }
        cell.set(mine);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_increase_and_complete_in_order() {
        let a = issue();
        let b = issue();
        assert!(b > a);
        assert!(!is_complete(a));
        mark_completed(last_issued());
        assert!(is_complete(a) && is_complete(b));
        assert!(is_complete(Handle::NULL));
        assert!(!is_complete(Handle::ALL));
        let c = issue();
        assert!(!is_complete(c));
    }

    #[test]
    fn only_writes_need_a_flush() {
        let read = issue();
        assert!(!writes_in_flight());
        assert!(is_own(read));
        let write = issue_write();
        assert!(writes_in_flight());
        mark_completed(last_issued());
        assert!(!writes_in_flight());
        assert!(is_complete(write));
    }

    #[test]
    fn another_threads_handle_is_never_taken_as_complete() {
        let theirs = std::thread::spawn(|| {
            let h = issue();
            mark_completed(last_issued());
            h
        })
        .join()
        .unwrap();
        issue();
        mark_completed(last_issued());
        assert!(!is_complete(theirs));
    }
}
