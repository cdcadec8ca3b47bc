//! `init`, `finalize`, `this_image`, `num_images`.

use std::ffi::{c_char, c_int};

use crate::runtime;
use crate::stat::StatArgs;

/// Called first thing in `main`: joins the job (unless a static coarray's registration
/// already did), then waits for every image to get here (and, for a program of gfortran 15
/// or later, starts the accessor service), so that the initial values the
/// constructors stored in static coarrays are there before any image reads another's.
/// The arguments are the program's; the launcher passes its settings in the environment,
/// so they are left as they are.
///
/// # Safety
/// gfortran passes `main`'s `argc` and `argv` (unused).
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) {
    // SAFETY: no STAT=: an error ends the job with one line.
    let stat = unsafe { StatArgs::stat_only(std::ptr::null_mut()) };
    runtime::statement("program start", stat, |engine| {
        engine.sync_all()?;
        if crate::accessor::table::any_registered() {
            crate::accessor::service::start(engine)?;
        }
        Ok(())
    });
}

/// Called when the main program ends normally: a termination barrier with the other
/// images, then the process exits with status 0 (libgfortran's exit handlers flush its
/// units).
#[no_mangle]
pub extern "C" fn _gfortran_caf_finalize() {
    runtime::take_for_termination().stop(0)
}

/// `this_image()`: this image's index in the current team (`distance` is for teams).
#[no_mangle]
pub extern "C" fn _gfortran_caf_this_image(_distance: c_int) -> c_int {
    runtime::query(|engine| engine.this_image() as c_int)
}

/// `num_images()`: images in the current team; with `failed` 1 the failed ones, with 0
/// the others, with -1 (absent) all.
#[no_mangle]
pub extern "C" fn _gfortran_caf_num_images(_distance: c_int, failed: c_int) -> c_int {
    runtime::query(|engine| {
        let all = engine.num_images() as c_int;
        let failed_count = || engine.failed_images().len() as c_int;
        match failed {
            1 => failed_count(),
            0 => all - failed_count(),
            _ => all,
        }
    })
}
