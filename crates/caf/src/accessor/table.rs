//! The accessor table: `register_accessor`, `register_accessors_finish`,
//! `get_remote_function_index`. Every image registers the same accessors (the same
//! program), perhaps in another order (constructors of several units); sorting by hash at
//! `register_accessors_finish` makes an index name the same accessor on every image.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::Mutex;

/// An accessor as gfortran registers it: the three kinds share one pointer type and are
/// told apart by the call that uses them ([`super::owner`] casts it).
pub(crate) type AccessorFn = unsafe extern "C" fn();

/// The registered accessors, sorted by hash once finished.
struct Table {
    entries: Vec<(c_int, AccessorFn)>,
    sorted: bool,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    entries: Vec::new(),
    sorted: false,
});

/// The finished table, read without the lock on every transfer; null until
/// `register_accessors_finish` and after a registration that came later. Each finished table
/// is leaked (a reader may still hold an older one); a program finishes its table once,
/// after its constructors registered every accessor.
static FINISHED: AtomicPtr<Vec<AccessorFn>> = AtomicPtr::new(std::ptr::null_mut());

fn table() -> std::sync::MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Set by `register_accessors_finish`, which every program compiled by gfortran 15 or
/// later calls at start-up (with or without accessors) and earlier compilers never call.
static ACCESSOR_ABI: AtomicBool = AtomicBool::new(false);

/// Whether the program was compiled by gfortran 15 or later (it finished its accessor
/// table), whose descriptors carry a valid `span`; gfortran 12-14 leave it unset in some
/// temporaries, and their libraries (GCC's single.c, OpenCoarrays) never read it.
#[inline]
pub(crate) fn accessor_abi() -> bool {
    ACCESSOR_ABI.load(Ordering::Relaxed)
}

/// Whether the program registered any accessor (it was compiled by gfortran 15 or later).
pub(crate) fn any_registered() -> bool {
    !table().entries.is_empty()
}

/// The accessor at `index` of the finished table: `None` for an index it does not have,
/// and before the program finished its table (no lock taken: for the fast paths, which
/// then leave the call to the engine path's [`accessor`]).
#[inline(always)]
pub(crate) fn finished_accessor(index: c_int) -> Option<AccessorFn> {
    let finished = FINISHED.load(Ordering::Acquire);
    if finished.is_null() {
        return None;
    }
    // SAFETY: a finished table is leaked, never freed nor changed.
    let finished = unsafe { &*finished };
    // A negative index becomes one past any table (2^31 or more): one comparison.
    finished.get(index as u32 as usize).copied()
}

/// The accessor at `index`, or `None` for an index the table does not have.
#[inline]
pub(crate) fn accessor(index: c_int) -> Option<AccessorFn> {
    if let Some(f) = finished_accessor(index) {
        return Some(f);
    }
    let table = table();
    usize::try_from(index)
        .ok()
        .and_then(|i| table.entries.get(i))
        .map(|&(_, f)| f)
}

/// `hash`'s accessor, as a constructor registers it before `main`.
///
/// # Safety
/// `accessor` is one of the program's generated accessor functions.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_register_accessor(hash: c_int, accessor: *const c_void) {
    if accessor.is_null() {
        return;
    }
    // SAFETY: a function pointer gfortran passes (this function's contract); it is only
    // called after a cast to the accessor's own type.
    let f = unsafe { std::mem::transmute::<*const c_void, AccessorFn>(accessor) };
    let mut table = table();
    table.entries.push((hash, f));
    table.sorted = false;
    FINISHED.store(std::ptr::null_mut(), Ordering::Release);
}

/// Sorts the table by hash (stable: registration order breaks ties, the same everywhere).
#[no_mangle]
pub extern "C" fn _gfortran_caf_register_accessors_finish() {
    ACCESSOR_ABI.store(true, Ordering::Relaxed);
    let mut table = table();
    if !table.sorted {
        table.entries.sort_by_key(|&(hash, _)| hash);
        table.sorted = true;
        let finished: Vec<AccessorFn> = table.entries.iter().map(|&(_, f)| f).collect();
        FINISHED.store(Box::into_raw(Box::new(finished)), Ordering::Release);
    }
}

/// The index of `hash`'s accessor, -1 when none was registered.
#[no_mangle]
pub extern "C" fn _gfortran_caf_get_remote_function_index(hash: c_int) -> c_int {
    _gfortran_caf_register_accessors_finish();
    let table = table();
    match table.entries.binary_search_by_key(&hash, |&(h, _)| h) {
        Ok(i) => c_int::try_from(i).unwrap_or(-1),
        Err(_) => -1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" fn first() {}
    unsafe extern "C" fn second() {}

    #[test]
    fn an_index_names_the_same_accessor_whatever_the_registration_order() {
        // SAFETY: test functions stand in for accessors; they are never called.
        unsafe {
            _gfortran_caf_register_accessor(900, second as *const c_void);
            _gfortran_caf_register_accessor(100, first as *const c_void);
        }
        _gfortran_caf_register_accessors_finish();
        let low = _gfortran_caf_get_remote_function_index(100);
        let high = _gfortran_caf_get_remote_function_index(900);
        assert!(low < high, "{low} {high}");
        assert_eq!(
            accessor(low).map(|f| f as usize),
            Some(first as *const () as usize)
        );
        assert_eq!(
            accessor(high).map(|f| f as usize),
            Some(second as *const () as usize)
        );
        assert_eq!(_gfortran_caf_get_remote_function_index(555), -1);
    }
}
