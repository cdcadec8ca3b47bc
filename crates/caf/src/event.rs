//! EVENT POST, EVENT WAIT and EVENT_QUERY.

use std::ffi::{c_char, c_int, c_void};

use crate::error::CafError;
use crate::runtime;
use crate::stat::StatArgs;
use crate::token::{self, Holds};

/// `event post(ev[image])`.
///
/// # Safety
/// `token` a registered event token; STAT=/ERRMSG= null or writable.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_event_post(
    token: *mut c_void,
    index: usize,
    image: c_int,
    stat: *mut c_int,
    errmsg: *mut c_char,
    errmsg_len: usize,
) {
    // SAFETY: this function's contract.
    let stat = unsafe { StatArgs::new(stat, errmsg, errmsg_len) };
    runtime::control_statement("EVENT POST", stat, |engine| {
        // SAFETY: this function's contract.
        let (events, first) = unsafe { token::borrow(token)? }.variables(Holds::Events)?;
        let index = index + first;
        let image = token::image_or_this(image, engine.this_image())?;
        Ok(engine.event_post(events, index, image)?)
    });
}

/// `event wait(ev, until_count=n)` on this image's event (gfortran passes 1 without
/// UNTIL_COUNT=).
///
/// # Safety
/// As [`_gfortran_caf_event_post`].
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_event_wait(
    token: *mut c_void,
    index: usize,
    until_count: c_int,
    stat: *mut c_int,
    errmsg: *mut c_char,
    errmsg_len: usize,
) {
    // SAFETY: this function's contract.
    let stat = unsafe { StatArgs::new(stat, errmsg, errmsg_len) };
    runtime::control_statement("EVENT WAIT", stat, |engine| {
        // SAFETY: this function's contract.
        let (events, first) = unsafe { token::borrow(token)? }.variables(Holds::Events)?;
        let index = index + first;
        // A count below 1 waits for one post, as the standard says.
        let until = u64::try_from(until_count.max(1))
            .map_err(|_| CafError::Argument(format!("until_count {until_count}")))?;
        Ok(engine.event_wait(events, index, until)?)
    });
}

/// `call event_query(ev[image], count)`; image 0 is this image.
///
/// # Safety
/// As [`_gfortran_caf_event_post`]; `count` writable.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_event_query(
    token: *mut c_void,
    index: usize,
    image: c_int,
    count: *mut c_int,
    stat: *mut c_int,
) {
    // SAFETY: gfortran's STAT= argument.
    let stat = unsafe { StatArgs::stat_only(stat) };
    runtime::statement("EVENT_QUERY", stat, |engine| {
        // SAFETY: this function's contract.
        let (events, first) = unsafe { token::borrow(token)? }.variables(Holds::Events)?;
        let index = index + first;
        let image = token::image_or_this(image, engine.this_image())?;
        let n = engine.event_query(events, index, image)?;
        if count.is_null() {
            return Err(CafError::Argument("null count".into()));
        }
        // SAFETY: non-null `count` is writable (this function's contract).
        unsafe { *count = c_int::try_from(n).unwrap_or(c_int::MAX) };
        Ok(())
    });
}
