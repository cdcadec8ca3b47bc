//! A loop of N 8-byte operations from rank 0 on element 0 of rank 1, for timing one
//! operation alone and for counting the instructions it runs (this VM has no CPU
//! counters; valgrind's callgrind counts instructions): MODE is `typed-fadd`,
//! `typed-put`, `typed-get` (the typed API), `ptr-fadd` (`GlobalPtr`), or, under mpirun,
//! `raw-fadd`, `raw-put`, `raw-get` (the MPI calls alone, on a window of their own).
//!
//! `GASPAR_MPI_DIRECT=off mpirun -n 2 target/release/examples/op_loop MODE N` prints the
//! time per operation; `bench/probes/count_instructions.sh MODE` the instructions per
//! operation of rank 0's loop (commands and figures in `bench/probes/README.md`).

use std::ffi::{c_int, c_void};
use std::time::Instant;

use mpi::ffi;

/// Bytes of the raw window.
const RAW_BYTES: ffi::MPI_Aint = 4096;

fn main() -> gaspar::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(mode), Some(n)) = (args.next(), args.next().and_then(|n| n.parse::<u64>().ok()))
    else {
        eprintln!("usage: op_loop MODE N");
        std::process::exit(2);
    };
    gaspar::run_job(|rt| {
        let word = rt.alloc::<u64>(1)?;
        let raw = RawWindow::new();
        rt.barrier()?;
        if rt.rank() == 0 {
            let start = Instant::now();
            match (mode.as_str(), &raw) {
                ("typed-fadd", _) => {
                    for _ in 0..n {
                        std::hint::black_box(word.fetch_add(1, 0, 1)?);
                    }
                }
                ("typed-put", _) => {
                    for _ in 0..n {
                        word.put(1, 0, &7)?;
                    }
                }
                ("typed-get", _) => {
                    for _ in 0..n {
                        std::hint::black_box(word.get(1, 0)?);
                    }
                }
                ("ptr-fadd", _) => {
                    let (ptr, acp) = (word.ptr(1, 0)?, rt.acp());
                    for _ in 0..n {
                        std::hint::black_box(ptr.fetch_add(acp, 1)?);
                    }
                }
                ("raw-fadd", Some(raw)) => (0..n).for_each(|_| raw.fetch_add()),
                ("raw-put", Some(raw)) => (0..n).for_each(|_| raw.put()),
                ("raw-get", Some(raw)) => (0..n).for_each(|_| raw.get()),
                _ => rt.abort(&format!("unknown mode {mode:?} (raw modes need mpirun)")),
            }
            let ns = start.elapsed().as_nanos() as f64 / n.max(1) as f64;
            println!("{mode}: {ns:.1} ns per operation ({n} operations)");
        }
        rt.barrier()?;
        if let Some(raw) = raw {
            raw.free();
        }
        word.free()
    })
}

/// A window of its own for the raw MPI calls (rank 0 targets rank 1), when MPI runs.
struct RawWindow {
    win: ffi::MPI_Win,
}

impl RawWindow {
    /// Collective over MPI_COMM_WORLD; `None` when MPI is not initialized (shm).
    fn new() -> Option<RawWindow> {
        let mut initialized: c_int = 0;
        // SAFETY: MPI_Initialized may be called at any time.
        unsafe { ffi::MPI_Initialized(&mut initialized) };
        if initialized == 0 {
            return None;
        }
        let mut base: *mut c_void = std::ptr::null_mut();
        // SAFETY: MPI is initialized (by gaspar's mpi transport); the calls get valid
        // out-pointers, and the window is zeroed before any rank's first access (the
        // barrier).
        unsafe {
            let mut win = ffi::RSMPI_WIN_NULL;
            ffi::MPI_Win_allocate(
                RAW_BYTES,
                1,
                ffi::RSMPI_INFO_NULL,
                ffi::RSMPI_COMM_WORLD,
                (&mut base as *mut *mut c_void).cast(),
                &mut win,
            );
            std::ptr::write_bytes(base.cast::<u8>(), 0, RAW_BYTES as usize);
            ffi::MPI_Barrier(ffi::RSMPI_COMM_WORLD);
            ffi::MPI_Win_lock_all(0, win);
            Some(RawWindow { win })
        }
    }

    fn fetch_add(&self) {
        let (one, mut old) = (1u64, 0u64);
        // SAFETY: both are valid 8-byte locals until the flush; the word is in the window.
        unsafe {
            ffi::MPI_Fetch_and_op(
                (&one as *const u64).cast(),
                (&mut old as *mut u64).cast(),
                ffi::RSMPI_UINT64_T,
                1,
                0,
                ffi::RSMPI_SUM,
                self.win,
            );
            ffi::MPI_Win_flush(1, self.win);
        }
        std::hint::black_box(old);
    }

    fn put(&self) {
        let value = [7u8; 8];
        // SAFETY: `value` is 8 readable bytes until the flush; the window holds them.
        unsafe {
            ffi::MPI_Put(
                value.as_ptr().cast(),
                8,
                ffi::RSMPI_UINT8_T,
                1,
                0,
                8,
                ffi::RSMPI_UINT8_T,
                self.win,
            );
            ffi::MPI_Win_flush(1, self.win);
        }
    }

    fn get(&self) {
        let mut value = [0u8; 8];
        // SAFETY: `value` is 8 writable bytes until the flush; the window holds them.
        unsafe {
            ffi::MPI_Get(
                value.as_mut_ptr().cast(),
                8,
                ffi::RSMPI_UINT8_T,
                1,
                0,
                8,
                ffi::RSMPI_UINT8_T,
                self.win,
            );
            ffi::MPI_Win_flush(1, self.win);
        }
        std::hint::black_box(value);
    }

    /// Collective: releases the window.
    fn free(mut self) {
        // SAFETY: every rank calls this after its last operation on the window.
        unsafe {
            ffi::MPI_Win_unlock_all(self.win);
            ffi::MPI_Win_free(&mut self.win);
        }
    }
}
