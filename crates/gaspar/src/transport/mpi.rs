//! The MPI-3 RMA transport (cargo feature `mpi`), used when the process was started by
//! mpirun: one `MPI_Win_allocate` window holds each rank's starter memory and symmetric
//! heap, locked with `MPI_Win_lock_all` for the whole run.
//!
//! Status: first version. Put/get/copy/atomics/barrier/allgather work; regular strided
//! transfers are one MPI_Put/MPI_Get with nested-hvector datatypes; I/O vectors are one
//! MPI_Put/MPI_Get per segment with one flush; registered user memory
//! (`MPI_Win_create_dynamic`) is not implemented and is refused with an error.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};

use mpi::ffi;

use super::{AtomicOp, Location, Pattern, Run, SegmentSizes, Transport, Width};
use crate::config;
use crate::error::{Error, Result};
use crate::gmem::Segment;

/// The heap starts on a 64 KiB boundary of the window.
const HEAP_ALIGN: u64 = 64 * 1024;

/// The MPI constants gaspar uses, read from the bindings' shims.
mod constant {
    use mpi::ffi;

    macro_rules! constants {
        ($($name:ident: $t:ident = $value:ident;)*) => {$(
            pub(super) fn $name() -> ffi::$t {
                // SAFETY: the RSMPI_* statics are constants the MPI bindings' C shim
                // initializes at load time and never changes.
                unsafe { ffi::$value }
            }
        )*};
    }

    constants! {
        byte: MPI_Datatype = RSMPI_UINT8_T;
        uint32: MPI_Datatype = RSMPI_UINT32_T;
        uint64: MPI_Datatype = RSMPI_UINT64_T;
        comm_world: MPI_Comm = RSMPI_COMM_WORLD;
        comm_null: MPI_Comm = RSMPI_COMM_NULL;
        win_null: MPI_Win = RSMPI_WIN_NULL;
        info_null: MPI_Info = RSMPI_INFO_NULL;
        sum: MPI_Op = RSMPI_SUM;
        bxor: MPI_Op = RSMPI_BXOR;
        bor: MPI_Op = RSMPI_BOR;
        band: MPI_Op = RSMPI_BAND;
    }

    pub(super) fn thread_multiple() -> std::ffi::c_int {
        // SAFETY: as above.
        unsafe { ffi::RSMPI_THREAD_MULTIPLE }
    }
}

/// Whether the environment says mpirun (OpenMPI, MPICH/Hydra or PMIx) started us.
pub(crate) fn detected() -> bool {
    [
        "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE",
        "PMIX_RANK",
        "MPI_LOCALNRANKS",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some())
}

fn check(call: &'static str, code: c_int) -> Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(Error::Transport { call, code })
    }
}

/// The `mpi` transport of one rank.
pub struct MpiTransport {
    rank: u32,
    procs: u32,
    comm: ffi::MPI_Comm,
    win: ffi::MPI_Win,
    base: *mut u8,
    starter_len: u64,
    heap_offset: u64,
    heap_len: u64,
    we_initialized: bool,
    finalized: AtomicBool,
}

// SAFETY: MPI is initialized with MPI_THREAD_MULTIPLE (checked in `start`), so its handles
// may be used from any thread; `base` points into the window, which lives until finalize.
unsafe impl Send for MpiTransport {}
// SAFETY: as above.
unsafe impl Sync for MpiTransport {}

