//! The ranks a rank shares its host with: whether they outnumber the cores they may run
//! on, and how many of them are awake right now, counted in a word of an MPI
//! shared-memory window on the host's communicator (`MPI_Win_allocate_shared`). A wait
//! decides from that count, before each look at the clock, whether it spins or yields its
//! core, as on `shm` ([`Crowding::Live`]): two ranks that answer each other while the
//! others sleep in a barrier spin on their cores, and yield again when the others wake.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use mpi::ffi;

use super::{check, constant};
use crate::error::Result;
use crate::transport::wait::{affinity_mask, cores_in, Crowding, RanksAwake, AFFINITY_WORDS};

/// The bytes host rank 0 allocates for the count: a cache line of its own.
const COUNT_BYTES: ffi::MPI_Aint = 64;

/// This rank's host: its communicator, the cores its ranks may run on, and the count of
/// those awake.
pub(super) struct Host {
    /// The host's ranks (`MPI_Comm_split_type` with `MPI_COMM_TYPE_SHARED`).
    comm: ffi::MPI_Comm,
    /// The window holding the count (`win_null` when the library could not make one).
    win: ffi::MPI_Win,
    /// The count, in the window's memory (null without a window).
    awake: *const AtomicU64,
    /// The host's ranks outnumber their cores (the union of their affinity masks).
    crowded: bool,
    /// How many cores those are.
    cores: usize,
    /// The window was freed (at finalize): waits no longer read the count.
    released: AtomicBool,
}

// SAFETY: `awake` points into a window that lives until `release`, after which it is
// never read (`released`); the MPI handles are usable from any thread at
// MPI_THREAD_MULTIPLE, and below it every caller checks the thread first.
unsafe impl Send for Host {}
// SAFETY: as above; the count is only touched through atomics.
unsafe impl Sync for Host {}

impl Host {
    /// Joins the host's count. Collective over `comm`.
    ///
    /// # Safety
    /// `comm` is a live communicator.
    pub(super) unsafe fn join(comm: ffi::MPI_Comm) -> Result<Host> {
        let mine = affinity_mask();
        let mut union = [0u64; AFFINITY_WORDS];
        let (mut host, mut ranks, mut host_rank): (ffi::MPI_Comm, c_int, c_int) =
            (constant::comm_null(), 0, 0);
        // SAFETY: `comm` is live (caller's contract); every out-pointer is a valid local;
        // both masks hold AFFINITY_WORDS u64s.
        unsafe {
            check(
                "MPI_Comm_split_type",
                ffi::MPI_Comm_split_type(
                    comm,
                    ffi::RSMPI_COMM_TYPE_SHARED,
                    0,
                    constant::info_null(),
                    &mut host,
                ),
            )?;
            check("MPI_Comm_size", ffi::MPI_Comm_size(host, &mut ranks))?;
            check("MPI_Comm_rank", ffi::MPI_Comm_rank(host, &mut host_rank))?;
            check(
                "MPI_Allreduce",
                ffi::MPI_Allreduce(
                    mine.as_ptr().cast(),
                    union.as_mut_ptr().cast(),
                    AFFINITY_WORDS as c_int,
                    constant::uint64(),
                    constant::bor(),
                    host,
                ),
            )?;
        }
        let cores = cores_in(&union);
        // SAFETY: `host` is live and was just made by this call.
        let (win, awake) = unsafe { shared_count(host, host_rank)? };
        Ok(Host {
            comm: host,
            win,
            awake,
            crowded: ranks as usize > cores,
            cores,
            released: AtomicBool::new(false),
        })
    }

    /// Whether the host's ranks outnumber their cores (fixed at start-up).
    pub(super) fn crowded(&self) -> bool {
        self.crowded
    }

