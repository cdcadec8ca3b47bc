//! [`DistArray`]: a block-distributed `D`-dimensional array, its element and slice
//! transfers, and its prefetch calls.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};

use bytemuck::Pod;

use super::distribution::{Block, Grid};
use super::domain::Domain;
use super::error::DarrayError;
use super::prefetch::{Entry, Prefetch, Request, SourcePart};
use super::serial::{domain_words, METADATA_WORDS};
use super::table::PrefetchTable;
use super::Darrays;
use crate::error::{Error, Result};
use crate::gma::GlobalPtr;
use crate::gmem::{GlobalAddr, SymmetricAlloc};
use crate::world::World;

/// Bytes before the elements in each rank's part: the published layout (the rank's block
/// as [`METADATA_WORDS`] words, see [`SourcePart`]), padded so that elements of any alignment up to 64 start
/// aligned.
const LAYOUT_BYTES: u64 = 64;

/// A `D`-dimensional array (D = 1, 2 or 3) of `T`, block-distributed over every rank of
/// the job (see [`Block`]). Each rank stores its block densely, dimension 0 varying
/// fastest. Built and freed collectively ([`new`](Self::new), [`free`](Self::free)).
///
/// Elements are read and written by global index ([`get`](Self::get),
/// [`set`](Self::set)): from the local block, from prefetched data, or from the owner,
/// whichever holds it. Bulk transfers ([`read_slice`](Self::read_slice),
/// [`write_slice`](Self::write_slice)) are one strided transfer per owner.
///
/// Prefetch requests and evictions take `&mut self`; reads take `&self`, so threads of a
/// rank read concurrently, and a fresh prefetched element is read without a lock.
///
/// Free it with [`free`](Self::free) on every rank. Dropping it instead is a bug, reported
/// as [`SymmetricArray`](crate::SymmetricArray) reports it: the rank's next collective
/// darray call ([`Darrays::barrier`], an array's construction or `free`,
/// [`Darrays::finalize`]) ends the job with a message naming the array.
///
/// ```
/// use gaspar::darray::{Darrays, DistArray, Domain};
/// let ctx = Darrays::init()?;
/// let a = DistArray::<f32, 2>::new(&ctx, [4, 3])?;
/// a.write_slice(Domain::new([0, 1], [4, 2]), &[1.0, 2.0, 3.0, 4.0])?;
/// ctx.barrier()?;
/// assert_eq!(a.get([2, 1])?, 3.0);
/// assert_eq!(a.get([2, 2])?, 0.0); // zero-filled
/// a.free()?;
/// ctx.finalize()?;
/// # Ok::<(), gaspar::Error>(())
/// ```
pub struct DistArray<'a, T, const D: usize> {
    ctx: &'a Darrays,
    dist: Block<D>,
    block: Option<SymmetricAlloc>,
    mine: Domain<D>,
    /// Element 0 of this rank's block.
    local_elements: GlobalAddr,
    prefetched: PrefetchTable<T, D>,
    /// Element reads served by a get from another rank.
    remote_reads: AtomicU64,
    _type: PhantomData<fn() -> T>,
}

impl<'a, T: Pod + Send + Sync, const D: usize> DistArray<'a, T, D> {
    /// Collective: a zero-filled array of `extents` on the grid Chapel's `Block` would
    /// choose for the job ([`Grid::for_procs`]).
    ///
    /// ```
    /// use gaspar::darray::{Darrays, DistArray, Domain};
    /// let ctx = Darrays::init()?;
    /// let a = DistArray::<u64, 3>::new(&ctx, [4, 4, 2])?;
    /// assert_eq!(a.domain(), Domain::of_extents([4, 4, 2]));
    /// // More elements than any memory holds (2^64: the count overflows) is an error.
    /// assert!(matches!(
    ///     DistArray::<u64, 2>::new(&ctx, [1 << 32, 1 << 32]),
    ///     Err(gaspar::Error::LengthOverflow { .. })
    /// ));
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn new(ctx: &'a Darrays, extents: [usize; D]) -> Result<Self> {
        DistArray::on_grid(ctx, extents, Grid::for_procs(ctx.procs()))
    }

