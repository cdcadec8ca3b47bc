//! Global memory access (ACP's table 3): copy between any two global addresses, remote
//! atomics, and handles that order and complete them. Sits on global memory and derefs
//! to it.
//!
//! Every operation is nonblocking and returns a [`Handle`]. Its `order` argument says what
//! must be complete before it starts: nothing ([`Handle::NULL`]), every earlier operation
//! ([`Handle::ALL`]), or one earlier handle and everything before it. [`Gma::complete`]
//! waits for a handle and everything issued before it; [`Gma::inquire`] tests.

mod handles;
mod ptr;

use std::ops::Deref;

pub use self::ptr::{AtomicWord, Compare, GlobalPtr};
use crate::error::Result;
use crate::gmem::{GlobalAddr, GlobalMemory};
use crate::transport::{
    AccKind, AccShape, AtomicOp, Incoming, Location, Outgoing, Pattern, Run, Transport, Width,
};

/// Names an issued operation (ACP's `acp_handle_t`). Handles are issued in increasing
/// order; completing one completes every earlier one.
///
/// ```no_run
/// # let rt = gaspar::init()?;
/// let acp = rt.acp();
/// use gaspar::Handle;
/// let (a, b) = (acp.starter_ga(0)?, acp.starter_ga(rt.procs() - 1)?);
/// let first = acp.copy(b, a, 8, Handle::NULL)?;
/// let second = acp.copy(a.offset(8).unwrap(), b, 8, first)?; // starts after `first`
/// acp.complete(second)?; // and `first` with it
/// # Ok::<(), gaspar::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Handle(u64);

impl Handle {
    /// No ordering / nothing to wait for (ACP_HANDLE_NULL).
    ///
    /// ```
    /// use gaspar::Handle;
    /// assert!(Handle::NULL < Handle::ALL);
    /// ```
    pub const NULL: Handle = Handle(0);
    /// Every operation issued so far (ACP_HANDLE_ALL).
    ///
    /// ```
    /// use gaspar::Handle;
    /// assert_eq!(Handle::ALL.to_bits(), u64::MAX);
    /// ```
    pub const ALL: Handle = Handle(u64::MAX);

    /// The raw value (for the C ABI).
    ///
    /// ```
    /// use gaspar::Handle;
    /// assert_eq!(Handle::from_bits(Handle::NULL.to_bits()), Handle::NULL);
    /// ```
    pub const fn to_bits(self) -> u64 {
        self.0
    }

    /// A handle from raw bits (for the C ABI).
    ///
    /// ```
    /// use gaspar::Handle;
    /// assert_eq!(Handle::from_bits(u64::MAX), Handle::ALL);
    /// ```
    pub const fn from_bits(bits: u64) -> Handle {
        Handle(bits)
    }
}

/// An issued atomic: its handle and the word's value before the operation.
///
/// ```no_run
/// # let rt = gaspar::init()?;
/// let acp = rt.acp();
/// use gaspar::{AtomicOp, Handle, Width};
/// let counter = acp.starter_ga(0)?;
/// let fetched = acp.atomic(counter, Width::W8, AtomicOp::Add(1), Handle::NULL)?;
/// acp.complete(fetched.handle)?;
/// println!("the counter was {}", fetched.old);
/// # Ok::<(), gaspar::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fetched {
    /// Completes the atomic.
    pub handle: Handle,
    /// The previous value of the word (4-byte atomics: zero-extended).
    pub old: u64,
}

/// The global-memory-access layer of one rank (ACP's basic layer, reached by
/// [`Runtime::acp`](crate::Runtime::acp)); derefs to [`GlobalMemory`].
///
/// ```no_run
/// # let rt = gaspar::init()?;
/// let acp = rt.acp();
/// let gma: &gaspar::Gma = rt.acp();
/// let here = gma.starter_ga(rt.rank())?;
/// gma.put_blocking(here, &[1, 2, 3])?;
/// # Ok::<(), gaspar::Error>(())
/// ```
pub struct Gma {
    gmem: GlobalMemory,
}

impl Deref for Gma {
    type Target = GlobalMemory;
    fn deref(&self) -> &GlobalMemory {
        &self.gmem
    }
}

