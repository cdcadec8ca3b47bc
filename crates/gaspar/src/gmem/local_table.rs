//! Local allocations, published so that other ranks can check accesses against them.
//!
//! A rank's [local allocations](super::GlobalMemory::alloc_local) are known only to it, yet
//! other ranks put into them. So that such an access is checked against the allocation
//! (not just the segment) before anything moves, every rank publishes the list of its
//! live local allocations in a region at the top of its own heap segment, past the heap
//! users see:
//!
//! ```text
//! region + 0    sequence    even when the list is stable (a seqlock: odd while written)
//! region + 8    count       entries in the list
//! region + 64   frees seen  bumped by every other rank when it frees a local allocation
//! region + 128  entries     count x (heap offset, length), by offset
//! ```
//!
//! Another rank reads the list with transport gets (the same on `shm` and `mpi`) and keeps
//! a copy. The copy stays valid until some rank frees a local allocation: the freeing rank
//! adds one to the "frees seen" word of every other rank before its free returns, and a
//! rank whose word moved since it filled its copies drops them all. A check inside the
//! last block found costs one atomic load of the rank's own word and two of memory of
//! this process (no lock); inside another kept block, a lock and a binary search; a miss
//! reads the owner's list again (a new allocation is found there), and only then refuses.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::addr::{GlobalAddr, Segment};
use crate::error::{Error, Result};
use crate::transport::{AnyTransport, AtomicOp, Location, Transport, Width};

const SEQUENCE: u64 = 0;
const COUNT: u64 = 8;
const FREES_SEEN: u64 = 64;
const ENTRIES: u64 = 128;
const ENTRY_BYTES: u64 = 16;
/// Largest region: room for 4088 local allocations per rank.
const MAX_REGION: u64 = 64 * 1024;

/// Bytes at the top of a heap segment of `segment_len` bytes kept for the published list:
/// 64 KiB, or a sixteenth of smaller heaps (a multiple of 64 either way).
pub(crate) fn region_len(segment_len: u64) -> u64 {
    (segment_len / 16).min(MAX_REGION) / 64 * 64
}

/// The published lists: this rank's, and the copies it keeps of other ranks'.
pub(crate) struct LocalTables {
    /// Heap offset of the region (the heap users see ends here).
    region: u64,
    /// Entries the region holds.
    capacity: usize,
    copies: Mutex<Copies>,
    /// The last block of another rank an access was found inside ([`Hit`]; 0: none),
    /// valid while the "frees seen" word equals `seen`. Both are written under the lock
    /// of `copies`: `last_hit` emptied before `seen` moves.
    last_hit: AtomicU64,
    /// `copies.seen`, for the check that takes no lock.
    seen: AtomicU64,
}

/// A block of another rank in one word: owner (16 bits), heap offset in granules of 64
/// bytes (32 bits: the 38 bits of an offset), length in bytes (16 bits, saturated: an
/// access past 65535 bytes into a larger block takes the locked path).
struct Hit;

impl Hit {
    fn encode(owner: u32, start: u64, len: u64) -> Option<u64> {
        let owner = u64::from(u16::try_from(owner).ok()?);
        let granule = u32::try_from(start / crate::addr::HEAP_BLOCK_ALIGN).ok()?;
        (start % crate::addr::HEAP_BLOCK_ALIGN == 0)
            .then(|| owner << 48 | u64::from(granule) << 16 | len.min(u64::from(u16::MAX)))
    }

    /// The block (heap offset, bytes known) of `word` when it holds the `len` bytes at
    /// `offset` of `owner`.
    fn covering(word: u64, owner: u32, offset: u64, len: u64) -> Option<(u64, u64)> {
        let start = (word >> 16 & u64::from(u32::MAX)) * crate::addr::HEAP_BLOCK_ALIGN;
        let span = word & u64::from(u16::MAX);
        let into = offset.wrapping_sub(start);
        (word >> 48 == u64::from(owner) && into < span && len <= span - into)
            .then_some((start, span))
    }
}

/// Other ranks' lists as last read, valid while this rank's "frees seen" word is `seen`.
#[derive(Default)]
struct Copies {
    seen: u64,
    /// By physical rank; `None` where not read since the copies were last dropped.
    by_rank: Vec<Option<Vec<(u64, u64)>>>,
}

/// Where a checked access landed, for the caller's message.
pub(crate) enum Found {
    /// Inside this live local allocation of the owner (heap offset, length).
    Inside(u64, u64),
    /// Not inside one; the live allocation (heap offset, length) the access starts in.
    Outside(Option<(u64, u64)>),
}

