//! The prefetch core (LAPPS's low-level interface): one [`Entry`] holds a copy of one slice
//! of one source rank's block, filled by one-sided strided gets, with its consistency
//! record. Reading a fresh entry takes no lock: one atomic load of the fill's acquire count
//! (automatic consistency only) and the element's word(s).

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use bytemuck::Pod;

use super::domain::Domain;
use super::error::DarrayError;
use super::serial::{words_domain, SerialLayout, METADATA_WORDS};
use super::words::Words;
use crate::error::{Error, Result};
use crate::gma::GlobalPtr;
use crate::gmem::GlobalAddr;
use crate::strided::Strided;

/// Most bytes a fill stages at once when the source's memory is mapped here (shared
/// memory): the slice is got in pieces of at most this size, each copied into the entry,
/// so the fill's transient buffer stays small and in cache; a piece costs no round trip.
const MAPPED_STAGE_BYTES: usize = 64 * 1024;
/// The same across a network, where every piece is a round trip and, over transports
/// without remote-memory hardware (MPI RMA over TCP), a wait until the source next makes
/// MPI progress: measured on two hosts joined by TCP (`scripts/bench-darray --hosts`),
/// 64 KiB pieces made a 1 MiB transpose fill 2x HandOpt's single get, 1 MiB pieces
/// 0.97-1.13x. The price is up to this much transient memory per fill.
const REMOTE_STAGE_BYTES: usize = 1024 * 1024;

/// How a prefetch keeps its data consistent and how it finds the source's data.
///
/// ```
/// use gaspar::darray::Prefetch;
/// let how = Prefetch { consistent: true, static_domain: true };
/// assert_eq!(how, Prefetch::AUTOMATIC.with_static_domain());
/// ```
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
    ///
    /// ```
    /// use gaspar::darray::Prefetch;
    /// assert!(Prefetch::AUTOMATIC.consistent);
    /// ```
    pub const AUTOMATIC: Prefetch = Prefetch {
        consistent: true,
        static_domain: false,
    };
    /// Manual consistency, the layout read at every fill.
    ///
    /// ```
    /// use gaspar::darray::Prefetch;
    /// assert!(!Prefetch::MANUAL.consistent);
    /// ```
    pub const MANUAL: Prefetch = Prefetch {
        consistent: false,
        static_domain: false,
    };

    /// The same, with a static domain.
    ///
    /// ```
    /// use gaspar::darray::Prefetch;
    /// let how = Prefetch::MANUAL.with_static_domain();
    /// assert!(how.static_domain && !how.consistent);
    /// ```
    pub const fn with_static_domain(self) -> Prefetch {
        Prefetch {
            static_domain: true,
            ..self
        }
    }
}

/// Where a source rank's part of an array lies: its published layout (the block it owns,
/// as metadata words, see [`METADATA_WORDS`]) and its elements, stored densely over that
/// block.
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
        let mut words = [0u64; METADATA_WORDS];
        rt.get_blocking(bytemuck::cast_slice_mut(&mut words), self.layout)?;
        words_domain(&words)
    }
}

/// The sources' blocks as their published layouts gave them, each read once per
/// synchronization (automatic consistency: an entry filled since the last one is current,
/// and so is the layout its fill read) or once per update (manual consistency, a fresh
/// record for every call): a rank prefetching several slices of one source reads the
/// layout once, not once per slice (a round trip each across a network).
pub(super) struct Layouts<const D: usize> {
    read: Mutex<Vec<LayoutRead<D>>>,
}

#[derive(Clone, Copy)]
struct LayoutRead<const D: usize> {
    source_rank: u32,
    /// The acquire count it was read at.
    at: u64,
    block: Domain<D>,
}

impl<const D: usize> Layouts<D> {
    /// Nothing read yet.
    pub fn new() -> Self {
        Layouts {
            read: Mutex::new(Vec::new()),
        }
    }

    /// `source`'s block at acquire count `now`: as read before at that count, or read now.
    fn block(
        &self,
        rt: &Strided,
        source_rank: u32,
        source: &SourcePart,
        now: u64,
    ) -> Result<Domain<D>> {
        let lock = || self.read.lock().unwrap_or_else(PoisonError::into_inner);
        let known = lock()
            .iter()
            .find(|r| r.source_rank == source_rank && r.at == now)
            .map(|r| r.block);
        if let Some(block) = known {
            return Ok(block);
        }
        // Not read under the lock: a round trip must not hold up fills from other sources.
        let block = source.read_block(rt)?;
        let mut read = lock();
        read.retain(|r| r.source_rank != source_rank);
        read.push(LayoutRead {
            source_rank,
            at: now,
            block,
        });
        Ok(block)
    }
}

