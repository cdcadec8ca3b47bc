//! [`DistArray`]: a block-distributed `D`-dimensional array, its element and slice
//! transfers, and its prefetch calls.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};

use bytemuck::Pod;

use super::distribution::{Block, Grid};
use super::domain::Domain;
use super::prefetch::{Prefetch, Request, SourcePart};
use super::Darrays;
use crate::error::{Error, Result};
use crate::gma::GlobalPtr;
use crate::gmem::{GlobalAddr, SymmetricAlloc};
use crate::world::World;

/// Bytes before the elements in each rank's part: the published layout (the rank's block
/// as 6 words, see [`SourcePart`]), padded so that elements of any alignment up to 64 start
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
/// Free it with [`free`](Self::free) on every rank; dropping it instead leaks its
/// memory on every rank.
pub struct DistArray<'a, T, const D: usize> {
    ctx: &'a Darrays,
    id: u64,
    dist: Block<D>,
    block: Option<SymmetricAlloc>,
    mine: Domain<D>,
    /// Element reads served by a get from another rank.
    remote_reads: AtomicU64,
    _type: PhantomData<fn() -> T>,
}

impl<'a, T: Pod + Send + Sync, const D: usize> DistArray<'a, T, D> {
    /// Collective: a zero-filled array of `extents` on the grid Chapel's `Block` would
    /// choose for the job ([`Grid::for_procs`]).
    pub fn new(ctx: &'a Darrays, extents: [usize; D]) -> Result<Self> {
        DistArray::on_grid(ctx, extents, Grid::for_procs(ctx.procs()))
    }

    /// Collective: a zero-filled array of `extents` on `grid`. Every rank passes the same
    /// extents and grid; a difference is an error on every rank.
    pub fn on_grid(ctx: &'a Darrays, extents: [usize; D], grid: Grid<D>) -> Result<Self> {
        if D == 0 || D > 3 {
            return Err(Error::invalid(
                "DistArray",
                format!("{D} dimensions (1 to 3 are)"),
            ));
        }
        let grid = Grid::new(grid.dims(), ctx.procs())?;
        agree_on_shape::<T, D>(ctx, extents, grid)?;
        let dist = Block::new(extents, grid);
        let element_bytes = (dist.largest_block() as u64)
            .checked_mul(std::mem::size_of::<T>() as u64)
            .and_then(|b| b.checked_add(LAYOUT_BYTES))
            .ok_or(Error::LengthOverflow {
                what: "distributed array block",
            })?;
        let block = ctx.rt.alloc(element_bytes)?;
        let mine = dist.block_of(ctx.rank());
        let array = DistArray {
            ctx,
            id: ctx.next_array(),
            dist,
            block: Some(block),
            mine,
            remote_reads: AtomicU64::new(0),
            _type: PhantomData,
        };
        let mut layout = [0u64; 6];
        for k in 0..D {
            (layout[k], layout[3 + k]) = (mine.lo[k] as u64, mine.hi[k] as u64);
        }
        let part = array.part(ctx.rank())?;
        ctx.rt
            .put_blocking(part.layout, bytemuck::cast_slice(&layout))?;
        let zeros = vec![T::zeroed(); mine.len()];
        ctx.rt
            .put_blocking(part.elements, bytemuck::cast_slice(&zeros))?;
        ctx.barrier()?;
        Ok(array)
    }

    /// This rank.
    pub fn rank(&self) -> u32 {
        self.ctx.rank()
    }

    /// The distribution (index space, grid, blocks).
    pub fn distribution(&self) -> &Block<D> {
        &self.dist
    }

    /// The whole index space.
    pub fn domain(&self) -> Domain<D> {
        self.dist.domain()
    }

    /// The indices this rank owns (iterate them with [`Domain::iter`]).
    pub fn local_domain(&self) -> Domain<D> {
        self.mine
    }

    /// The rank owning `index` (an error outside the index space).
    pub fn owner(&self, index: [usize; D]) -> Result<u32> {
        self.dist.owner(index).ok_or_else(|| {
            Error::invalid(
                "DistArray index",
                format!("{index:?} lies outside the array's {:?}", self.domain()),
            )
        })
    }

    /// Reads element `index`: from the local block, prefetched data, or the owner.
    pub fn get(&self, index: [usize; D]) -> Result<T> {
        let owner = self.owner(index)?;
        if owner != self.ctx.rank() {
            if let Some(value) = self.access_prefetch(owner, index)? {
                return Ok(value);
            }
            self.remote_reads.fetch_add(1, Ordering::Relaxed);
        }
        let mut value = T::zeroed();
        self.ctx.rt.get_blocking(
            bytemuck::bytes_of_mut(&mut value),
            self.element(owner, index)?,
        )?;
        Ok(value)
    }

    /// Writes element `index` at its owner (visible there on return) and in this rank's
    /// prefetched copy of it, if any (write-through).
    pub fn set(&self, index: [usize; D], value: T) -> Result<()> {
        let owner = self.owner(index)?;
        self.ctx
            .rt
            .put_blocking(self.element(owner, index)?, bytemuck::bytes_of(&value))?;
        if owner != self.ctx.rank() {
            self.ctx.buffer.write_through(self.id, owner, index, value);
        }
        Ok(())
    }

    /// Element reads so far that went to another rank (neither local nor prefetched).
    pub fn remote_reads(&self) -> u64 {
        self.remote_reads.load(Ordering::Relaxed)
    }