impl Gma {
    /// The access layer on top of `gmem`.
    ///
    /// ```no_run
    /// use gaspar::{gmem::GlobalMemory, world::World, Gma};
    /// let gma = Gma::new(GlobalMemory::new(World::init()?)?);
    /// gma.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn new(gmem: GlobalMemory) -> Gma {
        Gma { gmem }
    }

    /// A handle for an operation that is complete at its target when it returns (a get,
    /// an atomic).
    #[inline]
    fn issue(&self) -> Handle {
        handles::issue()
    }

    /// A handle for a write that may still be in flight to its target until a flush.
    #[inline]
    fn issue_write(&self) -> Handle {
        handles::issue_write()
    }

    /// Waits until `order` allows a new operation to start.
    #[inline]
    fn wait_for(&self, order: Handle) -> Result<()> {
        if order != Handle::NULL {
            self.complete(order)?;
        }
        Ok(())
    }

    /// Copies `len` bytes from `src` to `dst` (ACP's `acp_copy`). Either, both or neither
    /// may belong to this rank. The bytes may be read and written in any order.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// use gaspar::Handle;
    /// // Third party: from rank 0's starter memory to the last rank's, whoever runs it.
    /// let h = acp.copy(acp.starter_ga(rt.procs() - 1)?, acp.starter_ga(0)?, 64, Handle::NULL)?;
    /// acp.complete(h)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn copy(
        &self,
        dst: GlobalAddr,
        src: GlobalAddr,
        len: u64,
        order: Handle,
    ) -> Result<Handle> {
        let (d, s) = (self.locate_range(dst, len)?, self.locate_range(src, len)?);
        self.wait_for(order)?;
        self.transport().copy(d, s, len)?;
        Ok(self.issue_write())
    }

    /// Writes `src` to `dst`; `src` may be reused when this returns.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// use gaspar::Handle;
    /// let h = acp.put(acp.starter_ga(0)?, b"hello", Handle::NULL)?;
    /// acp.complete(h)?; // visible at rank 0 now
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline(always)]
    pub fn put(&self, dst: GlobalAddr, src: &[u8], order: Handle) -> Result<Handle> {
        let d = self.locate_range(dst, src.len() as u64)?;
        self.wait_for(order)?;
        self.transport().put(d, src)?;
        Ok(self.issue_write())
    }

    /// [`put`](Self::put) to a place its caller resolved and checked itself (the coarray
    /// layer: its token is a live allocation, and it checked the bytes against the
    /// token's size), so without the look-up of the live allocation; the transport still
    /// checks the bytes against the segment. No handle: the caller completes the put
    /// itself, with [`fence`](Self::fence) of its rank or `complete(Handle::ALL)` (which
    /// flushes whatever this thread's handles say); a handle's thread-local bookkeeping
    /// was a tenth of the coarray layer's cost over a raw 8 KiB put.
    #[inline(always)]
    pub(crate) fn put_located(&self, dst: Location, src: &[u8]) -> Result<()> {
        Ok(self.transport().put(dst, src)?)
    }

    /// [`get_blocking`](Self::get_blocking) from a place its caller resolved and checked
    /// itself (see [`put_located`](Self::put_located)).
    #[inline(always)]
    pub(crate) fn get_located(&self, dst: &mut [u8], src: Location) -> Result<()> {
        Ok(self.transport().get(src, dst)?)
    }

    /// Writes `src` to `dst` and waits until it is visible at the target (a blocking put:
    /// one step on transports that can complete a single put cheaper than a full flush).
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// acp.put_blocking(acp.starter_ga(0)?, &7u64.to_ne_bytes())?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline(always)]
    pub fn put_blocking(&self, dst: GlobalAddr, src: &[u8]) -> Result<()> {
        // Complete on return: no handle to issue. A heap address takes the typed arrays'
        // path, which knows its segment (`put_flushed` would match on it again).
        if let Some((rank, offset)) = self.locate_heap_range(dst, src.len() as u64)? {
            return self.put_blocking_heap(rank, offset, || dst, src);
        }
        let d = self.locate_range(dst, src.len() as u64)?;
        Ok(self.transport().put_flushed(d, src)?)
    }

    /// Reads `dst.len()` bytes at `src` into `dst` (a blocking get: complete on return,
    /// so no handle is issued).
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let mut word = [0u8; 8];
    /// acp.get_blocking(&mut word, acp.starter_ga(0)?)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline(always)]
    pub fn get_blocking(&self, dst: &mut [u8], src: GlobalAddr) -> Result<()> {
        if let Some((rank, offset)) = self.locate_heap_range(src, dst.len() as u64)? {
            return self.get_heap(dst, rank, offset, || src);
        }
        let s = self.locate_range(src, dst.len() as u64)?;
        Ok(self.transport().get(s, dst)?)
    }

    /// Reads `dst.len()` bytes at `src` into `dst`; the data is there when this returns.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// use gaspar::Handle;
    /// let mut bytes = [0u8; 16];
    /// acp.get(&mut bytes, acp.starter_ga(0)?, Handle::NULL)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline(always)]
    pub fn get(&self, dst: &mut [u8], src: GlobalAddr, order: Handle) -> Result<Handle> {
        // A get is complete on return: a heap address takes the blocking get's path, which
        // skips the general look-up, then a handle orders later operations after it. An
        // 8-byte get with a handle took 3.8 ns through the general look-up and 2.7 this
        // way, against the blocking get's 1.9 (shm, AMD EPYC VM, `examples/copy_loop.rs
        // get-handle 8`).
        if let Some((rank, offset)) = self.locate_heap_range(src, dst.len() as u64)? {
            self.wait_for(order)?;
            self.get_heap(dst, rank, offset, || src)?;
            return Ok(self.issue());
        }
        let s = self.locate_range(src, dst.len() as u64)?;
        self.wait_for(order)?;
        self.transport().get(s, dst)?;
        Ok(self.issue())
    }

    /// Writes runs of `src` (see [`Run`]) after `dst`, in one transport call.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// use gaspar::{Handle, Run};
    /// // Bytes 0..8 of `src` to offset 0, bytes 8..16 to offset 64.
    /// let src = [1u8; 16];
    /// let runs = [Run { local: 0, remote: 0, len: 8 }, Run { local: 8, remote: 64, len: 8 }];
    /// let h = acp.put_runs(acp.starter_ga(0)?, &src, &runs, Handle::NULL)?;
    /// acp.complete(h)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn put_runs(
        &self,
        dst: GlobalAddr,
        src: &[u8],
        runs: &[Run],
        order: Handle,
    ) -> Result<Handle> {
        let d = self.locate_pieces(dst, runs.iter().map(|r| (r.remote, r.len)))?;
        self.wait_for(order)?;
        self.transport()
            .put_pieces(d, Outgoing::Runs { src, runs })?;
        Ok(self.issue_write())
    }

    /// Reads runs after `src` into `dst` (see [`Run`]), in one transport call.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// use gaspar::{Handle, Run};
    /// let mut dst = [0u8; 16];
    /// let runs = [Run { local: 0, remote: 0, len: 8 }, Run { local: 8, remote: 64, len: 8 }];
    /// acp.get_runs(&mut dst, acp.starter_ga(0)?, &runs, Handle::NULL)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn get_runs(
        &self,
        dst: &mut [u8],
        src: GlobalAddr,
        runs: &[Run],
        order: Handle,
    ) -> Result<Handle> {
        let s = self.locate_pieces(src, runs.iter().map(|r| (r.remote, r.len)))?;
        self.wait_for(order)?;
        self.transport()
            .get_pieces(s, Incoming::Runs { dst, runs })?;
        Ok(self.issue())
    }

    /// Writes each `srcs[k]` at `offsets[k]` bytes after `dst` (an I/O vector), in one
    /// transport call; every segment is checked before any byte moves.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// use gaspar::Handle;
    /// let (a, b) = ([1u8; 8], [2u8; 8]);
    /// let h = acp.put_segments(&[&a[..], &b[..]], acp.starter_ga(0)?, &[0, 64], Handle::NULL)?;
    /// acp.complete(h)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn put_segments(
        &self,
        srcs: &[&[u8]],
        dst: GlobalAddr,
        offsets: &[u64],
        order: Handle,
    ) -> Result<Handle> {
        let d = self.locate_pieces(dst, pieces(offsets, srcs.iter().map(|s| s.len())))?;
        self.wait_for(order)?;
        self.transport()
            .put_pieces(d, Outgoing::Segments { srcs, offsets })?;
        Ok(self.issue_write())
    }

    /// Reads the bytes at `offsets[k]` after `src` into each `dsts[k]`, in one transport
    /// call; every segment is checked before any byte moves.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// use gaspar::Handle;
    /// let (mut a, mut b) = ([0u8; 8], [0u8; 8]);
    /// acp.get_segments(&mut [&mut a[..], &mut b[..]], acp.starter_ga(0)?, &[0, 64], Handle::NULL)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn get_segments(
        &self,
        dsts: &mut [&mut [u8]],
        src: GlobalAddr,
        offsets: &[u64],
        order: Handle,
    ) -> Result<Handle> {
        let s = self.locate_pieces(src, pieces(offsets, dsts.iter().map(|d| d.len())))?;
        self.wait_for(order)?;
        self.transport()
            .get_pieces(s, Incoming::Segments { dsts, offsets })?;
        Ok(self.issue())
    }

    /// Writes a regular pattern of `src` after `dst`, in one transport call.
    pub(crate) fn put_pattern(
        &self,
        dst: GlobalAddr,
        src: &[u8],
        pattern: &Pattern<'_>,
        order: Handle,
    ) -> Result<Handle> {
        if let Some(chunk) = single_chunk(pattern, src.len()) {
            // One chunk (ARMCI's 0-level strided calls, contiguous sections): a plain put,
            // without the derived datatypes the mpi transport would build for a pattern
            // (3-5x the put itself at 8 bytes).
            return self.put(dst, &src[..chunk], order);
        }
        let d = self.locate_extent(dst, || Ok(pattern.checked_extents(src.len())?.1))?;
        self.wait_for(order)?;
        self.transport()
            .put_pieces(d, Outgoing::Pattern { src, pattern })?;
        Ok(self.issue_write())
    }

    /// Reads a regular pattern after `src` into `dst`, in one transport call.
    pub(crate) fn get_pattern(
        &self,
        dst: &mut [u8],
        src: GlobalAddr,
        pattern: &Pattern<'_>,
        order: Handle,
    ) -> Result<Handle> {
        if let Some(chunk) = single_chunk(pattern, dst.len()) {
            // One chunk: a plain get (see `put_pattern`).
            return self.get(&mut dst[..chunk], src, order);
        }
        let s = self.locate_extent(src, || Ok(pattern.checked_extents(dst.len())?.1))?;
        self.wait_for(order)?;
        self.transport()
            .get_pieces(s, Incoming::Pattern { dst, pattern })?;
        Ok(self.issue())
    }

    /// Adds `scale * src` to the elements of `kind` at `dst` (ARMCI's accumulate), laid
    /// out as `shape` on both sides, in one transport call: each element's update is
    /// atomic with respect to other accumulates, and this rank's accumulates to one rank
    /// are applied in issue order. `src` may be reused when this returns; the update is
    /// complete at its target as a put is (after [`complete`](Self::complete) or
    /// [`fence`](Self::fence)).
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// use gaspar::{strided::AccKind, AccShape, Handle, Pattern};
    /// let ones = bytemuck::cast_slice::<f64, u8>(&[1.0; 4]).to_vec();
    /// let contiguous = Pattern { chunk: 32, counts: &[], local_strides: &[], remote_strides: &[] };
    /// let two = 2f64.to_ne_bytes();
    /// let h = acp.accumulate(acp.starter_ga(0)?, &ones, AccShape::Pattern(contiguous), AccKind::Double, &two, Handle::NULL)?;
    /// acp.complete(h)?; // rank 0's four doubles grew by 2.0 each
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn accumulate(
        &self,
        dst: GlobalAddr,
        src: &[u8],
        shape: AccShape<'_>,
        kind: AccKind,
        scale: &[u8],
        order: Handle,
    ) -> Result<Handle> {
        let d = match shape {
            AccShape::Pattern(pattern) => {
                self.locate_extent(dst, || Ok(pattern.checked_extents(src.len())?.1))?
            }
            AccShape::Runs(runs) => {
                self.locate_pieces(dst, runs.iter().map(|r| (r.remote, r.len)))?
            }
        };
        self.wait_for(order)?;
        self.transport().accumulate(d, src, shape, kind, scale)?;
        Ok(self.issue_write())
    }

    /// Makes every earlier write to logical rank `rank` visible there.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// use gaspar::Handle;
    /// acp.put(acp.starter_ga(0)?, &[1], Handle::NULL)?;
    /// acp.fence(0)?; // visible at rank 0
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn fence(&self, rank: u32) -> Result<()> {
        let physical = self.physical(rank)?;
        Ok(self.transport().flush(physical)?)
    }

    /// Checks that `len` bytes at `ga` are registered memory, without moving any.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// assert!(acp.check_range(acp.starter_ga(0)?, acp.starter_len() + 1).is_err());
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn check_range(&self, ga: GlobalAddr, len: u64) -> Result<()> {
        Ok(self
            .transport()
            .check_range(self.locate_range(ga, len)?, len)?)
    }

    /// Does `op` on the `width`-byte word at `target` (ACP's `acp_cas4` ... `acp_and8`)
    /// and returns the previous value. The word must be aligned to its width.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// use gaspar::{AtomicOp, Handle, Width};
    /// let word = acp.starter_ga(0)?;
    /// let swapped = acp.atomic(word, Width::W8, AtomicOp::CompareSwap { expected: 0, new: 1 }, Handle::NULL)?;
    /// let won = swapped.old == 0;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn atomic(
        &self,
        target: GlobalAddr,
        width: Width,
        op: AtomicOp,
        order: Handle,
    ) -> Result<Fetched> {
        let t = self.locate_range(target, width.bytes().into())?;
        self.wait_for(order)?;
        let old = self.transport().atomic(t, width, op)?;
        Ok(Fetched {
            handle: self.issue(),
            old,
        })
    }

    /// Does `op` on the `width`-byte word at `target` and returns the previous value; the
    /// atomic is complete at its target on return, so no handle is issued.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// use gaspar::{AtomicOp, Width};
    /// let old = acp.atomic_blocking(acp.starter_ga(0)?, Width::W4, AtomicOp::Or(1 << rt.rank()))?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline(always)]
    pub fn atomic_blocking(&self, target: GlobalAddr, width: Width, op: AtomicOp) -> Result<u64> {
        let t = self.locate_range(target, width.bytes().into())?;
        Ok(self.transport().atomic(t, width, op)?)
    }

    /// [`put_blocking`](Self::put_blocking) to `offset` bytes into physical rank `rank`'s
    /// symmetric heap, which the caller checked (`ga`: as in [`Transport::atomic_heap`]).
    #[inline(always)]
    pub(crate) fn put_blocking_heap(
        &self,
        rank: u32,
        offset: u64,
        ga: impl FnOnce() -> GlobalAddr,
        src: &[u8],
    ) -> Result<()> {
        Ok(self.transport().put_heap(rank, offset, ga, src)?)
    }

    /// [`get_located`](Self::get_located) from `offset` bytes into physical rank `rank`'s
    /// symmetric heap, which the caller checked (`ga`: as in
    /// [`Transport::atomic_heap`]).
    #[inline(always)]
    pub(crate) fn get_heap(
        &self,
        dst: &mut [u8],
        rank: u32,
        offset: u64,
        ga: impl FnOnce() -> GlobalAddr,
    ) -> Result<()> {
        Ok(self.transport().get_heap(rank, offset, ga, dst)?)
    }

    /// [`atomic_blocking`](Self::atomic_blocking) on the word `offset` bytes into physical
    /// rank `rank`'s symmetric heap, which the caller checked (`ga`: as in
    /// [`Transport::atomic_heap`]).
    #[inline(always)]
    pub(crate) fn atomic_heap(
        &self,
        rank: u32,
        offset: u64,
        ga: impl FnOnce() -> GlobalAddr,
        width: Width,
        op: AtomicOp,
    ) -> Result<u64> {
        Ok(self.transport().atomic_heap(rank, offset, ga, width, op)?)
    }

    /// Writes `src` to `dst`, then updates the 8-byte signal word at `signal` as `op`
    /// says (OpenSHMEM 1.5's `shmem_put_signal`), and returns when both are visible at
    /// their targets. The data is complete at its target before the signal changes, so a
    /// rank that sees the signal (by [`GlobalPtr::wait_until`] on it, or an atomic load)
    /// sees the data. The signal word must be 8-byte aligned; it may be on another rank
    /// than the data.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// use gaspar::{Compare, GlobalPtr, SignalOp};
    /// // Rank 0 sends 64 bytes to rank 1's starter memory, then sets the word after them.
    /// let (data, flag) = (acp.starter_ga(1)?, acp.starter_ga(1)?.offset(64).unwrap());
    /// if rt.rank() == 0 {
    ///     acp.put_signal(data, &[9u8; 64], flag, SignalOp::Set(1))?;
    /// } else if rt.rank() == 1 {
    ///     GlobalPtr::<u64>::new(flag).wait_until(acp, Compare::Eq, 1)?;
    ///     // The 64 bytes are here.
    /// }
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn put_signal(
        &self,
        dst: GlobalAddr,
        src: &[u8],
        signal: GlobalAddr,
        op: SignalOp,
    ) -> Result<()> {
        let s = self.locate_range(signal, Width::W8.bytes().into())?;
        self.put_blocking(dst, src)?;
        self.transport().atomic(s, Width::W8, op.atomic())?;
        Ok(())
    }

    /// Waits until `handle` and every operation issued before it are complete at their
    /// targets (ACP's `acp_complete`).
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// use gaspar::Handle;
    /// acp.put(acp.starter_ga(0)?, &[1, 2], Handle::NULL)?;
    /// acp.complete(Handle::ALL)?; // everything this rank issued
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn complete(&self, handle: Handle) -> Result<()> {
        if handles::is_complete(handle) {
            return Ok(());
        }
        let issued = handles::last_issued();
        if handles::writes_in_flight() || !handles::is_own(handle) {
            self.transport().flush_all()?;
        }
        handles::mark_completed(issued);
        Ok(())
    }

    /// Whether `handle` and every operation before it are complete (ACP's `acp_inquire`);
    /// never waits, but lets the transport make progress.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// use gaspar::Handle;
    /// let h = acp.put(acp.starter_ga(0)?, &[0u8; 4096], Handle::NULL)?;
    /// while !acp.inquire(h)? {
    ///     // other work
    /// }
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn inquire(&self, handle: Handle) -> Result<bool> {
        if handles::is_complete(handle) {
            return Ok(true);
        }
        let issued = handles::last_issued();
        if self.transport().test_all()? {
            handles::mark_completed(issued);
            return Ok(true);
        }
        Ok(false)
    }

    /// A typed pointer to `ga`.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let word = acp.ptr::<u64>(acp.starter_ga(0)?);
    /// word.put(acp, &1)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn ptr<T: bytemuck::Pod>(&self, ga: GlobalAddr) -> GlobalPtr<T> {
        GlobalPtr::new(ga)
    }

    /// Collective: completes every operation, forgets every allocation and registration,
    /// and makes this process rank `new_rank` (ACP's `acp_reset`).
    ///
    /// ```no_run
    /// let mut rt = gaspar::init()?;
    /// let backwards = rt.procs() - 1 - rt.rank();
    /// rt.acp_mut().reset(backwards)?; // ranks numbered backwards from here on
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn reset(&mut self, new_rank: u32) -> Result<()> {
        self.complete(Handle::ALL)?;
        self.gmem.reset(new_rank)
    }

    /// Completes everything and leaves the job (ACP's `acp_finalize`).
    ///
    /// ```no_run
    /// let layers = gaspar::init()?.into_acp();
    /// layers.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn finalize(self) -> Result<()> {
        self.complete(Handle::ALL)?;
        self.gmem.into_world().finalize()
    }
}