/// What a request asks for.
pub(super) struct Request<const D: usize> {
    pub source_rank: u32,
    pub source: SourcePart,
    pub slice: Domain<D>,
    pub how: Prefetch,
}

/// A prefetched copy of one slice of one source's block.
pub(super) struct Entry<T, const D: usize> {
    source_rank: u32,
    layout: SerialLayout<D>,
    source: SourcePart,
    /// The source's block, when the domain is static (read at the request).
    static_block: Option<Domain<D>>,
    consistent: bool,
    /// 1 + the acquire count at the last fill; 0 before the first.
    filled_at: AtomicU64,
    /// Held by the one thread refilling the entry (readers of a fresh entry never take it).
    refill: Mutex<()>,
    data: Words,
    _type: PhantomData<fn() -> T>,
}

impl<T: Pod, const D: usize> Entry<T, D> {
    /// The entry `request` asks for. A static domain reads the source's layout now; a
    /// manually consistent entry is filled now (at acquire count `now`), an automatically
    /// consistent one at its first read (paper 5.3.1).
    pub fn request(rt: &Strided, request: Request<D>, now: u64) -> Result<Entry<T, D>> {
        let static_block = match request.how.static_domain {
            true => Some(request.source.read_block(rt)?),
            false => None,
        };
        let layout = SerialLayout::new(request.slice, std::mem::size_of::<T>());
        let entry = Entry {
            source_rank: request.source_rank,
            layout,
            source: request.source,
            static_block,
            consistent: request.how.consistent,
            filled_at: AtomicU64::new(0),
            refill: Mutex::new(()),
            data: Words::zeroed(layout.data_bytes()),
            _type: PhantomData,
        };
        if !entry.consistent {
            entry.refill(rt, now, &Layouts::new())?;
        }
        Ok(entry)
    }

    /// The source rank.
    pub fn source_rank(&self) -> u32 {
        self.source_rank
    }

    /// Bytes of prefetched data held (the data's storage rounds it up to whole words).
    pub fn bytes(&self) -> usize {
        self.layout.data_bytes()
    }

    /// Byte offset of `index` in the entry's data, `None` when it does not hold `index`.
    #[inline(always)]
    pub fn offset_of(&self, index: [usize; D]) -> Option<usize> {
        self.layout.byte_offset(index)
    }

    /// The element at byte `at` (from [`offset_of`](Self::offset_of)); an automatically
    /// consistent entry filled before acquire count `now` is refilled first (the source's
    /// layout from `layouts`).
    #[inline(always)]
    pub fn value(&self, rt: &Strided, at: usize, now: u64, layouts: &Layouts<D>) -> Result<T> {
        if self.consistent && self.filled_at.load(Ordering::Acquire) != now + 1 {
            self.refill_if_stale(rt, now, layouts)?;
        }
        Ok(self.data.load(at))
    }

    /// Writes `value` at byte `at` of the copy (the write-through's local half).
    pub fn write(&self, at: usize, value: T) {
        self.data.store(at, bytemuck::bytes_of(&value));
    }

    /// Refills the entry now, at acquire count `now` (the source's layout from `layouts`).
    pub fn refill(&self, rt: &Strided, now: u64, layouts: &Layouts<D>) -> Result<()> {
        let _one_filler = self.refill.lock().unwrap_or_else(PoisonError::into_inner);
        self.fill(rt, now, layouts)?;
        self.filled_at.store(now + 1, Ordering::Release);
        Ok(())
    }

    #[cold]
    fn refill_if_stale(&self, rt: &Strided, now: u64, layouts: &Layouts<D>) -> Result<()> {
        let _one_filler = self.refill.lock().unwrap_or_else(PoisonError::into_inner);
        if self.filled_at.load(Ordering::Acquire) != now + 1 {
            self.fill(rt, now, layouts)?;
            self.filled_at.store(now + 1, Ordering::Release);
        }
        Ok(())
    }