impl MpiTransport {
    /// Joins the MPI job (initializing MPI unless the program already did).
    pub fn start() -> Result<MpiTransport> {
        let starter_len = config::STARTER_SIZE.bytes()?;
        let heap_len = config::HEAP_SIZE.bytes()?;
        let heap_offset = starter_len.div_ceil(HEAP_ALIGN) * HEAP_ALIGN;
        let total = heap_offset
            .checked_add(heap_len)
            .ok_or(Error::LengthOverflow {
                what: "window size",
            })?;
        let mut initialized: c_int = 0;
        // SAFETY: MPI_Initialized may be called at any time and writes one int.
        check("MPI_Initialized", unsafe {
            ffi::MPI_Initialized(&mut initialized)
        })?;
        let we_initialized = initialized == 0;
        if we_initialized {
            let mut provided: c_int = 0;
            // SAFETY: MPI is not initialized; null argc/argv are allowed by MPI-2 and later.
            check("MPI_Init_thread", unsafe {
                ffi::MPI_Init_thread(
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    constant::thread_multiple(),
                    &mut provided,
                )
            })?;
        }
        let mut comm = constant::comm_null();
        let (mut rank, mut procs): (c_int, c_int) = (0, 0);
        let mut base: *mut u8 = std::ptr::null_mut();
        let mut win = constant::win_null();
        // SAFETY: MPI is initialized; every out-pointer is a valid local; the window size
        // fits MPI_Aint (checked above against overflow, and it is a byte count of memory
        // this rank will map).
        unsafe {
            check(
                "MPI_Comm_dup",
                ffi::MPI_Comm_dup(constant::comm_world(), &mut comm),
            )?;
            check("MPI_Comm_rank", ffi::MPI_Comm_rank(comm, &mut rank))?;
            check("MPI_Comm_size", ffi::MPI_Comm_size(comm, &mut procs))?;
            check(
                "MPI_Win_allocate",
                ffi::MPI_Win_allocate(
                    total as ffi::MPI_Aint,
                    1,
                    constant::info_null(),
                    comm,
                    &mut base as *mut *mut u8 as *mut std::ffi::c_void,
                    &mut win,
                ),
            )?;
            check(
                "MPI_Win_lock_all",
                ffi::MPI_Win_lock_all(ffi::MPI_MODE_NOCHECK as c_int, win),
            )?;
        }
        let transport = MpiTransport {
            rank: rank as u32,
            procs: procs as u32,
            comm,
            win,
            base,
            starter_len,
            heap_offset,
            heap_len,
            we_initialized,
            finalized: AtomicBool::new(false),
        };
        transport.barrier()?;
        tracing::debug!(rank, procs, total, "mpi transport attached");
        Ok(transport)
    }

    /// Window displacement of `len` bytes at `loc`, checked against its segment.
    fn disp(&self, loc: Location, len: u64) -> Result<ffi::MPI_Aint> {
        let (start, segment_len) = match loc.segment {
            Segment::Starter => (0, self.starter_len),
            Segment::Heap => (self.heap_offset, self.heap_len),
            Segment::Registered(_) => return Err(unsupported_registered(loc)),
        };
        match loc.offset.checked_add(len) {
            Some(end) if end <= segment_len => Ok((start + loc.offset) as ffi::MPI_Aint),
            Some(_) => Err(Error::OutOfBounds {
                ga: loc.ga,
                len,
                segment_len,
            }),
            None => Err(Error::LengthOverflow {
                what: "offset + length",
            }),
        }
    }

    fn put_bytes(&self, rank: u32, disp: ffi::MPI_Aint, src: &[u8]) -> Result<()> {
        for (i, piece) in src.chunks(i32::MAX as usize).enumerate() {
            let at = disp + (i * i32::MAX as usize) as ffi::MPI_Aint;
            // SAFETY: `piece` is valid for reads of its length until the flush in the
            // caller; the target range was bounds-checked against the window.
            check("MPI_Put", unsafe {
                ffi::MPI_Put(
                    piece.as_ptr().cast(),
                    piece.len() as c_int,
                    constant::byte(),
                    rank as c_int,
                    at,
                    piece.len() as c_int,
                    constant::byte(),
                    self.win,
                )
            })?;
        }
        Ok(())
    }