    /// Collective: a zero-filled array of `extents` on `grid`. Every rank passes the same
    /// extents and grid; a difference is an error on every rank.
    ///
    /// ```
    /// use gaspar::darray::{Darrays, DistArray, Grid};
    /// let ctx = Darrays::init()?;
    /// // Every rank a column of blocks: a 1 x procs grid.
    /// let grid = Grid::new([1, ctx.procs()], ctx.procs())?;
    /// let a = DistArray::<f64, 2>::on_grid(&ctx, [16, 16], grid)?;
    /// assert_eq!(a.distribution().grid().dims(), [1, ctx.procs()]);
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn on_grid(ctx: &'a Darrays, extents: [usize; D], grid: Grid<D>) -> Result<Self> {
        if D == 0 || D > 3 {
            return Err(DarrayError::Dimensions { dims: D }.into());
        }
        ctx.check_leaks();
        let grid = Grid::new(grid.dims(), ctx.procs())?;
        agree_on_shape::<T, D>(ctx, extents, grid)?;
        let dist = Block::new(extents, grid);
        let element_bytes = (dist.largest_block() as u64)
            .checked_mul(std::mem::size_of::<T>() as u64)
            .and_then(|b| b.checked_add(LAYOUT_BYTES))
            .ok_or(Error::LengthOverflow {
                what: "distributed array block",
            })?;
        let block = ctx.runtime().alloc(element_bytes)?;
        let mine = dist.block_of(ctx.rank());
        let local_elements =
            block
                .ga(ctx.rank())?
                .offset(LAYOUT_BYTES)
                .ok_or(Error::LengthOverflow {
                    what: "distributed array block",
                })?;
        let array = DistArray {
            ctx,
            dist,
            block: Some(block),
            mine,
            local_elements,
            prefetched: PrefetchTable::new(),
            remote_reads: AtomicU64::new(0),
            _type: PhantomData,
        };
        let layout: [u64; METADATA_WORDS] = domain_words(&mine)?;
        let part = array.part(ctx.rank())?;
        ctx.runtime()
            .put_blocking(part.layout, bytemuck::cast_slice(&layout))?;
        zero_fill(ctx, part.elements, mine.len() * std::mem::size_of::<T>())?;
        ctx.barrier()?;
        Ok(array)
    }

    /// This rank.
    ///
    /// ```
    /// use gaspar::darray::{Darrays, DistArray};
    /// let ctx = Darrays::init()?;
    /// let a = DistArray::<u8, 1>::new(&ctx, [10])?;
    /// assert_eq!(a.rank(), ctx.rank());
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn rank(&self) -> u32 {
        self.ctx.rank()
    }

    /// The distribution (index space, grid, blocks).
    ///
    /// ```
    /// use gaspar::darray::{Darrays, DistArray};
    /// let ctx = Darrays::init()?;
    /// let a = DistArray::<u8, 1>::new(&ctx, [10])?;
    /// assert_eq!(a.distribution().block_of(a.rank()), a.local_domain());
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn distribution(&self) -> &Block<D> {
        &self.dist
    }

    /// The whole index space.
    ///
    /// ```
    /// use gaspar::darray::{Darrays, DistArray};
    /// let ctx = Darrays::init()?;
    /// let a = DistArray::<u8, 2>::new(&ctx, [10, 5])?;
    /// assert_eq!(a.domain().len(), 50);
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn domain(&self) -> Domain<D> {
        self.dist.domain()
    }

    /// The indices this rank owns (iterate them with [`Domain::iter`]).
    ///
    /// ```
    /// use gaspar::darray::{Darrays, DistArray};
    /// let ctx = Darrays::init()?;
    /// let a = DistArray::<u32, 1>::new(&ctx, [10])?;
    /// for [i] in a.local_domain().iter() {
    ///     a.set([i], i as u32 * 10)?;
    /// }
    /// assert_eq!(a.local_domain().len(), 10); // one rank owns everything
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn local_domain(&self) -> Domain<D> {
        self.mine
    }

    /// The rank owning `index` (an error outside the index space).
    ///
    /// ```
    /// use gaspar::darray::{Darrays, DistArray};
    /// let ctx = Darrays::init()?;
    /// let a = DistArray::<u32, 1>::new(&ctx, [10])?;
    /// assert_eq!(a.owner([9])?, ctx.procs() - 1);
    /// assert!(a.owner([10]).is_err());
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn owner(&self, index: [usize; D]) -> Result<u32> {
        self.dist.owner(index).ok_or_else(|| {
            DarrayError::IndexOutside {
                index: index.to_vec(),
                extents: self.domain().hi.to_vec(),
            }
            .into()
        })
    }

