//! Every kind of bad input gets its typed error, in a 1-rank job started without the
//! launcher. (Collective mismatches need several ranks: see tests/scenarios.rs.)

use std::sync::Mutex;

use gaspar::gmem::Segment;
use gaspar::{AtomicOp, Error, GlobalAddr, GlobalPtr, Handle, Key, Width};

/// One runtime per process: tests that init take turns.
static RUNTIME: Mutex<()> = Mutex::new(());

fn with_runtime(f: impl FnOnce(&mut gaspar::strided::Strided)) {
    let _turn = RUNTIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut rt = gaspar::init().expect("init").into_acp();
    f(&mut rt);
    rt.finalize().expect("finalize");
}

#[test]
fn rank_out_of_range() {
    with_runtime(|rt| {
        assert!(matches!(
            rt.starter_ga(1),
            Err(Error::RankOutOfRange { rank: 1, procs: 1 })
        ));
        let far = GlobalAddr::new(7, 0, Segment::Starter, 0).unwrap();
        assert!(matches!(
            rt.put(far, &[1], Handle::NULL),
            Err(Error::RankOutOfRange { rank: 7, .. })
        ));
        let block = rt.alloc(8).unwrap();
        assert!(matches!(block.ga(3), Err(Error::RankOutOfRange { .. })));
        // The blocking calls' heap fast path checks the rank as every other path does.
        let far_heap = GlobalAddr::new(7, 0, Segment::Heap, block.heap_offset()).unwrap();
        assert!(matches!(
            rt.put_blocking(far_heap, &[1]),
            Err(Error::RankOutOfRange { rank: 7, .. })
        ));
        assert!(matches!(
            rt.get_blocking(&mut [0], far_heap),
            Err(Error::RankOutOfRange { rank: 7, .. })
        ));
    });
}

#[test]
fn address_outside_registered_memory() {
    with_runtime(|rt| {
        assert!(matches!(
            rt.put(GlobalAddr::NULL, &[1], Handle::NULL),
            Err(Error::NotRegistered { .. })
        ));
        let never = GlobalAddr::new(0, 0, Segment::Registered(9), 0).unwrap();
        let mut buf = [0u8; 4];
        assert!(matches!(
            rt.get(&mut buf, never, Handle::NULL),
            Err(Error::NotRegistered { .. })
        ));
        let end = rt
            .starter_ga(0)
            .unwrap()
            .offset(rt.starter_len() - 4)
            .unwrap();
        match rt.put(end, &[0u8; 8], Handle::NULL) {
            Err(Error::OutOfBounds {
                len: 8,
                segment_len,
                ..
            }) => assert_eq!(segment_len, rt.starter_len()),
            other => panic!("{other:?}"),
        }
        // Exactly up to the end is fine.
        rt.put(end, &[0u8; 4], Handle::NULL).unwrap();
        let heap_end = GlobalAddr::new(0, 0, Segment::Heap, rt.heap_len()).unwrap();
        assert!(matches!(
            rt.get(&mut buf, heap_end, Handle::NULL),
            Err(Error::OutOfBounds { .. })
        ));
    });
}

#[test]
fn length_overflow() {
    with_runtime(|rt| {
        let a = rt.starter_ga(0).unwrap();
        assert!(matches!(
            rt.copy(a, a.offset(8).unwrap(), u64::MAX, Handle::NULL),
            Err(Error::LengthOverflow { .. })
        ));
        assert!(matches!(
            GlobalPtr::<u64>::new(a).add(u64::MAX / 4),
            Err(Error::LengthOverflow { .. })
        ));
        assert!(matches!(
            rt.alloc(u64::MAX),
            Err(Error::LengthOverflow { .. } | Error::HeapExhausted { .. })
        ));
    });
}

