//! Noncontiguous transfers (ARMCI's strided and I/O-vector formats) on top of global
//! memory access. Only this layer knows about strides: it analyses the shape of each
//! transfer, picks a direct copy or packing through a bounded buffer (see [`plan`]), and
//! hands the layer below contiguous runs.
//!
//! Operations from one rank to the same target complete in issue order: every transfer
//! here is issued through `gma` in order, and the transport keeps the order of one
//! rank's operations to one target.

pub mod plan;
pub mod shape;

use std::ops::Deref;
use std::sync::{Mutex, MutexGuard};

use bytemuck::Pod;

pub use self::plan::{Method, Policy};
pub use self::shape::{Descriptor, Side, MAX_STRIDE_LEVELS};
use crate::config;
use crate::error::{Error, Result};
use crate::gma::{GlobalPtr, Gma, Handle};
use crate::gmem::GlobalAddr;
pub use crate::transport::shm::mapped::{get_mapped, put_mapped};
pub use crate::transport::AccKind;
use crate::transport::{copy_local, AccShape, Run, Transport};

/// The packing buffer and the scatter list of buffered transfers (reused, not
/// reallocated per transfer).
#[derive(Default)]
struct Scratch {
    buffer: Vec<u8>,
    pieces: Vec<(u64, u64)>,
}

/// The strided layer of one rank: the top of the layers under [`Runtime`](crate::Runtime),
/// reached by [`Runtime::acp`](crate::Runtime::acp); derefs to [`Gma`].
///
/// ```
/// let rt = gaspar::init()?;
/// let acp: &gaspar::strided::Strided = rt.acp();
/// acp.put_blocking(acp.starter_ga(0)?, &[5u8; 4])?;
/// rt.finalize()?;
/// # Ok::<(), gaspar::Error>(())
/// ```
pub struct Strided {
    gma: Gma,
    policy: Policy,
    buffer_len: u64,
    scratch: Mutex<Scratch>,
}

impl Deref for Strided {
    type Target = Gma;
    fn deref(&self) -> &Gma {
        &self.gma
    }
}

fn overflow(what: &'static str) -> Error {
    Error::LengthOverflow { what }
}

