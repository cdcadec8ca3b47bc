//! The symmetric-heap allocator. Every rank runs the same allocator on the same sequence
//! of collective calls, so every allocation lands at the same offset on every rank and a
//! remote address is computed locally. Local (one-rank) allocations are carved from the
//! top of the heap, away from the symmetric ones that grow from the bottom; the layer
//! above checks that a symmetric allocation still lands at one offset everywhere.

use std::collections::BTreeMap;

use crate::error::{Error, Result};

/// Allocation granule: a cache line, so that separate allocations never share one.
pub const ALIGN: u64 = 64;

/// First-fit allocator over `[0, len)` with coalescing of freed blocks.
#[derive(Debug, Clone)]
pub struct HeapAllocator {
    len: u64,
    /// Free blocks: offset -> length, never adjacent (coalesced).
    free: BTreeMap<u64, u64>,
    /// Live blocks: offset -> length.
    used: BTreeMap<u64, u64>,
    /// Which live blocks are local (from `alloc_top`).
    local: std::collections::BTreeSet<u64>,
}

impl HeapAllocator {
    /// An allocator for a heap of `len` bytes.
    pub fn new(len: u64) -> HeapAllocator {
        let len = len / ALIGN * ALIGN;
        let mut free = BTreeMap::new();
        if len > 0 {
            free.insert(0, len);
        }
        HeapAllocator {
            len,
            free,
            used: BTreeMap::new(),
            local: Default::default(),
        }
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

    /// Reserves `size` bytes (at least one granule) from the lowest free block that fits
    /// (the symmetric allocations); returns the offset.
    pub fn alloc(&mut self, size: u64) -> Result<u64> {
        let want = Self::granules(size)?;
        let Some((&offset, &block)) = self.free.iter().find(|(_, &l)| l >= want) else {
            return Err(self.exhausted(size));
        };
        self.free.remove(&offset);
        if block > want {
            self.free.insert(offset + want, block - want);
        }
        self.used.insert(offset, want);
        Ok(offset)
    }

    /// Reserves `size` bytes from the top of the highest free block that fits (the local
    /// allocations, kept away from the symmetric ones); returns the offset.
    pub fn alloc_top(&mut self, size: u64) -> Result<u64> {
        let want = Self::granules(size)?;
        let Some((&start, &block)) = self.free.iter().rev().find(|(_, &l)| l >= want) else {
            return Err(self.exhausted(size));
        };
        if block > want {
            self.free.insert(start, block - want);
        } else {
            self.free.remove(&start);
        }
        let offset = start + block - want;
        self.used.insert(offset, want);
        self.local.insert(offset);
        Ok(offset)
    }

    /// Releases the block at `offset`, which `local` says came from `alloc_top` (true) or
    /// `alloc` (false); a block of the other kind is refused.
    pub fn free_kind(&mut self, offset: u64, local: bool) -> Result<()> {
        if self.used.contains_key(&offset) && self.local.contains(&offset) != local {
            return Err(Error::invalid(
                "free",
                format!(
                    "heap offset {offset:#x} is a {} allocation",
                    if local { "symmetric" } else { "local" }
                ),
            ));
        }
        self.free(offset)
    }

    /// Releases the block at `offset`.
    pub fn free(&mut self, offset: u64) -> Result<()> {
        self.local.remove(&offset);
        let block_len = self.used.remove(&offset).ok_or_else(|| {
            Error::invalid(
                "free",
                format!("no live allocation at heap offset {offset:#x}"),
            )
        })?;
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

    /// Forgets every allocation (used by reset).
    pub fn clear(&mut self) {
        *self = HeapAllocator::new(self.len);
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
        h.free(a).unwrap();
        assert_eq!(h.alloc(300).unwrap(), 0);
    }

    #[test]
    fn double_free_is_an_error() {
        let mut h = HeapAllocator::new(1024);
        let a = h.alloc(10).unwrap();
        h.free(a).unwrap();
        assert!(h.free(a).is_err());
        assert!(h.free(12345).is_err());
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
        assert_eq!((low, top), (0, 4096 - 128));
        assert_eq!(h.alloc(64).unwrap(), 128);
        assert!(
            h.free_kind(top, false).is_err(),
            "a local block freed as symmetric"
        );
        assert!(
            h.free_kind(low, true).is_err(),
            "a symmetric block freed as local"
        );
        h.free_kind(top, true).unwrap();
        h.free_kind(low, false).unwrap();
        assert!(h.free_kind(top, true).is_err(), "double free");
    }

    proptest! {
        /// Random alloc/free sequences: blocks never overlap, stay aligned and in bounds,
        /// and freeing everything gives back one block of the whole heap.
        #[test]
        fn blocks_never_overlap(ops in proptest::collection::vec((any::<bool>(), any::<bool>(), 1u64..5000), 1..200)) {
            let mut h = HeapAllocator::new(1 << 16);
            let mut live: Vec<(u64, u64)> = Vec::new();
            for (is_alloc, top, n) in ops {
                if is_alloc || live.is_empty() {
                    let got = if top { h.alloc_top(n) } else { h.alloc(n) };
                    if let Ok(off) = got {
                        prop_assert_eq!(off % ALIGN, 0);
                        prop_assert!(off + n <= 1 << 16);
                        for &(o, l) in &live {
                            prop_assert!(off + n <= o || o + l <= off, "overlap");
                        }
                        live.push((off, n));
                    }
                } else {
                    let (off, _) = live.remove((n as usize) % live.len());
                    h.free(off).unwrap();
                }
            }
            for (off, _) in live.drain(..) {
                h.free(off).unwrap();
            }
            prop_assert_eq!(h.free.len(), 1);
            prop_assert_eq!(h.free.get(&0).copied(), Some(1 << 16));
        }
    }
}
