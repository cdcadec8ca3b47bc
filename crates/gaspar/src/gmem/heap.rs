//! The symmetric-heap allocator. Every rank runs the same allocator on the same sequence
//! of collective calls, so every allocation lands at the same offset on every rank and a
//! remote address is computed locally. Local (one-rank) allocations are carved from the
//! top of the heap, away from the symmetric ones that grow from the bottom; the layer
//! above checks that a symmetric allocation still lands at one offset everywhere.
//!
//! Every allocation gets a generation, a number never given out twice in the life of the
//! allocator (a reset does not start it again). A handle remembers the generation of its
//! allocation, so a handle whose block was freed — even when a new block now lies at the
//! same offset — is told apart from a live one ([`HeapAllocator::live`]). Accesses through
//! raw addresses are checked against the live allocations ([`HeapAllocator::reach`]).

use std::collections::BTreeMap;

use crate::error::{Error, Result};

/// Allocation granule (see [`HEAP_BLOCK_ALIGN`](crate::addr::HEAP_BLOCK_ALIGN)).
pub(crate) use crate::addr::HEAP_BLOCK_ALIGN as ALIGN;

/// A live allocation, as the allocator records it and a handle remembers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allocation {
    /// Offset in the heap.
    pub offset: u64,
    /// Bytes asked for (what accesses are checked against).
    pub len: u64,
    /// Which allocation this is (see the module documentation).
    pub generation: u64,
    /// Whether it is a local (one-rank) allocation rather than a symmetric one.
    pub local: bool,
}

impl Allocation {
    /// One past the last byte an access may touch.
    pub fn end(&self) -> u64 {
        self.offset + self.len
    }
}

/// How far an access to a heap may reach, as [`HeapAllocator::reach`] finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Inside this live allocation: any access inside `offset..end()` of it is fine.
    Within(Allocation),
    /// Another rank's heap, away from every symmetric allocation: it may be a local
    /// allocation of that rank, which only that rank knows, so it is not refused here.
    ForeignLocal,
}

/// One live block.
#[derive(Debug, Clone, Copy)]
struct Block {
    /// Granules reserved (the allocation's length rounded up).
    reserved: u64,
    allocation: Allocation,
}

/// First-fit allocator over `[0, len)` with coalescing of freed blocks.
#[derive(Debug, Clone)]
pub struct HeapAllocator {
    len: u64,
    /// Free blocks: offset -> length, never adjacent (coalesced).
    free: BTreeMap<u64, u64>,
    /// Live blocks by offset.
    used: BTreeMap<u64, Block>,
    /// Live symmetric blocks: offset -> bytes reserved (a subset of `used`).
    symmetric: BTreeMap<u64, u64>,
    /// The generation of the next allocation.
    next_generation: u64,
}

impl HeapAllocator {
    /// An allocator for a heap of `len` bytes.
    pub fn new(len: u64) -> HeapAllocator {
        let len = len / ALIGN * ALIGN;
        let mut allocator = HeapAllocator {
            len,
            free: BTreeMap::new(),
            used: BTreeMap::new(),
            symmetric: BTreeMap::new(),
            next_generation: 1,
        };
        allocator.clear();
        allocator
    }

    /// `size` rounded up to whole granules (at least one).
    fn granules(size: u64) -> Result<u64> {
        size.max(1)
            .checked_next_multiple_of(ALIGN)
            .ok_or(Error::LengthOverflow {
                what: "allocation size",
            })
    }

    fn exhausted(&self, size: u64) -> Error {
        Error::HeapExhausted {
            requested: size,
            largest_free: self.free.values().copied().max().unwrap_or(0),
            heap_len: self.len,
        }
    }

    /// Records a new live block of `reserved` bytes at `offset`.
    fn record(&mut self, offset: u64, size: u64, reserved: u64, local: bool) -> Allocation {
        let allocation = Allocation {
            offset,
            len: size,
            generation: self.next_generation,
            local,
        };
        self.next_generation += 1;
        self.used.insert(
            offset,
            Block {
                reserved,
                allocation,
            },
        );
        if !local {
            self.symmetric.insert(offset, reserved);
        }
        allocation
    }

    /// Reserves `size` bytes (at least one granule) from the lowest free block that fits
    /// (the symmetric allocations).
    pub fn alloc(&mut self, size: u64) -> Result<Allocation> {
        let want = Self::granules(size)?;
        let Some((&offset, &block)) = self.free.iter().find(|&(_, &l)| l >= want) else {
            return Err(self.exhausted(size));
        };
        self.free.remove(&offset);
        if block > want {
            self.free.insert(offset + want, block - want);
        }
        Ok(self.record(offset, size, want, false))
    }

