//! A coarray scalar put and get (of one kind, or converted), an atomic and a sync memory
//! allocate nothing: checked with a counting global allocator around a loop of each (one
//! image, no launcher).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use gaspar::coarray::{Coarrays, Elem, ElemType, FetchOp, Section};

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
fn scalar_transfers_atomics_and_sync_memory_do_not_allocate() {
    let mut co = Coarrays::init().unwrap();
    let token = co.allocate(64).unwrap();
    let i8k = Elem::new(ElemType::Integer, 8);
    let (i4k, r8k) = (
        Elem::new(ElemType::Integer, 4),
        Elem::new(ElemType::Real, 8),
    );
    let scalar = Section::scalar(8, 0);
    let mut back = [0u8; 8];
    // Warm up: the first operation of a thread sets up its handle slot.
    co.put(&token, 0, 1, &scalar, i8k, &[0; 8], &scalar, i8k)
        .unwrap();
    co.sync_memory().unwrap();
    let before = allocations();
    for i in 0..10_000u64 {
        co.put(&token, 0, 1, &scalar, i8k, &i.to_ne_bytes(), &scalar, i8k)
            .unwrap();
        co.get(&token, 0, 1, &scalar, i8k, &mut back, &scalar, i8k)
            .unwrap();
        assert_eq!(u64::from_ne_bytes(back), i);
        // `x[1] = i` with x real(8), i integer(4), and back: converted on the stack.
        let four = Section::scalar(4, 0);
        co.put(
            &token,
            16,
            1,
            &scalar,
            r8k,
            &(i as i32).to_ne_bytes(),
            &four,
            i4k,
        )
        .unwrap();
        let mut small = [0u8; 4];
        co.get(&token, 16, 1, &scalar, r8k, &mut small, &four, i4k)
            .unwrap();
        assert_eq!(i32::from_ne_bytes(small), i as i32);
        co.atomic_fetch(FetchOp::Add, &token, 8, 1, 8, 1).unwrap();
        co.sync_memory().unwrap();
    }
    let after = allocations();
    assert_eq!(
        after - before,
        0,
        "the hot path allocated {} times",
        after - before
    );
    assert_eq!(co.atomic_ref(&token, 8, 1, 8).unwrap(), 10_000);
    co.deallocate(token).unwrap();
    co.finalize().unwrap();
}
