//! [`PrefetchTable`]: one array's prefetched entries on this rank and the lookup from a
//! global index to the entry and byte that hold it. The table changes only through `&mut`
//! (request, evict), so readers share it without a lock; the entry that served the last
//! read is tried first.

use std::sync::atomic::{AtomicUsize, Ordering};

use bytemuck::Pod;

use super::prefetch::{Entry, Layouts};
use crate::error::Result;
use crate::strided::Strided;

/// One array's prefetched entries on this rank.
pub(super) struct PrefetchTable<T, const D: usize> {
    entries: Vec<Entry<T, D>>,
    /// The entry that served the last prefetched read (a hint: any value is safe).
    last_hit: AtomicUsize,
    /// Bytes of prefetched data the entries hold.
    bytes: usize,
    /// The sources' layouts read by automatically consistent fills since the last
    /// synchronization.
    layouts: Layouts<D>,
}

impl<T, const D: usize> PrefetchTable<T, D> {
    /// Bytes of prefetched data held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl<T: Pod, const D: usize> PrefetchTable<T, D> {
    /// No entries.
    pub fn new() -> Self {
        PrefetchTable {
            entries: Vec::new(),
            last_hit: AtomicUsize::new(0),
            bytes: 0,
            layouts: Layouts::new(),
        }
    }

    /// Adds `entry`; returns its bytes.
    pub fn push(&mut self, entry: Entry<T, D>) -> usize {
        let bytes = entry.bytes();
        self.entries.push(entry);
        self.bytes += bytes;
        bytes
    }

    /// The entry holding `index` and the byte of it there, if one does.
    #[inline(always)]
    pub fn find(&self, index: [usize; D]) -> Option<(&Entry<T, D>, usize)> {
        let hint = self.last_hit.load(Ordering::Relaxed);
        if let Some(entry) = self.entries.get(hint) {
            if let Some(at) = entry.offset_of(index) {
                return Some((entry, at));
            }
        }
        self.search(index)
    }

    fn search(&self, index: [usize; D]) -> Option<(&Entry<T, D>, usize)> {
        let (position, entry, at) = self
            .entries
            .iter()
            .enumerate()
            .find_map(|(p, e)| e.offset_of(index).map(|at| (p, e, at)))?;
        self.last_hit.store(position, Ordering::Relaxed);
        Some((entry, at))
    }

    /// The entry from `source` holding `index` and the byte of it there, if one does.
    pub fn find_from(&self, source: u32, index: [usize; D]) -> Option<(&Entry<T, D>, usize)> {
        self.entries
            .iter()
            .filter(|e| e.source_rank() == source)
            .find_map(|e| e.offset_of(index).map(|at| (e, at)))
    }

    /// Writes `value` into every entry holding `index`.
    pub fn write_through(&self, index: [usize; D], value: T) {
        for entry in &self.entries {
            if let Some(at) = entry.offset_of(index) {
                entry.write(at, value);
            }
        }
    }

    /// The layouts automatically consistent fills read (for [`Entry::value`]).
    #[inline(always)]
    pub fn layouts(&self) -> &Layouts<D> {
        &self.layouts
    }

    /// Refills every entry now, at acquire count `now`, reading each source's layout once.
    pub fn update(&self, rt: &Strided, now: u64) -> Result<()> {
        let layouts = Layouts::new();
        self.entries
            .iter()
            .try_for_each(|e| e.refill(rt, now, &layouts))
    }

    /// Drops every entry; returns the bytes they held.
    pub fn evict(&mut self) -> usize {
        self.entries.clear();
        std::mem::take(&mut self.bytes)
    }
}
