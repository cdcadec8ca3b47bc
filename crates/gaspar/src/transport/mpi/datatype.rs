//! Noncontiguous transfers as MPI derived datatypes: one MPI_Put or MPI_Get per run
//! list, I/O vector or strided pattern, with a datatype describing each side.

use std::ffi::c_int;

use mpi::ffi;

use super::{check, constant, MpiTransport};
use crate::error::{Error, Result};
use crate::transport::{Location, Pattern};

/// A committed MPI datatype describing one side of a noncontiguous transfer, freed on drop.
pub(super) struct Datatype(pub(super) ffi::MPI_Datatype);

/// The predefined MPI datatype a derived one is built from, and its size in bytes
/// (bytes for puts and gets; an accumulate's element type, since MPI applies an
/// accumulate only to datatypes built from one predefined type).
#[derive(Clone, Copy)]
pub(super) struct Element {
    pub(super) datatype: ffi::MPI_Datatype,
    pub(super) size: u64,
}

impl Element {
    /// Plain bytes.
    pub(super) fn byte() -> Element {
        Element {
            datatype: constant::byte(),
            size: 1,
        }
    }

    /// Whole elements in `bytes`, as an MPI int.
    pub(super) fn count(self, bytes: u64) -> Result<c_int> {
        mpi_int(bytes / self.size)
    }
}

/// `v` as an MPI int count, or an error.
fn mpi_int(v: u64) -> Result<c_int> {
    c_int::try_from(v).map_err(|_| Error::LengthOverflow {
        what: "MPI datatype count",
    })
}

/// The byte datatypes of both sides of `pattern`: (origin, target).
pub(super) fn pattern_pair(pattern: &Pattern<'_>) -> Result<(Datatype, Datatype)> {
    let side = |strides| Datatype::pattern(Element::byte(), pattern.chunk, pattern.counts, strides);
    Ok((side(pattern.local_strides)?, side(pattern.remote_strides)?))
}

impl Datatype {
    /// `chunk` contiguous bytes of `element`s repeated over `counts` levels `strides`
    /// bytes apart (nested hvectors); an error when a count or the chunk does not fit an
    /// MPI int.
    pub(super) fn pattern(
        element: Element,
        chunk: u64,
        counts: &[u64],
        strides: &[u64],
    ) -> Result<Datatype> {
        let int = mpi_int;
        let mut current = element.datatype;
        let mut owned: Vec<ffi::MPI_Datatype> = Vec::new();
        let mut next = element.datatype;
        // SAFETY: each call creates a new datatype from a valid one; intermediate types
        // are freed below after the outermost one is committed (MPI keeps what it needs).
        unsafe {
            check(
                "MPI_Type_contiguous",
                ffi::MPI_Type_contiguous(element.count(chunk)?, current, &mut next),
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
            Ok(Datatype(outer))
        }
    }

    /// Blocks of `lens[k]` `element`s at byte displacements `disps[k]` (an hindexed
    /// type).
    pub(super) fn indexed(
        element: Element,
        lens: &[c_int],
        disps: &[ffi::MPI_Aint],
    ) -> Result<Datatype> {
        let mut t = element.datatype;
        // SAFETY: both arrays have `lens.len()` entries, which fits an MPI int (checked).
        unsafe {
            check(
                "MPI_Type_create_hindexed",
                ffi::MPI_Type_create_hindexed(
                    mpi_int(lens.len() as u64)?,
                    lens.as_ptr(),
                    disps.as_ptr(),
                    element.datatype,
                    &mut t,
                ),
            )?;
            check("MPI_Type_commit", ffi::MPI_Type_commit(&mut t))?;
        }
        Ok(Datatype(t))
    }
}

/// The two sides of a vectored transfer as hindexed datatypes: the origin's blocks at
/// `local[k]` (byte displacements from the origin buffer), the target's at `remote[k]`
/// (from the target displacement), `lens[k]` bytes each.
pub(super) fn indexed_pair(
    lens: impl Iterator<Item = u64>,
    local: impl Iterator<Item = isize>,
    remote: &[u64],
) -> Result<(Datatype, Datatype)> {
    let lens = lens.map(mpi_int).collect::<Result<Vec<c_int>>>()?;
    let local: Vec<ffi::MPI_Aint> = local.map(|d| d as ffi::MPI_Aint).collect();
    let remote = remote
        .iter()
        .map(|&d| {
            ffi::MPI_Aint::try_from(d).map_err(|_| Error::LengthOverflow {
                what: "MPI displacement",
            })
        })
        .collect::<Result<Vec<ffi::MPI_Aint>>>()?;
    Ok((
        Datatype::indexed(Element::byte(), &lens, &local)?,
        Datatype::indexed(Element::byte(), &lens, &remote)?,
    ))
}

impl Drop for Datatype {
    fn drop(&mut self) {
        // SAFETY: a committed datatype this value owns; operations using it were flushed.
        unsafe { ffi::MPI_Type_free(&mut self.0) };
    }
}

impl MpiTransport {
    /// One MPI_Put of `origin` (relative to `base`) into `target` at `dst`, whose blocks
    /// end within `extent` bytes; then a local flush.
    ///
    /// # Safety
    /// Every block of `origin` is readable memory when addressed from `base`.
    pub(super) unsafe fn put_typed(
        &self,
        dst: Location,
        base: *const u8,
        origin: &Datatype,
        target: &Datatype,
        extent: u64,
    ) -> Result<()> {
        let disp = self.disp(dst, extent)?;
        self.order_after_writes(dst.rank());
        // SAFETY: the origin blocks are readable (caller's contract); the target blocks
        // end within `extent` bytes, bounds-checked against the segment; both types live
        // until after the flush.
        check("MPI_Put", unsafe {
            ffi::MPI_Put(
                base.cast(),
                1,
                origin.0,
                dst.rank() as c_int,
                disp,
                1,
                target.0,
                self.win,
            )
        })?;
        self.flush_local(dst.rank())?;
        self.put_left_unflushed(dst.rank());
        Ok(())
    }

    /// One MPI_Get of `target` at `src` into `origin` (relative to `base`), as
    /// [`put_typed`](Self::put_typed).
    ///
    /// # Safety
    /// Every block of `origin` is writable memory when addressed from `base`.
    pub(super) unsafe fn get_typed(
        &self,
        src: Location,
        base: *mut u8,
        origin: &Datatype,
        target: &Datatype,
        extent: u64,
    ) -> Result<()> {
        let disp = self.disp(src, extent)?;
        self.order_after_writes(src.rank());
        // SAFETY: as in `put_typed`, writing into the origin blocks.
        check("MPI_Get", unsafe {
            ffi::MPI_Get(
                base.cast(),
                1,
                origin.0,
                src.rank() as c_int,
                disp,
                1,
                target.0,
                self.win,
            )
        })?;
        self.flush_local(src.rank())
    }
}
