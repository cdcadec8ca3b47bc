//! Typed symmetric memory: [`SymmetricArray<T>`], an array of `T` on every rank at the same
//! place, owned by one handle per rank and reached by (rank, index).

use std::marker::PhantomData;

use bytemuck::Pod;

use crate::error::{Error, Result};
use crate::gma::{AtomicWord, Compare, GlobalPtr, Handle, SignalOp};
use crate::gmem::{GlobalAddr, SymmetricAlloc};
use crate::runtime::Runtime;
use crate::transport::AtomicOp;

/// An array of `len` elements of `T` on every rank (from [`Runtime::alloc`]), reached by
/// (rank, index). Every transfer is checked against the array's length and the job's
/// ranks, and moves whole elements.
///
/// # Freeing
///
/// Free it with [`free`](Self::free), a collective call every rank makes. The handle
/// borrows the runtime, so the calls that end every allocation ([`Runtime::finalize`],
/// ACP's reset through [`Runtime::acp_mut`]) do not compile while it lives, and `free`
/// consumes it: a handle to freed memory cannot be written. Below it, the block is
/// generation-checked: the layer refuses to free a block twice
/// ([`Error::FreedAllocation`]) even when a newer one lies at the same place.
///
/// ```compile_fail,E0505
/// let rt = gaspar::init()?;
/// let a = rt.alloc::<u64>(1)?;
/// rt.finalize()?; // `a` borrows the runtime
/// a.put(0, 0, &1)?;
/// # Ok::<(), gaspar::Error>(())
/// ```
/// ```compile_fail,E0382
/// let rt = gaspar::init()?;
/// let a = rt.alloc::<u64>(1)?;
/// a.free()?;
/// a.put(0, 0, &1)?; // `free` took it
/// # Ok::<(), gaspar::Error>(())
/// ```
///
/// Dropping it without `free` is a bug: the other ranks may free theirs, and then the
/// heaps of the ranks differ. gaspar does not free it in `drop` (a collective call hidden
/// in a drop would meet whatever collective the other ranks are in), nor end the job right
/// there: an error returned early with `?` drops the arrays on its way out, and that error,
/// not the leak it caused, is the one to report ([`run_job`](crate::run_job) aborts the job
/// with it). Instead the rank's next collective call (barrier, alloc, free, finalize) ends
/// the job with a message naming the array. A drop while panicking is not reported: the
/// panic ends the job.
///
/// # The local part
///
/// Other ranks may write this rank's elements at any time, so gaspar never lends a Rust
/// reference (`&[T]`, `&mut [T]`) over them: the compiler could then assume that memory
/// does not change and hoist a read out of a polling loop. [`local`](Self::local) gives a
/// view that reads and writes it by copies instead, as every transfer does.
///
/// ```no_run
/// gaspar::run_job(|rt| {
///     let (me, n) = (rt.rank(), rt.procs());
///     let inbox = rt.alloc::<u64>(n as usize)?;
///     // Every rank writes its rank into slot `me` of every rank.
///     for to in 0..n {
///         inbox.put(to, me as usize, &u64::from(me))?;
///     }
///     rt.barrier()?;
///     assert_eq!(inbox.local().to_vec()?, (0..u64::from(n)).collect::<Vec<_>>());
///     inbox.free()
/// })?;
/// # Ok::<(), gaspar::Error>(())
/// ```
pub struct SymmetricArray<'rt, T> {
    rt: &'rt Runtime,
    /// `None` only once freed.
    block: Option<SymmetricAlloc>,
    /// Element 0 on rank 0; the same offset on every rank.
    base: GlobalAddr,
    /// Where element 0 lies in every rank's heap.
    heap_offset: u64,
    len: usize,
    /// The job's ranks (checked on every access without going down the layers).
    procs: u32,
    _type: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for SymmetricArray<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SymmetricArray")
            .field("type", &std::any::type_name::<T>())
            .field("len", &self.len)
            .field("block", &self.block)
            .finish()
    }
}

impl<'rt, T: Pod> SymmetricArray<'rt, T> {
    /// The handle of `block`, `len` elements long.
    pub(crate) fn new(rt: &'rt Runtime, block: SymmetricAlloc, len: usize) -> Result<Self> {
        let base = block.ga(0)?;
        Ok(SymmetricArray {
            rt,
            heap_offset: block.heap_offset(),
            block: Some(block),
            base,
            len,
            procs: rt.procs(),
            _type: PhantomData,
        })
    }