    /// Reserves `size` bytes from the top of the highest free block that fits (the local
    /// allocations, kept away from the symmetric ones).
    pub fn alloc_top(&mut self, size: u64) -> Result<Allocation> {
        let want = Self::granules(size)?;
        let Some((&start, &block)) = self.free.iter().rev().find(|&(_, &l)| l >= want) else {
            return Err(self.exhausted(size));
        };
        if block > want {
            self.free.insert(start, block - want);
        } else {
            self.free.remove(&start);
        }
        Ok(self.record(start + block - want, size, want, true))
    }

    /// The live local allocations, as (heap offset, length), by offset.
    pub fn locals(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.used
            .values()
            .filter(|b| b.allocation.local)
            .map(|b| (b.allocation.offset, b.allocation.len))
    }

    /// Checks that `handle` names a live allocation: the one it was made for, not a later
    /// one at the same offset.
    pub fn live(&self, handle: &Allocation) -> Result<()> {
        match self.used.get(&handle.offset) {
            Some(block) if block.allocation == *handle => Ok(()),
            _ => Err(Error::FreedAllocation {
                offset: handle.offset,
                len: handle.len,
            }),
        }
    }

    /// Releases the allocation `handle` names; a handle of a freed allocation is refused
    /// and frees nothing.
    pub fn free(&mut self, handle: &Allocation) -> Result<()> {
        self.live(handle)?;
        let offset = handle.offset;
        let block_len = self.used.remove(&offset).map_or(0, |b| b.reserved);
        self.symmetric.remove(&offset);
        let (mut start, mut len) = (offset, block_len);
        if let Some((&prev, &prev_len)) = self.free.range(..offset).next_back() {
            if prev + prev_len == offset {
                self.free.remove(&prev);
                start = prev;
                len += prev_len;
            }
        }
        if let Some(next_len) = self.free.remove(&(offset + block_len)) {
            len += next_len;
        }
        self.free.insert(start, len);
        Ok(())
    }

    /// Where an access of `len` bytes at `offset` of a rank's heap may go: inside one live
    /// allocation, or — on another rank's heap (`own` false) — anywhere no symmetric
    /// allocation lies, since that rank's local allocations are known only to it.
    /// `Err` carries the live allocation the access starts in, if any, for the message.
    /// O(log n) in the number of live allocations.
    pub fn reach(&self, offset: u64, len: u64, own: bool) -> Result<Reach, Option<Allocation>> {
        let end = offset.checked_add(len).ok_or(None)?;
        // The block whose reserved granules the access starts in.
        let start_block = self
            .used
            .range(..=offset)
            .next_back()
            .filter(|(o, b)| offset < **o + b.reserved)
            .map(|(_, b)| b.allocation);
        match start_block {
            Some(a) if (own || !a.local) && end <= a.end() => return Ok(Reach::Within(a)),
            Some(a) if own || !a.local => return Err(Some(a)),
            _ => {}
        }
        if own {
            return Err(None);
        }
        // A foreign heap: refused if the access touches a symmetric allocation.
        let touches = self
            .symmetric
            .range(..end.max(offset + 1))
            .next_back()
            .is_some_and(|(&o, &reserved)| o + reserved > offset);
        if touches {
            return Err(None);
        }
        Ok(Reach::ForeignLocal)
    }

