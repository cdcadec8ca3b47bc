//! The fast path: a get or send whose target has a route ([`super::routes`]) runs its
//! accessor right here against the routed address, as GCC's caf_shmem does against its
//! own mapping: no engine, no lock, no copy of a descriptor (the coarray's descriptor is
//! pointed at the part for the call and given its address back after, as caf_shmem does).

use std::ffi::{c_int, c_void};

use super::owner;
use super::routes;
use crate::descriptor::Descriptor;
use crate::token;

/// The address in this process of `image`'s part of `token`, when an accessor ran against
/// it before in the current team.
///
/// # Safety
/// `token` is null, a coarray token or a callback token (gfortran passes no other).
#[inline]
pub(crate) unsafe fn route(token: *mut c_void, image: c_int) -> Option<usize> {
    // SAFETY: this function's contract: a non-null token starts with its kind.
    if token.is_null() || unsafe { routes::kind(token) } != routes::COARRAY_TOKEN {
        return None;
    }
    // SAFETY: a coarray token (checked above).
    unsafe { token::borrow(token) }.ok()?.routes.base(image)
}

/// Points a coarray's descriptor at `base` for one accessor call, and back when dropped.
struct Pointed {
    desc: *mut Descriptor,
    old: *mut c_void,
}

impl Pointed {
    /// The accessor's argument for the part at `base`: `desc` pointed at it, or `base`
    /// itself for a coarray without descriptor.
    ///
    /// # Safety
    /// `desc` is null or the coarray's descriptor, writable for the call (as caf_shmem
    /// writes it).
    unsafe fn at(desc: *const c_void, base: usize) -> (Pointed, *mut c_void) {
        let desc = desc.cast_mut().cast::<Descriptor>();
        if desc.is_null() {
            let none = Pointed {
                desc,
                old: std::ptr::null_mut(),
            };
            return (none, base as *mut c_void);
        }
        // SAFETY: a writable descriptor (this function's contract).
        let old = unsafe { std::mem::replace(&mut (*desc).base_addr, base as *mut c_void) };
        (Pointed { desc, old }, desc.cast())
    }
}

impl Drop for Pointed {
    fn drop(&mut self) {
        if !self.desc.is_null() {
            // SAFETY: the descriptor `at` was given, still live (the call has not returned).
            unsafe { (*self.desc).base_addr = self.old };
        }
    }
}

/// What a get needs besides the part: gfortran's arguments, as `get_from_remote` takes them.
pub(crate) struct Get {
    pub(crate) src_desc: *const c_void,
    pub(crate) src_charlen: *const usize,
    pub(crate) image: c_int,
    pub(crate) dst_data: *mut *mut c_void,
    pub(crate) dst_charlen: *mut usize,
    pub(crate) dst_desc: *mut Descriptor,
    pub(crate) may_realloc: bool,
    pub(crate) getter: c_int,
    pub(crate) add_data: *mut c_void,
}

/// Runs the getter against the part at `base`, as caf_shmem's `get_from_remote` does;
/// false when the getter is unknown or the source and destination share a descriptor (the
/// engine path handles both).
///
/// # Safety
/// `base` is a route of the coarray the arguments name; the arguments are as gfortran
/// 15/16 pass them.
#[inline(always)]
pub(crate) unsafe fn get(base: usize, a: &Get) -> bool {
    // SAFETY: `get_from_remote` names a getter.
    let Some(getter) = (unsafe { owner::getter(a.getter) }) else {
        return false;
    };
    if !a.dst_desc.is_null() && a.dst_desc.cast_const().cast() == a.src_desc {
        return false;
    }
    // SAFETY: the coarray's descriptor (this function's contract).
    let (_pointed, src) = unsafe { Pointed::at(a.src_desc, base) };
    let dst: *mut c_void = if a.dst_desc.is_null() {
        a.dst_data.cast()
    } else {
        a.dst_desc.cast()
    };
    let mut kept = std::ptr::null_mut();
    if !a.dst_desc.is_null() && !a.may_realloc {
        // SAFETY: the destination's descriptor, writable (this function's contract).
        kept = unsafe { std::mem::replace(&mut (*a.dst_desc).base_addr, std::ptr::null_mut()) };
    }
    let mut free_buffer: i32 = 0;
    let image = a.image;
    // SAFETY: the arguments a getter takes, as GCC's single.c passes them.
    owner::with_callback(a.add_data, None, |callback| unsafe {
        getter(
            a.add_data,
            &image,
            dst,
            &mut free_buffer,
            src,
            callback,
            0,
            a.dst_charlen,
            a.src_charlen,
        )
    });
    if !kept.is_null() {
        // SAFETY: the destination's descriptor, which the getter filled.
        unsafe { restore_destination(a.dst_desc, kept) };
    }
    true
}

/// Copies what a getter allocated back into the destination's own memory `kept` (the
/// destination may not be reallocated) and frees it, as caf_shmem does.
///
/// # Safety
/// `desc` is a descriptor a getter filled; `kept` holds as many elements.
#[cold]
unsafe fn restore_destination(desc: *mut Descriptor, kept: *mut c_void) {
    // SAFETY: this function's contract: the header and `rank` dimensions are readable.
    unsafe {
        let fresh = (*desc).base_addr;
        if fresh != kept {
            let rank = (*desc).dtype.rank.max(0) as usize;
            let dims = std::slice::from_raw_parts((*desc).dim.as_ptr(), rank);
            let bytes = dims
                .iter()
                .map(|d| (d.upper_bound - d.lower_bound + 1).max(0) as usize)
                .product::<usize>()
                * (*desc).span.max(0) as usize;
            std::ptr::copy_nonoverlapping(fresh.cast::<u8>(), kept.cast::<u8>(), bytes);
            libc::free(fresh);
        }
        (*desc).base_addr = kept;
    }
}

/// What a send needs besides the part: gfortran's arguments, as `send_to_remote` takes them.
pub(crate) struct Send {
    pub(crate) dst_desc: *const c_void,
    pub(crate) dst_charlen: *const usize,
    pub(crate) image: c_int,
    pub(crate) src: *const c_void,
    pub(crate) src_charlen: *const usize,
    pub(crate) receiver: c_int,
    pub(crate) add_data: *mut c_void,
}

/// Runs the receiver against the part at `base`, as caf_shmem's `send_to_remote` does;
/// `false` when the receiver is unknown (the engine path reports it) or the source is the
/// coarray's own descriptor (pointing it at the part would change the source).
///
/// # Safety
/// As [`get`], for `send_to_remote`'s arguments.
#[inline(always)]
pub(crate) unsafe fn send(base: usize, a: &Send) -> bool {
    // SAFETY: `send_to_remote` names a receiver.
    let Some(receiver) = (unsafe { owner::receiver(a.receiver) }) else {
        return false;
    };
    if !a.dst_desc.is_null() && a.dst_desc == a.src {
        return false;
    }
    // SAFETY: the coarray's descriptor (this function's contract).
    let (_pointed, dst) = unsafe { Pointed::at(a.dst_desc, base) };
    let image = a.image;
    // SAFETY: the arguments a receiver takes, as GCC's single.c passes them.
    owner::with_callback(a.add_data, None, |callback| unsafe {
        receiver(
            a.add_data,
            &image,
            dst,
            a.src,
            callback,
            0,
            a.dst_charlen,
            a.src_charlen,
        )
    });
    true
}
