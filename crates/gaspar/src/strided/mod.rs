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
    pub fn new(gma: Gma) -> Result<Strided> {
        Ok(Strided {
            gma,
            policy: Policy::from_env()?,
            buffer_len: config::STRIDED_BUFFER.bytes()?.max(1),
            scratch: Mutex::new(Scratch::default()),
        })
    }

    /// Overrides the environment's method policy and buffer size (ARMCI programs set
    /// them per run, tests per case).
    pub fn set_policy(&mut self, policy: Policy, buffer_len: u64) {
        self.policy = policy;
        self.buffer_len = buffer_len.max(1);
    }

    /// The method a put (`local = Side::Src`) or get (`local = Side::Dst`) of `desc` uses.
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
        self.check_range(dst, desc.dst_extent())?;
        match self.plan(desc, Side::Src) {
            Method::Direct { .. } => {
                self.gma
                    .put_pattern(dst, src, &desc.pattern(Side::Src), order)
            }
            Method::Buffered { unit, .. } => self.put_buffered(src, desc, dst, unit, order),
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
        self.check_range(src, desc.src_extent())?;
        match self.plan(desc, Side::Dst) {
            Method::Direct { .. } => {
                self.gma
                    .get_pattern(dst, src, &desc.pattern(Side::Dst), order)
            }
            Method::Buffered { unit, .. } => self.get_buffered(dst, desc, src, unit, order),
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
    pub fn fence(&self, rank: u32) -> Result<()> {
        self.gma.fence(rank)
    }

    /// Completes every operation (ARMCI_AllFence).
    pub fn all_fence(&self) -> Result<()> {
        self.gma.complete(Handle::ALL)
    }

    /// Typed strided put of a `D`-dimensional section: `shape[k]` elements along
    /// dimension k (k = 0 varies fastest), `src_strides`/`dst_strides` in elements.
    /// Blocking: returns when the data is visible at the target.
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
    pub fn finalize(self) -> Result<()> {
        self.gma.finalize()
    }

    /// Collective rank remap (see [`Gma::reset`]).
    pub fn reset(&mut self, new_rank: u32) -> Result<()> {
        self.gma.reset(new_rank)
    }

    /// Strided accumulate (ARMCI_AccS): `dst += scale * src` over `desc`, atomic with
    /// respect to other accumulates to the same rank.
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
