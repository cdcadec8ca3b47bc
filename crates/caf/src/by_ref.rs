//! `get_by_ref`, `send_by_ref`, `sendget_by_ref`, `is_present`: coindexed references
//! through components of derived-type coarrays (gfortran uses them when a type has
//! allocatable components), with reallocation of an allocatable local destination.

use std::ffi::{c_int, c_void};

use crate::descriptor::{self, Descriptor, TypeCode};
use crate::error::CafError;
use crate::reference::{self, CafReference, Target};
use crate::runtime;
use crate::section::elem;
use crate::stat::StatArgs;
use crate::token;
use crate::transfer;

/// `x = b[image]%comp...`: gets what `refs` selects into local `dst`, reallocating `dst`
/// when it is allocatable and its shape differs.
///
/// # Safety
/// gfortran's arguments: a registered token, its descriptor and reference chain, `stat`
/// null or writable.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_get_by_ref(
    token: *mut c_void,
    image_index: c_int,
    dst: *mut Descriptor,
    refs: *const CafReference,
    dst_kind: c_int,
    src_kind: c_int,
    _may_require_tmp: bool,
    dst_reallocatable: bool,
    stat: *mut c_int,
    src_type: c_int,
) {
    // SAFETY: gfortran's STAT= argument.
    let stat = unsafe { StatArgs::stat_only(stat) };
    runtime::statement_with_state("coindexed reference", stat, |state| {
        let image = token::image(image_index)?;
        // SAFETY: this function's contract.
        let coarray = unsafe { token::borrow(token)? };
        let (engine, mut heap) = state.existing_components();
        let ty = TypeCode::from_code(src_type as i8)?;
        // SAFETY: gfortran's reference chain.
        let target =
            unsafe { reference::resolve(engine, heap.as_deref_mut(), coarray, image, refs, ty)? };
        let (remote, shape) =
            reference::remote(heap.as_deref(), coarray.memory()?, image, target, src_kind)?;
        if dst_reallocatable {
            // SAFETY: gfortran's descriptor of an allocatable destination.
            unsafe { reallocate(dst, &shape, remote.layout.count())? };
        }
        // SAFETY: gfortran's descriptor of the destination.
        let dst_layout = unsafe { descriptor::read(dst)? };
        let dst_elem = elem(dst_layout.type_code, dst_kind)?;
        // SAFETY: read above.
        let base = unsafe { (*dst).base_addr };
        transfer::get_local(engine, &remote, base, &dst_layout, dst_elem)
    });
}

/// `b[image]%comp... = src`.
///
/// # Safety
/// As [`_gfortran_caf_get_by_ref`].
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_send_by_ref(
    token: *mut c_void,
    image_index: c_int,
    src: *mut Descriptor,
    refs: *const CafReference,
    dst_kind: c_int,
    src_kind: c_int,
    _may_require_tmp: bool,
    _dst_reallocatable: bool,
    stat: *mut c_int,
    dst_type: c_int,
) {
    // SAFETY: gfortran's STAT= argument.
    let stat = unsafe { StatArgs::stat_only(stat) };
    runtime::statement_with_state("coindexed assignment", stat, |state| {
        let image = token::image(image_index)?;
        // SAFETY: this function's contract.
        let coarray = unsafe { token::borrow(token)? };
        let (engine, mut heap) = state.existing_components();
        let ty = TypeCode::from_code(dst_type as i8)?;
        // SAFETY: gfortran's reference chain.
        let target =
            unsafe { reference::resolve(engine, heap.as_deref_mut(), coarray, image, refs, ty)? };
        let (remote, _) =
            reference::remote(heap.as_deref(), coarray.memory()?, image, target, dst_kind)?;
        // SAFETY: gfortran's descriptor of the source.
        let src_layout = unsafe { descriptor::read(src)? };
        let src_elem = elem(src_layout.type_code, src_kind)?;
        // SAFETY: read above.
        let base = unsafe { (*src).base_addr };
        transfer::put_local(engine, &remote, base, &src_layout, src_elem)
    });
}