#[test]
fn misaligned_atomics() {
    with_runtime(|rt| {
        let a = rt.starter_ga(0).unwrap();
        let odd = GlobalPtr::<u64>::new(a.offset(4).unwrap());
        assert!(matches!(
            odd.fetch_add(rt, 1),
            Err(Error::MisalignedAtomic { width: 8, .. })
        ));
        let odd32 = GlobalPtr::<u32>::new(a.offset(2).unwrap());
        assert!(matches!(
            odd32.swap(rt, 1),
            Err(Error::MisalignedAtomic { width: 4, .. })
        ));
        // 4-byte aligned is fine for a 4-byte atomic.
        let ok32 = GlobalPtr::<u32>::new(a.offset(4).unwrap());
        ok32.atomic_store(rt, 5).unwrap();
        assert_eq!(ok32.fetch_add(rt, 2).unwrap(), 5);
        assert_eq!(ok32.atomic_load(rt).unwrap(), 7);
    });
}

#[test]
fn heap_exhausted() {
    with_runtime(|rt| {
        let len = rt.heap_len();
        match rt.alloc(len + 1) {
            Err(Error::HeapExhausted {
                requested,
                heap_len,
                ..
            }) => {
                assert_eq!(requested, len + 1);
                assert_eq!(heap_len, len);
            }
            other => panic!("{other:?}"),
        }
        // The runtime keeps a few bytes for itself: take the largest block there is.
        let largest = match rt.alloc(len) {
            Err(Error::HeapExhausted { largest_free, .. }) => largest_free,
            Ok(block) => {
                rt.free(block).unwrap();
                len
            }
            Err(other) => panic!("{other:?}"),
        };
        let all = rt.alloc(largest).unwrap();
        assert!(matches!(
            rt.alloc(1),
            Err(Error::HeapExhausted {
                largest_free: 0,
                ..
            })
        ));
        rt.free(all.clone()).unwrap();
        assert!(matches!(rt.free(all), Err(Error::FreedAllocation { .. })));
    });
}

#[test]
fn registration_errors() {
    with_runtime(|rt| {
        let mut buf = vec![0u64; 16];
        let p = buf.as_mut_ptr() as *mut u8;
        // SAFETY: `buf` outlives the registration, which ends below.
        let key = unsafe { rt.register(p, 128, 0) }.unwrap();
        let ga = rt.ga(key, p).unwrap();
        rt.put(ga.offset(8).unwrap(), &42u64.to_ne_bytes(), Handle::NULL)
            .unwrap();
        let mut back = [0u8; 8];
        rt.get(&mut back, ga.offset(8).unwrap(), Handle::NULL)
            .unwrap();
        assert_eq!(u64::from_ne_bytes(back), 42);
        assert_eq!(rt.local_address(ga).unwrap(), p as usize);
        assert!(matches!(
            rt.atomic(ga, Width::W8, AtomicOp::Add(1), Handle::NULL),
            Err(Error::AtomicUnsupported { .. })
        ));
        assert!(matches!(
            rt.put(ga.offset(124).unwrap(), &[0u8; 8], Handle::NULL),
            Err(Error::OutOfBounds { .. })
        ));
        // An address outside the key's region.
        assert!(rt.ga(key, p.wrapping_add(4096)).is_err());
        // SAFETY: zero length is refused before anything is registered.
        assert!(unsafe { rt.register(p, 0, 0) }.is_err());
        // SAFETY: refused (bad color) before anything is registered.
        assert!(unsafe { rt.register(p, 8, 99) }.is_err());
        rt.unregister(key).unwrap();
        assert!(matches!(rt.unregister(key), Err(Error::InvalidKey(_))));
        assert!(matches!(rt.ga(key, p), Err(Error::InvalidKey(_))));
        assert!(matches!(
            rt.unregister(Key::from_bits(u64::MAX)),
            Err(Error::InvalidKey(_))
        ));
        assert!(matches!(
            rt.get(&mut back, ga, Handle::NULL),
            Err(Error::NotRegistered { .. })
        ));
        drop(buf);
    });
}

#[test]
fn second_init_is_refused() {
    with_runtime(|_rt| {
        assert!(matches!(gaspar::init(), Err(Error::AlreadyInitialized)));
    });
}

#[test]
fn reset_to_a_missing_rank_is_refused() {
    with_runtime(|rt| {
        assert!(matches!(
            rt.reset(1),
            Err(Error::RankOutOfRange { rank: 1, .. })
        ));
        rt.reset(0).unwrap();
        assert_eq!(rt.rank(), 0);
    });
}