    /// Number of elements on each rank.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let a = rt.alloc::<u32>(10)?;
    /// assert_eq!(a.len(), 10);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the array has no elements.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// assert!(rt.alloc::<u32>(0)?.is_empty());
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes from element 0 to element `index`, after checking `index` (and `count`
    /// elements from it) and `rank` against the array. The blocking transfers and the
    /// atomics then go to the transport's heap paths (`put_heap`, `get_heap`,
    /// `atomic_heap`): the handle is the proof that the block is live ([`free`](Self::free)
    /// consumes it, and nothing that ends every allocation compiles while it borrows the
    /// runtime), so the layers below neither look the allocation up again, as they must
    /// for a bare address, nor decode a segment; the transport still checks its reach
    /// and the alignment.
    #[inline(always)]
    fn checked_bytes(&self, rank: u32, index: usize, count: usize) -> Result<u64> {
        if index > self.len || count > self.len - index || rank >= self.procs {
            return Err(self.refusal(rank, index, count));
        }
        Ok((index * std::mem::size_of::<T>()) as u64)
    }

    /// The address of element `index` (of `count` elements from it) on `rank`, after
    /// checking both against the array.
    #[inline(always)]
    fn at(&self, rank: u32, index: usize, count: usize) -> Result<GlobalAddr> {
        let bytes = self.checked_bytes(rank, index, count)?;
        // A rank of the job and a place inside the block, which fits the address layout.
        Ok(self.base.on_rank_at(rank, bytes))
    }

    /// Why [`checked_bytes`](Self::checked_bytes) refuses (kept out of the transfers'
    /// inlined path).
    #[cold]
    #[inline(never)]
    fn refusal(&self, rank: u32, index: usize, count: usize) -> Error {
        if rank >= self.procs {
            return Error::RankOutOfRange {
                rank,
                procs: self.procs,
            };
        }
        Error::IndexOutOfRange {
            index: index as u64,
            count: count as u64,
            len: self.len as u64,
        }
    }

    /// A typed pointer to element `index` on `rank`, for the calls of [`Runtime::acp`].
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let a = rt.alloc::<u64>(4)?;
    /// let h = rt.acp().copy(a.ptr(1, 0)?.ga(), a.ptr(0, 0)?.ga(), 32, gaspar::Handle::NULL)?;
    /// rt.acp().complete(h)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn ptr(&self, rank: u32, index: usize) -> Result<GlobalPtr<T>> {
        Ok(GlobalPtr::new(self.at(rank, index, 1)?))
    }

