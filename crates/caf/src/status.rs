//! `image_status`, `failed_images`, `stopped_images`.

use std::ffi::{c_int, c_void};

use gaspar::coarray::Image;

use crate::abi::type_code;
use crate::descriptor::Descriptor;
use crate::runtime;
use crate::stat::StatArgs;
use crate::token;

/// `image_status(image)`: 0, STAT_STOPPED_IMAGE or STAT_FAILED_IMAGE; an image past
/// `num_images()` counts as stopped (as GCC's libraries and its test image_status_2 have it).
#[no_mangle]
pub extern "C" fn _gfortran_caf_image_status(image: c_int, _team: *mut c_void) -> c_int {
    // SAFETY: no STAT=: an error ends the job with one line.
    let stat = unsafe { StatArgs::stat_only(std::ptr::null_mut()) };
    runtime::statement("IMAGE_STATUS", stat, |engine| {
        let image = token::image(image)?;
        if image > engine.num_images() {
            return Ok(gaspar::coarray::stat::STOPPED_IMAGE);
        }
        Ok(engine.image_status(image)?)
    })
    .unwrap_or(0)
}

/// `failed_images()`: fills the rank-1 result descriptor with a new array (libgfortran
/// frees it) of the failed images, integers of `*kind` bytes (4 when absent), bounds
/// 0..n-1.
///
/// # Safety
/// `array` is gfortran's rank-1 result descriptor; `kind` null or readable.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_failed_images(
    array: *mut Descriptor,
    _team: *mut c_void,
    kind: *const c_int,
) {
    let images = runtime::query(|engine| engine.failed_images());
    // SAFETY: this function's contract.
    unsafe { fill(array, kind, &images) };
}

/// `stopped_images()`: as [`_gfortran_caf_failed_images`], for stopped images.
///
/// # Safety
/// As [`_gfortran_caf_failed_images`].
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_stopped_images(
    array: *mut Descriptor,
    _team: *mut c_void,
    kind: *const c_int,
) {
    let images = runtime::query(|engine| engine.stopped_images());
    // SAFETY: this function's contract.
    unsafe { fill(array, kind, &images) };
}

/// Stores `images` as a new rank-1 integer array in `array`.
///
/// # Safety
/// As [`_gfortran_caf_failed_images`].
unsafe fn fill(array: *mut Descriptor, kind: *const c_int, images: &[Image]) {
    // SAFETY: `kind` is null or readable (caller's contract).
    let kind = if kind.is_null() { 4 } else { unsafe { *kind } };
    let width = if kind == 8 { 8usize } else { 4 };
    let data = if images.is_empty() {
        std::ptr::null_mut()
    } else {
        // SAFETY: plain allocation; libgfortran frees the array with free().
        let data = unsafe { libc::malloc(width * images.len()) };
        if data.is_null() {
            crate::error::say("gaspar caf: out of memory for the image list");
            std::process::exit(1);
        }
        for (i, &image) in images.iter().enumerate() {
            // SAFETY: `data` holds `images.len()` integers of `width` bytes.
            unsafe {
                if width == 8 {
                    data.cast::<i64>().add(i).write(i64::from(image))
                } else {
                    data.cast::<i32>().add(i).write(image as i32)
                }
            }
        }
        data
    };
    // SAFETY: gfortran's rank-1 result descriptor, writable, with one dimension.
    unsafe {
        let d = &mut *array;
        d.base_addr = data;
        d.dtype.type_code = type_code::INTEGER;
        d.dtype.elem_len = width;
        d.dtype.rank = 1;
        d.span = width as isize;
        // gfortran 12 copies the result into the program's array as 0-based bounds
        // (it adds its own lower bound to `upper_bound`), as libcaf_single returns them.
        d.offset = 0;
        let dim = &mut *d.dim.as_mut_ptr();
        dim.lower_bound = 0;
        dim.upper_bound = images.len() as isize - 1;
        dim.stride = 1;
    }
}
