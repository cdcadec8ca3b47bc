//! Accumulate as ARMCI-MPI does it where transfers are MPI calls (with every rank's window
//! mapped and `direct`, as shm does it instead: `under_lock`): `scale * src` is formed locally (not at all when the
//! scale is one), then added at the target by one MPI_Accumulate with MPI_SUM, whose
//! datatypes describe the whole shape (a contiguous run: the element type itself). MPI
//! makes each element's update atomic with respect to other accumulates and keeps one
//! origin's accumulates to one target in order; the transport completes earlier puts
//! there first, and counts the accumulate as a pending write for the operations after it.

use std::ffi::c_int;

use mpi::ffi;

use super::datatype::{Datatype, Element};
use super::{check, constant, MpiTransport};
use crate::addr::Segment;
use crate::error::{Error, Result};
use crate::transport::accumulate::{under_lock, AccKind, AccShape};
use crate::transport::{Location, Run};

/// The predefined MPI type MPI_SUM adds for `kind` (a complex number's parts: the sum of
/// two complex numbers is the sum of their parts).
fn element_of(kind: AccKind) -> Element {
    // SAFETY: the RSMPI_* statics are constants the MPI bindings' C shim initializes at
    // load time and never changes.
    let (datatype, size) = unsafe {
        match kind {
            AccKind::Int => (ffi::RSMPI_INT32_T, 4),
            AccKind::Long => (ffi::RSMPI_INT64_T, 8),
            AccKind::Float | AccKind::ComplexFloat => (ffi::RSMPI_FLOAT, 4),
            AccKind::Double | AccKind::ComplexDouble => (ffi::RSMPI_DOUBLE, 8),
        }
    };
    Element { datatype, size }
}

/// The one run of a shape that has one (every level repeats once, or one run).
fn single_run(shape: &AccShape<'_>) -> Option<Run> {
    match shape {
        AccShape::Pattern(p) if p.counts.iter().all(|&c| c == 1) => Some(Run {
            local: 0,
            remote: 0,
            len: p.chunk,
        }),
        AccShape::Runs([run]) => Some(*run),
        _ => None,
    }
}

/// One side of `shape` as a datatype of `element`s: the local side (`local`) or the
/// remote one.
fn side_type(shape: &AccShape<'_>, element: Element, local: bool) -> Result<Datatype> {
    match shape {
        AccShape::Pattern(p) => {
            let strides = if local {
                p.local_strides
            } else {
                p.remote_strides
            };
            Datatype::pattern(element, p.chunk, p.counts, strides)
        }
        AccShape::Runs(runs) => {
            let lens = runs
                .iter()
                .map(|r| element.count(r.len))
                .collect::<Result<Vec<c_int>>>()?;
            let disps = runs
                .iter()
                .map(|r| {
                    let at = if local { r.local } else { r.remote };
                    ffi::MPI_Aint::try_from(at).map_err(|_| Error::LengthOverflow {
                        what: "MPI displacement",
                    })
                })
                .collect::<Result<Vec<ffi::MPI_Aint>>>()?;
            Datatype::indexed(element, &lens, &disps)
        }
    }
}

impl MpiTransport {
    /// [`Transport::accumulate`](crate::transport::Transport::accumulate) on this
    /// transport (see the module documentation); with `direct`, and into registered
    /// memory, where the transport builds no datatypes, under the accumulate lock.
    pub(super) fn accumulate_summing(
        &self,
        dst: Location,
        src: &[u8],
        shape: AccShape<'_>,
        kind: AccKind,
        scale: &[u8],
    ) -> Result<()> {
        self.on_mpi_thread()?;
        if self.direct {
            // Every rank's accumulates take the target's lock (a processor atomic, as
            // every rank's atomics are here) and update the mapped memory in place, as
            // on shm: no MPI_Accumulate meets them, and none waits for MPI progress.
            self.order_after_writes(dst.rank());
            return under_lock(self, dst, src, shape, kind, scale);
        }
        if matches!(dst.segment(), Segment::Registered(_)) {
            return under_lock(self, dst, src, shape, kind, scale);
        }
        let extent = shape.checked_extent(src.len(), kind, scale)?;
        if let AccShape::Runs([]) = shape {
            return Ok(());
        }
        let disp = self.disp(dst, extent)?;
        let element = element_of(kind);
        // The scaled values of every run, packed in run order.
        let mut scaled = Vec::new();
        let unit = kind.is_unit(scale);
        if !unit {
            shape.for_each_run(|run| {
                kind.scale_into(
                    scale,
                    &src[run.local as usize..][..run.len as usize],
                    &mut scaled,
                );
                Ok(())
            })?;
        }
        self.wake_target(dst.rank());
        self.order_accumulate_after_puts(dst.rank());
        if let Some(run) = single_run(&shape) {
            let origin = if unit {
                &src[run.local as usize..][..run.len as usize]
            } else {
                &scaled[..]
            };
            self.accumulate_contiguous(
                dst.rank(),
                disp + run.remote as ffi::MPI_Aint,
                origin,
                element,
            )?;
        } else {
            let target = side_type(&shape, element, false)?;
            let origin_type: Datatype;
            let (base, count, datatype) = if unit {
                origin_type = side_type(&shape, element, true)?;
                (src.as_ptr(), 1, origin_type.0)
            } else {
                (
                    scaled.as_ptr(),
                    element.count(scaled.len() as u64)?,
                    element.datatype,
                )
            };
            // SAFETY: the origin blocks lie inside `src` (checked by `checked_extent`) or
            // are `scaled`, both borrowed until the local flush below; the target blocks
            // end within `extent` bytes, checked against the segment; the types live
            // until after the flush.
            check("MPI_Accumulate", unsafe {
                ffi::MPI_Accumulate(
                    base.cast(),
                    count,
                    datatype,
                    dst.rank() as c_int,
                    disp,
                    1,
                    target.0,
                    constant::sum(),
                    self.win,
                )
            })?;
        }
        self.flush_local(dst.rank())?;
        self.accumulate_left_unflushed(dst.rank());
        Ok(())
    }

    /// MPI_Accumulate of the elements in `origin` to `disp` of `rank`, in pieces whose
    /// element counts fit an MPI int; the caller flushes.
    fn accumulate_contiguous(
        &self,
        rank: u32,
        disp: ffi::MPI_Aint,
        origin: &[u8],
        element: Element,
    ) -> Result<()> {
        let most = (c_int::MAX as usize / element.size as usize) * element.size as usize;
        for (k, piece) in origin.chunks(most).enumerate() {
            let count = element.count(piece.len() as u64)?;
            // SAFETY: `piece` is borrowed until the caller's local flush; the target range
            // lies inside the range the caller checked against the segment.
            check("MPI_Accumulate", unsafe {
                ffi::MPI_Accumulate(
                    piece.as_ptr().cast(),
                    count,
                    element.datatype,
                    rank as c_int,
                    disp + (k * most) as ffi::MPI_Aint,
                    count,
                    element.datatype,
                    constant::sum(),
                    self.win,
                )
            })?;
        }
        Ok(())
    }
}