    /// How a wait decides between spinning and yielding: from the live count, or from
    /// the start-up fact when there is no count (or no longer).
    #[inline]
    pub(super) fn crowding(&self) -> Crowding<'_> {
        if self.awake.is_null() || self.released.load(Ordering::Acquire) {
            return Crowding::Fixed(self.crowded);
        }
        // SAFETY: the count lives in the window until `release`, which was not called
        // (checked just above); it is only touched through atomics.
        let awake = unsafe { &*self.awake };
        Crowding::Live {
            awake: RanksAwake(awake),
            cores: self.cores,
        }
    }

    /// Leaves the count and frees the window and the host's communicator. Collective
    /// over the host's ranks (called once, by finalize, when every rank of the job is
    /// there).
    pub(super) fn release(&self) -> Result<()> {
        if self.released.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let (mut win, mut comm) = (self.win, self.comm);
        // SAFETY: the handles are this value's own and not used after this (`released`);
        // MPI_Win_free waits for every host rank, so none still reads the count.
        unsafe {
            if !self.awake.is_null() {
                RanksAwake(&*self.awake).leave();
                check("MPI_Win_free", ffi::MPI_Win_free(&mut win))?;
            }
            check("MPI_Comm_free", ffi::MPI_Comm_free(&mut comm))
        }
    }
}

/// The host's count of ranks awake, zeroed by host rank 0 and joined by this rank: its
/// window and the word (null, and `win_null`, when the library cannot allocate shared
/// memory on this communicator or returns it misaligned). Collective over `host`.
///
/// # Safety
/// `host` is a live communicator whose ranks share memory.
unsafe fn shared_count(
    host: ffi::MPI_Comm,
    host_rank: c_int,
) -> Result<(ffi::MPI_Win, *const AtomicU64)> {
    let mut win = constant::win_null();
    let mut mine: *mut c_void = std::ptr::null_mut();
    let size = if host_rank == 0 { COUNT_BYTES } else { 0 };
    // SAFETY: out-pointers to locals; errors are returned on `host` while the window is
    // made (MPI's default for communicators is fatal), and every rank makes the same
    // decision from the same collective result below.
    unsafe {
        ffi::MPI_Comm_set_errhandler(host, constant::errors_return());
        let allocated = ffi::MPI_Win_allocate_shared(
            size,
            1,
            constant::info_null(),
            host,
            (&mut mine as *mut *mut c_void).cast(),
            &mut win,
        );
        ffi::MPI_Comm_set_errhandler(host, constant::errors_are_fatal());
        let mut word: *mut c_void = std::ptr::null_mut();
        let (mut len, mut unit): (ffi::MPI_Aint, c_int) = (0, 0);
        let usable = allocated == 0
            && ffi::MPI_Win_shared_query(
                win,
                0,
                &mut len,
                &mut unit,
                (&mut word as *mut *mut c_void).cast(),
            ) == 0
            && len >= 8
            && (word as usize) % std::mem::align_of::<AtomicU64>() == 0;
        // Every rank must agree before any touches the word: a rank that found it
        // unusable frees the window with the others.
        let (mine_ok, mut all_ok): (c_int, c_int) = (c_int::from(usable), 0);
        check(
            "MPI_Allreduce",
            ffi::MPI_Allreduce(
                (&mine_ok as *const c_int).cast(),
                (&mut all_ok as *mut c_int).cast(),
                1,
                ffi::RSMPI_INT32_T,
                ffi::RSMPI_MIN,
                host,
            ),
        )?;
        if all_ok == 0 {
            if allocated == 0 {
                check("MPI_Win_free", ffi::MPI_Win_free(&mut win))?;
            }
            return Ok((constant::win_null(), std::ptr::null()));
        }
        let awake = word as *const AtomicU64;
        if host_rank == 0 {
            (*awake).store(0, Ordering::Relaxed);
        }
        // The zero before any rank joins.
        check("MPI_Barrier", ffi::MPI_Barrier(host))?;
        RanksAwake(&*awake).join();
        Ok((win, awake))
    }
}
