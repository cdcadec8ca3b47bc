//! The symmetric-heap allocator. Every rank runs the same allocator on the same sequence
//! of collective calls, so every allocation lands at the same offset on every rank and a
//! remote address is computed locally.

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
        }
    }

    /// Reserves `size` bytes (at least one granule); returns the offset.
    pub fn alloc(&mut self, size: u64) -> Result<u64> {
        let want = size
            .max(1)
            .checked_next_multiple_of(ALIGN)
            .ok_or(Error::LengthOverflow {
                what: "allocation size",
            })?;
        let Some((&offset, &block)) = self.free.iter().find(|(_, &l)| l >= want) else {
            return Err(Error::HeapExhausted {
                requested: size,
                largest_free: self.free.values().copied().max().unwrap_or(0),
                heap_len: self.len,
            });
        };
        self.free.remove(&offset);
        if block > want {
            self.free.insert(offset + want, block - want);
        }
        self.used.insert(offset, want);
        Ok(offset)
    }

    /// Releases the block at `offset`.
    pub fn free(&mut self, offset: u64) -> Result<()> {
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

    /// Bytes in live allocations.
    pub fn used_bytes(&self) -> u64 {
        self.used.values().sum()
    }

    /// Length of a live allocation.
    pub fn len_of(&self, offset: u64) -> Option<u64> {
        self.used.get(&offset).copied()
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

    proptest! {
        /// Random alloc/free sequences: blocks never overlap, stay aligned and in bounds,
        /// and freeing everything gives back one block of the whole heap.
        #[test]
        fn blocks_never_overlap(ops in proptest::collection::vec((any::<bool>(), 1u64..5000), 1..200)) {
            let mut h = HeapAllocator::new(1 << 16);
            let mut live: Vec<(u64, u64)> = Vec::new();
            for (is_alloc, n) in ops {
                if is_alloc || live.is_empty() {
                    if let Ok(off) = h.alloc(n) {
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