    /// Forgets every allocation (used by reset); generations go on counting, so handles
    /// from before stay stale.
    pub fn clear(&mut self) {
        self.free.clear();
        self.used.clear();
        self.symmetric.clear();
        if self.len > 0 {
            self.free.insert(0, self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn exhaustion_names_the_largest_free_block() {
        let mut h = HeapAllocator::new(1024);
        let a = h.alloc(512).unwrap();
        let _b = h.alloc(256).unwrap();
        match h.alloc(300) {
            Err(Error::HeapExhausted {
                requested: 300,
                largest_free: 256,
                heap_len: 1024,
            }) => {}
            other => panic!("{other:?}"),
        }
        h.free(&a).unwrap();
        assert_eq!(h.alloc(300).unwrap().offset, 0);
    }

    #[test]
    fn double_free_is_an_error() {
        let mut h = HeapAllocator::new(1024);
        let a = h.alloc(10).unwrap();
        h.free(&a).unwrap();
        assert!(matches!(h.free(&a), Err(Error::FreedAllocation { .. })));
    }

    #[test]
    fn a_stale_handle_does_not_free_the_block_now_at_its_offset() {
        let mut h = HeapAllocator::new(1024);
        let old = h.alloc(64).unwrap();
        h.free(&old).unwrap();
        let new = h.alloc(64).unwrap();
        assert_eq!(new.offset, old.offset);
        assert_ne!(new.generation, old.generation);
        assert!(matches!(h.live(&old), Err(Error::FreedAllocation { .. })));
        assert!(matches!(h.free(&old), Err(Error::FreedAllocation { .. })));
        h.live(&new).unwrap();
        // The live block is still reserved: the next block goes after it.
        assert_eq!(h.alloc(64).unwrap().offset, 64);
        h.clear();
        assert!(h.live(&new).is_err(), "a reset forgets every handle");
        assert!(h.alloc(64).unwrap().generation > new.generation);
    }

    #[test]
    fn accesses_stay_inside_one_live_allocation() {
        let mut h = HeapAllocator::new(4096);
        let a = h.alloc(64).unwrap();
        let b = h.alloc(100).unwrap();
        let top = h.alloc_top(64).unwrap();
        assert_eq!(h.reach(0, 64, true), Ok(Reach::Within(a)));
        assert_eq!(h.reach(0, 128, true), Err(Some(a)), "into the next block");
        assert_eq!(h.reach(64 + 96, 4, true), Ok(Reach::Within(b)));
        assert_eq!(
            h.reach(64 + 100, 4, true),
            Err(Some(b)),
            "the block's padding"
        );
        assert_eq!(h.reach(1024, 8, true), Err(None), "never allocated");
        assert_eq!(h.reach(top.offset, 64, true), Ok(Reach::Within(top)));
        // Another rank's heap: this rank's local blocks say nothing about it, symmetric
        // blocks do.
        assert_eq!(h.reach(top.offset, 64, false), Ok(Reach::ForeignLocal));
        assert_eq!(h.reach(1024, 8, false), Ok(Reach::ForeignLocal));
        assert_eq!(h.reach(0, 128, false), Err(Some(a)));
        assert_eq!(h.reach(64 + 100, 4, false), Err(Some(b)));
        assert_eq!(h.reach(4000, 4, false), Ok(Reach::ForeignLocal));
        h.free(&a).unwrap();
        assert_eq!(h.reach(0, 8, true), Err(None), "freed");
        assert_eq!(
            h.reach(0, 100, false),
            Err(None),
            "ends in a symmetric block"
        );
        assert_eq!(h.reach(u64::MAX, 2, true), Err(None), "overflow");
    }

    #[test]
    fn huge_requests_overflow_cleanly() {
        let mut h = HeapAllocator::new(1024);
        assert!(matches!(
            h.alloc(u64::MAX),
            Err(Error::LengthOverflow { .. })
        ));
    }

    #[test]
    fn local_blocks_come_from_the_top_and_keep_their_kind() {
        let mut h = HeapAllocator::new(4096);
        let low = h.alloc(100).unwrap();
        let top = h.alloc_top(100).unwrap();
        assert_eq!((low.offset, top.offset), (0, 4096 - 128));
        assert!(top.local && !low.local);
        assert_eq!(h.alloc(64).unwrap().offset, 128);
        h.free(&top).unwrap();
        h.free(&low).unwrap();
        assert!(h.free(&top).is_err(), "double free");
    }

    proptest! {
        /// Random alloc/free sequences: blocks never overlap, stay aligned and in bounds,
        /// every live block is reachable exactly up to its length, and freeing everything
        /// gives back one block of the whole heap.
        #[test]
        fn blocks_never_overlap(ops in proptest::collection::vec((any::<bool>(), any::<bool>(), 1u64..5000), 1..200)) {
            let mut h = HeapAllocator::new(1 << 16);
            let mut live: Vec<Allocation> = Vec::new();
            for (is_alloc, top, n) in ops {
                if is_alloc || live.is_empty() {
                    let got = if top { h.alloc_top(n) } else { h.alloc(n) };
                    if let Ok(a) = got {
                        prop_assert_eq!(a.offset % ALIGN, 0);
                        prop_assert!(a.end() <= 1 << 16);
                        for o in &live {
                            prop_assert!(a.end() <= o.offset || o.end() <= a.offset, "overlap");
                        }
                        live.push(a);
                    }
                } else {
                    let a = live.remove((n as usize) % live.len());
                    h.free(&a).unwrap();
                }
                for a in &live {
                    prop_assert_eq!(h.reach(a.offset, a.len, true), Ok(Reach::Within(*a)));
                    prop_assert!(h.reach(a.offset, a.len + 1, true).is_err());
                }
            }
            for a in live.drain(..) {
                h.free(&a).unwrap();
            }
            prop_assert_eq!(h.free.len(), 1);
            prop_assert_eq!(h.free.get(&0).copied(), Some(1 << 16));
        }
    }
}
