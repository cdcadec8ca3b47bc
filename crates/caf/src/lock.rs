//! LOCK and UNLOCK (also the lock of a CRITICAL construct, which gfortran registers as
//! `CRITICAL` and locks on image 1).

use std::ffi::{c_char, c_int, c_void};

use crate::runtime;
use crate::stat::StatArgs;
use crate::token::{self, Holds};

/// `lock(l[image])`; with `acquired_lock` non-null, `lock(..., acquired_lock=ok)` tries
/// once and stores 1 or 0.
///
/// # Safety
/// `token` a registered lock token, `acquired_lock` null or writable, STAT=/ERRMSG= null
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_lock(
    token: *mut c_void,
    index: usize,
    image: c_int,
    acquired_lock: *mut c_int,
    stat: *mut c_int,
    errmsg: *mut c_char,
    errmsg_len: usize,
) {
    // SAFETY: this function's contract.
    let stat = unsafe { StatArgs::new(stat, errmsg, errmsg_len) };
    runtime::statement("LOCK", stat, |engine| {
        // SAFETY: this function's contract.
        let (locks, first) = unsafe { token::borrow(token)? }.variables(Holds::Locks)?;
        let index = index + first;
        let image = token::image_or_this(image, engine.this_image())?;
        let acquired = engine.lock(locks, index, image, !acquired_lock.is_null())?;
        if !acquired_lock.is_null() {
            // SAFETY: non-null `acquired_lock` is writable (this function's contract).
            unsafe { *acquired_lock = c_int::from(acquired) };
        }
        Ok(())
    });
}

/// `unlock(l[image])`.
///
/// # Safety
/// As [`_gfortran_caf_lock`].
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_unlock(
    token: *mut c_void,
    index: usize,
    image: c_int,
    stat: *mut c_int,
    errmsg: *mut c_char,
    errmsg_len: usize,
) {
    // SAFETY: this function's contract.
    let stat = unsafe { StatArgs::new(stat, errmsg, errmsg_len) };
    runtime::statement("UNLOCK", stat, |engine| {
        // SAFETY: this function's contract.
        let (locks, first) = unsafe { token::borrow(token)? }.variables(Holds::Locks)?;
        let index = index + first;
        let image = token::image_or_this(image, engine.this_image())?;
        Ok(engine.unlock(locks, index, image)?)
    });
}