    /// Writes `value` to element `index` on `rank`; returns when it is visible there.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let a = rt.alloc::<f64>(8)?;
    /// a.put((rt.rank() + 1) % rt.procs(), 0, &1.5)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn put(&self, rank: u32, index: usize, value: &T) -> Result<()> {
        self.put_slice(rank, index, std::slice::from_ref(value))
    }

    /// Writes `values` to elements `index..index + values.len()` on `rank`; returns when
    /// they are visible there.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let a = rt.alloc::<i32>(8)?;
    /// a.put_slice(0, 4, &[1, 2, 3, 4])?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn put_slice(&self, rank: u32, index: usize, values: &[T]) -> Result<()> {
        let bytes = self.checked_bytes(rank, index, values.len())?;
        self.rt.acp().put_blocking_heap(
            self.rt.acp().physical(rank)?,
            self.heap_offset + bytes,
            || self.base.on_rank_at(rank, bytes),
            bytemuck::cast_slice(values),
        )
    }

    /// Writes `value` to element `index` on `rank` without waiting for it to arrive:
    /// it is visible there after [`Runtime::quiet`] or a barrier.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let a = rt.alloc::<u64>(1)?;
    /// a.put_nbi(0, 0, &7)?;
    /// rt.quiet()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn put_nbi(&self, rank: u32, index: usize, value: &T) -> Result<()> {
        self.put_slice_nbi(rank, index, std::slice::from_ref(value))
    }

    /// Writes `values` to elements `index..` on `rank` without waiting for them to
    /// arrive (`values` may be reused on return); they are visible there after
    /// [`Runtime::quiet`] or a barrier.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let a = rt.alloc::<u64>(3)?;
    /// a.put_slice_nbi(0, 0, &[1, 2, 3])?;
    /// rt.barrier()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn put_slice_nbi(&self, rank: u32, index: usize, values: &[T]) -> Result<()> {
        let dst = self.at(rank, index, values.len())?;
        self.rt
            .acp()
            .put(dst, bytemuck::cast_slice(values), Handle::NULL)
            .map(drop)
    }

    /// Reads element `index` on `rank`.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let a = rt.alloc::<u64>(4)?;
    /// let first_of_rank_0 = a.get(0, 0)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn get(&self, rank: u32, index: usize) -> Result<T> {
        let mut value = T::zeroed();
        self.get_slice(rank, index, std::slice::from_mut(&mut value))?;
        Ok(value)
    }

    /// Reads elements `index..index + out.len()` on `rank` into `out`.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let a = rt.alloc::<u64>(4)?;
    /// let mut row = [0u64; 4];
    /// a.get_slice(0, 0, &mut row)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn get_slice(&self, rank: u32, index: usize, out: &mut [T]) -> Result<()> {
        let bytes = self.checked_bytes(rank, index, out.len())?;
        self.rt.acp().get_heap(
            bytemuck::cast_slice_mut(out),
            self.rt.acp().physical(rank)?,
            self.heap_offset + bytes,
            || self.base.on_rank_at(rank, bytes),
        )
    }

    /// Writes a `D`-dimensional section of `src` into the array on `rank` (a strided put):
    /// `shape[k]` elements along dimension k (k = 0 varies fastest), `src_strides[k]`
    /// elements apart in `src` and `dst_strides[k]` apart in the array, starting at
    /// element `index`. Returns when the data is visible there.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// // A 4 x 4 matrix, column-major, on every rank: write column 2 of ours into row 1
    /// // of rank 0's.
    /// let m = rt.alloc::<f64>(16)?;
    /// let mine = [0.0f64; 16];
    /// m.put_section(&mine[8..], [1], [4], 0, 1, [4])?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn put_section<const D: usize>(
        &self,
        src: &[T],
        src_strides: [usize; D],
        shape: [usize; D],
        rank: u32,
        index: usize,
        dst_strides: [usize; D],
    ) -> Result<()> {
        let Some(span) = section_span(shape, dst_strides)? else {
            return Ok(());
        };
        let dst = GlobalPtr::new(self.at(rank, index, span)?);
        self.rt
            .acp()
            .put_section(src, src_strides, shape, dst, dst_strides)
    }

    /// Reads a `D`-dimensional section of the array on `rank` into `dst` (a strided get;
    /// see [`put_section`](Self::put_section) for the arguments).
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// // Row 1 of rank 0's column-major 4 x 4 matrix into a vector.
    /// let m = rt.alloc::<f64>(16)?;
    /// let mut row = [0.0f64; 4];
    /// m.get_section(&mut row, [1], [4], 0, 1, [4])?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn get_section<const D: usize>(
        &self,
        dst: &mut [T],
        dst_strides: [usize; D],
        shape: [usize; D],
        rank: u32,
        index: usize,
        src_strides: [usize; D],
    ) -> Result<()> {
        let Some(span) = section_span(shape, src_strides)? else {
            return Ok(());
        };
        let src = GlobalPtr::new(self.at(rank, index, span)?);
        self.rt
            .acp()
            .get_section(dst, dst_strides, shape, src, src_strides)
    }

    /// Writes `values` to elements `index..` on `rank`, then updates element
    /// `signal_index` of `signal` on the same rank as `op` says (OpenSHMEM 1.5's
    /// `shmem_put_signal`). The data is visible there before the signal changes: a rank
    /// that sees the signal ([`wait_until`](Self::wait_until) on it) sees the data.
    ///
    /// ```no_run
    /// use gaspar::{Compare, SignalOp};
    /// # let rt = gaspar::init()?;
    /// let (data, ready) = (rt.alloc::<f64>(100)?, rt.alloc::<u64>(1)?);
    /// if rt.rank() == 0 {
    ///     data.put_signal(1, 0, &[2.5; 100], &ready, 0, SignalOp::Set(1))?;
    /// } else if rt.rank() == 1 {
    ///     ready.wait_until(0, Compare::Eq, 1)?;
    ///     assert_eq!(data.local().get(99)?, 2.5);
    /// }
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn put_signal(
        &self,
        rank: u32,
        index: usize,
        values: &[T],
        signal: &SymmetricArray<'_, u64>,
        signal_index: usize,
        op: SignalOp,
    ) -> Result<()> {
        let dst = self.at(rank, index, values.len())?;
        let word = signal.at(rank, signal_index, 1)?;
        self.rt
            .acp()
            .put_signal(dst, bytemuck::cast_slice(values), word, op)
    }

    /// This rank's elements, read and written by copies (see the type's documentation).
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let a = rt.alloc::<u32>(3)?;
    /// a.local().copy_from_slice(&[1, 2, 3])?;
    /// assert_eq!(a.local().get(2)?, 3);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn local(&self) -> LocalView<'_, 'rt, T> {
        LocalView { array: self }
    }

    /// Collective: frees the array on every rank. Every rank must free the same array
    /// (the same collective call, as for [`Runtime::alloc`]); a mismatch is reported on
    /// every rank.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let a = rt.alloc::<u8>(4096)?;
    /// a.free()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn free(mut self) -> Result<()> {
        match self.block.take() {
            Some(block) => self.rt.free_block(block),
            None => Ok(()),
        }
    }
}

