//! The hot path of an 8-byte put, get or atomic allocates nothing: checked with a
//! counting global allocator around a loop of each.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use gaspar::{GlobalPtr, Handle};

struct Counting;

thread_local! {
    /// Allocations made by this thread (the test harness's own threads do not count).
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: forwards every call to the system allocator unchanged; only counts them.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn put_get_and_atomics_do_not_allocate() {
    let facade = gaspar::init().unwrap();
    let array = facade.alloc::<u64>(4).unwrap();
    let rt = facade.acp();
    let word = GlobalPtr::<u64>::new(rt.starter_ga(0).unwrap());
    let other = rt.starter_ga(0).unwrap().offset(64).unwrap();
    let mut buf = [0u8; 8];
    // Warm up: the first operation of a thread sets up its handle slot.
    word.put(rt, &1).unwrap();
    let before = allocations();
    for i in 0..10_000u64 {
        word.put(rt, &i).unwrap();
        assert_eq!(word.get(rt).unwrap(), i);
        word.fetch_add(rt, 1).unwrap();
        word.compare_swap(rt, i + 1, i).unwrap();
        let h = rt.copy(other, word.ga(), 8, Handle::NULL).unwrap();
        rt.complete(h).unwrap();
        rt.get(&mut buf, other, Handle::NULL).unwrap();
        assert_eq!(u64::from_ne_bytes(buf), i);
        // The same through the facade's typed array.
        array.put(0, 3, &i).unwrap();
        assert_eq!(array.get(0, 3).unwrap(), i);
        array.fetch_add(0, 3, 1).unwrap();
        array.compare_swap(0, 3, i + 1, i).unwrap();
    }
    let after = allocations();
    assert_eq!(
        after - before,
        0,
        "the hot path allocated {} times",
        after - before
    );
    array.free().unwrap();
    facade.finalize().unwrap();
}
