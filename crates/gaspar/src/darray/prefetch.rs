//! The prefetch core (LAPPS's low-level interface): the rank's [`PrefetchBuffer`] of
//! entries, each one slice of one source rank's block of one array, with its consistency
//! record, filled by one-sided strided gets.

use std::any::Any;
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use bytemuck::Pod;

use super::domain::Domain;
use crate::error::{Error, Result};
use crate::gma::GlobalPtr;
use crate::gmem::GlobalAddr;
use crate::strided::Strided;

/// How a prefetch keeps its data consistent and how it finds the source's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefetch {
    /// Automatic consistency: the data is refilled on its first read after each
    /// synchronization (and first filled on its first read). Without it, only
    /// `update_prefetch` refreshes the data, which is filled when requested.
    pub consistent: bool,
    /// The source's domain cannot change (paper 5.3.2): its layout is read once, at the
    /// request, and every fill is one strided get. Without it, every fill first reads
    /// the source's published layout again and checks that the slice still lies in it.
    pub static_domain: bool,
}

impl Prefetch {
    /// Automatic consistency, the layout read at every fill.
    pub const AUTOMATIC: Prefetch = Prefetch {
        consistent: true,
        static_domain: false,
    };
    /// Manual consistency, the layout read at every fill.
    pub const MANUAL: Prefetch = Prefetch {
        consistent: false,
        static_domain: false,
    };

    /// The same, with a static domain.
    pub const fn with_static_domain(self) -> Prefetch {
        Prefetch {
            static_domain: true,
            ..self
        }
    }
}

/// Where a source rank's part of an array lies: its published layout (the block it owns,
/// as 6 words: the lows of dimensions 0..3, then the highs; unused dimensions 0) and its
/// elements, stored densely over that block.
#[derive(Debug, Clone, Copy)]
pub(super) struct SourcePart {
    /// The layout words.
    pub layout: GlobalAddr,
    /// Element 0 of the block.
    pub elements: GlobalAddr,
}

impl SourcePart {
    /// Reads the source's block from its published layout (one get).
    pub fn read_block<const D: usize>(&self, rt: &Strided) -> Result<Domain<D>> {
        let mut words = [0u64; 6];
        rt.get_blocking(bytemuck::cast_slice_mut(&mut words), self.layout)?;
        Ok(Domain {
            lo: std::array::from_fn(|k| words[k] as usize),
            hi: std::array::from_fn(|k| words[3 + k] as usize),
        })
    }
}

/// The data of an entry and the acquire count it was filled at (`None`: never filled).
struct Filled<T> {
    at: Option<u64>,
    data: Vec<T>,
}

/// One entry's typed part: a slice of the source's block and its copy.
struct Prefetched<T, const D: usize> {
    slice: Domain<D>,
    source: SourcePart,
    /// The source's block, when the domain is static (read at the request).
    static_block: Option<Domain<D>>,
    consistent: bool,
    filled: RwLock<Filled<T>>,
}