/// `b[i]%comp... = c[j]%comp...`.
///
/// # Safety
/// As [`_gfortran_caf_get_by_ref`], for both sides; `src_stat` null or writable.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_sendget_by_ref(
    dst_token: *mut c_void,
    dst_image_index: c_int,
    dst_refs: *const CafReference,
    src_token: *mut c_void,
    src_image_index: c_int,
    src_refs: *const CafReference,
    dst_kind: c_int,
    src_kind: c_int,
    _may_require_tmp: bool,
    dst_stat: *mut c_int,
    src_stat: *mut c_int,
    dst_type: c_int,
    src_type: c_int,
) {
    // SAFETY: gfortran's STAT= arguments.
    let (stat, source_stat) =
        unsafe { (StatArgs::stat_only(dst_stat), StatArgs::stat_only(src_stat)) };
    let done = runtime::statement_with_state("coindexed assignment", stat, |state| {
        let dst_image = token::image(dst_image_index)?;
        let src_image = token::image(src_image_index)?;
        // SAFETY: this function's contract.
        let dst_coarray = unsafe { token::borrow(dst_token)? };
        // SAFETY: this function's contract.
        let src_coarray = unsafe { token::borrow(src_token)? };
        let (engine, mut heap) = state.existing_components();
        let dst_ty = TypeCode::from_code(dst_type as i8)?;
        let src_ty = TypeCode::from_code(src_type as i8)?;
        // SAFETY: gfortran's reference chains.
        let (dst_target, src_target) = unsafe {
            (
                reference::resolve(
                    engine,
                    heap.as_deref_mut(),
                    dst_coarray,
                    dst_image,
                    dst_refs,
                    dst_ty,
                )?,
                reference::resolve(
                    engine,
                    heap.as_deref_mut(),
                    src_coarray,
                    src_image,
                    src_refs,
                    src_ty,
                )?,
            )
        };
        let heap = heap.as_deref();
        let (dst, _) =
            reference::remote(heap, dst_coarray.memory()?, dst_image, dst_target, dst_kind)?;
        let (src, _) =
            reference::remote(heap, src_coarray.memory()?, src_image, src_target, src_kind)?;
        transfer::copy_remote(engine, &dst, &src)
    });
    if done.is_some() {
        source_stat.success();
    }
}

/// `allocated(b[image]%comp)`: 1 when every allocatable component `refs` passes through
/// is allocated on `image`.
///
/// # Safety
/// As [`_gfortran_caf_get_by_ref`].
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_is_present(
    token: *mut c_void,
    image_index: c_int,
    refs: *const CafReference,
) -> c_int {
    // SAFETY: no STAT=: an error ends the job with one line.
    let stat = unsafe { StatArgs::stat_only(std::ptr::null_mut()) };
    runtime::statement_with_state("ALLOCATED", stat, |state| {
        let image = token::image(image_index)?;
        // SAFETY: this function's contract.
        let coarray = unsafe { token::borrow(token)? };
        let (engine, heap) = state.existing_components();
        // SAFETY: gfortran's reference chain; the type does not matter for presence.
        let target =
            unsafe { reference::resolve(engine, heap, coarray, image, refs, TypeCode::Derived)? };
        Ok(c_int::from(matches!(target, Target::Found { .. })))
    })
    .unwrap_or(0)
}

/// Gives an allocatable destination the shape `shape` (`count` elements) unless it has
/// it: frees the old data (libgfortran's malloc) and allocates new, bounds from 1.
///
/// # Safety
/// `dst` is gfortran's descriptor of an allocatable array (or scalar), writable.
unsafe fn reallocate(dst: *mut Descriptor, shape: &[usize], count: usize) -> Result<(), CafError> {
    if dst.is_null() {
        return Err(CafError::Descriptor("null destination descriptor".into()));
    }
    // SAFETY: caller's contract.
    let d = unsafe { &mut *dst };
    let rank = d.dtype.rank as usize;
    if rank == 0 || rank > descriptor::MAX_RANK {
        return Ok(());
    }
    let shape: Vec<usize> = match shape.len() {
        n if n == rank => shape.to_vec(),
        _ if rank == 1 => vec![count],
        n => {
            return Err(CafError::Descriptor(format!(
                "a rank-{n} reference assigned to a rank-{rank} array"
            )))
        }
    };
    // SAFETY: `rank` dimensions follow the descriptor (caller's contract).
    let dims = unsafe { std::slice::from_raw_parts_mut(d.dim.as_mut_ptr(), rank) };
    let same = !d.base_addr.is_null()
        && dims
            .iter()
            .zip(&shape)
            .all(|(dim, &n)| (dim.upper_bound - dim.lower_bound + 1).max(0) as usize == n);
    if same {
        return Ok(());
    }
    let elem_len = d.dtype.elem_len;
    // SAFETY: the old data came from libgfortran's malloc (or is null); the new block is
    // at least one byte, as libgfortran allocates.
    let data = unsafe {
        libc::free(d.base_addr);
        libc::malloc((elem_len * count).max(1))
    };
    if data.is_null() {
        return Err(CafError::Argument(
            "out of memory for the destination".into(),
        ));
    }
    d.base_addr = data;
    d.span = elem_len as isize;
    let mut stride = 1isize;
    let mut offset = 0isize;
    for (dim, &n) in dims.iter_mut().zip(&shape) {
        *dim = descriptor::DescDim {
            stride,
            lower_bound: 1,
            upper_bound: n as isize,
        };
        offset -= stride;
        stride *= n as isize;
    }
    d.offset = offset;
    Ok(())
}