    /// Reads element `index`: from the local block, prefetched data, or the owner, tried
    /// in that order. A fresh prefetched element is read without a lock.
    ///
    /// ```
    /// use gaspar::darray::{Darrays, DistArray};
    /// let ctx = Darrays::init()?;
    /// let a = DistArray::<i64, 2>::new(&ctx, [3, 3])?;
    /// a.set([1, 2], -5)?;
    /// ctx.barrier()?;
    /// assert_eq!(a.get([1, 2])?, -5);
    /// assert!(a.get([3, 0]).is_err()); // outside the array
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline(always)]
    pub fn get(&self, index: [usize; D]) -> Result<T> {
        if self.mine.contains(index) {
            let at = self.mine.linear(index) * std::mem::size_of::<T>();
            return self.read_element(self.local_elements, at as u64);
        }
        if let Some((entry, at)) = self.prefetched.find(index) {
            let layouts = self.prefetched.layouts();
            return entry.value(self.ctx.runtime(), at, self.ctx.acquires(), layouts);
        }
        self.get_remote(index)
    }

    #[cold]
    fn get_remote(&self, index: [usize; D]) -> Result<T> {
        let owner = self.owner(index)?;
        self.remote_reads.fetch_add(1, Ordering::Relaxed);
        let at = self.dist.block_of(owner).linear(index) * std::mem::size_of::<T>();
        self.read_element(self.part(owner)?.elements, at as u64)
    }

    /// The element `at` bytes after `first`.
    #[inline(always)]
    fn read_element(&self, first: GlobalAddr, at: u64) -> Result<T> {
        // A `let else`, not `ok_or`: the error is built (and dropped) only on failure, off
        // the path of every element read.
        let Some(src) = first.offset(at) else {
            return Err(Error::LengthOverflow {
                what: "distributed array element",
            });
        };
        let mut value = T::zeroed();
        self.ctx
            .runtime()
            .get_blocking(bytemuck::bytes_of_mut(&mut value), src)?;
        Ok(value)
    }

    /// Writes element `index` at its owner (visible there on return) and in this rank's
    /// prefetched copy of it, if any (write-through).
    ///
    /// ```
    /// use gaspar::darray::{Darrays, DistArray};
    /// let ctx = Darrays::init()?;
    /// let a = DistArray::<u16, 1>::new(&ctx, [4])?;
    /// if ctx.rank() == 0 {
    ///     a.set([3], 9)?; // at its owner on return
    /// }
    /// ctx.barrier()?;
    /// assert_eq!(a.get([3])?, 9);
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn set(&self, index: [usize; D], value: T) -> Result<()> {
        if self.mine.contains(index) {
            let at = (self.mine.linear(index) * std::mem::size_of::<T>()) as u64;
            let Some(dst) = self.local_elements.offset(at) else {
                return Err(Error::LengthOverflow {
                    what: "distributed array element",
                });
            };
            return self
                .ctx
                .runtime()
                .put_blocking(dst, bytemuck::bytes_of(&value));
        }
        let owner = self.owner(index)?;
        self.ctx
            .runtime()
            .put_blocking(self.element(owner, index)?, bytemuck::bytes_of(&value))?;
        if owner != self.ctx.rank() {
            self.prefetched.write_through(index, value);
        }
        Ok(())
    }

    /// Element reads so far that went to another rank (neither local nor prefetched).
    ///
    /// ```
    /// use gaspar::darray::{Darrays, DistArray};
    /// let ctx = Darrays::init()?;
    /// let a = DistArray::<u8, 1>::new(&ctx, [4])?;
    /// a.get([0])?;
    /// assert_eq!(a.remote_reads(), 0); // one rank: every read is local
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn remote_reads(&self) -> u64 {
        self.remote_reads.load(Ordering::Relaxed)
    }

    /// Reads the elements of `slice` (inside the array), stored densely over it,
    /// dimension 0 fastest: one strided get per rank whose block it meets.
    ///
    /// ```
    /// use gaspar::darray::{Darrays, DistArray, Domain};
    /// let ctx = Darrays::init()?;
    /// let a = DistArray::<u32, 2>::new(&ctx, [3, 3])?;
    /// a.set([1, 1], 5)?;
    /// a.set([2, 1], 6)?;
    /// ctx.barrier()?;
    /// assert_eq!(a.read_slice(Domain::new([1, 1], [3, 2]))?, [5, 6]);
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn read_slice(&self, slice: Domain<D>) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); slice.len()];
        self.read_slice_into(slice, &mut out)?;
        Ok(out)
    }

    /// Reads the elements of `slice` (inside the array) into `out`, which holds exactly
    /// its elements, stored densely over it (dimension 0 fastest): one strided get per
    /// rank whose block it meets.
    ///
    /// ```
    /// use gaspar::darray::{Darrays, DistArray, Domain};
    /// let ctx = Darrays::init()?;
    /// let a = DistArray::<u32, 1>::new(&ctx, [8])?;
    /// a.write_slice(Domain::new([2], [5]), &[1, 2, 3])?;
    /// ctx.barrier()?;
    /// let mut out = [0u32; 4];
    /// a.read_slice_into(Domain::new([1], [5]), &mut out)?;
    /// assert_eq!(out, [0, 1, 2, 3]);
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn read_slice_into(&self, slice: Domain<D>, out: &mut [T]) -> Result<()> {
        self.check_slice("read_slice", &slice)?;
        if out.len() != slice.len() {
            return Err(DarrayError::LengthMismatch {
                call: "read_slice_into",
                values: out.len(),
                slice_len: slice.len(),
            }
            .into());
        }
        for rank in 0..self.ctx.procs() {
            let block = self.dist.block_of(rank);
            let part = slice.intersect(&block);
            if part.is_empty() {
                continue;
            }
            let src = self.element(rank, part.lo)?;
            self.ctx.runtime().get_section(
                &mut out[slice.linear(part.lo)..],
                slice.dense_strides(),
                part.extents(),
                GlobalPtr::new(src),
                block.dense_strides(),
            )?;
        }
        Ok(())
    }

    /// Writes `values` (stored densely over `slice`, dimension 0 fastest) to the elements
    /// of `slice`: one strided put per rank whose block it meets; visible on return.
    /// Prefetched copies are not written: they are refreshed as their consistency says.
    ///
    /// ```
    /// use gaspar::darray::{Darrays, DistArray, Domain};
    /// let ctx = Darrays::init()?;
    /// let a = DistArray::<f64, 2>::new(&ctx, [2, 2])?;
    /// if ctx.rank() == 0 {
    ///     a.write_slice(a.domain(), &[1.0, 2.0, 3.0, 4.0])?;
    /// }
    /// ctx.barrier()?;
    /// assert_eq!(a.get([0, 1])?, 3.0); // dimension 0 fastest
    /// assert!(a.write_slice(Domain::new([0, 0], [1, 1]), &[1.0, 2.0]).is_err()); // length
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn write_slice(&self, slice: Domain<D>, values: &[T]) -> Result<()> {
        self.check_slice("write_slice", &slice)?;
        if values.len() != slice.len() {
            return Err(DarrayError::LengthMismatch {
                call: "write_slice",
                values: values.len(),
                slice_len: slice.len(),
            }
            .into());
        }
        for rank in 0..self.ctx.procs() {
            let block = self.dist.block_of(rank);
            let part = slice.intersect(&block);
            if part.is_empty() {
                continue;
            }
            let dst = self.element(rank, part.lo)?;
            self.ctx.runtime().put_section(
                &values[slice.linear(part.lo)..],
                slice.dense_strides(),
                part.extents(),
                GlobalPtr::new(dst),
                block.dense_strides(),
            )?;
        }
        Ok(())
    }

    /// The whole array, stored densely, dimension 0 fastest.
    ///
    /// ```
    /// use gaspar::darray::{Darrays, DistArray};
    /// let ctx = Darrays::init()?;
    /// let a = DistArray::<u8, 1>::new(&ctx, [3])?;
    /// a.set([1], 4)?;
    /// ctx.barrier()?;
    /// assert_eq!(a.to_vec()?, [0, 4, 0]);
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.read_slice(self.domain())
    }

    /// Low-level prefetch (LAPPS's `requestPrefetch`): prefetch `slice` of `source`'s
    /// block (its whole block with `None`) into this rank's buffer. A slice outside the
    /// source's block, or this rank as the source, is an error.
    ///
    /// ```no_run
    /// use gaspar::darray::{Darrays, DistArray, Domain, Prefetch};
    /// let ctx = Darrays::init()?; // two ranks or more
    /// let mut a = DistArray::<u32, 1>::new(&ctx, [100])?;
    /// let right = (ctx.rank() + 1) % ctx.procs();
    /// let first = a.distribution().block_of(right).lo[0];
    /// // The first element of the right neighbour's block, refilled after every barrier.
    /// a.request_prefetch(right, Some(Domain::new([first], [first + 1])), Prefetch::AUTOMATIC)?;
    /// ctx.barrier()?;
    /// assert_eq!(a.access_prefetch(right, [first])?, Some(0));
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn request_prefetch(
        &mut self,
        source: u32,
        slice: Option<Domain<D>>,
        how: Prefetch,
    ) -> Result<()> {
        let procs = self.ctx.procs();
        if source >= procs {
            return Err(DarrayError::SourceOutOfRange {
                source_rank: source,
                procs,
            }
            .into());
        }
        if source == self.ctx.rank() {
            return Err(DarrayError::SourceIsLocal {
                source_rank: source,
            }
            .into());
        }
        let block = self.dist.block_of(source);
        let slice = slice.unwrap_or(block);
        if !block.contains_domain(&slice) {
            return Err(DarrayError::SliceNotInSource {
                source_rank: source,
                lo: slice.lo.to_vec(),
                hi: slice.hi.to_vec(),
            }
            .into());
        }
        if slice.is_empty() {
            return Ok(());
        }
        let request = Request {
            source_rank: source,
            source: self.part(source)?,
            slice,
            how,
        };
        let entry = Entry::<T, D>::request(self.ctx.runtime(), request, self.ctx.acquires())?;
        let bytes = self.prefetched.push(entry);
        self.ctx.add_prefetched(bytes);
        Ok(())
    }

    /// Low-level access (LAPPS's `accessPrefetch`): the prefetched value of `index` from
    /// `source`, or `None` when it is not prefetched. A stale automatically consistent
    /// entry is refilled first.
    ///
    /// ```no_run
    /// use gaspar::darray::{Darrays, DistArray, Prefetch};
    /// let ctx = Darrays::init()?; // two ranks or more
    /// let mut a = DistArray::<u32, 1>::new(&ctx, [100])?;
    /// let right = (ctx.rank() + 1) % ctx.procs();
    /// let theirs = a.distribution().block_of(right);
    /// a.request_prefetch(right, None, Prefetch::AUTOMATIC)?; // its whole block
    /// ctx.barrier()?;
    /// assert_eq!(a.access_prefetch(right, theirs.lo)?, Some(0));
    /// assert_eq!(a.access_prefetch(right, a.local_domain().lo)?, None); // not prefetched
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn access_prefetch(&self, source: u32, index: [usize; D]) -> Result<Option<T>> {
        match self.prefetched.find_from(source, index) {
            Some((entry, at)) => entry
                .value(
                    self.ctx.runtime(),
                    at,
                    self.ctx.acquires(),
                    self.prefetched.layouts(),
                )
                .map(Some),
            None => Ok(None),
        }
    }

    /// Refills every prefetched slice of this array now (the only refresh of manually
    /// consistent data).
    ///
    /// ```no_run
    /// use gaspar::darray::{Darrays, DistArray, Prefetch};
    /// let ctx = Darrays::init()?; // two ranks or more
    /// let mut a = DistArray::<u32, 1>::new(&ctx, [100])?;
    /// let right = (ctx.rank() + 1) % ctx.procs();
    /// a.request_prefetch(right, None, Prefetch::MANUAL)?; // filled now
    /// for [i] in a.local_domain().iter() {
    ///     a.set([i], 1)?;
    /// }
    /// ctx.barrier()?;
    /// let theirs = a.distribution().block_of(right).lo;
    /// assert_eq!(a.get(theirs)?, 0); // manual: still the data of the fill
    /// a.update_prefetch()?;
    /// assert_eq!(a.get(theirs)?, 1);
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn update_prefetch(&self) -> Result<()> {
        self.prefetched
            .update(self.ctx.runtime(), self.ctx.acquires())
    }

    /// Drops this rank's prefetched data of this array; returns the bytes it freed.
    ///
    /// ```
    /// use gaspar::darray::{Darrays, DistArray, Prefetch};
    /// let ctx = Darrays::init()?;
    /// let mut a = DistArray::<u32, 2>::new(&ctx, [8, 8])?;
    /// a.all_to_all_prefetch(Prefetch::AUTOMATIC)?;
    /// let held = a.prefetch_bytes();
    /// assert_eq!(a.evict_prefetch(), held);
    /// assert_eq!(a.prefetch_bytes(), 0);
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn evict_prefetch(&mut self) -> usize {
        let bytes = self.prefetched.evict();
        self.ctx.remove_prefetched(bytes);
        bytes
    }

    /// Bytes of this rank's prefetched data of this array.
    ///
    /// ```
    /// use gaspar::darray::{Darrays, DistArray, Prefetch};
    /// let ctx = Darrays::init()?;
    /// let mut a = DistArray::<u32, 2>::new(&ctx, [8, 8])?;
    /// a.stencil_prefetch(1, true, Prefetch::AUTOMATIC)?;
    /// assert_eq!(a.prefetch_bytes(), ctx.prefetch_bytes()); // the only array
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn prefetch_bytes(&self) -> usize {
        self.prefetched.bytes()
    }

    /// Collective: evicts this rank's prefetched data of the array and frees the array on
    /// every rank once every rank is done with it.
    ///
    /// ```
    /// use gaspar::darray::{Darrays, DistArray};
    /// let ctx = Darrays::init()?;
    /// let a = DistArray::<u8, 1>::new(&ctx, [1 << 20])?;
    /// a.free()?; // collective
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn free(mut self) -> Result<()> {
        self.evict_prefetch();
        self.ctx.barrier()?;
        match self.block.take() {
            Some(block) => self.ctx.runtime().free(block),
            None => Ok(()),
        }
    }

    /// Where `rank`'s part of the array lies.
    fn part(&self, rank: u32) -> Result<SourcePart> {
        let layout = self
            .block
            .as_ref()
            .ok_or_else(|| Error::invalid("DistArray", "the array was freed"))?
            .ga(rank)?;
        let elements = layout.offset(LAYOUT_BYTES).ok_or(Error::LengthOverflow {
            what: "distributed array block",
        })?;
        Ok(SourcePart { layout, elements })
    }

    /// The address of `index` in `owner`'s block (the caller found the owner).
    fn element(&self, owner: u32, index: [usize; D]) -> Result<GlobalAddr> {
        let at = self.dist.block_of(owner).linear(index) * std::mem::size_of::<T>();
        self.part(owner)?
            .elements
            .offset(at as u64)
            .ok_or(Error::LengthOverflow {
                what: "distributed array element",
            })
    }

    /// Checks that `slice` lies in the array.
    pub(super) fn check_slice(&self, call: &'static str, slice: &Domain<D>) -> Result<()> {
        if self.domain().contains_domain(slice) {
            Ok(())
        } else {
            Err(DarrayError::SliceOutside {
                call,
                lo: slice.lo.to_vec(),
                hi: slice.hi.to_vec(),
                extents: self.domain().hi.to_vec(),
            }
            .into())
        }
    }
}