impl<T: AtomicWord> SymmetricArray<'_, T> {
    /// `op` on element `index` on `rank`, complete there on return; the previous value.
    #[inline(always)]
    fn rmw(&self, rank: u32, index: usize, op: AtomicOp) -> Result<T> {
        let bytes = self.checked_bytes(rank, index, 1)?;
        Ok(T::from_bits(self.rt.acp().atomic_heap(
            self.rt.acp().physical(rank)?,
            self.heap_offset + bytes,
            || self.base.on_rank_at(rank, bytes),
            T::WIDTH,
            op,
        )?))
    }

    /// Atomically adds `value` to element `index` on `rank`; returns the previous value.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let counter = rt.alloc::<u64>(1)?;
    /// let ticket = counter.fetch_add(0, 0, 1)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn fetch_add(&self, rank: u32, index: usize, value: T) -> Result<T> {
        self.rmw(rank, index, AtomicOp::Add(value.to_bits()))
    }

    /// Atomically stores `new` in element `index` on `rank` if it equals `expected`;
    /// returns the previous value.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let lock = rt.alloc::<u64>(1)?;
    /// let won = lock.compare_swap(0, 0, 0, 1)? == 0;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn compare_swap(&self, rank: u32, index: usize, expected: T, new: T) -> Result<T> {
        self.rmw(
            rank,
            index,
            AtomicOp::CompareSwap {
                expected: expected.to_bits(),
                new: new.to_bits(),
            },
        )
    }

    /// Atomically stores `value` in element `index` on `rank`; returns the previous value.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let slot = rt.alloc::<i32>(1)?;
    /// let previous = slot.swap(0, 0, -1)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn swap(&self, rank: u32, index: usize, value: T) -> Result<T> {
        self.rmw(rank, index, AtomicOp::Swap(value.to_bits()))
    }

    /// Atomic and on element `index` on `rank`; returns the previous value.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let flags = rt.alloc::<u32>(1)?;
    /// flags.fetch_and(0, 0, !0b100)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn fetch_and(&self, rank: u32, index: usize, value: T) -> Result<T> {
        self.rmw(rank, index, AtomicOp::And(value.to_bits()))
    }

    /// Atomic or on element `index` on `rank`; returns the previous value.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let flags = rt.alloc::<u32>(1)?;
    /// flags.fetch_or(0, 0, 1 << rt.rank())?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn fetch_or(&self, rank: u32, index: usize, value: T) -> Result<T> {
        self.rmw(rank, index, AtomicOp::Or(value.to_bits()))
    }

    /// Atomic exclusive or on element `index` on `rank`; returns the previous value.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let parity = rt.alloc::<u64>(1)?;
    /// parity.fetch_xor(0, 0, 1)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn fetch_xor(&self, rank: u32, index: usize, value: T) -> Result<T> {
        self.rmw(rank, index, AtomicOp::Xor(value.to_bits()))
    }

    /// Atomically reads element `index` on `rank`.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let counter = rt.alloc::<u64>(1)?;
    /// let now = counter.atomic_load(0, 0)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn atomic_load(&self, rank: u32, index: usize) -> Result<T> {
        self.rmw(rank, index, AtomicOp::Load)
    }

    /// Atomically writes element `index` on `rank`.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let counter = rt.alloc::<u64>(1)?;
    /// counter.atomic_store(0, 0, 0)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn atomic_store(&self, rank: u32, index: usize, value: T) -> Result<()> {
        self.rmw(rank, index, AtomicOp::Store(value.to_bits()))
            .map(drop)
    }

    /// Waits until this rank's element `index` compares to `value` as `cmp` says, and
    /// returns it (OpenSHMEM's `shmem_wait_until`). Other ranks set it with an atomic, a
    /// put, or [`put_signal`](Self::put_signal); the wait polls briefly, then sleeps until
    /// such a write wakes it. Ends with [`Error::JobAborted`] when the job is aborted.
    ///
    /// ```no_run
    /// use gaspar::Compare;
    /// # let rt = gaspar::init()?;
    /// let arrived = rt.alloc::<u64>(1)?;
    /// arrived.fetch_add(0, 0, 1)?;
    /// if rt.rank() == 0 {
    ///     arrived.wait_until(0, Compare::Eq, u64::from(rt.procs()))?;
    /// }
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn wait_until(&self, index: usize, cmp: Compare, value: T) -> Result<T>
    where
        T: PartialOrd,
    {
        self.ptr(self.rt.rank(), index)?
            .wait_until(self.rt.acp(), cmp, value)
    }
}

