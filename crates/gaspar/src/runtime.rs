//! [`Runtime`]: the one object a program holds. Each call is a few lines over the layers
//! below (world, gmem, gma, strided); ACP's and ARMCI's full interface stays reachable
//! through [`Runtime::acp`].
//!
//! # Completion: `fence` and `quiet`, once
//!
//! Every typed transfer ([`SymmetricArray::put`], [`get`](SymmetricArray::get), the
//! atomics, [`put_signal`](SymmetricArray::put_signal), the sections) is blocking: a put
//! returns when its data is visible at the target, a get when the data is here. Only
//! [`put_slice_nbi`](SymmetricArray::put_slice_nbi) and the nonblocking calls of
//! [`Runtime::acp`] leave writes in flight. For those:
//!
//! * [`Runtime::quiet`] (OpenSHMEM's `shmem_quiet`): every write this rank issued before it
//!   is complete and visible at its target when it returns.
//! * [`Runtime::fence`] (OpenSHMEM's `shmem_fence`): writes this rank issued before it reach
//!   each target before those it issues after it. gaspar keeps that promise by completing
//!   them, as `quiet` does.
//! * [`Runtime::barrier`] implies `quiet` on every rank: every write issued before it is
//!   visible everywhere after it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use bytemuck::Pod;

use crate::addr::HEAP_BLOCK_ALIGN;
use crate::error::{Error, Result};
use crate::gma::Handle;
use crate::gmem::SymmetricAlloc;
use crate::strided::Strided;
use crate::symmetric::SymmetricArray;
use crate::world::{Team, World};

/// This process's rank of the job: from [`init`](crate::init), or given by
/// [`run_job`](crate::run_job).
///
/// ```no_run
/// gaspar::run_job(|rt| {
///     println!("rank {} of {}", rt.rank(), rt.procs());
///     Ok(())
/// })?;
/// # Ok::<(), gaspar::Error>(())
/// ```
pub struct Runtime {
    layers: Strided,
    /// Set when a [`SymmetricArray`] was dropped without [`SymmetricArray::free`]; the
    /// descriptions are in `leaks`.
    leaked: AtomicBool,
    leaks: Mutex<Vec<String>>,
}

impl Runtime {
    /// The facade over the layer stack `layers`.
    pub(crate) fn new(layers: Strided) -> Runtime {
        Runtime {
            layers,
            leaked: AtomicBool::new(false),
            leaks: Mutex::new(Vec::new()),
        }
    }

    /// This process's rank, in `0..procs()`.
    ///
    /// ```no_run
    /// let rt = gaspar::init()?;
    /// let right = (rt.rank() + 1) % rt.procs();
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn rank(&self) -> u32 {
        self.layers.rank()
    }

    /// Number of ranks in the job.
    ///
    /// ```no_run
    /// let rt = gaspar::init()?;
    /// assert!(rt.rank() < rt.procs());
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn procs(&self) -> u32 {
        self.layers.procs()
    }