#[test]
fn handles_complete_in_order_and_inquire_reports_it() {
    with_runtime(|rt| {
        let a = rt.starter_ga(0).unwrap();
        let h1 = rt.put(a, &[1, 2, 3, 4], Handle::NULL).unwrap();
        let h2 = rt.copy(a.offset(4).unwrap(), a, 4, h1).unwrap();
        assert!(h2 > h1);
        rt.complete(h2).unwrap();
        assert!(rt.inquire(h1).unwrap());
        assert!(rt.inquire(Handle::ALL).unwrap());
        let mut got = [0u8; 8];
        rt.get(&mut got, a, Handle::ALL).unwrap();
        assert_eq!(got, [1, 2, 3, 4, 1, 2, 3, 4]);
        // A get after a put to the same place sees the put, without completing it first.
        rt.put(a, &[9], Handle::NULL).unwrap();
        rt.get(&mut got[..1], a, Handle::NULL).unwrap();
        assert_eq!(got[0], 9);
    });
}

#[test]
fn every_atomic_returns_the_old_value() {
    with_runtime(|rt| {
        let w = GlobalPtr::<u64>::new(rt.alloc(8).unwrap().ga(0).unwrap());
        w.atomic_store(rt, 0b1100).unwrap();
        assert_eq!(w.fetch_add(rt, 1).unwrap(), 0b1100);
        assert_eq!(w.fetch_xor(rt, 0b0110).unwrap(), 0b1101);
        assert_eq!(w.fetch_or(rt, 0b10000).unwrap(), 0b1011);
        assert_eq!(w.fetch_and(rt, 0b11001).unwrap(), 0b11011);
        assert_eq!(w.compare_swap(rt, 7, 100).unwrap(), 0b11001);
        assert_eq!(w.compare_swap(rt, 0b11001, 100).unwrap(), 0b11001);
        assert_eq!(w.swap(rt, 5).unwrap(), 100);
        assert_eq!(w.get(rt).unwrap(), 5);
        let s = GlobalPtr::<i32>::new(rt.starter_ga(0).unwrap());
        s.atomic_store(rt, -1).unwrap();
        assert_eq!(s.fetch_add(rt, -1).unwrap(), -1);
        assert_eq!(s.atomic_load(rt).unwrap(), -2);
        // The 4-byte atomic left the next word alone.
        let next = GlobalPtr::<u32>::new(rt.starter_ga(0).unwrap().offset(4).unwrap());
        next.atomic_store(rt, 77).unwrap();
        s.swap(rt, 0).unwrap();
        assert_eq!(next.atomic_load(rt).unwrap(), 77);
    });
}

/// Runs `body`, failing the test (instead of hanging it) when it does not return within
/// a generous time.
fn within_time<R>(what: &str, body: impl FnOnce() -> R) -> R {
    let (done, watched) = std::sync::mpsc::channel::<()>();
    let what = what.to_string();
    std::thread::spawn(move || {
        if watched
            .recv_timeout(std::time::Duration::from_secs(30))
            .is_err()
        {
            eprintln!("{what} did not return within 30 s");
            std::process::exit(1);
        }
    });
    let result = body();
    let _ = done.send(());
    result
}

