//! `atomic_define`, `atomic_ref`, `atomic_cas`, `atomic_op`: atomic subroutines on
//! integer and logical variables of kind 4 or 8 (atomic_int_kind, atomic_logical_kind).
//!
//! The first one on an image's part goes through the engine, which also says where the
//! part is mapped here; later ones are the CPU's atomic on the mapped word
//! ([`crate::words`]), where the runtime's own atomics are the CPU's too.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use gaspar::coarray::{Coarrays, FetchOp, Image, Token};
use gaspar::AtomicOp as WordOp;

use crate::abi::atomic_code;
use crate::error::CafError;
use crate::routes::Route;
use crate::runtime;
use crate::stat::StatArgs;
use crate::token::{self, CafToken, Holds};

/// The word an atomic subroutine works on.
struct Word<'a> {
    caf: &'a CafToken,
    token: &'a Token,
    offset: usize,
    image: Image,
    width: u8,
}

impl Word<'_> {
    /// Keeps where this word's part is mapped, for the next statement on it to find
    /// ([`mapped_word`]); `raw_image` is gfortran's image argument (0: this image).
    fn remember_route(&self, engine: &Coarrays, raw_image: c_int) {
        if let Ok(part) = engine.part(self.token, self.image) {
            if let (Some(base), true) = (part.mapped, part.processor_atomics) {
                let route = Route {
                    base,
                    len: engine.len(self.token),
                    rank: part.rank,
                };
                self.caf
                    .word_routes
                    .record(raw_image, engine.runtime().procs() as usize, route);
            }
        }
    }
}

/// The width of an atomic kind, or an error naming it.
fn width_of(kind: c_int) -> Result<u8, CafError> {
    match kind {
        4 => Ok(4),
        8 => Ok(8),
        other => Err(CafError::Argument(format!(
            "atomic variable of kind {other} (atomic kinds are 4 and 8)"
        ))),
    }
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
    let caf = unsafe { token::borrow(token)? };
    let memory = caf.memory_of(Holds::Data)?;
    Ok(Word {
        caf,
        token: memory,
        offset,
        image: token::image_or_this(image, engine.this_image())?,
        width: width_of(kind)?,
    })
}

/// A word of another process's memory (or this one's) that this process may do CPU
/// atomics on: the fast path.
#[derive(Clone, Copy)]
struct MappedWord {
    addr: usize,
    width: u8,
}

/// The fast path's word for gfortran's arguments, when the engine mapped it before.
///
/// # Safety
/// `token` is null or a registered token.
#[inline(always)]
unsafe fn mapped_word(
    token: *mut c_void,
    offset: usize,
    image: c_int,
    kind: c_int,
) -> Option<MappedWord> {
    let width = match kind {
        4 => 4,
        8 => 8,
        _ => return None,
    };
    if token.is_null() {
        return None;
    }
    // SAFETY: a registered token (this function's contract).
    let caf = unsafe { token::borrow(token) }.ok()?;
    let word = caf.word_routes.word(image, offset, usize::from(width))?;
    Some(MappedWord {
        addr: word.addr,
        width,
    })
}

impl MappedWord {
    /// Does `op` on the word and returns its previous value (zero-extended), with the
    /// orders the shm transport's atomics use.
    ///
    /// # Safety
    /// The word is mapped, aligned to its width, and touched by every process only
    /// through atomics ([`crate::words`]).
    #[inline(always)]
    unsafe fn apply(self, op: WordOp) -> u64 {
        const ORD: Ordering = Ordering::AcqRel;
        if self.width == 4 {
            // SAFETY: this function's contract: a mapped, 4-byte aligned word.
            let w = unsafe { AtomicU32::from_ptr(self.addr as *mut u32) };
            let low = |v: u64| v as u32;
            u64::from(match op {
                WordOp::CompareSwap { expected, new } => {
                    match w.compare_exchange(low(expected), low(new), ORD, Ordering::Acquire) {
                        Ok(v) | Err(v) => v,
                    }
                }
                WordOp::Swap(v) | WordOp::Store(v) => w.swap(low(v), ORD),
                WordOp::Add(v) => w.fetch_add(low(v), ORD),
                WordOp::Xor(v) => w.fetch_xor(low(v), ORD),
                WordOp::Or(v) => w.fetch_or(low(v), ORD),
                WordOp::And(v) => w.fetch_and(low(v), ORD),
                WordOp::Load => w.load(Ordering::Acquire),
            })
        } else {
            // SAFETY: this function's contract: a mapped, 8-byte aligned word.
            let w = unsafe { AtomicU64::from_ptr(self.addr as *mut u64) };
            match op {
                WordOp::CompareSwap { expected, new } => {
                    match w.compare_exchange(expected, new, ORD, Ordering::Acquire) {
                        Ok(v) | Err(v) => v,
                    }
                }
                WordOp::Swap(v) | WordOp::Store(v) => w.swap(v, ORD),
                WordOp::Add(v) => w.fetch_add(v, ORD),
                WordOp::Xor(v) => w.fetch_xor(v, ORD),
                WordOp::Or(v) => w.fetch_or(v, ORD),
                WordOp::And(v) => w.fetch_and(v, ORD),
                WordOp::Load => w.load(Ordering::Acquire),
            }
        }
    }
}