    fn get_bytes(&self, rank: u32, disp: ffi::MPI_Aint, dst: &mut [u8]) -> Result<()> {
        for (i, piece) in dst.chunks_mut(i32::MAX as usize).enumerate() {
            let at = disp + (i * i32::MAX as usize) as ffi::MPI_Aint;
            // SAFETY: `piece` is valid for writes of its length until the flush in the
            // caller; the source range was bounds-checked against the window.
            check("MPI_Get", unsafe {
                ffi::MPI_Get(
                    piece.as_mut_ptr().cast(),
                    piece.len() as c_int,
                    constant::byte(),
                    rank as c_int,
                    at,
                    piece.len() as c_int,
                    constant::byte(),
                    self.win,
                )
            })?;
        }
        Ok(())
    }

    fn flush_local(&self, rank: u32) -> Result<()> {
        // SAFETY: the window is locked for the whole run.
        check("MPI_Win_flush_local", unsafe {
            ffi::MPI_Win_flush_local(rank as c_int, self.win)
        })
    }

    fn fetch_and_op(
        &self,
        rank: u32,
        disp: ffi::MPI_Aint,
        width: Width,
        operand: u64,
        op: ffi::MPI_Op,
    ) -> Result<u64> {
        let mut result = 0u64;
        let datatype = match width {
            Width::W4 => constant::uint32(),
            Width::W8 => constant::uint64(),
        };
        let operand32 = operand as u32;
        let origin: *const std::ffi::c_void = match width {
            Width::W4 => (&operand32 as *const u32).cast(),
            Width::W8 => (&operand as *const u64).cast(),
        };
        // SAFETY: origin and result are valid locals of the datatype's width (a u64 result
        // holds a u32 in its first bytes on little-endian targets); flushed before return.
        check("MPI_Fetch_and_op", unsafe {
            ffi::MPI_Fetch_and_op(
                origin,
                (&mut result as *mut u64).cast(),
                datatype,
                rank as c_int,
                disp,
                op,
                self.win,
            )
        })?;
        // SAFETY: the window is locked for the whole run.
        check("MPI_Win_flush", unsafe {
            ffi::MPI_Win_flush(rank as c_int, self.win)
        })?;
        Ok(match width {
            Width::W4 => result & 0xffff_ffff,
            Width::W8 => result,
        })
    }

    fn compare_and_swap(
        &self,
        rank: u32,
        disp: ffi::MPI_Aint,
        width: Width,
        expected: u64,
        new: u64,
    ) -> Result<u64> {
        let mut result = 0u64;
        let (datatype, e32, n32) = match width {
            Width::W4 => (constant::uint32(), expected as u32, new as u32),
            Width::W8 => (constant::uint64(), 0, 0),
        };
        let (origin, compare): (*const std::ffi::c_void, *const std::ffi::c_void) = match width {
            Width::W4 => ((&n32 as *const u32).cast(), (&e32 as *const u32).cast()),
            Width::W8 => (
                (&new as *const u64).cast(),
                (&expected as *const u64).cast(),
            ),
        };
        // SAFETY: as in `fetch_and_op`.
        check("MPI_Compare_and_swap", unsafe {
            ffi::MPI_Compare_and_swap(
                origin,
                compare,
                (&mut result as *mut u64).cast(),
                datatype,
                rank as c_int,
                disp,
                self.win,
            )
        })?;
        // SAFETY: the window is locked for the whole run.
        check("MPI_Win_flush", unsafe {
            ffi::MPI_Win_flush(rank as c_int, self.win)
        })?;
        Ok(match width {
            Width::W4 => result & 0xffff_ffff,
            Width::W8 => result,
        })
    }
}

/// A committed MPI datatype describing one side of a pattern, freed on drop.
struct PatternType(ffi::MPI_Datatype);