impl LocalTables {
    /// The lists of a heap segment of `segment_len` bytes.
    pub(crate) fn new(segment_len: u64) -> LocalTables {
        let region_bytes = region_len(segment_len);
        LocalTables {
            region: segment_len - region_bytes,
            capacity: (region_bytes.saturating_sub(ENTRIES) / ENTRY_BYTES) as usize,
            copies: Mutex::default(),
            last_hit: AtomicU64::new(0),
            seen: AtomicU64::new(0),
        }
    }

    /// The heap users see: everything below the region.
    pub(crate) fn heap_len(&self) -> u64 {
        self.region
    }

    /// How many local allocations a rank can have live at once.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    fn at(&self, rank: u32, offset: u64) -> Location {
        let offset = self.region + offset;
        Location::new(
            rank,
            Segment::Heap,
            offset,
            GlobalAddr::new(rank, 0, Segment::Heap, offset).unwrap_or(GlobalAddr::NULL),
        )
    }

    fn word(&self, transport: &AnyTransport, rank: u32, offset: u64, op: AtomicOp) -> Result<u64> {
        Ok(transport.atomic(self.at(rank, offset), Width::W8, op)?)
    }

    /// Publishes this rank's live local allocations, `(heap offset, length)` by offset
    /// (at most [`capacity`](Self::capacity)). Other ranks reading meanwhile see the old
    /// list or the new one, never a mix.
    pub(crate) fn publish(
        &self,
        transport: &AnyTransport,
        allocations: impl Iterator<Item = (u64, u64)>,
    ) -> Result<()> {
        let bytes: Vec<u8> = allocations
            .take(self.capacity)
            .flat_map(|(offset, len)| [offset, len])
            .flat_map(u64::to_ne_bytes)
            .collect();
        let me = transport.rank();
        let count = bytes.len() as u64 / ENTRY_BYTES;
        let sequence = self.word(transport, me, SEQUENCE, AtomicOp::Load)?;
        // Odd while written, whatever the memory held before this rank first published.
        let writing = sequence | 1;
        self.word(transport, me, SEQUENCE, AtomicOp::Store(writing))?;
        if !bytes.is_empty() {
            transport.put_flushed(self.at(me, ENTRIES), &bytes)?;
        }
        self.word(transport, me, COUNT, AtomicOp::Store(count))?;
        self.word(
            transport,
            me,
            SEQUENCE,
            AtomicOp::Store(writing.wrapping_add(1)),
        )?;
        Ok(())
    }

    /// Tells every other rank that a local allocation of this rank ended: their copies of
    /// the lists are stale. Done before the free returns, so an access ordered after the
    /// free (by a barrier, a flag) sees it.
    pub(crate) fn announce_free(&self, transport: &AnyTransport) -> Result<()> {
        let me = transport.rank();
        for rank in (0..transport.procs()).filter(|&r| r != me) {
            self.word(transport, rank, FREES_SEEN, AtomicOp::Add(1))?;
        }
        Ok(())
    }

    /// Forgets every copy (a reset: every rank's local allocations are gone).
    pub(crate) fn forget_copies(&self) {
        let mut copies = lock(&self.copies);
        self.last_hit.store(0, Ordering::Relaxed);
        copies.by_rank.fill(None);
    }

    /// Whether the `len` bytes at heap offset `offset` of physical rank `owner` lie inside
    /// the last block of another rank an access was found inside, still live: the check
    /// without a lock, which reads the "frees seen" word only when the block covers them
    /// (so that accesses elsewhere pay nothing).
    pub(crate) fn in_last_hit(
        &self,
        transport: &AnyTransport,
        owner: u32,
        offset: u64,
        len: u64,
    ) -> Result<bool> {
        let last = self.last_hit.load(Ordering::Acquire);
        if Hit::covering(last, owner, offset, len).is_none() {
            return Ok(false);
        }
        let seen = self.word(transport, transport.rank(), FREES_SEEN, AtomicOp::Load)?;
        Ok(self.seen.load(Ordering::Acquire) == seen
            && self.last_hit.load(Ordering::Relaxed) == last)
    }

    /// Whether the `len` bytes at heap offset `offset` of physical rank `owner` lie inside
    /// one of its live local allocations.
    pub(crate) fn check(
        &self,
        transport: &AnyTransport,
        owner: u32,
        offset: u64,
        len: u64,
    ) -> Result<Found> {
        let seen = self.word(transport, transport.rank(), FREES_SEEN, AtomicOp::Load)?;
        let mut copies = lock(&self.copies);
        if copies.seen != seen {
            self.last_hit.store(0, Ordering::Relaxed);
            copies.by_rank.fill(None);
            copies.seen = seen;
            self.seen.store(seen, Ordering::Release);
        }
        let slot = owner as usize;
        if copies.by_rank.len() <= slot {
            copies.by_rank.resize(slot + 1, None);
        }
        let kept = copies.by_rank[slot]
            .as_deref()
            .map(|list| find(list, offset, len));
        let found = match kept {
            Some(inside @ Found::Inside(..)) => inside,
            _ => {
                let list = self.read(transport, owner)?;
                let found = find(&list, offset, len);
                copies.by_rank[slot] = Some(list);
                found
            }
        };
        if let Found::Inside(start, block_len) = found {
            if let Some(hit) = Hit::encode(owner, start, block_len) {
                self.last_hit.store(hit, Ordering::Release);
            }
        }
        Ok(found)
    }

    /// Reads `owner`'s published list, again while the owner is writing it.
    fn read(&self, transport: &AnyTransport, owner: u32) -> Result<Vec<(u64, u64)>> {
        loop {
            let sequence = self.word(transport, owner, SEQUENCE, AtomicOp::Load)?;
            let count = self.word(transport, owner, COUNT, AtomicOp::Load)?;
            if sequence & 1 == 0 {
                // A count past the region: memory the owner has not published in yet.
                let count = if count > self.capacity as u64 {
                    0
                } else {
                    count
                };
                let mut bytes = vec![0u8; (count * ENTRY_BYTES) as usize];
                transport.get(self.at(owner, ENTRIES), &mut bytes)?;
                if self.word(transport, owner, SEQUENCE, AtomicOp::Load)? == sequence {
                    let words: Vec<u64> = bytes
                        .chunks_exact(8)
                        .map(|w| u64::from_ne_bytes(w.try_into().expect("8 bytes")))
                        .collect();
                    return Ok(words.chunks_exact(2).map(|e| (e[0], e[1])).collect());
                }
            }
            if transport.job_aborted() {
                return Err(Error::JobAborted { rank: None });
            }
            std::hint::spin_loop();
        }
    }
}