impl<T> Drop for SymmetricArray<'_, T> {
    fn drop(&mut self) {
        if let (Some(block), false) = (&self.block, std::thread::panicking()) {
            self.rt.report_leak(format!(
                "SymmetricArray<{}> of {} elements ({} bytes at heap offset {:#x})",
                std::any::type_name::<T>(),
                self.len,
                block.len(),
                block.heap_offset()
            ));
        }
    }
}

/// The elements `shape` with `strides` spans (one past the last one touched), or `None`
/// for an empty section.
fn section_span<const D: usize>(shape: [usize; D], strides: [usize; D]) -> Result<Option<usize>> {
    if shape.contains(&0) {
        return Ok(None);
    }
    shape
        .iter()
        .zip(strides)
        .try_fold(1usize, |span, (&n, stride)| {
            (n - 1)
                .checked_mul(stride)
                .and_then(|reach| span.checked_add(reach))
        })
        .map(Some)
        .ok_or(Error::LengthOverflow {
            what: "section extent",
        })
}

/// This rank's part of a [`SymmetricArray`], from [`SymmetricArray::local`]: read and
/// written by copies, never lent out as a Rust reference (other ranks may write it).
///
/// ```no_run
/// # let rt = gaspar::init()?;
/// let a = rt.alloc::<f64>(4)?;
/// let mine = a.local();
/// mine.set(0, 1.0)?;
/// let mut copy = [0.0; 4];
/// mine.copy_to_slice(&mut copy)?;
/// # Ok::<(), gaspar::Error>(())
/// ```
pub struct LocalView<'a, 'rt, T> {
    array: &'a SymmetricArray<'rt, T>,
}

impl<T: Pod> LocalView<'_, '_, T> {
    /// Number of elements.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// assert_eq!(rt.alloc::<u8>(5)?.local().len(), 5);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.array.len
    }

    /// Whether there are no elements.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// assert!(!rt.alloc::<u8>(5)?.local().is_empty());
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.array.len == 0
    }

    /// Element `index`.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let a = rt.alloc::<u64>(2)?;
    /// assert_eq!(a.local().get(1)?, 0); // arrays start zeroed
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn get(&self, index: usize) -> Result<T> {
        self.array.get(self.array.rt.rank(), index)
    }

    /// Writes element `index`.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let a = rt.alloc::<u64>(2)?;
    /// a.local().set(1, 42)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn set(&self, index: usize, value: T) -> Result<()> {
        self.array.put(self.array.rt.rank(), index, &value)
    }

    /// Writes every element from `src`, which must have [`len`](Self::len) elements.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let a = rt.alloc::<u16>(3)?;
    /// a.local().copy_from_slice(&[7, 8, 9])?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn copy_from_slice(&self, src: &[T]) -> Result<()> {
        self.same_len("copy_from_slice", src.len())?;
        self.array.put_slice(self.array.rt.rank(), 0, src)
    }

    /// Reads every element into `dst`, which must have [`len`](Self::len) elements.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let a = rt.alloc::<u16>(3)?;
    /// let mut out = [0u16; 3];
    /// a.local().copy_to_slice(&mut out)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn copy_to_slice(&self, dst: &mut [T]) -> Result<()> {
        self.same_len("copy_to_slice", dst.len())?;
        self.array.get_slice(self.array.rt.rank(), 0, dst)
    }

    /// Every element, copied into a new vector.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let a = rt.alloc::<u16>(3)?;
    /// assert_eq!(a.local().to_vec()?, vec![0, 0, 0]);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); self.array.len];
        self.array.get_slice(self.array.rt.rank(), 0, &mut out)?;
        Ok(out)
    }

    fn same_len(&self, call: &'static str, other: usize) -> Result<()> {
        if other != self.array.len {
            return Err(Error::invalid(
                call,
                format!(
                    "the slice has {other} elements, this rank's part of the array {}",
                    self.array.len
                ),
            ));
        }
        Ok(())
    }
}