    /// Reads the elements of `slice` (inside the array), stored densely over it,
    /// dimension 0 fastest: one strided get per rank whose block it meets.
    pub fn read_slice(&self, slice: Domain<D>) -> Result<Vec<T>> {
        self.check_slice("read_slice", &slice)?;
        let mut out = vec![T::zeroed(); slice.len()];
        for rank in 0..self.ctx.procs() {
            let block = self.dist.block_of(rank);
            let part = slice.intersect(&block);
            if part.is_empty() {
                continue;
            }
            let src = self.element(rank, part.lo)?;
            self.ctx.rt.get_section(
                &mut out[slice.linear(part.lo)..],
                slice.dense_strides(),
                part.extents(),
                GlobalPtr::new(src),
                block.dense_strides(),
            )?;
        }
        Ok(out)
    }

    /// Writes `values` (stored densely over `slice`, dimension 0 fastest) to the elements
    /// of `slice`: one strided put per rank whose block it meets; visible on return.
    /// Prefetched copies are not written: they are refreshed as their consistency says.
    pub fn write_slice(&self, slice: Domain<D>, values: &[T]) -> Result<()> {
        self.check_slice("write_slice", &slice)?;
        if values.len() != slice.len() {
            return Err(Error::invalid(
                "write_slice",
                format!("{} values for a slice of {}", values.len(), slice.len()),
            ));
        }
        for rank in 0..self.ctx.procs() {
            let block = self.dist.block_of(rank);
            let part = slice.intersect(&block);
            if part.is_empty() {
                continue;
            }
            let dst = self.element(rank, part.lo)?;
            self.ctx.rt.put_section(
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
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.read_slice(self.domain())
    }

    /// Low-level prefetch (LAPPS's `requestPrefetch`): prefetch `slice` of `source`'s
    /// block (its whole block with `None`) into this rank's buffer. A slice outside the
    /// source's block, or this rank as the source, is an error.
    pub fn request_prefetch(
        &self,
        source: u32,
        slice: Option<Domain<D>>,
        how: Prefetch,
    ) -> Result<()> {
        if source >= self.ctx.procs() {
            return Err(Error::RankOutOfRange {
                rank: source,
                procs: self.ctx.procs(),
            });
        }
        if source == self.ctx.rank() {
            return Err(Error::invalid(
                "request_prefetch",
                "the source is this rank: its block is local",
            ));
        }
        let block = self.dist.block_of(source);
        let slice = slice.unwrap_or(block);
        if !block.contains_domain(&slice) {
            return Err(Error::invalid(
                "request_prefetch",
                format!("the slice {slice:?} is not inside rank {source}'s block {block:?}"),
            ));
        }
        if slice.is_empty() {
            return Ok(());
        }
        let request = Request {
            array: self.id,
            source_rank: source,
            source: self.part(source)?,
            slice,
            how,
        };
        self.ctx
            .buffer
            .request::<T, D>(&self.ctx.rt, request, self.ctx.acquires())
    }

    /// Low-level access (LAPPS's `accessPrefetch`): the prefetched value of `index` from
    /// `source`, or `None` when it is not prefetched. A stale automatically consistent
    /// entry is refilled first.
    pub fn access_prefetch(&self, source: u32, index: [usize; D]) -> Result<Option<T>> {
        self.ctx
            .buffer
            .access(&self.ctx.rt, self.id, source, index, self.ctx.acquires())
    }

    /// Refills every prefetched slice of this array now (the only refresh of manually
    /// consistent data).
    pub fn update_prefetch(&self) -> Result<()> {
        self.ctx
            .buffer
            .update::<T, D>(&self.ctx.rt, self.id, self.ctx.acquires())
    }

    /// Drops this rank's prefetched data of this array; returns its bytes.
    pub fn evict_prefetch(&self) -> usize {
        self.ctx.buffer.evict(self.id)
    }

    /// Bytes of this rank's prefetched data of this array.
    pub fn prefetch_bytes(&self) -> usize {
        self.ctx.buffer.bytes_of(Some(self.id))
    }

    /// Collective: evicts this rank's prefetched data of the array and frees the array on
    /// every rank once every rank is done with it.
    pub fn free(mut self) -> Result<()> {
        self.evict_prefetch();
        self.ctx.barrier()?;
        match self.block.take() {
            Some(block) => self.ctx.rt.free(block),
            None => Ok(()),
        }
    }

    /// Where `rank`'s part of the array lies.
    fn part(&self, rank: u32) -> Result<SourcePart> {
        let layout = self
            .block
            .as_ref()
            .ok_or(Error::invalid("DistArray", "the array was freed"))?
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
            Err(Error::invalid(
                call,
                format!(
                    "the slice {slice:?} is not inside the array's {:?}",
                    self.domain()
                ),
            ))
        }
    }
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
    let world: &World = &ctx.rt;
    let mut all = vec![0u64; 8 * ctx.procs() as usize];
    world.team().allgather(world, &shape, &mut all)?;
    match all.chunks(8).position(|other| other != shape) {
        None => Ok(()),
        Some(rank) => Err(Error::invalid(
            "DistArray",
            format!(
                "rank {rank} builds a different array (dimensions, element size, extents, \
                 grid: {:?}; this rank: {shape:?})",
                &all[8 * rank..8 * rank + 8]
            ),
        )),
    }
}
