//! Read-modify-write and mutexes.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};
use std::sync::Arc;

use gaspar::GlobalPtr;

use crate::mutex::MutexSet;
use crate::state::{state, State};

const FETCH_AND_ADD: c_int = 0;
const FETCH_AND_ADD_LONG: c_int = 1;
const SWAP: c_int = 2;
const SWAP_LONG: c_int = 3;

/// The caller's word at `ploc` as an atomic `A`, once checked not null and aligned: it
/// may lie in ARMCI memory that other processes write, so it is read and written only
/// atomically.
///
/// # Safety
/// A non-null `ploc` points to a word of `A`'s size of this process, valid for `'a`.
unsafe fn local_word<'a, A>(s: &State, call: &str, ploc: *mut c_void) -> &'a A {
    if ploc.is_null() {
        s.fail(call, "null local pointer");
    }
    let align = std::mem::align_of::<A>();
    if ploc as usize % align != 0 {
        s.fail(
            call,
            format!("local pointer {ploc:p} is not aligned to {align} bytes"),
        );
    }
    // SAFETY: not null and aligned (checked); `A` is an atomic with the layout of the
    // integer the caller's pointer names (caller's contract).
    unsafe { &*(ploc as *const A) }
}

/// ARMCI_Rmw: atomic fetch-and-add or swap on an int or long in `proc`'s ARMCI memory;
/// the old value lands in `*ploc` (for swaps, `*ploc` is also the value stored).
///
/// # Safety
/// `ploc` points to an int (or long for the _LONG operations) of this process.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Rmw(
    op: c_int,
    ploc: *mut c_void,
    prem: *mut c_void,
    value: c_int,
    proc: c_int,
) -> c_int {
    let call = "ARMCI_Rmw";
    let s = state(call);
    match op {
        FETCH_AND_ADD | SWAP => {
            // SAFETY: `ploc` points to an int (caller's contract).
            let local: &AtomicI32 = unsafe { local_word(s, call, ploc) };
            let word = GlobalPtr::<i32>::new(s.remote(call, prem, 4, proc));
            let old = if op == SWAP {
                s.check(call, word.swap(&s.rt, local.load(Ordering::Relaxed)))
            } else {
                s.check(call, word.fetch_add(&s.rt, value))
            };
            local.store(old, Ordering::Relaxed);
        }
        FETCH_AND_ADD_LONG | SWAP_LONG => {
            // SAFETY: `ploc` points to a long (caller's contract).
            let local: &AtomicI64 = unsafe { local_word(s, call, ploc) };
            let word = GlobalPtr::<i64>::new(s.remote(call, prem, 8, proc));
            let old = if op == SWAP_LONG {
                s.check(call, word.swap(&s.rt, local.load(Ordering::Relaxed)))
            } else {
                s.check(call, word.fetch_add(&s.rt, i64::from(value)))
            };
            local.store(old, Ordering::Relaxed);
        }
        other => s.fail(call, format!("unknown operation {other}")),
    }
    0
}

/// ARMCI_Create_mutexes: collective; `count` mutexes on this rank (counts may differ
/// between ranks).
#[no_mangle]
pub extern "C" fn ARMCI_Create_mutexes(count: c_int) -> c_int {
    let call = "ARMCI_Create_mutexes";
    let s = state(call);
    let mut mutexes = s.mutexes.lock().unwrap_or_else(|p| p.into_inner());
    if mutexes.is_some() {
        s.fail(call, "mutexes already exist; destroy them first");
    }
    let world = crate::group::world_members(s);
    *mutexes = Some(Arc::new(MutexSet::create(s, call, &world, count)));
    0
}

/// ARMCI_Destroy_mutexes: collective.
#[no_mangle]
pub extern "C" fn ARMCI_Destroy_mutexes() -> c_int {
    let call = "ARMCI_Destroy_mutexes";
    let s = state(call);
    let Some(set) = s.mutexes.lock().unwrap_or_else(|p| p.into_inner()).take() else {
        s.fail(call, "no mutexes exist");
    };
    let set = Arc::try_unwrap(set)
        .unwrap_or_else(|_| s.fail(call, "another thread of this rank is using the mutexes"));
    set.destroy(s, call);
    0
}

/// Runs `op` on the mutexes of ARMCI_Create_mutexes.
fn with_mutexes<T>(call: &str, op: impl FnOnce(&State, &MutexSet) -> T) -> T {
    let s = state(call);
    // Not held while `op` waits: another thread of this rank may unlock meanwhile.
    let set = s.mutexes.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let Some(set) = set else {
        s.fail(call, "no mutexes: call ARMCI_Create_mutexes first");
    };
    op(s, &set)
}

/// ARMCI_Lock: waits for mutex `mutex` on `proc`.
#[no_mangle]
pub extern "C" fn ARMCI_Lock(mutex: c_int, proc: c_int) {
    let call = "ARMCI_Lock";
    with_mutexes(call, |s, set| set.lock(s, call, mutex, proc));
}

/// ARMCI_Unlock: releases mutex `mutex` on `proc` (held by this rank).
#[no_mangle]
pub extern "C" fn ARMCI_Unlock(mutex: c_int, proc: c_int) {
    let call = "ARMCI_Unlock";
    with_mutexes(call, |s, set| set.unlock(s, call, mutex, proc));
}
