//! The raw MPI-3 RMA peer inside the benchmark job (mpi transport only): the latency
//! operations of the C peer (`bench_peer.c`) on a window set up exactly as it sets its up
//! (`MPI_Win_allocate` on `MPI_COMM_WORLD`, `MPI_Win_lock_all`, a flush per operation),
//! timed in alternation with gaspar's in the same processes. Separate runs on this noisy
//! machine differ by up to 2x; alternating repetitions in one job give a steady ratio.

use std::ffi::{c_int, c_void};

use mpi::ffi;

/// A window of the C peer's shape; rank 0 targets rank 1.
pub(crate) struct RawWindow {
    win: ffi::MPI_Win,
}

/// Bytes of the raw window: room for the largest in-job transfer.
pub(crate) const RAW_WINDOW_BYTES: usize = 1 << 20;

const TARGET: c_int = 1;

impl RawWindow {
    /// Collective over MPI_COMM_WORLD: `None` when MPI is not initialized (the shm
    /// transport), the same answer on every rank.
    pub(crate) fn new() -> Option<RawWindow> {
        let mut initialized: c_int = 0;
        let mut base: *mut c_void = std::ptr::null_mut();
        // SAFETY: MPI_Initialized may be called at any time; once MPI is initialized (by
        // gaspar's mpi transport), the window calls get valid out-pointers, and the window
        // memory is zeroed before any rank's first access (the barrier below).
        unsafe {
            ffi::MPI_Initialized(&mut initialized);
            if initialized == 0 {
                return None;
            }
            let mut win: ffi::MPI_Win = ffi::RSMPI_WIN_NULL;
            let comm = ffi::RSMPI_COMM_WORLD;
            ffi::MPI_Win_allocate(
                RAW_WINDOW_BYTES as ffi::MPI_Aint,
                1,
                ffi::RSMPI_INFO_NULL,
                comm,
                (&mut base as *mut *mut c_void).cast(),
                &mut win,
            );
            std::ptr::write_bytes(base.cast::<u8>(), 0, RAW_WINDOW_BYTES);
            ffi::MPI_Barrier(comm);
            ffi::MPI_Win_lock_all(0, win);
            Some(RawWindow { win })
        }
    }

    /// MPI_Put of `src` (at most [`RAW_WINDOW_BYTES`]) + MPI_Win_flush.
    pub(crate) fn put(&self, src: &[u8]) {
        let count = src.len().min(RAW_WINDOW_BYTES) as c_int;
        // SAFETY: `src` is `count` readable bytes until the flush; the window holds them.
        unsafe {
            ffi::MPI_Put(
                src.as_ptr().cast(),
                count,
                ffi::RSMPI_UINT8_T,
                TARGET,
                0,
                count,
                ffi::RSMPI_UINT8_T,
                self.win,
            );
            ffi::MPI_Win_flush(TARGET, self.win);
        }
    }

    /// MPI_Get into `dst` (at most [`RAW_WINDOW_BYTES`]) + MPI_Win_flush.
    pub(crate) fn get(&self, dst: &mut [u8]) {
        let count = dst.len().min(RAW_WINDOW_BYTES) as c_int;
        // SAFETY: `dst` is `count` writable bytes until the flush; the window holds them.
        unsafe {
            ffi::MPI_Get(
                dst.as_mut_ptr().cast(),
                count,
                ffi::RSMPI_UINT8_T,
                TARGET,
                0,
                count,
                ffi::RSMPI_UINT8_T,
                self.win,
            );
            ffi::MPI_Win_flush(TARGET, self.win);
        }
    }

    /// MPI_Fetch_and_op (sum) on a 64-bit word + MPI_Win_flush.
    pub(crate) fn fetch_add(&self) -> u64 {
        let (one, mut old) = (1u64, 0u64);
        // SAFETY: both are valid 8-byte locals until the flush; the word is in the window.
        unsafe {
            ffi::MPI_Fetch_and_op(
                (&one as *const u64).cast(),
                (&mut old as *mut u64).cast(),
                ffi::RSMPI_UINT64_T,
                TARGET,
                0,
                ffi::RSMPI_SUM,
                self.win,
            );
            ffi::MPI_Win_flush(TARGET, self.win);
        }
        old
    }

    /// MPI_Compare_and_swap on a 64-bit word + MPI_Win_flush.
    pub(crate) fn compare_swap(&self) -> u64 {
        let (expected, new, mut old) = (0u64, 0u64, 0u64);
        // SAFETY: as in `fetch_add`.
        unsafe {
            ffi::MPI_Compare_and_swap(
                (&new as *const u64).cast(),
                (&expected as *const u64).cast(),
                (&mut old as *mut u64).cast(),
                ffi::RSMPI_UINT64_T,
                TARGET,
                8,
                self.win,
            );
            ffi::MPI_Win_flush(TARGET, self.win);
        }
        old
    }

    /// Collective: releases the window.
    pub(crate) fn free(mut self) {
        // SAFETY: every rank calls this after its last operation on the window.
        unsafe {
            ffi::MPI_Win_unlock_all(self.win);
            ffi::MPI_Win_free(&mut self.win);
        }
    }
}