impl Strided {
    /// The strided layer on top of `gma`, configured from the environment.
    ///
    /// ```
    /// use gaspar::{gmem::GlobalMemory, strided::Strided, world::World, Gma};
    /// let acp = Strided::new(Gma::new(GlobalMemory::new(World::init()?)?))?;
    /// assert_eq!(acp.procs(), 1);
    /// acp.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn new(gma: Gma) -> Result<Strided> {
        let (policy, buffer_len) = Self::settings()?;
        Ok(Self::with_settings(gma, policy, buffer_len))
    }

    /// The method policy and buffer size the environment asks for
    /// (`GASPAR_STRIDED_METHOD`, `GASPAR_STRIDED_BUFFER`): read before the job is joined
    /// by [`crate::init`], so that a bad one is its own error, not the end of a job.
    pub(crate) fn settings() -> Result<(Policy, u64)> {
        Ok((Policy::from_env()?, config::STRIDED_BUFFER.bytes()?))
    }

    /// The strided layer on top of `gma` with these settings.
    pub(crate) fn with_settings(gma: Gma, policy: Policy, buffer_len: u64) -> Strided {
        Strided {
            gma,
            policy,
            buffer_len: buffer_len.max(1),
            scratch: Mutex::new(Scratch::default()),
        }
    }

    /// Overrides the environment's method policy and buffer size (ARMCI programs set
    /// them per run, tests per case).
    ///
    /// ```
    /// use gaspar::strided::{Descriptor, Method, Policy, Side};
    /// let mut rt = gaspar::init()?;
    /// rt.acp_mut().set_policy(Policy::Direct, 4096);
    /// let rows = Descriptor::new(&[8, 100], &[8], &[64])?;
    /// assert!(matches!(rt.acp().plan(&rows, Side::Src), Method::Direct { unit: 8 }));
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn set_policy(&mut self, policy: Policy, buffer_len: u64) {
        self.policy = policy;
        self.buffer_len = buffer_len.max(1);
    }

    /// The method policy in force (`GASPAR_STRIDED_METHOD`, or [`set_policy`](Self::set_policy)).
    ///
    /// ```
    /// use gaspar::strided::Policy;
    /// let mut rt = gaspar::init()?;
    /// rt.acp_mut().set_policy(Policy::Buffered, 4096);
    /// assert_eq!(rt.acp().policy(), Policy::Buffered);
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// The method a put (`local = Side::Src`) or get (`local = Side::Dst`) of `desc` uses.
    ///
    /// ```
    /// use gaspar::strided::{Descriptor, Method, Policy, Side};
    /// let mut rt = gaspar::init()?;
    /// rt.acp_mut().set_policy(Policy::Buffered, 4096);
    /// // 100 rows of 8 bytes, dense here and 64 bytes apart at the target.
    /// let rows = Descriptor::new(&[8, 100], &[8], &[64])?;
    /// assert!(matches!(rt.acp().plan(&rows, Side::Src), Method::Buffered { .. }));
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn plan(&self, desc: &Descriptor, local: Side) -> Method {
        let remote = if local == Side::Src {
            Side::Dst
        } else {
            Side::Src
        };
        let (n_l, _) = desc.contiguous_length(local);
        let (n_r, _) = desc.contiguous_length(remote);
        let method = plan::choose(n_l, n_r, self.buffer_len, self.policy);
        tracing::debug!(n_l, n_r, buffer = self.buffer_len, ?method, "strided plan");
        method
    }

    fn scratch(&self) -> MutexGuard<'_, Scratch> {
        self.scratch.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Strided put (ARMCI_PutS): `desc`'s source side in `src`, its destination side
    /// after `dst`. Returns when `src` may be reused.
    ///
    /// ```
    /// use gaspar::{strided::Descriptor, Handle};
    /// let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// // Two rows of 4 bytes, dense here, 16 bytes apart at the target.
    /// let desc = Descriptor::new(&[4, 2], &[4], &[16])?;
    /// let h = acp.put_strided(&[1, 1, 1, 1, 2, 2, 2, 2], &desc, acp.starter_ga(0)?, Handle::NULL)?;
    /// acp.complete(h)?;
    /// let mut row = [0u8; 4];
    /// acp.get_blocking(&mut row, acp.starter_ga(0)?.offset(16).expect("inside the segment"))?;
    /// assert_eq!(row, [2; 4]);
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn put_strided(
        &self,
        src: &[u8],
        desc: &Descriptor,
        dst: GlobalAddr,
        order: Handle,
    ) -> Result<Handle> {
        if desc.src_extent() > src.len() as u64 {
            return Err(Error::invalid(
                "put_strided",
                format!(
                    "source spans {} bytes but the buffer has {}",
                    desc.src_extent(),
                    src.len()
                ),
            ));
        }
        match self.plan(desc, Side::Src) {
            // One transport call, which checks the whole range before it moves a byte.
            Method::Direct { .. } => {
                self.gma
                    .put_pattern(dst, src, &desc.pattern(Side::Src), order)
            }
            // Many calls: the whole range is checked first, so that nothing moves when
            // some of it is outside.
            Method::Buffered { unit, .. } => {
                self.check_range(dst, desc.dst_extent())?;
                self.put_buffered(src, desc, dst, unit, order)
            }
        }
    }

    fn put_buffered(
        &self,
        src: &[u8],
        desc: &Descriptor,
        dst: GlobalAddr,
        unit: u64,
        mut order: Handle,
    ) -> Result<Handle> {
        let mut scratch = self.scratch();
        scratch.buffer.resize(unit as usize, 0);
        let (len, chunks) = desc.chunks();
        let (mut fill, mut start, mut last) = (0u64, 0u64, Handle::NULL);
        let flush = |buffer: &[u8], start: u64, order: &mut Handle| -> Result<Handle> {
            let h = self.gma.put(
                dst.offset(start).ok_or_else(|| overflow("put_strided"))?,
                buffer,
                *order,
            )?;
            *order = Handle::NULL;
            Ok(h)
        };
        for (s, d) in chunks {
            let mut o = 0;
            while o < len {
                let piece = (len - o).min(unit);
                let remote = d + o;
                if fill > 0 && (remote != start + fill || fill + piece > unit) {
                    last = flush(&scratch.buffer[..fill as usize], start, &mut order)?;
                    fill = 0;
                }
                if fill == 0 {
                    start = remote;
                }
                let from = (s + o) as usize;
                copy_local(
                    &mut scratch.buffer[fill as usize..(fill + piece) as usize],
                    &src[from..from + piece as usize],
                );
                fill += piece;
                o += piece;
            }
        }
        if fill > 0 {
            last = flush(&scratch.buffer[..fill as usize], start, &mut order)?;
        }
        Ok(last)
    }

    /// Strided get (ARMCI_GetS): `desc`'s source side after `src`, its destination side
    /// in `dst`. Returns when the data is in `dst`.
    ///
    /// ```
    /// use gaspar::{strided::Descriptor, Handle};
    /// let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let start = acp.starter_ga(0)?;
    /// acp.put_blocking(start, &[1, 2, 3, 4, 5, 6, 7, 8])?;
    /// // Every other pair of bytes: 2 bytes, 2 times, 4 bytes apart there, dense here.
    /// let desc = Descriptor::new(&[2, 2], &[4], &[2])?;
    /// let mut out = [0u8; 4];
    /// let h = acp.get_strided(&mut out, &desc, start, Handle::NULL)?;
    /// acp.complete(h)?;
    /// assert_eq!(out, [1, 2, 5, 6]);
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn get_strided(
        &self,
        dst: &mut [u8],
        desc: &Descriptor,
        src: GlobalAddr,
        order: Handle,
    ) -> Result<Handle> {
        if desc.dst_extent() > dst.len() as u64 {
            return Err(Error::invalid(
                "get_strided",
                format!(
                    "destination spans {} bytes but the buffer has {}",
                    desc.dst_extent(),
                    dst.len()
                ),
            ));
        }
        match self.plan(desc, Side::Dst) {
            // As in `put_strided`: one call checks the range, many are checked first.
            Method::Direct { .. } => {
                self.gma
                    .get_pattern(dst, src, &desc.pattern(Side::Dst), order)
            }
            Method::Buffered { unit, .. } => {
                self.check_range(src, desc.src_extent())?;
                self.get_buffered(dst, desc, src, unit, order)
            }
        }
    }

    fn get_buffered(
        &self,
        dst: &mut [u8],
        desc: &Descriptor,
        src: GlobalAddr,
        unit: u64,
        mut order: Handle,
    ) -> Result<Handle> {
        let mut guard = self.scratch();
        let scratch = &mut *guard;
        scratch.buffer.resize(unit as usize, 0);
        scratch.pieces.clear();
        let (len, chunks) = desc.chunks();
        let (mut fill, mut start, mut last) = (0u64, 0u64, Handle::NULL);
        let flush = |scratch: &mut Scratch,
                     fill: u64,
                     start: u64,
                     dst: &mut [u8],
                     order: &mut Handle|
         -> Result<Handle> {
            let at = src.offset(start).ok_or_else(|| overflow("get_strided"))?;
            let h = self
                .gma
                .get(&mut scratch.buffer[..fill as usize], at, *order)?;
            *order = Handle::NULL;
            let mut pos = 0usize;
            for &(local, piece) in &scratch.pieces {
                let (local, piece) = (local as usize, piece as usize);
                copy_local(
                    &mut dst[local..local + piece],
                    &scratch.buffer[pos..pos + piece],
                );
                pos += piece;
            }
            scratch.pieces.clear();
            Ok(h)
        };
        for (s, d) in chunks {
            let mut o = 0;
            while o < len {
                let piece = (len - o).min(unit);
                let remote = s + o;
                if fill > 0 && (remote != start + fill || fill + piece > unit) {
                    last = flush(scratch, fill, start, dst, &mut order)?;
                    fill = 0;
                }
                if fill == 0 {
                    start = remote;
                }
                scratch.pieces.push((d + o, piece));
                fill += piece;
                o += piece;
            }
        }
        if fill > 0 {
            last = flush(scratch, fill, start, dst, &mut order)?;
        }
        Ok(last)
    }

    /// Checks an I/O vector: equal numbers of offsets, and the span of each side.
    fn check_vector(
        &self,
        local_len: usize,
        local: &[u64],
        remote_base: GlobalAddr,
        remote: &[u64],
        bytes: u64,
    ) -> Result<()> {
        if local.len() != remote.len() {
            return Err(Error::invalid(
                "I/O vector",
                format!("{} local but {} remote segments", local.len(), remote.len()),
            ));
        }
        let span = |offsets: &[u64]| -> Result<u64> {
            offsets.iter().try_fold(0u64, |m, &o| {
                Ok(m.max(o.checked_add(bytes).ok_or_else(|| overflow("I/O vector"))?))
            })
        };
        let local_span = span(local)?;
        if local_span > local_len as u64 {
            return Err(Error::invalid(
                "I/O vector",
                format!("a local segment ends at byte {local_span} of a {local_len}-byte buffer"),
            ));
        }
        // Each remote segment inside a live heap allocation, the whole span inside the
        // segment.
        let loc = self
            .gma
            .locate_pieces(remote_base, remote.iter().map(|&o| (o, bytes)))?;
        Ok(self.transport().check_range(loc, span(remote)?)?)
    }

    /// I/O-vector put (ARMCI_PutV): `bytes` from each `src` offset to the matching offset
    /// after `dst`, in order.
    ///
    /// ```
    /// use gaspar::Handle;
    /// let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let start = acp.starter_ga(0)?;
    /// // Bytes 0..2 and 2..4 of the source to offsets 10 and 0 at the target.
    /// let h = acp.put_vector(&[1, 1, 2, 2], &[0, 2], start, &[10, 0], 2, Handle::NULL)?;
    /// acp.complete(h)?;
    /// let mut out = [0u8; 2];
    /// acp.get_blocking(&mut out, start.offset(10).expect("inside the segment"))?;
    /// assert_eq!(out, [1, 1]);
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn put_vector(
        &self,
        src: &[u8],
        src_offsets: &[u64],
        dst: GlobalAddr,
        dst_offsets: &[u64],
        bytes: u64,
        order: Handle,
    ) -> Result<Handle> {
        self.check_vector(src.len(), src_offsets, dst, dst_offsets, bytes)?;
        let runs = vector_runs(src_offsets, dst_offsets, bytes);
        self.gma.put_runs(dst, src, &runs, order)
    }

    /// I/O-vector get (ARMCI_GetV).
    ///
    /// ```
    /// use gaspar::Handle;
    /// let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let start = acp.starter_ga(0)?;
    /// acp.put_blocking(start, &[1, 2, 3, 4, 5, 6])?;
    /// let mut out = [0u8; 4];
    /// // 2 bytes from offsets 4 and 0 there to 0 and 2 here.
    /// let h = acp.get_vector(&mut out, &[0, 2], start, &[4, 0], 2, Handle::NULL)?;
    /// acp.complete(h)?;
    /// assert_eq!(out, [5, 6, 1, 2]);
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn get_vector(
        &self,
        dst: &mut [u8],
        dst_offsets: &[u64],
        src: GlobalAddr,
        src_offsets: &[u64],
        bytes: u64,
        order: Handle,
    ) -> Result<Handle> {
        self.check_vector(dst.len(), dst_offsets, src, src_offsets, bytes)?;
        let runs = vector_runs(dst_offsets, src_offsets, bytes);
        self.gma.get_runs(dst, src, &runs, order)
    }

    /// Completes every operation to `rank` (ARMCI_Fence).
    ///
    /// ```
    /// use gaspar::Handle;
    /// let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// acp.put(acp.starter_ga(0)?, &[9u8; 8], Handle::NULL)?;
    /// acp.fence(0)?; // every put to rank 0 is complete there
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn fence(&self, rank: u32) -> Result<()> {
        self.gma.fence(rank)
    }

    /// Completes every operation (ARMCI_AllFence).
    ///
    /// ```
    /// use gaspar::Handle;
    /// let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// acp.put(acp.starter_ga(rt.procs() - 1)?, &[9u8; 8], Handle::NULL)?;
    /// acp.all_fence()?; // every put to every rank is complete
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn all_fence(&self) -> Result<()> {
        self.gma.complete(Handle::ALL)
    }

    /// Typed strided put of a `D`-dimensional section: `shape[k]` elements along
    /// dimension k (k = 0 varies fastest), `src_strides`/`dst_strides` in elements.
    /// Blocking: returns when the data is visible at the target.
    ///
    /// ```
    /// let rt = gaspar::init()?;
    /// let grid = rt.alloc::<u32>(16)?; // a 4 x 4 array on every rank
    /// let src = [1u32, 2, 3, 4];
    /// // A 2 x 2 block (dense here) to rows 1..3, columns 1..3 of rank 0's array.
    /// let at = grid.ptr(0, 1 + 4)?;
    /// rt.acp().put_section(&src, [1, 2], [2, 2], at, [1, 4])?;
    /// assert_eq!(grid.get(0, 1 + 4 * 2)?, 3);
    /// grid.free()?;
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn put_section<T: Pod, const D: usize>(
        &self,
        src: &[T],
        src_strides: [usize; D],
        shape: [usize; D],
        dst: GlobalPtr<T>,
        dst_strides: [usize; D],
    ) -> Result<()> {
        let Some(desc) = section::<T, D>(shape, src_strides, dst_strides)? else {
            return Ok(());
        };
        let h = self.put_strided(bytemuck::cast_slice(src), &desc, dst.ga(), Handle::NULL)?;
        self.complete(h)
    }

    /// Typed strided get of a `D`-dimensional section (see [`put_section`](Self::put_section)).
    ///
    /// ```
    /// let rt = gaspar::init()?;
    /// let grid = rt.alloc::<u32>(16)?; // a 4 x 4 array on every rank
    /// grid.put_slice(0, 0, &(0..16).collect::<Vec<u32>>())?;
    /// // Column 2 of rank 0's array: 4 elements, 4 apart there, dense here.
    /// let mut column = [0u32; 4];
    /// rt.acp().get_section(&mut column, [1], [4], grid.ptr(0, 2)?, [4])?;
    /// assert_eq!(column, [2, 6, 10, 14]);
    /// grid.free()?;
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn get_section<T: Pod, const D: usize>(
        &self,
        dst: &mut [T],
        dst_strides: [usize; D],
        shape: [usize; D],
        src: GlobalPtr<T>,
        src_strides: [usize; D],
    ) -> Result<()> {
        let Some(desc) = section::<T, D>(shape, src_strides, dst_strides)? else {
            return Ok(());
        };
        self.get_strided(bytemuck::cast_slice_mut(dst), &desc, src.ga(), Handle::NULL)?;
        Ok(())
    }

    /// Completes everything and leaves the job.
    ///
    /// ```
    /// let acp = gaspar::init()?.into_acp();
    /// acp.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn finalize(self) -> Result<()> {
        self.gma.finalize()
    }

    /// Collective rank remap (see [`Gma::reset`]).
    ///
    /// ```
    /// let mut acp = gaspar::init()?.into_acp();
    /// let me = acp.rank();
    /// acp.reset(me)?; // collective; every allocation is forgotten
    /// assert_eq!(acp.rank(), me);
    /// acp.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn reset(&mut self, new_rank: u32) -> Result<()> {
        self.gma.reset(new_rank)
    }

    /// Strided accumulate (ARMCI_AccS): `dst += scale * src` over `desc`, atomic with
    /// respect to other accumulates to the same rank.
    ///
    /// ```
    /// use gaspar::{strided::{AccKind, Descriptor}, Handle};
    /// let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let start = acp.starter_ga(0)?;
    /// acp.put_blocking(start, bytemuck::cast_slice(&[1.0f64, 1.0]))?;
    /// // dst += 2 * src over one contiguous run of two doubles.
    /// let desc = Descriptor::contiguous(16)?;
    /// let src = [0.5f64, 1.5];
    /// let h = acp.acc_strided(AccKind::Double, &2.0f64.to_ne_bytes(), bytemuck::cast_slice(&src), &desc, start, Handle::NULL)?;
    /// acp.complete(h)?;
    /// let mut out = [0.0f64; 2];
    /// acp.get_blocking(bytemuck::cast_slice_mut(&mut out), start)?;
    /// assert_eq!(out, [2.0, 4.0]);
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn acc_strided(
        &self,
        kind: AccKind,
        scale: &[u8],
        src: &[u8],
        desc: &Descriptor,
        dst: GlobalAddr,
        order: Handle,
    ) -> Result<Handle> {
        if desc.src_extent() > src.len() as u64 {
            return Err(Error::invalid(
                "acc_strided",
                format!(
                    "source spans {} bytes but the buffer has {}",
                    desc.src_extent(),
                    src.len()
                ),
            ));
        }
        let pattern = desc.pattern(Side::Src);
        self.gma
            .accumulate(dst, src, AccShape::Pattern(pattern), kind, scale, order)
    }

    /// I/O-vector accumulate (ARMCI_AccV).
    ///
    /// ```
    /// use gaspar::{strided::AccKind, Handle};
    /// let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let start = acp.starter_ga(0)?;
    /// acp.put_blocking(start, bytemuck::cast_slice(&[10i32, 20, 30]))?;
    /// // Add 1 * src[0] to element 2 and 1 * src[1] to element 0.
    /// let src = [5i32, 7];
    /// let h = acp.acc_vector(AccKind::Int, &1i32.to_ne_bytes(), bytemuck::cast_slice(&src), &[0, 4], start, &[8, 0], 4, Handle::NULL)?;
    /// acp.complete(h)?;
    /// let mut out = [0i32; 3];
    /// acp.get_blocking(bytemuck::cast_slice_mut(&mut out), start)?;
    /// assert_eq!(out, [17, 20, 35]);
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn acc_vector(
        &self,
        kind: AccKind,
        scale: &[u8],
        src: &[u8],
        src_offsets: &[u64],
        dst: GlobalAddr,
        dst_offsets: &[u64],
        bytes: u64,
        order: Handle,
    ) -> Result<Handle> {
        kind.check(bytes, scale)?;
        self.check_vector(src.len(), src_offsets, dst, dst_offsets, bytes)?;
        let runs = vector_runs(src_offsets, dst_offsets, bytes);
        self.gma
            .accumulate(dst, src, AccShape::Runs(&runs), kind, scale, order)
    }
}

/// The runs of an I/O vector in one buffer: `bytes` at each local offset, matched in
/// order with the remote offsets (one transport call for the whole vector).
fn vector_runs(local: &[u64], remote: &[u64], bytes: u64) -> Vec<Run> {
    local
        .iter()
        .zip(remote)
        .map(|(&l, &r)| Run {
            local: l,
            remote: r,
            len: bytes,
        })
        .collect()
}

/// The descriptor of a typed section, or `None` when it is empty.
fn section<T, const D: usize>(
    shape: [usize; D],
    src_strides: [usize; D],
    dst_strides: [usize; D],
) -> Result<Option<Descriptor>> {
    if shape.contains(&0) {
        return Ok(None);
    }
    let size = std::mem::size_of::<T>() as u64;
    let bytes = |strides: [usize; D]| -> Result<Vec<u64>> {
        strides
            .iter()
            .map(|&s| {
                (s as u64)
                    .checked_mul(size)
                    .ok_or_else(|| overflow("section stride"))
            })
            .collect()
    };
    let mut count = vec![size];
    count.extend(shape.iter().map(|&n| n as u64));
    Descriptor::new(&count, &bytes(src_strides)?, &bytes(dst_strides)?).map(Some)
}