impl PatternType {
    /// `chunk` contiguous bytes repeated over `counts` levels `strides` bytes apart (nested
    /// hvectors); an error when a count or the chunk does not fit an MPI int.
    fn new(chunk: u64, counts: &[u64], strides: &[u64]) -> Result<PatternType> {
        let int = |v: u64| {
            c_int::try_from(v).map_err(|_| Error::LengthOverflow {
                what: "MPI datatype count",
            })
        };
        let mut current = constant::byte();
        let mut owned: Vec<ffi::MPI_Datatype> = Vec::new();
        let mut next = constant::byte();
        // SAFETY: each call creates a new datatype from a valid one; intermediate types
        // are freed below after the outermost one is committed (MPI keeps what it needs).
        unsafe {
            check(
                "MPI_Type_contiguous",
                ffi::MPI_Type_contiguous(int(chunk)?, current, &mut next),
            )?;
            owned.push(next);
            current = next;
            for (&count, &stride) in counts.iter().zip(strides) {
                check(
                    "MPI_Type_create_hvector",
                    ffi::MPI_Type_create_hvector(
                        int(count)?,
                        1,
                        stride as ffi::MPI_Aint,
                        current,
                        &mut next,
                    ),
                )?;
                owned.push(next);
                current = next;
            }
            check("MPI_Type_commit", ffi::MPI_Type_commit(&mut current))?;
            let outer = owned.pop().expect("at least the contiguous type");
            for mut t in owned {
                ffi::MPI_Type_free(&mut t);
            }
            Ok(PatternType(outer))
        }
    }
}

impl Drop for PatternType {
    fn drop(&mut self) {
        // SAFETY: a committed datatype this value owns; operations using it were flushed.
        unsafe { ffi::MPI_Type_free(&mut self.0) };
    }
}

fn unsupported_registered(loc: Location) -> Error {
    Error::AtomicUnsupported {
        ga: loc.ga,
        reason: "registered user memory is not supported on the mpi transport yet",
    }
}

impl Transport for MpiTransport {
    fn rank(&self) -> u32 {
        self.rank
    }

    fn procs(&self) -> u32 {
        self.procs
    }

    fn sizes(&self) -> SegmentSizes {
        SegmentSizes {
            starter: self.starter_len,
            heap: self.heap_len,
        }
    }

    fn put(&self, dst: Location, src: &[u8]) -> Result<()> {
        let disp = self.disp(dst, src.len() as u64)?;
        self.put_bytes(dst.rank, disp, src)?;
        self.flush_local(dst.rank)
    }

    fn put_flushed(&self, dst: Location, src: &[u8]) -> Result<()> {
        let disp = self.disp(dst, src.len() as u64)?;
        self.put_bytes(dst.rank, disp, src)?;
        // A flush completes the put at the target, and so locally too.
        self.flush(dst.rank)
    }

    fn get(&self, src: Location, dst: &mut [u8]) -> Result<()> {
        let disp = self.disp(src, dst.len() as u64)?;
        self.get_bytes(src.rank, disp, dst)?;
        self.flush_local(src.rank)
    }

    fn put_runs(&self, dst: Location, src: &[u8], runs: &[Run]) -> Result<()> {
        for run in runs {
            let piece = src
                .get(run.local as usize..(run.local + run.len) as usize)
                .ok_or_else(|| {
                    Error::invalid("strided transfer", "run outside the local buffer")
                })?;
            let at = Location {
                offset: dst
                    .offset
                    .checked_add(run.remote)
                    .ok_or(Error::LengthOverflow { what: "run offset" })?,
                ..dst
            };
            self.put_bytes(dst.rank, self.disp(at, run.len)?, piece)?;
        }
        self.flush_local(dst.rank)
    }

    fn get_runs(&self, src: Location, dst: &mut [u8], runs: &[Run]) -> Result<()> {
        for run in runs {
            let at = Location {
                offset: src
                    .offset
                    .checked_add(run.remote)
                    .ok_or(Error::LengthOverflow { what: "run offset" })?,
                ..src
            };
            let disp = self.disp(at, run.len)?;
            let piece = dst
                .get_mut(run.local as usize..(run.local + run.len) as usize)
                .ok_or_else(|| {
                    Error::invalid("strided transfer", "run outside the local buffer")
                })?;
            self.get_bytes(src.rank, disp, piece)?;
        }
        self.flush_local(src.rank)
    }