#[test]
fn a_put_past_its_allocation_is_refused_and_writes_nothing() {
    with_runtime(|rt| {
        let a = rt.alloc(64).unwrap();
        let b = rt.alloc(64).unwrap();
        rt.put(b.ga(0).unwrap(), &[5u8; 64], Handle::NULL).unwrap();
        match rt.put(a.ga(0).unwrap(), &[9u8; 128], Handle::NULL) {
            Err(Error::OutsideAllocation {
                len: 128,
                allocation: Some((offset, 64)),
                ..
            }) => assert_eq!(offset, a.heap_offset()),
            other => panic!("a 128-byte put into a 64-byte block gave {other:?}"),
        }
        // Every other way in is checked the same, before anything moves.
        let past = a.ga(0).unwrap().offset(60).unwrap();
        assert!(rt.get(&mut [0u8; 8], past, Handle::NULL).is_err());
        assert!(rt.copy(past, b.ga(0).unwrap(), 8, Handle::NULL).is_err());
        assert!(rt
            .put_vector(
                &[1u8; 16],
                &[0, 8],
                a.ga(0).unwrap(),
                &[0, 62],
                4,
                Handle::NULL
            )
            .is_err());
        assert!(GlobalPtr::<u64>::new(past).fetch_add(rt, 1).is_err());
        // Single words through the blocking typed calls: one across the block's end, one
        // in heap that no allocation holds.
        let across = GlobalPtr::<u64>::new(past);
        let outside = |r: gaspar::Result<()>| matches!(r, Err(Error::OutsideAllocation { .. }));
        assert!(outside(across.put(rt, &7)));
        assert!(outside(across.get(rt).map(drop)));
        assert!(outside(rt.put_blocking(past, &[1u8; 8])));
        assert!(outside(rt.get_blocking(&mut [0u8; 8], past)));
        let unallocated = GlobalPtr::<u32>::new(b.ga(0).unwrap().offset(64).unwrap());
        assert!(outside(unallocated.put(rt, &7)));
        assert!(outside(unallocated.get(rt).map(drop)));
        let mut back = [0u8; 64];
        rt.get(&mut back, b.ga(0).unwrap(), Handle::NULL).unwrap();
        assert_eq!(back, [5u8; 64], "the next block was overwritten");
        // An I/O vector may gather from several allocations, each piece inside one.
        let pieces: [&[u8]; 2] = [&[2u8; 8], &[3u8; 8]];
        let base = a.ga(0).unwrap();
        rt.put_segments(
            &pieces,
            base,
            &[0, b.heap_offset() - a.heap_offset()],
            Handle::NULL,
        )
        .unwrap();
        rt.put(b.ga(0).unwrap(), &[5u8; 8], Handle::NULL).unwrap();
        // Up to the end is fine; raw addresses where nothing is allocated are not.
        rt.put(past, &[1u8; 4], Handle::NULL).unwrap();
        let nowhere = GlobalAddr::new(0, 0, Segment::Heap, 1 << 20).unwrap();
        assert!(matches!(
            rt.put(nowhere, &[1], Handle::NULL),
            Err(Error::OutsideAllocation {
                allocation: None,
                ..
            })
        ));
        rt.free(b).unwrap();
        rt.free(a).unwrap();
    });
}

#[test]
fn a_freed_handle_is_refused_even_when_its_offset_is_reused() {
    with_runtime(|rt| {
        let old = rt.alloc(64).unwrap();
        let old_ga = old.ga(0).unwrap();
        rt.free(old.clone()).unwrap();
        assert!(matches!(
            old.ga(0),
            Err(Error::FreedAllocation { len: 64, .. })
        ));
        assert!(matches!(
            rt.put(old_ga, &[1u8; 8], Handle::NULL),
            Err(Error::OutsideAllocation { .. })
        ));
        let new = rt.alloc(64).unwrap();
        assert_eq!(
            new.heap_offset(),
            old.heap_offset(),
            "the freed block is reused"
        );
        assert!(matches!(old.ga(0), Err(Error::FreedAllocation { .. })));
        // A stale free frees nothing: the live block stays, and the next allocation does
        // not overlap it.
        assert!(matches!(rt.free(old), Err(Error::FreedAllocation { .. })));
        rt.put(new.ga(0).unwrap(), &[3u8; 64], Handle::NULL)
            .unwrap();
        let next = rt.alloc(64).unwrap();
        assert_ne!(
            next.heap_offset(),
            new.heap_offset(),
            "two live blocks overlap"
        );
        rt.free(next).unwrap();
        rt.free(new).unwrap();
        // A local block forgotten by a reset cannot be freed over a newer one.
        let local = rt.alloc_local(64).unwrap();
        rt.reset(0).unwrap();
        let after = rt.alloc_local(64).unwrap();
        assert_eq!(after.heap_offset(), local.heap_offset());
        assert!(matches!(
            rt.free_local(local),
            Err(Error::FreedAllocation { .. })
        ));
        rt.free_local(after).unwrap();
    });
}