    /// Collective: waits until every rank has reached the barrier; every write issued
    /// before it is visible everywhere after it. A rank making another collective call
    /// meanwhile is reported on every rank ([`Error::MismatchedCollective`]).
    ///
    /// ```no_run
    /// let rt = gaspar::init()?;
    /// let counts = rt.alloc::<u64>(1)?;
    /// counts.put(0, 0, &0)?;
    /// rt.barrier()?; // rank 0 sees the 0 from here on
    /// # counts.free()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn barrier(&self) -> Result<()> {
        self.check_leaks();
        self.layers.barrier()
    }

    /// Orders this rank's writes: those issued before it reach each target before those
    /// issued after it (see the [module documentation](self) for `fence` and `quiet`).
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// # let data = rt.alloc::<u64>(4)?;
    /// data.put_slice_nbi(1, 0, &[1, 2, 3])?;
    /// rt.fence()?;
    /// data.put_nbi(1, 3, &4)?; // arrives after the three before
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn fence(&self) -> Result<()> {
        self.quiet()
    }

    /// Completes this rank's writes: every one issued before it is visible at its target
    /// when it returns (see the [module documentation](self)).
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// # let data = rt.alloc::<u64>(4)?;
    /// data.put_slice_nbi(1, 0, &[1, 2, 3, 4])?;
    /// rt.quiet()?; // rank 1 can read them now
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn quiet(&self) -> Result<()> {
        self.layers.complete(Handle::ALL)
    }

    /// Ends the whole job with `message`, which every rank's launcher reports.
    ///
    /// ```no_run
    /// let rt = gaspar::init()?;
    /// if rt.procs() < 2 {
    ///     rt.abort("this program needs at least 2 ranks");
    /// }
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn abort(&self, message: &str) -> ! {
        self.layers.abort(message)
    }

    /// Collective: completes every write and leaves the job; returns when every rank
    /// finalized. Call it on every rank (or use [`run_job`](crate::run_job), which does).
    ///
    /// ```no_run
    /// let rt = gaspar::init()?;
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn finalize(self) -> Result<()> {
        self.check_leaks();
        self.layers.finalize()
    }

    /// Collective: an array of `len` elements of `T` on every rank, zero-filled, at the
    /// same place on every rank (symmetric memory, OpenSHMEM's `shmem_malloc`). Every
    /// rank must ask for the same length; a mismatch is reported on every rank. Free it
    /// with [`SymmetricArray::free`].
    ///
    /// `T` must be plain old data aligned to at most 64 bytes (a heap block's alignment).
    ///
    /// ```no_run
    /// let rt = gaspar::init()?;
    /// let grid = rt.alloc::<f64>(1024)?;
    /// assert_eq!(grid.len(), 1024);
    /// grid.free()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn alloc<T: Pod>(&self, len: usize) -> Result<SymmetricArray<'_, T>> {
        self.check_leaks();
        if std::mem::align_of::<T>() as u64 > HEAP_BLOCK_ALIGN {
            return Err(Error::invalid(
                "alloc",
                format!(
                    "{} needs {}-byte alignment; symmetric arrays are aligned to {HEAP_BLOCK_ALIGN}",
                    std::any::type_name::<T>(),
                    std::mem::align_of::<T>()
                ),
            ));
        }
        let bytes = (len as u64)
            .checked_mul(std::mem::size_of::<T>() as u64)
            .ok_or(Error::LengthOverflow {
                what: "symmetric array size",
            })?;
        let block = self.layers.alloc(bytes)?;
        let zeros = vec![0u8; bytes as usize];
        let base = block.ga(self.rank())?;
        self.layers.put_blocking(base, &zeros)?;
        self.layers.barrier()?;
        SymmetricArray::new(self, block, len)
    }

    /// Collective: frees `block` on every rank (for [`SymmetricArray::free`]).
    pub(crate) fn free_block(&self, block: SymmetricAlloc) -> Result<()> {
        self.check_leaks();
        self.layers.free(block)
    }

    /// Records that a symmetric array was dropped without being freed (see
    /// [`SymmetricArray`]): the job ends at this rank's next collective call.
    pub(crate) fn report_leak(&self, description: String) {
        lock(&self.leaks).push(description);
        self.leaked.store(true, Ordering::Release);
    }

    /// Ends the job if a symmetric array was dropped without being freed.
    #[inline]
    fn check_leaks(&self) {
        if !self.leaked.load(Ordering::Acquire) {
            return;
        }
        let leaks = lock(&self.leaks).join("; ");
        self.abort(&format!(
            "rank {}: dropped without free: {leaks}. Free symmetric arrays collectively \
             with SymmetricArray::free on every rank",
            self.rank()
        ))
    }

    /// The layers under the facade, for ACP and ARMCI programs: copies with `order`
    /// handles ([`Gma::copy`](crate::Gma::copy), [`complete`](crate::Gma::complete)),
    /// raw-address atomics, registration with colors
    /// ([`register`](crate::gmem::GlobalMemory::register)), starter memory
    /// ([`starter_ga`](crate::gmem::GlobalMemory::starter_ga)), untyped symmetric blocks,
    /// strided and I/O-vector transfers ([`Strided`]). Each layer's calls are reached
    /// from the one above it.
    ///
    /// ```no_run
    /// use gaspar::Handle;
    /// let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let (mine, next) = (acp.starter_ga(rt.rank())?, acp.starter_ga((rt.rank() + 1) % rt.procs())?);
    /// let h = acp.copy(next, mine, 8, Handle::NULL)?;
    /// acp.complete(h)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn acp(&self) -> &Strided {
        &self.layers
    }

    /// The team of every rank, numbered as the world: split it into teams with their own
    /// numbering, barrier and collectives (as `MPI_Comm_split` and OpenSHMEM teams). A
    /// team's calls take the world ([`Runtime::world`]) they run on.
    ///
    /// ```no_run
    /// use gaspar::world::ReduceOp;
    /// let rt = gaspar::init()?;
    /// // Even and odd ranks, each team numbered from 0 in world order.
    /// let half = rt.team().split(rt.world(), Some(rt.rank() % 2), 0)?.expect("a member");
    /// let mut sum = [u64::from(rt.rank())];
    /// half.allreduce(rt.world(), &mut sum, ReduceOp::Sum)?;
    /// half.barrier(rt.world())?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn team(&self) -> &Team {
        self.layers.team()
    }

    /// The world layer teams run on (see [`Runtime::team`]).
    ///
    /// ```
    /// let rt = gaspar::init()?;
    /// let mut sizes = vec![0u64; rt.procs() as usize];
    /// rt.world().allgather_u64(1 << rt.rank(), &mut sizes)?;
    /// assert_eq!(sizes[0], 1);
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn world(&self) -> &World {
        &self.layers
    }

    /// The layers, to change them: ACP's collective `reset` (which forgets every
    /// allocation, so it needs every [`SymmetricArray`] gone), the strided policy.
    ///
    /// ```no_run
    /// let mut rt = gaspar::init()?;
    /// let reversed = rt.procs() - 1 - rt.rank();
    /// rt.acp_mut().reset(reversed)?;
    /// assert_eq!(rt.rank(), reversed);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn acp_mut(&mut self) -> &mut Strided {
        &mut self.layers
    }

    /// The layers by value, for a runtime built on them (the ARMCI library holds them);
    /// finalize them with [`Strided::finalize`].
    ///
    /// ```no_run
    /// let layers = gaspar::init()?.into_acp();
    /// layers.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn into_acp(self) -> Strided {
        self.layers
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A list of strings stays consistent whatever a panicking holder did.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