    /// One MPI_Put with a derived datatype on each side: one message, not one per chunk.
    fn put_pattern(&self, dst: Location, src: &[u8], pattern: &Pattern<'_>) -> Result<()> {
        let (_, remote_extent) = pattern.checked_extents(src.len())?;
        let disp = self.disp(dst, remote_extent)?;
        let origin = PatternType::new(pattern.chunk, pattern.counts, pattern.local_strides)?;
        let target = PatternType::new(pattern.chunk, pattern.counts, pattern.remote_strides)?;
        // SAFETY: the origin type spans at most src.len() bytes of `src` (checked), the
        // target type `remote_extent` bytes of the window (bounds-checked); both types live
        // until after the flush.
        check("MPI_Put", unsafe {
            ffi::MPI_Put(
                src.as_ptr().cast(),
                1,
                origin.0,
                dst.rank as c_int,
                disp,
                1,
                target.0,
                self.win,
            )
        })?;
        self.flush_local(dst.rank)
    }

    /// One MPI_Get with a derived datatype on each side.
    fn get_pattern(&self, src: Location, dst: &mut [u8], pattern: &Pattern<'_>) -> Result<()> {
        let (_, remote_extent) = pattern.checked_extents(dst.len())?;
        let disp = self.disp(src, remote_extent)?;
        let origin = PatternType::new(pattern.chunk, pattern.counts, pattern.local_strides)?;
        let target = PatternType::new(pattern.chunk, pattern.counts, pattern.remote_strides)?;
        // SAFETY: as in `put_pattern`, writing into `dst`.
        check("MPI_Get", unsafe {
            ffi::MPI_Get(
                dst.as_mut_ptr().cast(),
                1,
                origin.0,
                src.rank as c_int,
                disp,
                1,
                target.0,
                self.win,
            )
        })?;
        self.flush_local(src.rank)
    }

    fn check_range(&self, loc: Location, len: u64) -> Result<()> {
        self.disp(loc, len).map(drop)
    }

    fn copy(&self, dst: Location, src: Location, len: u64) -> Result<()> {
        // Through the initiator: get into a bounce buffer, then put.
        const CHUNK: u64 = 1 << 20;
        self.disp(src, len)?;
        self.disp(dst, len)?;
        let mut bounce = vec![0u8; len.min(CHUNK) as usize];
        let mut done = 0;
        while done < len {
            let n = (len - done).min(CHUNK);
            let piece = &mut bounce[..n as usize];
            self.get(
                Location {
                    offset: src.offset + done,
                    ..src
                },
                piece,
            )?;
            self.put(
                Location {
                    offset: dst.offset + done,
                    ..dst
                },
                piece,
            )?;
            done += n;
        }
        Ok(())
    }

    fn atomic(&self, target: Location, width: Width, op: AtomicOp) -> Result<u64> {
        let bytes = u64::from(width.bytes());
        if target.offset % bytes != 0 {
            return Err(Error::MisalignedAtomic {
                ga: target.ga,
                width: width.bytes(),
            });
        }
        if matches!(target.segment, Segment::Registered(_)) {
            return Err(unsupported_registered(target));
        }
        let disp = self.disp(target, bytes)?;
        let rank = target.rank;
        let (sum, bxor, bor, band) = (
            constant::sum(),
            constant::bxor(),
            constant::bor(),
            constant::band(),
        );
        let swap = |value: u64| -> Result<u64> {
            // MPI_REPLACE has no portable shim in the bindings: a compare-and-swap loop.
            let mut seen = self.fetch_and_op(rank, disp, width, 0, sum)?;
            loop {
                let old = self.compare_and_swap(rank, disp, width, seen, value)?;
                if old == seen {
                    return Ok(old);
                }
                seen = old;
            }
        };
        match op {
            AtomicOp::CompareSwap { expected, new } => {
                self.compare_and_swap(rank, disp, width, expected, new)
            }
            AtomicOp::Add(v) => self.fetch_and_op(rank, disp, width, v, sum),
            AtomicOp::Xor(v) => self.fetch_and_op(rank, disp, width, v, bxor),
            AtomicOp::Or(v) => self.fetch_and_op(rank, disp, width, v, bor),
            AtomicOp::And(v) => self.fetch_and_op(rank, disp, width, v, band),
            AtomicOp::Load => self.fetch_and_op(rank, disp, width, 0, sum),
            AtomicOp::Swap(v) | AtomicOp::Store(v) => swap(v),
        }
    }

