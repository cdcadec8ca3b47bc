//! Remote atomics on the allocated window: MPI_Fetch_and_op and MPI_Compare_and_swap
//! on one 4- or 8-byte word, each completed at its target (a swap or store is
//! MPI_Fetch_and_op with MPI_REPLACE, a load with MPI_NO_OP); on one host, with the
//! window mapped in every process, the processor's own atomics instead.

use std::ffi::c_int;

use mpi::ffi;

use super::{constant, succeeded, unsupported_registered, MpiTransport};
use crate::addr::{GlobalAddr, Segment};
use crate::error::{Error, Result};
use crate::transport::{processor_atomics, AtomicOp, Location, TransportResult, Width};

#[cfg(target_endian = "big")]
compile_error!("the mpi transport's atomics assume a little-endian target");

impl MpiTransport {
    /// `atomic` for any address, or the error that stops it.
    #[inline(never)]
    pub(super) fn atomic_anywhere(
        &self,
        target: Location,
        width: Width,
        op: AtomicOp,
    ) -> Result<u64> {
        self.on_mpi_thread()?;
        let bytes = u64::from(width.bytes());
        // A mask, not `%`: a 64-bit division costs tens of cycles.
        if target.offset & (bytes - 1) != 0 {
            return Err(Error::MisalignedAtomic {
                ga: target.ga,
                width: width.bytes(),
            });
        }
        if matches!(target.segment(), Segment::Registered(_)) {
            return Err(unsupported_registered(target));
        }
        let disp = self.span(target)?.disp(target, target.offset, bytes)?;
        self.order_after_writes(target.rank());
        Ok(self.atomic_at(target.rank(), disp, width, op))
    }

    /// [`atomic_anywhere`](Self::atomic_anywhere) with its error boxed, out of line: the
    /// fast path's frame then holds neither (measured with put and get: 2 ns of 20). The
    /// place and the operation come as scalars ([`Location`]'s fields,
    /// [`AtomicOp::parts`]), see `atomic_elsewhere_of`.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn atomic_elsewhere(
        &self,
        offset: u64,
        ga: GlobalAddr,
        place: u64,
        width: Width,
        code: u8,
        a: u64,
        b: u64,
    ) -> TransportResult<u64> {
        let target = Location { offset, ga, place };
        Ok(self.atomic_anywhere(target, width, AtomicOp::from_parts(code, a, b))?)
    }

    /// `op` on the word at `disp` of `rank`'s window, checked by the caller (aligned, in
    /// the window). When every rank maps every other's window ([`direct`]), as OSHMPI's
    /// direct atomics on one node: the processor's atomic instruction on the mapped word,
    /// which needs nothing of the target's MPI progress (MPICH completes an
    /// MPI_Fetch_and_op on a computing rank only when its progress runs) and costs a few
    /// nanoseconds instead of MPI's call, lock and flush. Every rank decided it alike at
    /// start-up, so no MPI atomic ever meets a processor atomic on one word.
    ///
    /// [`direct`]: MpiTransport::direct
    #[inline(always)]
    pub(super) fn atomic_at(
        &self,
        rank: u32,
        disp: ffi::MPI_Aint,
        width: Width,
        op: AtomicOp,
    ) -> u64 {
        if let Some(base) = self.direct_base(rank) {
            // SAFETY: the caller checked that the word is aligned and inside `rank`'s
            // window, which is mapped here at `base` until finalize; every rank reaches
            // it only through processor atomics or the program's copies (see above).
            return unsafe {
                processor_atomics::on_word((base + disp as usize) as *mut u8, width, op)
            };
        }
        let (operand, mpi_op) = match op {
            AtomicOp::CompareSwap { expected, new } => {
                return self.compare_and_swap(rank, disp, width, expected, new)
            }
            AtomicOp::Swap(v) | AtomicOp::Store(v) => (v, constant::replace()),
            AtomicOp::Add(v) => (v, constant::sum()),
            AtomicOp::Xor(v) => (v, constant::bxor()),
            AtomicOp::Or(v) => (v, constant::bor()),
            AtomicOp::And(v) => (v, constant::band()),
            AtomicOp::Load => (0, constant::no_op()),
        };
        self.fetch_and_op(rank, disp, width, operand, mpi_op)
    }

    #[inline]
    fn fetch_and_op(
        &self,
        rank: u32,
        disp: ffi::MPI_Aint,
        width: Width,
        operand: u64,
        op: ffi::MPI_Op,
    ) -> u64 {
        // Little-endian (checked at compile time below): the first 4 bytes of a u64 hold
        // its low u32, so one u64 serves both widths, and a 4-byte result leaves the
        // upper half of `result` zero.
        let mut result = 0u64;
        let datatype = match width {
            Width::W4 => constant::uint32(),
            Width::W8 => constant::uint64(),
        };
        // SAFETY: operand and result are valid u64 locals, as wide as either datatype;
        // the flush below completes the operation before they go out of scope.
        let code = unsafe {
            ffi::MPI_Fetch_and_op(
                (&operand as *const u64).cast(),
                (&mut result as *mut u64).cast(),
                datatype,
                rank as c_int,
                disp,
                op,
                self.win,
            )
        };
        succeeded("MPI_Fetch_and_op", code);
        // SAFETY: the window is locked for the whole run.
        succeeded("MPI_Win_flush", unsafe {
            ffi::MPI_Win_flush(rank as c_int, self.win)
        });
        result
    }

    /// MPI_Compare_and_swap + flush, little-endian as [`fetch_and_op`](Self::fetch_and_op).
    #[inline]
    fn compare_and_swap(
        &self,
        rank: u32,
        disp: ffi::MPI_Aint,
        width: Width,
        expected: u64,
        new: u64,
    ) -> u64 {
        let mut result = 0u64;
        let datatype = match width {
            Width::W4 => constant::uint32(),
            Width::W8 => constant::uint64(),
        };
        // SAFETY: as in `fetch_and_op`.
        let code = unsafe {
            ffi::MPI_Compare_and_swap(
                (&new as *const u64).cast(),
                (&expected as *const u64).cast(),
                (&mut result as *mut u64).cast(),
                datatype,
                rank as c_int,
                disp,
                self.win,
            )
        };
        succeeded("MPI_Compare_and_swap", code);
        // SAFETY: the window is locked for the whole run.
        succeeded("MPI_Win_flush", unsafe {
            ffi::MPI_Win_flush(rank as c_int, self.win)
        });
        result
    }
}