    /// Copies the slice from the source (strided gets; the source is passive), in pieces
    /// of at most [`MAPPED_STAGE_BYTES`] or [`REMOTE_STAGE_BYTES`]. The caller holds
    /// `refill`.
    fn fill(&self, rt: &Strided, now: u64, layouts: &Layouts<D>) -> Result<()> {
        let slice = self.layout.slice();
        let block = match self.static_block {
            Some(block) => block,
            None => layouts.block(rt, self.source_rank, &self.source, now)?,
        };
        if !block.contains_domain(&slice) {
            return Err(DarrayError::SourceChanged {
                source_rank: self.source_rank,
                lo: slice.lo.to_vec(),
                hi: slice.hi.to_vec(),
            }
            .into());
        }
        let stage_bytes = match rt.mapped_address(self.source.elements, 1)? {
            Some(_) => MAPPED_STAGE_BYTES,
            None => REMOTE_STAGE_BYTES,
        };
        let stage_len = (stage_bytes / std::mem::size_of::<T>().max(1)).max(1);
        let mut stage = vec![T::zeroed(); stage_len.min(slice.len())];
        for piece in pieces(slice, stage_len) {
            let first = (block.linear(piece.lo) * std::mem::size_of::<T>()) as u64;
            let src = self
                .source
                .elements
                .offset(first)
                .ok_or(Error::LengthOverflow {
                    what: "prefetch source offset",
                })?;
            let staged = &mut stage[..piece.len()];
            rt.get_section(
                staged,
                piece.dense_strides(),
                piece.extents(),
                GlobalPtr::new(src),
                block.dense_strides(),
            )?;
            let at = slice.linear(piece.lo) * std::mem::size_of::<T>();
            self.data.store(at, bytemuck::cast_slice(staged));
        }
        Ok(())
    }
}

/// `slice` cut into pieces of at most `most` elements (at least one element each), each
/// contiguous in the slice's dense storage: whole in the dimensions below the one cut,
/// one index in those above it.
fn pieces<const D: usize>(slice: Domain<D>, most: usize) -> Vec<Domain<D>> {
    let mut out = Vec::new();
    cut(slice, D.saturating_sub(1), most, &mut out);
    out
}

fn cut<const D: usize>(domain: Domain<D>, k: usize, most: usize, out: &mut Vec<Domain<D>>) {
    if domain.len() <= most {
        out.push(domain);
        return;
    }
    let below: usize = domain.extents()[..k].iter().product();
    if below <= most || k == 0 {
        let step = (most / below.max(1)).max(1);
        for lo in (domain.lo[k]..domain.hi[k]).step_by(step) {
            let mut piece = domain;
            (piece.lo[k], piece.hi[k]) = (lo, (lo + step).min(domain.hi[k]));
            out.push(piece);
        }
    } else {
        for i in domain.lo[k]..domain.hi[k] {
            let mut slab = domain;
            (slab.lo[k], slab.hi[k]) = (i, i + 1);
            cut(slab, k - 1, most, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::darray::serial::domain_words;

    #[test]
    fn a_layout_is_read_once_per_acquire_count_and_source() -> Result<()> {
        let rt = crate::init()?.into_acp();
        let words = rt.alloc((METADATA_WORDS * 8) as u64)?;
        let source = SourcePart {
            layout: words.ga(0)?,
            elements: words.ga(0)?,
        };
        let publish = |block: Domain<1>| {
            let w = domain_words(&block)?;
            rt.put_blocking(words.ga(0)?, bytemuck::cast_slice(&w))
        };
        let (first, second) = (Domain::new([0], [10]), Domain::new([5], [20]));
        let layouts = Layouts::<1>::new();
        publish(first)?;
        assert_eq!(layouts.block(&rt, 0, &source, 3)?, first);
        publish(second)?;
        // Same count, same source: the layout read at that count.
        assert_eq!(layouts.block(&rt, 0, &source, 3)?, first);
        // Another count, or a fresh record (an update), reads it again.
        assert_eq!(layouts.block(&rt, 0, &source, 4)?, second);
        assert_eq!(Layouts::<1>::new().block(&rt, 0, &source, 3)?, second);
        rt.free(words)?;
        rt.finalize()
    }

    #[test]
    fn pieces_tile_the_slice_in_storage_order_within_the_limit() {
        let slice = Domain::new([1, 2, 3], [6, 9, 7]);
        for most in [1, 4, 5, 12, 35, 36, 1000] {
            let mut next = 0;
            for piece in pieces(slice, most) {
                assert!(piece.len() <= most.max(1), "{piece:?} over {most}");
                assert_eq!(slice.linear(piece.lo), next, "contiguous, {most}");
                next += piece.len();
            }
            assert_eq!(next, slice.len());
        }
    }
}