impl<T, const D: usize> Drop for DistArray<'_, T, D> {
    fn drop(&mut self) {
        self.ctx.remove_prefetched(self.prefetched.bytes());
        if let (Some(block), false) = (&self.block, std::thread::panicking()) {
            self.ctx.report_leak(format!(
                "DistArray<{}, {D}> of extents {:?} ({} bytes at heap offset {:#x})",
                std::any::type_name::<T>(),
                self.dist.domain().hi,
                block.len(),
                block.heap_offset()
            ));
        }
    }
}

/// Writes `bytes` zero bytes from `first` on, a bounded piece at a time (no buffer the
/// size of the block).
fn zero_fill(ctx: &Darrays, first: GlobalAddr, bytes: usize) -> Result<()> {
    const PIECE: usize = 64 * 1024;
    let zeros = vec![0u8; PIECE.min(bytes)];
    for start in (0..bytes).step_by(PIECE) {
        let at = first.offset(start as u64).ok_or(Error::LengthOverflow {
            what: "distributed array block",
        })?;
        ctx.runtime()
            .put_blocking(at, &zeros[..PIECE.min(bytes - start)])?;
    }
    Ok(())
}

/// Checks, collectively, that every rank builds the same array: the same element size,
/// extents and grid.
fn agree_on_shape<T, const D: usize>(
    ctx: &Darrays,
    extents: [usize; D],
    grid: Grid<D>,
) -> Result<()> {
    let mut shape = [0u64; 8];
    shape[0] = D as u64;
    shape[1] = std::mem::size_of::<T>() as u64;
    for k in 0..D {
        shape[2 + k] = extents[k] as u64;
        shape[5 + k] = u64::from(grid.dims()[k]);
    }
    let world: &World = ctx.runtime();
    let mut all = vec![0u64; 8 * ctx.procs() as usize];
    world.team().allgather(world, &shape, &mut all)?;
    match all.chunks(8).position(|other| other != shape) {
        None => Ok(()),
        Some(rank) => Err(DarrayError::ShapeMismatch {
            rank: rank as u32,
            theirs: all[8 * rank..8 * rank + 8].to_vec(),
            mine: shape.to_vec(),
        }
        .into()),
    }
}
