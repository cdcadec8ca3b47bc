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
use crate::transport::{AtomicOp, Pattern, Run, Transport, Width};

/// Names an issued operation (ACP's `acp_handle_t`). Handles are issued in increasing
/// order; completing one completes every earlier one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Handle(u64);

impl Handle {
    /// No ordering / nothing to wait for (ACP_HANDLE_NULL).
    pub const NULL: Handle = Handle(0);
    /// Every operation issued so far (ACP_HANDLE_ALL).
    pub const ALL: Handle = Handle(u64::MAX);

    /// The raw value (for the C ABI).
    pub const fn to_bits(self) -> u64 {
        self.0
    }

    /// A handle from raw bits (for the C ABI).
    pub const fn from_bits(bits: u64) -> Handle {
        Handle(bits)
    }
}

/// An issued atomic: its handle and the word's value before the operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fetched {
    /// Completes the atomic.
    pub handle: Handle,
    /// The previous value of the word (4-byte atomics: zero-extended).
    pub old: u64,
}

/// The global-memory-access layer of one rank: the runtime as Rust users see it.
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
    #[inline]
    pub fn put(&self, dst: GlobalAddr, src: &[u8], order: Handle) -> Result<Handle> {
        let d = self.locate_range(dst, src.len() as u64)?;
        self.wait_for(order)?;
        self.transport().put(d, src)?;
        Ok(self.issue_write())
    }

    /// Writes `src` to `dst` and waits until it is visible at the target (a blocking put:
    /// one step on transports that can complete a single put cheaper than a full flush).
    #[inline(always)]
    pub fn put_blocking(&self, dst: GlobalAddr, src: &[u8]) -> Result<()> {
        let d = self.locate_range(dst, src.len() as u64)?;
        // Complete on return: no handle to issue.
        Ok(self.transport().put_flushed(d, src)?)
    }

    /// Reads `dst.len()` bytes at `src` into `dst` (a blocking get: complete on return,
    /// so no handle is issued).
    #[inline(always)]
    pub fn get_blocking(&self, dst: &mut [u8], src: GlobalAddr) -> Result<()> {
        let s = self.locate_range(src, dst.len() as u64)?;
        Ok(self.transport().get(s, dst)?)
    }

    /// Reads `dst.len()` bytes at `src` into `dst`; the data is there when this returns.
    #[inline]
    pub fn get(&self, dst: &mut [u8], src: GlobalAddr, order: Handle) -> Result<Handle> {
        let s = self.locate_range(src, dst.len() as u64)?;
        self.wait_for(order)?;
        self.transport().get(s, dst)?;
        Ok(self.issue())
    }

    /// Writes runs of `src` (see [`Run`]) after `dst`, in one transport call.
    pub fn put_runs(
        &self,
        dst: GlobalAddr,
        src: &[u8],
        runs: &[Run],
        order: Handle,
    ) -> Result<Handle> {
        let d = self.locate_pieces(dst, runs.iter().map(|r| (r.remote, r.len)))?;
        self.wait_for(order)?;
        self.transport().put_runs(d, src, runs)?;
        Ok(self.issue_write())
    }

    /// Reads runs after `src` into `dst` (see [`Run`]), in one transport call.
    pub fn get_runs(
        &self,
        dst: &mut [u8],
        src: GlobalAddr,
        runs: &[Run],
        order: Handle,
    ) -> Result<Handle> {
        let s = self.locate_pieces(src, runs.iter().map(|r| (r.remote, r.len)))?;
        self.wait_for(order)?;
        self.transport().get_runs(s, dst, runs)?;
        Ok(self.issue())
    }

    /// Writes each `srcs[k]` at `offsets[k]` bytes after `dst` (an I/O vector), in one
    /// transport call; every segment is checked before any byte moves.
    pub fn put_segments(
        &self,
        srcs: &[&[u8]],
        dst: GlobalAddr,
        offsets: &[u64],
        order: Handle,
    ) -> Result<Handle> {
        let d = self.locate_pieces(dst, pieces(offsets, srcs.iter().map(|s| s.len())))?;
        self.wait_for(order)?;
        self.transport().put_segments(d, srcs, offsets)?;
        Ok(self.issue_write())
    }

    /// Reads the bytes at `offsets[k]` after `src` into each `dsts[k]`, in one transport
    /// call; every segment is checked before any byte moves.
    pub fn get_segments(
        &self,
        dsts: &mut [&mut [u8]],
        src: GlobalAddr,
        offsets: &[u64],
        order: Handle,
    ) -> Result<Handle> {
        let s = self.locate_pieces(src, pieces(offsets, dsts.iter().map(|d| d.len())))?;
        self.wait_for(order)?;
        self.transport().get_segments(s, dsts, offsets)?;
        Ok(self.issue())
    }

    /// Writes a regular pattern of `src` after `dst`, in one transport call.
    pub fn put_pattern(
        &self,
        dst: GlobalAddr,
        src: &[u8],
        pattern: &Pattern<'_>,
        order: Handle,
    ) -> Result<Handle> {
        let d = self.locate_extent(dst, || Ok(pattern.checked_extents(src.len())?.1))?;
        self.wait_for(order)?;
        self.transport().put_pattern(d, src, pattern)?;
        Ok(self.issue_write())
    }

    /// Reads a regular pattern after `src` into `dst`, in one transport call.
    pub fn get_pattern(
        &self,
        dst: &mut [u8],
        src: GlobalAddr,
        pattern: &Pattern<'_>,
        order: Handle,
    ) -> Result<Handle> {
        let s = self.locate_extent(src, || Ok(pattern.checked_extents(dst.len())?.1))?;
        self.wait_for(order)?;
        self.transport().get_pattern(s, dst, pattern)?;
        Ok(self.issue())
    }

    /// Makes every earlier write to logical rank `rank` visible there.
    pub fn fence(&self, rank: u32) -> Result<()> {
        let physical = self.physical(rank)?;
        Ok(self.transport().flush(physical)?)
    }

    /// Checks that `len` bytes at `ga` are registered memory, without moving any.
    pub fn check_range(&self, ga: GlobalAddr, len: u64) -> Result<()> {
        Ok(self
            .transport()
            .check_range(self.locate_range(ga, len)?, len)?)
    }

    /// Does `op` on the `width`-byte word at `target` (ACP's `acp_cas4` ... `acp_and8`)
    /// and returns the previous value. The word must be aligned to its width.
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
    #[inline(always)]
    pub fn atomic_blocking(&self, target: GlobalAddr, width: Width, op: AtomicOp) -> Result<u64> {
        let t = self.locate_range(target, width.bytes().into())?;
        Ok(self.transport().atomic(t, width, op)?)
    }

    /// Writes `src` to `dst`, then updates the 8-byte signal word at `signal` as `op`
    /// says (OpenSHMEM 1.5's `shmem_put_signal`), and returns when both are visible at
    /// their targets. The data is complete at its target before the signal changes, so a
    /// rank that sees the signal (by [`GlobalPtr::wait_until`] on it, or an atomic load)
    /// sees the data. The signal word must be 8-byte aligned; it may be on another rank
    /// than the data.
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
    pub fn ptr<T: bytemuck::Pod>(&self, ga: GlobalAddr) -> GlobalPtr<T> {
        GlobalPtr::new(ga)
    }

    /// Collective: completes every operation, forgets every allocation and registration,
    /// and makes this process rank `new_rank` (ACP's `acp_reset`).
    pub fn reset(&mut self, new_rank: u32) -> Result<()> {
        self.complete(Handle::ALL)?;
        self.gmem.reset(new_rank)
    }

    /// Completes everything and leaves the job (ACP's `acp_finalize`).
    pub fn finalize(self) -> Result<()> {
        self.complete(Handle::ALL)?;
        self.gmem.into_world().finalize()
    }
}

/// How [`Gma::put_signal`] updates its signal word (OpenSHMEM's `SHMEM_SIGNAL_SET` and
/// `SHMEM_SIGNAL_ADD`).
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