/// How [`Gma::put_signal`] updates its signal word (OpenSHMEM's `SHMEM_SIGNAL_SET` and
/// `SHMEM_SIGNAL_ADD`).
///
/// ```no_run
/// # let rt = gaspar::init()?;
/// let acp = rt.acp();
/// use gaspar::SignalOp;
/// let flag = acp.starter_ga(0)?;
/// acp.put_signal(acp.starter_ga(0)?.offset(8).unwrap(), &[1], flag, SignalOp::Add(1))?;
/// # Ok::<(), gaspar::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignalOp {
    /// Stores the value.
    Set(u64),
    /// Adds the value (so that several writers can signal one word).
    Add(u64),
}

impl SignalOp {
    /// The atomic that applies it.
    fn atomic(self) -> AtomicOp {
        match self {
            SignalOp::Set(value) => AtomicOp::Store(value),
            SignalOp::Add(value) => AtomicOp::Add(value),
        }
    }
}

/// The (offset, length) pieces of an I/O vector.
fn pieces<'a>(
    offsets: &'a [u64],
    lens: impl Iterator<Item = usize> + 'a,
) -> impl Iterator<Item = (u64, u64)> + 'a {
    offsets.iter().zip(lens).map(|(&o, len)| (o, len as u64))
}

/// The length of `pattern`'s only chunk, when every level repeats once and the chunk fits
/// in a local buffer of `local_len` bytes; `None` sends the caller down the pattern path
/// (which also reports a chunk that does not fit).
fn single_chunk(pattern: &Pattern<'_>, local_len: usize) -> Option<usize> {
    let chunk = usize::try_from(pattern.chunk).ok()?;
    (pattern.counts.iter().all(|&c| c == 1) && chunk <= local_len).then_some(chunk)
}