    fn flush(&self, rank: u32) -> Result<()> {
        // SAFETY: the window is locked for the whole run.
        check("MPI_Win_flush", unsafe {
            ffi::MPI_Win_flush(rank as c_int, self.win)
        })
    }

    fn flush_all(&self) -> Result<()> {
        // SAFETY: the window is locked for the whole run.
        check("MPI_Win_flush_all", unsafe {
            ffi::MPI_Win_flush_all(self.win)
        })
    }

    fn test_all(&self) -> Result<bool> {
        self.flush_all()?;
        Ok(true)
    }

    fn barrier(&self) -> Result<()> {
        // flush_all + Win_sync + barrier + Win_sync: every earlier put is complete at its
        // target and visible to plain loads there after the barrier (seed 001's question).
        self.flush_all()?;
        // SAFETY: window and communicator live until finalize.
        unsafe {
            check("MPI_Win_sync", ffi::MPI_Win_sync(self.win))?;
            check("MPI_Barrier", ffi::MPI_Barrier(self.comm))?;
            check("MPI_Win_sync", ffi::MPI_Win_sync(self.win))
        }
    }

    fn allgather_u64(&self, value: u64, out: &mut [u64]) -> Result<()> {
        if out.len() != self.procs as usize {
            return Err(Error::invalid("allgather_u64", "output length != procs"));
        }
        // SAFETY: one u64 in, `procs` u64 out.
        check("MPI_Allgather", unsafe {
            ffi::MPI_Allgather(
                (&value as *const u64).cast(),
                1,
                constant::uint64(),
                out.as_mut_ptr().cast(),
                1,
                constant::uint64(),
                self.comm,
            )
        })
    }

    fn publish_region(&self, _slot: u8, _base: usize, _len: u64, _color: u32) -> Result<()> {
        Err(Error::invalid(
            "register",
            "registered user memory is not supported on the mpi transport yet",
        ))
    }

    fn retract_region(&self, _slot: u8) -> Result<()> {
        Ok(())
    }

    fn local_address(&self, segment: Segment, offset: u64) -> Option<usize> {
        let (start, len) = match segment {
            Segment::Starter => (0, self.starter_len),
            Segment::Heap => (self.heap_offset, self.heap_len),
            Segment::Registered(_) => return None,
        };
        (offset <= len).then(|| self.base as usize + (start + offset) as usize)
    }

    fn abort(&self, message: &str) -> ! {
        eprintln!("gaspar: rank {} aborted the job: {message}", self.rank);
        // SAFETY: MPI_Abort may be called at any time after init.
        unsafe { ffi::MPI_Abort(self.comm, 1) };
        std::process::exit(1)
    }

    fn finalize(&self) -> Result<()> {
        if self.finalized.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.barrier()?;
        let mut win = self.win;
        let mut comm = self.comm;
        // SAFETY: every rank reached the barrier, so no operation targets the window any
        // more; the handles are not used after this.
        unsafe {
            check("MPI_Win_unlock_all", ffi::MPI_Win_unlock_all(win))?;
            check("MPI_Win_free", ffi::MPI_Win_free(&mut win))?;
            check("MPI_Comm_free", ffi::MPI_Comm_free(&mut comm))?;
            if self.we_initialized {
                check("MPI_Finalize", ffi::MPI_Finalize())?;
            }
        }
        Ok(())
    }
}