/// Whether `offset..offset + len` lies inside one entry of `list` (sorted by offset).
fn find(list: &[(u64, u64)], offset: u64, len: u64) -> Found {
    let starts_in = list
        .partition_point(|&(start, _)| start <= offset)
        .checked_sub(1)
        .map(|k| list[k])
        .filter(|&(start, block_len)| offset - start < block_len.max(1));
    match starts_in {
        Some((start, block_len))
            if offset
                .checked_add(len)
                .is_some_and(|end| end <= start + block_len) =>
        {
            Found::Inside(start, block_len)
        }
        other => Found::Outside(other),
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::{find, region_len, Found, Hit};

    #[test]
    fn accesses_are_inside_exactly_one_entry() {
        let list = [(0, 64), (128, 100), (4096, 8)];
        assert!(matches!(find(&list, 0, 64), Found::Inside(..)));
        assert!(matches!(find(&list, 130, 98), Found::Inside(..)));
        assert!(matches!(
            find(&list, 130, 99),
            Found::Outside(Some((128, 100)))
        ));
        assert!(matches!(find(&list, 64, 8), Found::Outside(None)));
        assert!(matches!(find(&list, 5000, 1), Found::Outside(None)));
        assert!(matches!(find(&[], 0, 1), Found::Outside(None)));
        assert!(matches!(
            find(&list, 4100, u64::MAX),
            Found::Outside(Some((4096, 8)))
        ));
    }

    #[test]
    fn a_hit_covers_exactly_its_block_of_its_owner() {
        let hit = Hit::encode(3, 4096, 100).unwrap();
        assert_eq!(Hit::covering(hit, 3, 4096, 100), Some((4096, 100)));
        assert_eq!(Hit::covering(hit, 3, 4100, 96), Some((4096, 100)));
        assert_eq!(Hit::covering(hit, 3, 4100, 97), None, "past the end");
        assert_eq!(Hit::covering(hit, 3, 4032, 8), None, "before the start");
        assert_eq!(Hit::covering(hit, 2, 4096, 8), None, "another owner");
        assert_eq!(Hit::covering(0, 0, 0, 0), None, "no hit");
        // Larger blocks: only their first 65535 bytes take the fast path.
        let big = Hit::encode(1, 1 << 37, 1 << 20).unwrap();
        assert_eq!(
            Hit::covering(big, 1, 1 << 37, 65535),
            Some((1 << 37, 65535))
        );
        assert_eq!(Hit::covering(big, 1, 1 << 37, 65536), None);
        assert_eq!(Hit::encode(1 << 16, 0, 8), None, "owner past 16 bits");
        assert_eq!(Hit::encode(0, 65, 8), None, "unaligned");
    }

    #[test]
    fn the_region_is_64_kib_or_a_sixteenth_of_small_heaps() {
        assert_eq!(region_len(256 << 20), 64 << 10);
        assert_eq!(region_len(1 << 20), 64 << 10);
        assert_eq!(region_len(64 << 10), 4 << 10);
        assert_eq!(region_len(1000), 0);
        assert_eq!(region_len(0), 0);
    }
}
