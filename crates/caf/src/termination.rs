//! STOP, ERROR STOP and FAIL IMAGE, with gfortran's messages (on stderr unless QUIET=) and
//! exit codes: `stop n` exits n, `stop 'text'` 0, `error stop n` ends every image with n,
//! `error stop 'text'` with 1.

use std::ffi::{c_char, c_int};

use crate::runtime;

/// `stop n`: a normal termination of this image with exit code n.
#[no_mangle]
pub extern "C" fn _gfortran_caf_stop_numeric(code: c_int, quiet: bool) -> ! {
    if !quiet {
        crate::error::say(&format!("STOP {code}"));
    }
    runtime::take_for_termination().stop(code)
}

/// `stop` and `stop 'text'`: a normal termination with exit code 0.
///
/// # Safety
/// `text` is null or `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_stop_str(text: *const c_char, len: usize, quiet: bool) -> ! {
    if !quiet {
        // SAFETY: gfortran's stop code text (this function's contract).
        if let Some(text) = unsafe { stop_text(text, len) } {
            crate::error::say(&format!("STOP {text}"));
        }
    }
    runtime::take_for_termination().stop(0)
}

/// `error stop n`: ends every image; exit code n.
#[no_mangle]
pub extern "C" fn _gfortran_caf_error_stop(code: c_int, quiet: bool) -> ! {
    if !quiet {
        crate::error::say(&format!("ERROR STOP {code}"));
    }
    runtime::take_for_termination().error_stop(code)
}

/// `error stop` and `error stop 'text'`: ends every image; exit code 1.
///
/// # Safety
/// `text` is null or `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_error_stop_str(
    text: *const c_char,
    len: usize,
    quiet: bool,
) -> ! {
    if !quiet {
        // SAFETY: gfortran's stop code text (this function's contract).
        if let Some(text) = unsafe { stop_text(text, len) } {
            crate::error::say(&format!("ERROR STOP {text}"));
        }
    }
    runtime::take_for_termination().error_stop(1)
}

/// `fail image`: this image stops taking part; the others see it as failed.
#[no_mangle]
pub extern "C" fn _gfortran_caf_fail_image() -> ! {
    runtime::take_for_termination().fail_image()
}

/// The stop code text, `None` when absent.
///
/// # Safety
/// `text` is null or `len` readable bytes.
unsafe fn stop_text(text: *const c_char, len: usize) -> Option<String> {
    if text.is_null() {
        return None;
    }
    // SAFETY: non-null text holds `len` bytes (caller's contract).
    let bytes = unsafe { std::slice::from_raw_parts(text.cast::<u8>(), len) };
    Some(String::from_utf8_lossy(bytes).into_owned())
}
