//! SYNC ALL, SYNC IMAGES, SYNC MEMORY.

use std::ffi::{c_char, c_int};

use crate::abi::sync_errmsg;
use crate::error::CafError;
use crate::runtime;
use crate::stat::StatArgs;
use crate::token;

/// The longest SYNC IMAGES list converted on the stack.
const SHORT_LIST: usize = 16;

/// `sync all`.
///
/// # Safety
/// gfortran's STAT= (null or writable) and ERRMSG= (null or the address of a pointer to
/// `errmsg_len` writable bytes, see `abi::sync_errmsg`).
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_sync_all(
    stat: *mut c_int,
    errmsg: *mut c_char,
    errmsg_len: usize,
) {
    // SAFETY: this function's contract; gfortran 12 passes ERRMSG= of SYNC indirectly.
    let stat = unsafe { StatArgs::new(stat, sync_errmsg(errmsg), errmsg_len) };
    sync_all(stat);
}

/// SYNC ALL with STAT=/ERRMSG= read (gfortran 12's and GCC 16's forms differ in ERRMSG=).
pub(crate) fn sync_all(stat: StatArgs) {
    runtime::control_statement("SYNC ALL", stat, |engine| Ok(engine.sync_all()?));
}

/// `sync memory`.
///
/// # Safety
/// As [`_gfortran_caf_sync_all`].
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_sync_memory(
    stat: *mut c_int,
    errmsg: *mut c_char,
    errmsg_len: usize,
) {
    // SAFETY: this function's contract; gfortran 12 passes ERRMSG= of SYNC indirectly.
    let stat = unsafe { StatArgs::new(stat, sync_errmsg(errmsg), errmsg_len) };
    sync_memory(stat);
}

/// SYNC MEMORY with STAT=/ERRMSG= read.
pub(crate) fn sync_memory(stat: StatArgs) {
    runtime::control_statement("SYNC MEMORY", stat, |engine| Ok(engine.sync_memory()?));
}

/// `sync images(list)`; `count` -1 means `sync images(*)`.
///
/// # Safety
/// `images` holds `count` integers when `count` > 0; STAT=/ERRMSG= as in
/// [`_gfortran_caf_sync_all`].
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_sync_images(
    count: c_int,
    images: *const c_int,
    stat: *mut c_int,
    errmsg: *mut c_char,
    errmsg_len: usize,
) {
    // SAFETY: this function's contract; gfortran 12 passes ERRMSG= of SYNC indirectly.
    let stat = unsafe { StatArgs::new(stat, sync_errmsg(errmsg), errmsg_len) };
    // SAFETY: this function's contract.
    unsafe { sync_images(count, images, stat) };
}

/// SYNC IMAGES with STAT=/ERRMSG= read.
///
/// # Safety
/// `images` holds `count` integers when `count` > 0.
pub(crate) unsafe fn sync_images(count: c_int, images: *const c_int, stat: StatArgs) {
    runtime::control_statement("SYNC IMAGES", stat, |engine| {
        if count < 0 {
            return Ok(engine.sync_images(None)?);
        }
        let raw: &[c_int] = if count == 0 || images.is_null() {
            &[]
        } else {
            // SAFETY: gfortran passes `count` image indices.
            unsafe { std::slice::from_raw_parts(images, count as usize) }
        };
        if raw.len() <= SHORT_LIST {
            // The usual list (a few neighbours): converted on the stack, nothing allocated.
            let mut list = [0; SHORT_LIST];
            for (slot, &i) in list.iter_mut().zip(raw) {
                *slot = token::image(i)?;
            }
            return Ok(engine.sync_images(Some(&list[..raw.len()]))?);
        }
        let list = raw
            .iter()
            .map(|&i| token::image(i))
            .collect::<Result<Vec<_>, CafError>>()?;
        Ok(engine.sync_images(Some(&list))?)
    });
}