/// Runs the statement on the mapped word when there is one: `op` makes the operation from
/// the word's width (`None`: a null value, which the engine path reports), and the
/// previous value goes to `old` (null: nowhere). True when done, STAT= set.
///
/// # Safety
/// gfortran's arguments: `token` null or registered, `old` null or writable for the
/// kind's width, `stat` null or writable.
#[inline(always)]
unsafe fn on_mapped_word(
    token: *mut c_void,
    offset: usize,
    image: c_int,
    kind: c_int,
    stat: *mut c_int,
    old: *mut c_void,
    op: impl FnOnce(u8) -> Option<WordOp>,
) -> bool {
    // SAFETY: this function's contract.
    let Some(word) = (unsafe { mapped_word(token, offset, image, kind) }) else {
        return false;
    };
    let Some(op) = op(word.width) else {
        return false;
    };
    // SAFETY: a word `mapped_word` found.
    let previous = unsafe { word.apply(op) };
    // SAFETY: `old` is null or writable for the width (this function's contract).
    unsafe {
        store(old, word.width, previous);
        StatArgs::stat_only(stat).success();
    }
    true
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

/// Runs the statement on the engine: the first on a word, and whatever the fast path
/// leaves. Out of line, so that the entry points' fast path stays a few instructions.
#[cold]
#[inline(never)]
fn on_engine(name: &str, stat: StatArgs, f: impl FnOnce(&mut Coarrays) -> Result<(), CafError>) {
    runtime::statement(name, stat, f);
}

/// A value of `width` bytes at `ptr` for the fast path (`None`: null, which the engine
/// path reports).
///
/// # Safety
/// `ptr` is null or holds `width` readable bytes.
#[inline(always)]
unsafe fn value_at(ptr: *const c_void, width: u8) -> Option<u64> {
    // SAFETY: this function's contract.
    unsafe { load(ptr, width) }.ok()
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
    // SAFETY: this function's contract; `value` holds `kind` bytes.
    let done = unsafe {
        on_mapped_word(
            token,
            offset,
            image,
            kind,
            stat,
            std::ptr::null_mut(),
            |w| value_at(value, w).map(WordOp::Store),
        )
    };
    if done {
        return;
    }
    // SAFETY: gfortran's STAT= argument.
    let stat = unsafe { StatArgs::stat_only(stat) };
    on_engine("ATOMIC_DEFINE", stat, |engine| {
        // SAFETY: this function's contract.
        let w = unsafe { word(engine, token, offset, image, kind)? };
        // SAFETY: `value` holds `kind` bytes.
        let v = unsafe { load(value, w.width)? };
        engine.atomic_define(w.token, w.offset, w.image, w.width, v)?;
        w.remember_route(engine, image);
        Ok(())
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
    // SAFETY: this function's contract: `value`, where the load's value goes, is writable.
    let done = unsafe {
        on_mapped_word(token, offset, image, kind, stat, value, |_| {
            (!value.is_null()).then_some(WordOp::Load)
        })
    };
    if done {
        return;
    }
    // SAFETY: gfortran's STAT= argument.
    let stat = unsafe { StatArgs::stat_only(stat) };
    on_engine("ATOMIC_REF", stat, |engine| {
        // SAFETY: this function's contract.
        let w = unsafe { word(engine, token, offset, image, kind)? };
        let v = engine.atomic_ref(w.token, w.offset, w.image, w.width)?;
        // SAFETY: `value` holds `kind` writable bytes.
        unsafe { store(value, w.width, v) };
        w.remember_route(engine, image);
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
    // SAFETY: this function's contract; `compare` and `new_val` hold `kind` bytes.
    let done = unsafe {
        on_mapped_word(token, offset, image, kind, stat, old, |w| {
            Some(WordOp::CompareSwap {
                expected: value_at(compare, w)?,
                new: value_at(new_val, w)?,
            })
        })
    };
    if done {
        return;
    }
    // SAFETY: gfortran's STAT= argument.
    let stat = unsafe { StatArgs::stat_only(stat) };
    on_engine("ATOMIC_CAS", stat, |engine| {
        // SAFETY: this function's contract.
        let w = unsafe { word(engine, token, offset, image, kind)? };
        // SAFETY: `compare` and `new_val` hold `kind` bytes.
        let (c, n) = unsafe { (load(compare, w.width)?, load(new_val, w.width)?) };
        let previous = engine.atomic_cas(w.token, w.offset, w.image, w.width, c, n)?;
        // SAFETY: `old` holds `kind` writable bytes.
        unsafe { store(old, w.width, previous) };
        w.remember_route(engine, image);
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
    let code = op;
    let op = match code {
        atomic_code::ADD => Some(FetchOp::Add),
        atomic_code::AND => Some(FetchOp::And),
        atomic_code::OR => Some(FetchOp::Or),
        atomic_code::XOR => Some(FetchOp::Xor),
        _ => None,
    };
    // SAFETY: this function's contract; `value` holds `kind` bytes.
    let done = unsafe {
        on_mapped_word(token, offset, image, kind, stat, old, |w| {
            let v = value_at(value, w)?;
            Some(match op? {
                FetchOp::Add => WordOp::Add(v),
                FetchOp::And => WordOp::And(v),
                FetchOp::Or => WordOp::Or(v),
                FetchOp::Xor => WordOp::Xor(v),
            })
        })
    };
    if done {
        return;
    }
    // SAFETY: gfortran's STAT= argument.
    let stat = unsafe { StatArgs::stat_only(stat) };
    on_engine("ATOMIC_ADD/AND/OR/XOR", stat, |engine| {
        let op = op.ok_or_else(|| CafError::Argument(format!("atomic operation {code}")))?;
        // SAFETY: this function's contract.
        let w = unsafe { word(engine, token, offset, image, kind)? };
        // SAFETY: `value` holds `kind` bytes.
        let v = unsafe { load(value, w.width)? };
        let previous = engine.atomic_fetch(op, w.token, w.offset, w.image, w.width, v)?;
        // SAFETY: `old` is null or holds `kind` writable bytes.
        unsafe { store(old, w.width, previous) };
        w.remember_route(engine, image);
        Ok(())
    });
}
