//! `atomic_define`, `atomic_ref`, `atomic_cas`, `atomic_op`: atomic subroutines on
//! integer and logical variables of kind 4 or 8 (atomic_int_kind, atomic_logical_kind).

use std::ffi::{c_int, c_void};

use gaspar::coarray::{AtomicOp, Coarrays, Image, Token};

use crate::abi::atomic_code;
use crate::error::CafError;
use crate::runtime;
use crate::stat::StatArgs;
use crate::token::{self, Holds};

/// The word an atomic subroutine works on.
struct Word<'a> {
    token: &'a Token,
    offset: usize,
    image: Image,
    width: u8,
}

/// Resolves gfortran's token, image (0: this image) and kind into a word.
///
/// # Safety
/// `token` is a registered token.
unsafe fn word<'a>(
    engine: &Coarrays,
    token: *mut c_void,
    offset: usize,
    image: c_int,
    kind: c_int,
) -> Result<Word<'a>, CafError> {
    // SAFETY: caller's contract.
    let token = unsafe { token::borrow(token)? }.memory_of(Holds::Data)?;
    let width = match kind {
        4 => 4,
        8 => 8,
        other => {
            return Err(CafError::Argument(format!(
                "atomic variable of kind {other} (atomic kinds are 4 and 8)"
            )))
        }
    };
    Ok(Word {
        token,
        offset,
        image: token::image_or_this(image, engine.this_image())?,
        width,
    })
}

/// Reads a value of `width` bytes (zero-extended).
///
/// # Safety
/// `ptr` holds `width` readable bytes.
unsafe fn load(ptr: *const c_void, width: u8) -> Result<u64, CafError> {
    if ptr.is_null() {
        return Err(CafError::Argument("null atomic value".into()));
    }
    // SAFETY: `ptr` holds a value of `width` bytes (caller's contract); unaligned reads
    // because gfortran's temporaries promise nothing.
    Ok(unsafe {
        if width == 4 {
            u64::from(ptr.cast::<u32>().read_unaligned())
        } else {
            ptr.cast::<u64>().read_unaligned()
        }
    })
}

/// Writes the low `width` bytes of `value`.
///
/// # Safety
/// `ptr` is null (nothing written) or holds `width` writable bytes.
unsafe fn store(ptr: *mut c_void, width: u8, value: u64) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: `ptr` holds `width` writable bytes (caller's contract).
    unsafe {
        if width == 4 {
            ptr.cast::<u32>().write_unaligned(value as u32)
        } else {
            ptr.cast::<u64>().write_unaligned(value)
        }
    }
}

/// `call atomic_define(atom[image], value)`.
///
/// # Safety
/// gfortran's arguments: a registered token, `value` of `kind` bytes, `stat` null or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_atomic_define(
    token: *mut c_void,
    offset: usize,
    image: c_int,
    value: *mut c_void,
    stat: *mut c_int,
    _type: c_int,
    kind: c_int,
) {
    // SAFETY: gfortran's STAT= argument.
    let stat = unsafe { StatArgs::stat_only(stat) };
    runtime::statement("ATOMIC_DEFINE", stat, |engine| {
        // SAFETY: this function's contract.
        let w = unsafe { word(engine, token, offset, image, kind)? };
        // SAFETY: `value` holds `kind` bytes.
        let v = unsafe { load(value, w.width)? };
        Ok(engine.atomic_define(w.token, w.offset, w.image, w.width, v)?)
    });
}

/// `call atomic_ref(value, atom[image])`.
///
/// # Safety
/// As [`_gfortran_caf_atomic_define`], `value` writable.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_atomic_ref(
    token: *mut c_void,
    offset: usize,
    image: c_int,
    value: *mut c_void,
    stat: *mut c_int,
    _type: c_int,
    kind: c_int,
) {
    // SAFETY: gfortran's STAT= argument.
    let stat = unsafe { StatArgs::stat_only(stat) };
    runtime::statement("ATOMIC_REF", stat, |engine| {
        // SAFETY: this function's contract.
        let w = unsafe { word(engine, token, offset, image, kind)? };
        let v = engine.atomic_ref(w.token, w.offset, w.image, w.width)?;
        // SAFETY: `value` holds `kind` writable bytes.
        unsafe { store(value, w.width, v) };
        Ok(())
    });
}

/// `call atomic_cas(atom[image], old, compare, new)`.
///
/// # Safety
/// As [`_gfortran_caf_atomic_define`]; `old` writable, `compare` and `new_val` readable.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_atomic_cas(
    token: *mut c_void,
    offset: usize,
    image: c_int,
    old: *mut c_void,
    compare: *mut c_void,
    new_val: *mut c_void,
    stat: *mut c_int,
    _type: c_int,
    kind: c_int,
) {
    // SAFETY: gfortran's STAT= argument.
    let stat = unsafe { StatArgs::stat_only(stat) };
    runtime::statement("ATOMIC_CAS", stat, |engine| {
        // SAFETY: this function's contract.
        let w = unsafe { word(engine, token, offset, image, kind)? };
        // SAFETY: `compare` and `new_val` hold `kind` bytes.
        let (c, n) = unsafe { (load(compare, w.width)?, load(new_val, w.width)?) };
        let previous = engine.atomic_cas(w.token, w.offset, w.image, w.width, c, n)?;
        // SAFETY: `old` holds `kind` writable bytes.
        unsafe { store(old, w.width, previous) };
        Ok(())
    });
}

/// `call atomic_add/and/or/xor(atom[image], value)` and the `atomic_fetch_*` forms (`old`
/// non-null receives the previous value).
///
/// # Safety
/// As [`_gfortran_caf_atomic_define`]; `old` null or writable.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_atomic_op(
    op: c_int,
    token: *mut c_void,
    offset: usize,
    image: c_int,
    value: *mut c_void,
    old: *mut c_void,
    stat: *mut c_int,
    _type: c_int,
    kind: c_int,
) {
    // SAFETY: gfortran's STAT= argument.
    let stat = unsafe { StatArgs::stat_only(stat) };
    runtime::statement("ATOMIC_ADD/AND/OR/XOR", stat, |engine| {
        let op = match op {
            atomic_code::ADD => AtomicOp::Add,
            atomic_code::AND => AtomicOp::And,
            atomic_code::OR => AtomicOp::Or,
            atomic_code::XOR => AtomicOp::Xor,
            other => return Err(CafError::Argument(format!("atomic operation {other}"))),
        };
        // SAFETY: this function's contract.
        let w = unsafe { word(engine, token, offset, image, kind)? };
        // SAFETY: `value` holds `kind` bytes.
        let v = unsafe { load(value, w.width)? };
        let previous = engine.atomic_fetch(op, w.token, w.offset, w.image, w.width, v)?;
        // SAFETY: `old` is null or holds `kind` writable bytes.
        unsafe { store(old, w.width, previous) };
        Ok(())
    });
}
