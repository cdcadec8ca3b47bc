//! LOCK and UNLOCK (also the lock of a CRITICAL construct, which gfortran registers as
//! `CRITICAL` and locks on image 1).
//!
//! A lock variable is an 8-byte word of its image's part: 0 when unlocked, the holder's
//! job rank + 1 when locked, plus [`LOCK_WAITERS`] once another image waits for it (the
//! engine's [`gaspar::coarray::Coarrays::lock`]): an UNLOCK that finds nobody waiting
//! wakes nobody. The first
//! statement on an image's lock goes through the engine, which also says where the part is
//! mapped here; later ones try the CPU's compare-and-swap on the mapped word first
//! ([`crate::words`]) and leave to the engine only what that does not settle: a lock
//! another image holds (the engine waits, and reports the holder's stopping or failing),
//! a lock this image holds already, an unlock of a lock this image does not hold.
//! On shm a put is complete at its target when issued, so LOCK/UNLOCK have no puts to
//! complete first; elsewhere the fast path completes them first, as the engine's LOCK and
//! UNLOCK do. A fast UNLOCK of a lock others wait for wakes them, as the engine's does.

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

use gaspar::coarray::{CoError, Coarrays, Image, LOCK_WAITERS};

use crate::routes::{MappedWord, Route};
use crate::runtime;
use crate::stat::StatArgs;
use crate::token::{self, CafToken, Holds};
use crate::words;

/// What this image writes in a lock word it holds: its job rank + 1 (0 before start).
static HOLDER: AtomicU64 = AtomicU64::new(0);

/// Says this image's job rank (at start).
pub(crate) fn set_holder(rank: u32) {
    HOLDER.store(u64::from(rank) + 1, Ordering::Relaxed);
}

/// The mapped word of lock `index` (counted from the token's first) of `image` (0: this
/// image), when a statement on it went through the engine before.
#[inline(always)]
fn mapped_lock(caf: &CafToken, index: usize, image: c_int) -> Option<MappedWord> {
    if caf.holds != Holds::Locks {
        return None;
    }
    caf.word_routes.word(image, index.checked_mul(8)?, 8)
}

/// The lock word at `word`.
///
/// # Safety
/// `word` is a word [`mapped_lock`] returned: mapped, 8-byte aligned, touched by every
/// process only through atomics.
#[inline(always)]
unsafe fn lock_word<'a>(word: MappedWord) -> &'a AtomicU64 {
    // SAFETY: this function's contract.
    unsafe { AtomicU64::from_ptr(word.addr as *mut u64) }
}

/// Keeps where `image`'s part of the lock token is mapped, for the next statement on it.
fn remember_route(engine: &Coarrays, caf: &CafToken, raw_image: c_int, image: Image) {
    let Ok((memory, offset)) = caf.memory_at() else {
        return;
    };
    if let Ok(part) = engine.part(memory, image) {
        if let (Some(base), true) = (part.mapped, part.processor_atomics) {
            let route = Route {
                base: base + offset,
                len: engine.len(memory).saturating_sub(offset),
                rank: part.rank,
            };
            caf.word_routes
                .record(raw_image, engine.runtime().procs() as usize, route);
        }
    }
}

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
    runtime::control_statement("LOCK", stat, |engine| {
        // SAFETY: this function's contract.
        let caf = unsafe { token::borrow(token)? };
        let word = mapped_lock(caf, index, image);
        if word.is_some() && !words::puts_complete_when_issued() {
            engine.sync_memory()?;
        }
        let fast = word.is_some_and(|word| {
            let holder = HOLDER.load(Ordering::Relaxed);
            // SAFETY: a word `mapped_lock` found.
            let lock = unsafe { lock_word(word) };
            lock.compare_exchange(0, holder, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        });
        let acquired = if fast {
            true
        } else {
            let (locks, first) = caf.variables(Holds::Locks)?;
            let target = token::image_or_this(image, engine.this_image())?;
            let acquired = engine.lock(locks, index + first, target, !acquired_lock.is_null())?;
            remember_route(engine, caf, image, target);
            acquired
        };
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
    runtime::control_statement("UNLOCK", stat, |engine| {
        // SAFETY: this function's contract.
        let caf = unsafe { token::borrow(token)? };
        if let Some(word) = mapped_lock(caf, index, image) {
            if !words::puts_complete_when_issued() {
                engine.sync_memory()?;
            }
            let holder = HOLDER.load(Ordering::Relaxed);
            // SAFETY: a word `mapped_lock` found.
            let lock = unsafe { lock_word(word) };
            match lock.compare_exchange(holder, 0, Ordering::AcqRel, Ordering::Acquire) {
                // Nobody waits: nobody to wake.
                Ok(_) => return Ok(()),
                Err(seen) if seen == holder | LOCK_WAITERS => {
                    // Only the holder clears the word: this cannot fail.
                    if lock
                        .compare_exchange(seen, 0, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                    {
                        // Wakes the images waiting for the lock, which sleep on its
                        // owner's memory.
                        engine
                            .runtime()
                            .fence(word.rank)
                            .map_err(CoError::Runtime)?;
                        return Ok(());
                    }
                }
                Err(_) => {}
            }
        }
        let (locks, first) = caf.variables(Holds::Locks)?;
        let target = token::image_or_this(image, engine.this_image())?;
        engine.unlock(locks, index + first, target)?;
        remember_route(engine, caf, image, target);
        Ok(())
    });
}