/// The accumulate lock is no word of the heap: a put to heap offset 0 (legal once a block
/// lies there) cannot leave it taken.
#[test]
fn a_put_to_heap_offset_zero_does_not_block_accumulates() {
    use gaspar::strided::{AccKind, Descriptor};
    with_runtime(|rt| {
        let block = rt.alloc(64).unwrap();
        let zero = GlobalAddr::new(0, 0, Segment::Heap, 0).unwrap();
        let _ = rt.put(zero, &u64::MAX.to_ne_bytes(), Handle::NULL);
        let target = block.ga(0).unwrap();
        rt.put(target, &[0u8; 8], Handle::NULL).unwrap();
        let desc = Descriptor::new(&[8], &[], &[]).unwrap();
        within_time("acc_strided after a put to heap offset 0", || {
            let src = 7i64.to_ne_bytes();
            let h = rt
                .acc_strided(
                    AccKind::Long,
                    &2i64.to_ne_bytes(),
                    &src,
                    &desc,
                    target,
                    Handle::NULL,
                )
                .unwrap();
            rt.complete(h).unwrap();
        });
        assert_eq!(GlobalPtr::<i64>::new(target).get(rt).unwrap(), 14);
        rt.free(block).unwrap();
    });
}

/// A reset that fails changes nothing: blocks stay live, and accumulates still work.
#[test]
fn a_failed_reset_keeps_the_heap_as_it_was() {
    use gaspar::strided::{AccKind, Descriptor};
    with_runtime(|rt| {
        let block = rt.alloc(64).unwrap();
        rt.put(block.ga(0).unwrap(), &[1u8; 64], Handle::NULL)
            .unwrap();
        assert!(matches!(rt.reset(1), Err(Error::RankOutOfRange { .. })));
        let ga = block.ga(0).expect("the block survives a failed reset");
        let first = rt.alloc(64).unwrap();
        let second = rt.alloc(64).unwrap();
        for b in [&first, &second] {
            assert_ne!(
                b.heap_offset(),
                block.heap_offset(),
                "a new block overlaps a live one"
            );
            rt.put(b.ga(0).unwrap(), &u64::MAX.to_ne_bytes(), Handle::NULL)
                .unwrap();
        }
        let desc = Descriptor::new(&[8], &[], &[]).unwrap();
        within_time("acc_strided after a failed reset", || {
            let h = rt
                .acc_strided(
                    AccKind::Long,
                    &1i64.to_ne_bytes(),
                    &1i64.to_ne_bytes(),
                    &desc,
                    ga,
                    Handle::NULL,
                )
                .unwrap();
            rt.complete(h).unwrap();
        });
        let mut back = [0u8; 8];
        rt.get(&mut back, ga, Handle::NULL).unwrap();
        assert_eq!(i64::from_ne_bytes(back), i64::from_ne_bytes([1u8; 8]) + 1);
    });
}

/// A copy between two registered regions is checked whole before a byte moves: a copy
/// that runs past the destination writes nothing (it used to write its first MiB).
#[test]
fn a_copy_past_a_registered_region_writes_nothing() {
    with_runtime(|rt| {
        let mut src = vec![7u8; 2 << 20];
        let mut dst = vec![0u8; 3 << 19];
        // SAFETY: both buffers outlive their registrations, which end below, and are not
        // read while registered.
        let (src_key, dst_key) = unsafe {
            (
                rt.register(src.as_mut_ptr(), src.len() as u64, 0).unwrap(),
                rt.register(dst.as_mut_ptr(), dst.len() as u64, 0).unwrap(),
            )
        };
        let from = rt.ga(src_key, src.as_ptr()).unwrap();
        let to = rt.ga(dst_key, dst.as_ptr()).unwrap();
        match rt.copy(to, from, src.len() as u64, Handle::NULL) {
            Err(Error::OutOfBounds {
                len, segment_len, ..
            }) => assert_eq!((len, segment_len), (2 << 20, 3 << 19)),
            other => panic!("a copy past the destination gave {other:?}"),
        }
        rt.unregister(src_key).unwrap();
        rt.unregister(dst_key).unwrap();
        assert!(
            dst.iter().all(|&b| b == 0),
            "a refused copy wrote something"
        );
    });
}