impl<T: Pod, const D: usize> Prefetched<T, D> {
    fn read(&self) -> RwLockReadGuard<'_, Filled<T>> {
        self.filled.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Filled<T>> {
        self.filled.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Copies the slice from the source into `filled` (a strided get; the source is
    /// passive) and records the acquire count `now`.
    fn fill(&self, rt: &Strided, filled: &mut Filled<T>, now: u64) -> Result<()> {
        let block = match self.static_block {
            Some(block) => block,
            None => self.source.read_block(rt)?,
        };
        if !block.contains_domain(&self.slice) {
            return Err(Error::invalid(
                "prefetch fill",
                format!(
                    "the slice {:?} no longer lies in the source's block {block:?}",
                    self.slice
                ),
            ));
        }
        let first = (block.linear(self.slice.lo) * std::mem::size_of::<T>()) as u64;
        let src = self
            .source
            .elements
            .offset(first)
            .ok_or(Error::LengthOverflow {
                what: "prefetch source offset",
            })?;
        rt.get_section(
            &mut filled.data,
            self.slice.dense_strides(),
            self.slice.extents(),
            GlobalPtr::new(src),
            block.dense_strides(),
        )?;
        filled.at = Some(now);
        Ok(())
    }

    /// The prefetched value of `index` (in the slice), refilled first when stale.
    fn value(&self, rt: &Strided, index: [usize; D], now: u64) -> Result<T> {
        let at = self.slice.linear(index);
        {
            let filled = self.read();
            if !self.consistent || filled.at == Some(now) {
                return Ok(filled.data[at]);
            }
        }
        let mut filled = self.write();
        if filled.at != Some(now) {
            self.fill(rt, &mut filled, now)?;
        }
        Ok(filled.data[at])
    }
}

/// One entry of the buffer.
struct Entry {
    array: u64,
    source: u32,
    bytes: usize,
    /// A `Prefetched<T, D>` of the array's `T` and `D`.
    typed: Box<dyn Any + Send + Sync>,
}

/// A rank's prefetched data, for every array: a list of entries. Readers of entries do
/// not serialize (each entry has its own readers-writer lock); requests and evictions
/// take the list's write lock.
#[derive(Default)]
pub(super) struct PrefetchBuffer {
    entries: RwLock<Vec<Entry>>,
}

/// What a request asks for.
pub(super) struct Request<const D: usize> {
    pub array: u64,
    pub source_rank: u32,
    pub source: SourcePart,
    pub slice: Domain<D>,
    pub how: Prefetch,
}

impl PrefetchBuffer {
    fn entries(&self) -> RwLockReadGuard<'_, Vec<Entry>> {
        self.entries.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn entries_mut(&self) -> RwLockWriteGuard<'_, Vec<Entry>> {
        self.entries.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds an entry for `request`. A static domain reads the source's layout now; a
    /// manually consistent entry is filled now, an automatically consistent one at its
    /// first read (paper 5.3.1).
    pub fn request<T: Pod + Send + Sync, const D: usize>(
        &self,
        rt: &Strided,
        request: Request<D>,
        now: u64,
    ) -> Result<()> {
        let static_block = if request.how.static_domain {
            Some(request.source.read_block(rt)?)
        } else {
            None
        };
        let len = request.slice.len();
        let prefetched = Prefetched::<T, D> {
            slice: request.slice,
            source: request.source,
            static_block,
            consistent: request.how.consistent,
            filled: RwLock::new(Filled {
                at: None,
                data: vec![T::zeroed(); len],
            }),
        };
        if !request.how.consistent {
            let mut filled = prefetched.write();
            prefetched.fill(rt, &mut filled, now)?;
        }
        self.entries_mut().push(Entry {
            array: request.array,
            source: request.source_rank,
            bytes: len * std::mem::size_of::<T>(),
            typed: Box::new(prefetched),
        });
        Ok(())
    }

    /// The prefetched value of `index` of `array` from `source`, or `None` when it is not
    /// prefetched. A stale automatically consistent entry is refilled first.
    pub fn access<T: Pod, const D: usize>(
        &self,
        rt: &Strided,
        array: u64,
        source: u32,
        index: [usize; D],
        now: u64,
    ) -> Result<Option<T>> {
        let entries = self.entries();
        for entry in entries.iter() {
            if entry.array != array || entry.source != source {
                continue;
            }
            if let Some(p) = entry.typed.downcast_ref::<Prefetched<T, D>>() {
                if p.slice.contains(index) {
                    return p.value(rt, index, now).map(Some);
                }
            }
        }
        Ok(None)
    }

    /// Writes `value` into every prefetched copy of `index` of `array` from `source`
    /// (the write-through's local half; the caller wrote the owner).
    pub fn write_through<T: Pod, const D: usize>(
        &self,
        array: u64,
        source: u32,
        index: [usize; D],
        value: T,
    ) {
        for entry in self.entries().iter() {
            if entry.array != array || entry.source != source {
                continue;
            }
            if let Some(p) = entry.typed.downcast_ref::<Prefetched<T, D>>() {
                if p.slice.contains(index) {
                    p.write().data[p.slice.linear(index)] = value;
                }
            }
        }
    }

    /// Refills every entry of `array` now.
    pub fn update<T: Pod, const D: usize>(&self, rt: &Strided, array: u64, now: u64) -> Result<()> {
        for entry in self.entries().iter().filter(|e| e.array == array) {
            if let Some(p) = entry.typed.downcast_ref::<Prefetched<T, D>>() {
                let mut filled = p.write();
                p.fill(rt, &mut filled, now)?;
            }
        }
        Ok(())
    }

    /// Drops every entry of `array`; returns the bytes of data they held.
    pub fn evict(&self, array: u64) -> usize {
        let mut entries = self.entries_mut();
        let before: usize = entries.iter().map(|e| e.bytes).sum();
        entries.retain(|e| e.array != array);
        before - entries.iter().map(|e| e.bytes).sum::<usize>()
    }

    /// Bytes of data held for `array` (every array with `None`).
    pub fn bytes_of(&self, array: Option<u64>) -> usize {
        self.entries()
            .iter()
            .filter(|e| array.map_or(true, |a| a == e.array))
            .map(|e| e.bytes)
            .sum()
    }

    /// Bytes of data held for every array.
    pub fn bytes(&self) -> usize {
        self.bytes_of(None)
    }
}
