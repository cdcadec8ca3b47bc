//! The rank program of gaspar's multi-process tests: `scenarios NAME [ARGS]`, launched
//! through `gaspar run` by `tests/`. Each scenario checks its own results and exits
//! non-zero (through `abort`) when one is wrong.

use std::io::Write;

use gaspar::gmem::Collective;
use gaspar::strided::Strided;
use gaspar::{Error, GlobalAddr, GlobalPtr, Handle, Result};

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_default();
    let result = match name.as_str() {
        "mismatched-alloc" => mismatched_alloc(),
        "third-party-chain" => third_party_chain(),
        "atomics-stress" => atomics_stress(),
        "registered-memory" => registered_memory(),
        "reset" => reset(),
        "barrier-wait" => barrier_wait(args.next().and_then(|a| a.parse().ok()).unwrap_or(1)),
        "abort" => abort(),
        "panic" => panic_in_rank(),
        "exit-without-finalize" => exit_without_finalize(),
        "job-id" => job_id(),
        "busy-target" => busy_target(),
        "owner-atomics" => {
            owner_atomics(args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000))
        }
        "strided-remote" => strided_remote(),
        "strided-random" => strided_random(
            args.next().and_then(|a| a.parse().ok()).unwrap_or(100),
            args.next().and_then(|a| a.parse().ok()).unwrap_or(1),
        ),
        "where" => where_am_i(),
        "heap-size" => heap_size(),
        #[cfg(feature = "mpi")]
        "mpi-single-thread" => mpi_single_thread(),
        "ordering" => ordering(args.next().and_then(|a| a.parse().ok()).unwrap_or(2000)),
        "accumulate" => accumulate(args.next().and_then(|a| a.parse().ok()).unwrap_or(200)),
        "heap-alignment" => heap_alignment(),
        "collective-messages" => collective_messages(),
        "remote-heap-bounds" => remote_heap_bounds(),
        "remote-local-bounds" => remote_local_bounds(),
        waits if waits.starts_with("waits-") => waits_scenario(waits),
        "polling-get" => polling_get(),
        "single-threaded" => single_threaded(),
        "face-get" => face_get(args.next().and_then(|a| a.parse().ok()).unwrap_or(5)),
        other => {
            eprintln!("unknown scenario {other:?}");
            std::process::exit(2)
        }
    };
    if let Err(e) = result {
        eprintln!("scenario {name} failed: {e}");
        std::process::exit(1);
    }
}

fn check(rt: &Strided, ok: bool, what: impl FnOnce() -> String) {
    if !ok {
        rt.abort(&what());
    }
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Prints the job id so the test can look for this job's segments.
fn job_id() -> Result<()> {
    let rt = gaspar::init()?.into_acp();
    say(&format!(
        "job {}",
        std::env::var("GASPAR_JOB_ID").unwrap_or_default()
    ));
    rt.finalize()
}

/// Every rank asks for a different size: every rank gets the mismatch error, and the
/// heap is still usable afterwards.
fn mismatched_alloc() -> Result<()> {
    let rt = gaspar::init()?.into_acp();
    let me = rt.rank();
    match rt.alloc(64 * (u64::from(me) + 1)) {
        Err(Error::MismatchedCollective {
            call: Collective::Alloc { .. },
            rank,
            ..
        }) if rank == me => {}
        other => rt.abort(&format!("expected a mismatch error, got {other:?}")),
    }
    let block = rt.alloc(128)?;
    if rt.procs() > 1 {
        // Rank 0 frees while the others allocate: caught on every rank, nothing changes.
        let result = if me == 0 {
            rt.free(block.clone())
        } else {
            rt.alloc(128).map(drop)
        };
        match result {
            Err(Error::MismatchedCollective { other_call, .. }) => {
                let expected = if me == 0 {
                    other_call == Collective::Alloc { len: 128 }
                } else {
                    other_call
                        == Collective::Free {
                            heap_offset: block.heap_offset(),
                        }
                };
                check(&rt, expected, || format!("other call named {other_call}"));
            }
            other => rt.abort(&format!("expected a free/alloc mismatch, got {other:?}")),
        }
    }
    let freed_offset = block.heap_offset();
    rt.free(block)?;
    let again = rt.alloc(64)?;
    check(&rt, again.heap_offset() == freed_offset, || {
        format!(
            "freed block not reused: {} != {freed_offset}",
            again.heap_offset(),
        )
    });
    // A local allocation on rank 0 leaves no room there for half the heap: the symmetric
    // allocation fails on every rank (rank 0: exhausted; the others: diverged).
    let half = rt.heap_len() / 2;
    let hog = if me == 0 {
        Some(rt.alloc_local(half + 4096)?)
    } else {
        None
    };
    match (me, rt.alloc(half)) {
        (0, Err(Error::HeapExhausted { .. })) => {}
        (
            _,
            Err(Error::HeapDiverged {
                other_rank: 0,
                other_offset: None,
                ..
            }),
        ) if me != 0 => {}
        (_, other) => rt.abort(&format!("expected a diverged heap, got {other:?}")),
    }
    if let Some(hog) = hog {
        rt.free_local(hog)?;
    }
    let big = rt.alloc(half)?;
    rt.free(big)?;
    say(&format!("rank {me}: mismatch detected"));
    rt.finalize()
}

/// Rank 0 moves a block down the chain 1 -> 2 -> ... -> n-1 with third-party copies,
/// each ordered after the previous one by its handle, without waiting in between.
fn third_party_chain() -> Result<()> {
    let rt = gaspar::init()?.into_acp();
    let (me, n) = (rt.rank(), rt.procs());
    let len = 32 * 1024u64;
    let pattern = |i: u64| (i * 13 % 251) as u8;
    if me == 1 {
        let data: Vec<u8> = (0..len).map(pattern).collect();
        rt.put(rt.starter_ga(1)?, &data, Handle::NULL)?;
        rt.complete(Handle::ALL)?;
    }
    rt.barrier()?;
    if me == 0 {
        for round in 0..50 {
            let mut h = Handle::NULL;
            for hop in 1..n - 1 {
                h = rt.copy(rt.starter_ga(hop + 1)?, rt.starter_ga(hop)?, len, h)?;
            }
            rt.complete(h)?;
            // Scramble the intermediate copies for the next round (the source stays).
            for hop in 2..n {
                rt.put(
                    rt.starter_ga(hop)?,
                    &vec![round as u8; len as usize],
                    Handle::NULL,
                )?;
            }
            rt.complete(Handle::ALL)?;
        }
        let mut h = Handle::NULL;
        for hop in 1..n - 1 {
            h = rt.copy(rt.starter_ga(hop + 1)?, rt.starter_ga(hop)?, len, h)?;
        }
        rt.complete(h)?;
    }
    rt.barrier()?;
    if me == n - 1 && n > 2 {
        let mut got = vec![0u8; len as usize];
        rt.get(&mut got, rt.starter_ga(me)?, Handle::NULL)?;
        let bad = (0..len).find(|&i| got[i as usize] != pattern(i));
        check(&rt, bad.is_none(), || {
            format!("byte {bad:?} of the chained copy is wrong")
        });
        say(&format!("rank {me}: chain of {} copies ok", n - 2));
    }
    rt.finalize()
}

/// Every rank hammers the same words on rank 0 with every atomic operation.
fn atomics_stress() -> Result<()> {
    let rt = gaspar::init()?.into_acp();
    let (me, n) = (rt.rank(), u64::from(rt.procs()));
    let iters = 20_000u64;
    let base = rt.starter_ga(0)?;
    let at = |off: u64| -> Result<GlobalAddr> {
        base.offset(off)
            .ok_or(Error::LengthOverflow { what: "offset" })
    };
    let add64 = GlobalPtr::<u64>::new(at(0)?);
    let cas32 = GlobalPtr::<u32>::new(at(8)?);
    let bits64 = GlobalPtr::<u64>::new(at(16)?);
    let xor32 = GlobalPtr::<u32>::new(at(24)?);
    let lock64 = GlobalPtr::<u64>::new(at(32)?);
    let guarded = GlobalPtr::<u64>::new(at(40)?);
    let add32 = GlobalPtr::<i32>::new(at(48)?);
    if me == 0 {
        rt.put(base, &[0u8; 64], Handle::NULL)?;
        rt.complete(Handle::ALL)?;
    }
    rt.barrier()?;
    let my_bit = 1u64 << me;
    for i in 0..iters {
        add64.fetch_add(&rt, 1)?;
        add32.fetch_add(&rt, -1)?;
        // Increment through a compare-and-swap loop.
        let mut seen = cas32.atomic_load(&rt)?;
        loop {
            let old = cas32.compare_swap(&rt, seen, seen + 1)?;
            if old == seen {
                break;
            }
            seen = old;
        }
        // Set and clear my own bit; nobody else's bit may change it.
        let before = bits64.fetch_or(&rt, my_bit)?;
        check(&rt, before & my_bit == 0, || {
            format!("my bit was set before fetch_or at {i}")
        });
        let before = bits64.fetch_and(&rt, !my_bit)?;
        check(&rt, before & my_bit != 0, || {
            format!("my bit vanished at {i}")
        });
        xor32.fetch_xor(&rt, 0xa5a5_a5a5)?;
        // A spin lock by swap guards a plain read-modify-write by get and put.
        if i % 8 == 0 {
            while lock64.swap(&rt, 1)? != 0 {
                std::hint::spin_loop();
            }
            let v = guarded.get(&rt)?;
            guarded.put(&rt, &(v + 1))?;
            lock64.atomic_store(&rt, 0)?;
        }
    }
    rt.barrier()?;
    let expect_xor = if (n * iters) % 2 == 0 { 0 } else { 0xa5a5_a5a5 };
    let results = (
        add64.atomic_load(&rt)?,
        add32.atomic_load(&rt)?,
        cas32.atomic_load(&rt)?,
        bits64.atomic_load(&rt)?,
        xor32.atomic_load(&rt)?,
        guarded.get(&rt)?,
    );
    let expected = (
        n * iters,
        -((n * iters) as i32),
        (n * iters) as u32,
        0,
        expect_xor,
        n * iters.div_ceil(8),
    );
    check(&rt, results == expected, || {
        format!("atomics: got {results:?}, expected {expected:?}")
    });
    say(&format!("rank {me}: atomics ok {results:?}"));
    rt.finalize()
}

/// Registered (non-segment) memory reached by other ranks with cross-memory attach.
fn registered_memory() -> Result<()> {
    let rt = gaspar::init()?.into_acp();
    let (me, n) = (rt.rank(), rt.procs());
    let len = 4096usize;
    let mut buffer = vec![0u8; len].into_boxed_slice();
    let base = buffer.as_mut_ptr();
    // Two touching registrations merge into one key.
    // SAFETY: `buffer` outlives both registrations (unregistered below) and is only
    // accessed through gaspar while registered.
    let key = unsafe { rt.register(base, (len / 2) as u64, 0)? };
    // SAFETY: as above.
    let key2 = unsafe { rt.register(base.wrapping_add(len / 2), (len / 2) as u64, 0)? };
    check(&rt, key == key2, || {
        "touching registrations did not merge".into()
    });
    let my_ga = rt.ga(key, base)?;
    check(&rt, rt.local_address(my_ga)? == base as usize, || {
        "query_address mismatch".into()
    });
    // Publish my buffer's address in my starter memory; everyone reads the others'.
    GlobalPtr::<u64>::new(rt.starter_ga(me)?).put(&rt, &my_ga.to_bits())?;
    rt.barrier()?;
    let right = (me + 1) % n;
    let right_ga = GlobalAddr::from_bits(GlobalPtr::<u64>::new(rt.starter_ga(right)?).get(&rt)?);
    let message: Vec<u8> = (0..len).map(|i| (i as u32 * 7 + me) as u8).collect();
    rt.put(right_ga, &message, Handle::NULL)?;
    rt.complete(Handle::ALL)?;
    rt.barrier()?;
    let left = (me + n - 1) % n;
    let mut got = vec![0u8; len];
    rt.get(&mut got, my_ga, Handle::NULL)?;
    let expected: Vec<u8> = (0..len).map(|i| (i as u32 * 7 + left) as u8).collect();
    check(&rt, got == expected, || {
        "registered buffer holds the wrong bytes".into()
    });
    // Registered to registered, third party: copy right's buffer into the left's... of
    // my right neighbour's right, through this rank.
    let far_ga =
        GlobalAddr::from_bits(GlobalPtr::<u64>::new(rt.starter_ga((me + 2) % n)?).get(&rt)?);
    rt.barrier()?;
    if n >= 3 && me == 0 {
        let h = rt.copy(far_ga, right_ga, len as u64, Handle::NULL)?;
        rt.complete(h)?;
    }
    rt.barrier()?;
    if n >= 3 && me == 2 {
        rt.get(&mut got, my_ga, Handle::NULL)?;
        let expected: Vec<u8> = (0..len).map(|i| (i as u32 * 7) as u8).collect();
        check(&rt, got == expected, || {
            "registered-to-registered copy is wrong".into()
        });
    }
    // Atomics on registered memory are refused, not done wrongly.
    match GlobalPtr::<u64>::new(right_ga).fetch_add(&rt, 1) {
        Err(Error::AtomicUnsupported { .. }) => {}
        other => rt.abort(&format!("atomic on registered memory gave {other:?}")),
    }
    // Out of the region: refused.
    match rt.put(
        right_ga.offset(len as u64 - 4).unwrap(),
        &[0u8; 8],
        Handle::NULL,
    ) {
        Err(Error::OutOfBounds { segment_len, .. }) if segment_len == len as u64 => {}
        other => rt.abort(&format!("put past the registered region gave {other:?}")),
    }
    rt.barrier()?;
    rt.unregister(key)?;
    rt.unregister(key2)?;
    rt.barrier()?;
    match rt.put(right_ga, &message, Handle::NULL) {
        Err(Error::NotRegistered { .. }) => {}
        other => rt.abort(&format!("put to unregistered memory gave {other:?}")),
    }
    rt.barrier()?;
    drop(buffer);
    say(&format!("rank {me}: registered memory ok"));
    rt.finalize()
}

/// Ranks renumber themselves in reverse; a ring in the new numbering still works, and an
/// invalid renumbering is refused on every rank.
fn reset() -> Result<()> {
    let mut rt = gaspar::init()?.into_acp();
    let n = rt.procs();
    let old = rt.rank();
    if n > 1 {
        match rt.reset(0) {
            Err(Error::InvalidArgument { call: "reset", .. }) => {}
            other => rt.abort(&format!("duplicate ranks in reset gave {other:?}")),
        }
    }
    rt.reset(n - 1 - old)?;
    let me = rt.rank();
    check(&rt, me == n - 1 - old, || format!("reset gave rank {me}"));
    let right = (me + 1) % n;
    GlobalPtr::<u64>::new(rt.starter_ga(right)?).put(&rt, &u64::from(me))?;
    rt.barrier()?;
    let got = GlobalPtr::<u64>::new(rt.starter_ga(me)?).get(&rt)?;
    check(&rt, got == u64::from((me + n - 1) % n), || {
        format!("ring after reset got {got}")
    });
    say(&format!("rank {me} (was {old}): reset ok"));
    rt.finalize()
}

/// Prints this rank's network namespace and host name (the multi-host test checks that
/// ranks really run in different namespaces).
fn where_am_i() -> Result<()> {
    let rt = gaspar::init()?.into_acp();
    let netns = std::fs::read_link("/proc/self/ns/net")
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    say(&format!(
        "rank {} netns {netns} host {}",
        rt.rank(),
        host.trim()
    ));
    rt.barrier()?;
    rt.finalize()
}

/// Prints the heap this rank's users see (`GASPAR_HEAP_SIZE`'s effect).
fn heap_size() -> Result<()> {
    let rt = gaspar::init()?.into_acp();
    say(&format!("rank {} heap {}", rt.rank(), rt.heap_len()));
    rt.finalize()
}

/// Copies the blocks of a strided descriptor from `src` to `dst` (the reference).
fn reference_copy(
    count: &[u64],
    src_strides: &[u64],
    dst_strides: &[u64],
    src: &[u8],
    dst: &mut [u8],
) {
    let mut offsets = vec![(0u64, 0u64)];
    for k in 1..count.len() {
        offsets = offsets
            .iter()
            .flat_map(|&(s, d)| {
                (0..count[k]).map(move |i| (s + i * src_strides[k - 1], d + i * dst_strides[k - 1]))
            })
            .collect();
    }
    let n = count[0] as usize;
    for (s, d) in offsets {
        dst[d as usize..d as usize + n].copy_from_slice(&src[s as usize..s as usize + n]);
    }
}

/// Strided and vector transfers between ranks: each rank puts a 3-level section into its
/// right neighbour's heap, checks what its left neighbour put into its own, gets its
/// section back, and does the same with an I/O vector.
fn strided_remote() -> Result<()> {
    use gaspar::strided::Descriptor;
    let rt = gaspar::init()?.into_acp();
    let (me, n) = (rt.rank(), rt.procs());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let region = 64 * 1024;
    let block = rt.alloc(region)?;
    rt.put(block.ga(me)?, &vec![0u8; region as usize], Handle::NULL)?;
    rt.all_fence()?;
    rt.barrier()?;
    let count = [24u64, 5, 3, 2];
    let (packed, spread) = ([24u64, 120, 360], [40u64, 256, 1500]);
    let desc = Descriptor::new(&count, &packed, &spread)?;
    let source = |rank: u32| -> Vec<u8> {
        (0..desc.src_extent())
            .map(|i| (i as u32 * 7 + rank * 13) as u8)
            .collect()
    };
    let at = 100u64;
    rt.put_strided(
        &source(me),
        &desc,
        block.ga(right)?.offset(at).expect("in block"),
        Handle::NULL,
    )?;
    // Vector: 50 segments of 8 bytes, every 16 bytes from byte 30000.
    let vec_src: Vec<u8> = (0..400u32).map(|i| (i + me * 3) as u8).collect();
    let local: Vec<u64> = (0..50).map(|i| i * 8).collect();
    let remote: Vec<u64> = (0..50).map(|i| 30_000 + i * 16).collect();
    rt.put_vector(&vec_src, &local, block.ga(right)?, &remote, 8, Handle::NULL)?;
    rt.all_fence()?;
    rt.barrier()?;
    let mut expected = vec![0u8; region as usize];
    reference_copy(
        &count,
        &packed,
        &spread,
        &source(left),
        &mut expected[at as usize..],
    );
    for i in 0..50usize {
        let from = (i * 8) as u32;
        for b in 0..8u32 {
            expected[30_000 + i * 16 + b as usize] = (from + b + left * 3) as u8;
        }
    }
    let mut got = vec![0u8; region as usize];
    rt.get(&mut got, block.ga(me)?, Handle::NULL)?;
    let bad = got.iter().zip(&expected).position(|(g, e)| g != e);
    check(&rt, bad.is_none(), || {
        format!("byte {bad:?} of the strided/vector result is wrong")
    });
    // And back: get my section from my right neighbour.
    let back_desc = Descriptor::new(&count, &spread, &packed)?;
    let mut back = vec![0u8; desc.src_extent() as usize];
    rt.get_strided(
        &mut back,
        &back_desc,
        block.ga(right)?.offset(at).expect("in block"),
        Handle::NULL,
    )?;
    check(&rt, back == source(me), || {
        "strided get returned other bytes".into()
    });
    let mut vec_back = vec![0u8; 400];
    rt.get_vector(
        &mut vec_back,
        &local,
        block.ga(right)?,
        &remote,
        8,
        Handle::NULL,
    )?;
    check(&rt, vec_back == vec_src, || {
        "vector get returned other bytes".into()
    });
    // Segments from separate buffers (of 3, 8 and 40 bytes) to the right neighbour's
    // bytes 40000.., then back into separate buffers (after every rank checked its block).
    rt.barrier()?;
    let pieces: Vec<Vec<u8>> = [3usize, 8, 40]
        .iter()
        .map(|&n| (0..n).map(|i| (i as u32 * 5 + me) as u8).collect())
        .collect();
    let slices: Vec<&[u8]> = pieces.iter().map(|p| p.as_slice()).collect();
    let offsets = [40_000u64 + 100, 40_000, 40_000 + 200];
    rt.put_segments(&slices, block.ga(right)?, &offsets, Handle::NULL)?;
    rt.all_fence()?;
    let mut returned: Vec<Vec<u8>> = pieces.iter().map(|p| vec![0u8; p.len()]).collect();
    let mut outs: Vec<&mut [u8]> = returned.iter_mut().map(|r| r.as_mut_slice()).collect();
    rt.get_segments(&mut outs, block.ga(right)?, &offsets, Handle::NULL)?;
    check(&rt, returned == pieces, || {
        "segment get returned other bytes".into()
    });
    // Direct load/store reach (shmem_ptr): own memory always; a neighbour's on shm, and on
    // mpi when every rank runs on this host (a shared window; the launchers say how many
    // ranks share the host).
    let own = rt.mapped_address(block.ga(me)?, region)?;
    check(&rt, own == Some(rt.local_address(block.ga(me)?)?), || {
        format!("mapped_address of own block is {own:?}")
    });
    let on_shm = std::env::var_os("GASPAR_JOB_ID").is_some();
    let ranks_here = ["OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"]
        .iter()
        .find_map(|name| std::env::var(name).ok()?.parse::<u32>().ok());
    let one_host = on_shm || ranks_here == Some(rt.procs());
    let neighbour = rt.mapped_address(block.ga(right)?, region)?;
    check(
        &rt,
        neighbour.is_some() == (one_host || right == me),
        || format!("mapped_address of the neighbour's block is {neighbour:?}"),
    );
    if let Some(address) = neighbour {
        // What a load there reads is what a get reads: the bytes put there above.
        let mut got = [0u8; 3];
        rt.get(
            &mut got,
            block.ga(right)?.offset(40_100).expect("in block"),
            Handle::NULL,
        )?;
        // SAFETY: `address` maps the neighbour's block, `region` bytes long (checked by
        // mapped_address), which nobody writes between the barrier above and the next.
        let loaded = unsafe { std::ptr::read_volatile((address + 40_100) as *const [u8; 3]) };
        check(&rt, loaded == got && got == pieces[0][..], || {
            format!("a load from the mapped neighbour gave {loaded:?}, a get {got:?}")
        });
    }
    // On shm every segment is mapped at its owner's address (unless
    // GASPAR_SHM_PLACEMENT=anywhere): the neighbour's block is where the neighbour has it.
    // On mpi only where the library happened to map it at the same address.
    let placed = on_shm && std::env::var("GASPAR_SHM_PLACEMENT").map_or(true, |v| v != "anywhere");
    check(&rt, rt.maps_at_home(me), || "own memory not at home".into());
    check(&rt, !placed || rt.maps_at_home(right), || {
        format!("maps_at_home(neighbour) is {}", rt.maps_at_home(right))
    });
    let home_word = region - 8;
    let own_address = rt.local_address(block.ga(me)?)? as u64;
    rt.put(
        block.ga(left)?.offset(home_word).expect("in block"),
        &own_address.to_le_bytes(),
        Handle::NULL,
    )?;
    rt.all_fence()?;
    rt.barrier()?;
    let mut reported = [0u8; 8];
    rt.get(
        &mut reported,
        block.ga(me)?.offset(home_word).expect("in block"),
        Handle::NULL,
    )?;
    let at_home = neighbour == Some(u64::from_le_bytes(reported) as usize);
    check(&rt, at_home == rt.maps_at_home(right), || {
        format!(
            "the neighbour's block is at {:#x} there and at {neighbour:x?} here",
            u64::from_le_bytes(reported)
        )
    });
    let past = rt.mapped_address(block.ga(me)?, rt.heap_len() + 1)?;
    check(&rt, past.is_none(), || {
        "mapped_address past the heap's end".into()
    });
    // A segment past the end of the heap is refused before anything moves.
    let near_end = rt.heap_len() - 4;
    let refused = rt.put_segments(&slices, block.ga(right)?, &[0, 8, near_end], Handle::NULL);
    check(&rt, refused.is_err(), || {
        "a segment past the heap was accepted".into()
    });
    let mut first = [0u8; 3];
    rt.get(&mut first, block.ga(right)?, Handle::NULL)?;
    check(&rt, first == [0, 0, 0], || {
        "a refused vector wrote its first segment".into()
    });
    rt.barrier()?;
    say(&format!("rank {me}: strided and vector transfers ok"));
    rt.finalize()
}

/// A small deterministic generator (splitmix64): every rank draws the same shapes.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// Strides for `count` (innermost first): each level contiguous with the one below, or
/// apart by a gap, or (when `overlap`) overlapping it.
fn draw_strides(d: &mut Draw, count: &[u64], overlap: bool) -> Vec<u64> {
    let mut extent = count[0];
    let mut out = Vec::new();
    for &c in &count[1..] {
        let stride = match d.range(0, 2) {
            0 => extent,
            2 if overlap => (extent / 2).max(1),
            _ => extent + d.range(1, 24),
        };
        out.push(stride);
        extent += stride * (c - 1);
    }
    out
}

fn extent_of(count: &[u64], strides: &[u64]) -> u64 {
    count[0]
        + strides
            .iter()
            .zip(&count[1..])
            .map(|(s, c)| s * (c - 1))
            .sum::<u64>()
}

/// Randomized strided transfers between ranks, checked against a reference copy: `cases`
/// shapes of 1..7 levels (source strides may overlap), each put into the right
/// neighbour's heap under a rotating method (auto, direct, buffered with a 24-byte
/// buffer), checked by the neighbour, and got back; then a random I/O vector of segments
/// from separate buffers. Every rank draws the same shapes from `seed`.
fn strided_random(cases: u32, seed: u64) -> Result<()> {
    use gaspar::strided::{Descriptor, Policy};
    let mut rt = gaspar::init()?.into_acp();
    let (me, n) = (rt.rank(), rt.procs());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let region = 1u64 << 20;
    let block = rt.alloc(region)?;
    let mut draw = Draw(seed);
    let data = |len: u64, rank: u32, case: u32| -> Vec<u8> {
        (0..len)
            .map(|i| (i as u32).wrapping_mul(31) ^ (rank * 101 + case * 7))
            .map(|x| x as u8)
            .collect()
    };
    for case in 0..cases {
        let levels = draw.range(1, 7) as usize;
        let mut count = vec![draw.range(1, 40)];
        for _ in 1..levels {
            count.push(draw.range(1, 4));
        }
        let src_strides = draw_strides(&mut draw, &count, true);
        let dst_strides = draw_strides(&mut draw, &count, false);
        let back_strides = draw_strides(&mut draw, &count, false);
        let at = draw.range(0, 4096);
        let (policy, buffer) = match case % 3 {
            0 => (Policy::Auto, 400 << 10),
            1 => (Policy::Direct, 400 << 10),
            _ => (Policy::Buffered, 24),
        };
        rt.set_policy(policy, buffer);
        let desc = Descriptor::new(&count, &src_strides, &dst_strides)?;
        let dst_extent = extent_of(&count, &dst_strides);
        if at + dst_extent > region {
            continue;
        }
        // Clear my block, then everyone writes into the right neighbour's.
        rt.put(
            block.ga(me)?,
            &vec![0u8; (at + dst_extent) as usize],
            Handle::NULL,
        )?;
        rt.all_fence()?;
        rt.barrier()?;
        let src = data(extent_of(&count, &src_strides), me, case);
        let target = block.ga(right)?.offset(at).expect("in block");
        rt.put_strided(&src, &desc, target, Handle::NULL)?;
        rt.all_fence()?;
        rt.barrier()?;
        let mut expected = vec![0u8; (at + dst_extent) as usize];
        reference_copy(
            &count,
            &src_strides,
            &dst_strides,
            &data(extent_of(&count, &src_strides), left, case),
            &mut expected[at as usize..],
        );
        let mut got = vec![0u8; expected.len()];
        rt.get(&mut got, block.ga(me)?, Handle::NULL)?;
        let bad = got.iter().zip(&expected).position(|(g, e)| g != e);
        check(&rt, bad.is_none(), || {
            format!("case {case}: count {count:?} src {src_strides:?} dst {dst_strides:?} at {at} ({policy:?}): byte {bad:?} differs")
        });
        // Back: the section I wrote at the right neighbour, into a third layout.
        let back = Descriptor::new(&count, &dst_strides, &back_strides)?;
        let mut mine = vec![0u8; extent_of(&count, &back_strides) as usize];
        rt.get_strided(&mut mine, &back, target, Handle::NULL)?;
        let mut want = vec![0u8; mine.len()];
        let mut sent = vec![0u8; dst_extent as usize];
        reference_copy(&count, &src_strides, &dst_strides, &src, &mut sent);
        reference_copy(&count, &dst_strides, &back_strides, &sent, &mut want);
        check(&rt, mine == want, || {
            format!("case {case}: get back of count {count:?} ({policy:?}) differs")
        });
        rt.barrier()?;
    }
    // An I/O vector: segments of random lengths from separate buffers to random places
    // (16-byte spacing keeps them apart) in the right neighbour's block, and back.
    let segments = draw.range(1, 300) as usize;
    let pieces: Vec<Vec<u8>> = (0..segments)
        .map(|k| data(draw.range(1, 16), me, k as u32))
        .collect();
    let mut slots: Vec<u64> = (0..4096u64).collect();
    let offsets: Vec<u64> = (0..segments)
        .map(|k| {
            let pick = k + (draw.next() as usize) % (slots.len() - k);
            slots.swap(k, pick);
            slots[k] * 16
        })
        .collect();
    rt.put(block.ga(me)?, &vec![0u8; 4096 * 16], Handle::NULL)?;
    rt.all_fence()?;
    rt.barrier()?;
    let slices: Vec<&[u8]> = pieces.iter().map(|p| p.as_slice()).collect();
    rt.put_segments(&slices, block.ga(right)?, &offsets, Handle::NULL)?;
    rt.all_fence()?;
    rt.barrier()?;
    let mut got = vec![0u8; 4096 * 16];
    rt.get(&mut got, block.ga(me)?, Handle::NULL)?;
    for (k, &o) in offsets.iter().enumerate() {
        let want = data(pieces[k].len() as u64, left, k as u32);
        let o = o as usize;
        check(&rt, got[o..o + want.len()] == want[..], || {
            format!("vector segment {k} at {o} differs")
        });
    }
    let mut back: Vec<Vec<u8>> = pieces.iter().map(|p| vec![0u8; p.len()]).collect();
    let mut outs: Vec<&mut [u8]> = back.iter_mut().map(|b| b.as_mut_slice()).collect();
    rt.get_segments(&mut outs, block.ga(right)?, &offsets, Handle::NULL)?;
    check(&rt, back == pieces, || "vector get back differs".into());
    rt.barrier()?;
    say(&format!("rank {me}: {cases} random strided cases ok"));
    rt.finalize()
}

/// One-sided progress: rank 1 computes for a second without calling gaspar while rank 0
/// does a compare-and-swap, a put, a get, a strided put and an accumulate on rank 1's
/// memory, and a put and a get on memory rank 1 registered where the transport has
/// registered memory (not Open MPI's osc/sm); they must complete while rank 1 is still
/// busy (ARMCI's rule: no help from the target).
fn busy_target() -> Result<()> {
    let rt = gaspar::init()?.into_acp();
    let block = rt.alloc(1024)?;
    let word = GlobalPtr::<u64>::new(block.ga(1)?);
    rt.put_blocking(block.ga(rt.rank())?, &[0u8; 1024])?;
    // Rank 1 leaves the registered buffer's global address in its starter memory (0:
    // none).
    let mut buffer = vec![0u8; 64].into_boxed_slice();
    let mut key = None;
    if rt.rank() == 1 {
        // SAFETY: `buffer` outlives the registration (ended after the last barrier) and
        // is accessed only through gaspar while registered.
        // The registration publishes the buffer when its global address is first made.
        let k = unsafe { rt.register(buffer.as_mut_ptr(), 64, 0)? };
        let bits = match rt.ga(k, buffer.as_mut_ptr()) {
            Ok(ga) => {
                key = Some(k);
                ga.to_bits()
            }
            Err(Error::InvalidArgument {
                call: "register", ..
            }) => {
                rt.unregister(k)?;
                0
            }
            Err(e) => return Err(e),
        };
        GlobalPtr::<u64>::new(rt.starter_ga(1)?).put(&rt, &bits)?;
    }
    rt.barrier()?;
    if rt.rank() == 1 {
        let start = std::time::Instant::now();
        let mut x = 1u64;
        while start.elapsed() < std::time::Duration::from_secs(1) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
    } else if rt.rank() == 0 {
        let start = std::time::Instant::now();
        let registered = GlobalPtr::<u64>::new(rt.starter_ga(1)?).get(&rt)?;
        let old = word.compare_swap(&rt, 0, 7)?;
        word.add(1)?.put(&rt, &42)?;
        let got = word.add(1)?.get(&rt)?;
        // 16 rows of 16 bytes to every other 16 bytes from offset 64 on, then 2.5 added
        // to the double at offset 1000 (zero before).
        let rows = [3u8; 256];
        let desc = gaspar::strided::Descriptor::new(&[16, 16], &[16], &[32])?;
        let h = rt.put_strided(
            &rows,
            &desc,
            block.ga(1)?.offset(64).expect("in block"),
            Handle::NULL,
        )?;
        rt.complete(h)?;
        let sum = block.ga(1)?.offset(1000).expect("in block");
        let h = rt.acc_strided(
            gaspar::strided::AccKind::Double,
            &1f64.to_ne_bytes(),
            &2.5f64.to_ne_bytes(),
            &gaspar::strided::Descriptor::contiguous(8)?,
            sum,
            Handle::NULL,
        )?;
        rt.complete(h)?;
        let mut echoed = [0u8; 16];
        if registered != 0 {
            let at = GlobalAddr::from_bits(registered);
            rt.put_blocking(at, &[5u8; 16])?;
            rt.get_blocking(&mut echoed, at)?;
        }
        let took = start.elapsed();
        let mut row = [0u8; 32];
        rt.get_blocking(
            &mut row,
            block.ga(1)?.offset(64 + 15 * 32).expect("in block"),
        )?;
        let mut added = [0u8; 8];
        rt.get_blocking(&mut added, sum)?;
        check(&rt, old == 0 && got == 42, || {
            format!("cas gave {old}, get gave {got}")
        });
        check(
            &rt,
            row[..16] == [3; 16] && row[16..] == [0; 16] && f64::from_ne_bytes(added) == 2.5,
            || format!("strided put left {row:?}, accumulate {added:?}"),
        );
        check(&rt, registered == 0 || echoed == [5; 16], || {
            format!("registered memory gave back {echoed:?}")
        });
        check(&rt, took < std::time::Duration::from_millis(500), || {
            format!("operations on a busy target took {took:?}")
        });
        say(&format!(
            "rank 0: cas, put, get, strided put and accumulate on a busy target took {took:?}"
        ));
        say(&format!(
            "rank 0: registered memory on the busy target: {}",
            if registered == 0 { "none" } else { "ok" }
        ));
    }
    rt.barrier()?;
    if let Some(key) = key {
        rt.unregister(key)?;
    }
    rt.finalize()
}

/// Remote atomics against the owner's own processor atomics on one word: rank 0 adds 1
/// `rounds` times with the processor's fetch-add on its word, through the address where
/// its memory lies, while every other rank adds 1 as often with gaspar's remote
/// fetch-add. On `shm`, and on `mpi` when every rank runs on one host, remote atomics
/// are processor atomics too, so no addition is lost.
fn owner_atomics(rounds: u64) -> Result<()> {
    let rt = gaspar::init()?.into_acp();
    let (me, n) = (rt.rank(), rt.procs());
    let block = rt.alloc(64)?;
    let word = GlobalPtr::<u64>::new(block.ga(0)?);
    rt.barrier()?;
    if me == 0 {
        let address = rt.local_address(block.ga(0)?)?;
        // SAFETY: the word is this rank's, 8-byte aligned (an allocation's start), and
        // stays allocated until the free below, after the barrier; other ranks touch it
        // only with atomics.
        let own = unsafe { std::sync::atomic::AtomicU64::from_ptr(address as *mut u64) };
        for _ in 0..rounds {
            own.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    } else {
        for _ in 0..rounds {
            word.fetch_add(&rt, 1)?;
        }
    }
    rt.barrier()?;
    if me == 0 {
        let total = word.atomic_load(&rt)?;
        let expected = rounds * u64::from(n);
        check(&rt, total == expected, || {
            format!("owner and remote atomics: total {total}, expected {expected}")
        });
        say(&format!(
            "rank 0: owner and remote atomics: total {total} ok"
        ));
    }
    rt.barrier()?;
    rt.free(block)?;
    rt.finalize()
}

/// What a 3-D stencil split along its fastest dimension reads: every rank gets, `rounds`
/// times, the first column of its right neighbour's 24 x 2304 block of doubles (2304
/// elements 192 bytes apart, the face of a 48^3 grid's half) and checks it.
fn face_get(rounds: u32) -> Result<()> {
    const ROWS: usize = 24;
    const COLUMNS: usize = 48 * 48;
    let rt = gaspar::init()?.into_acp();
    let (me, n) = (rt.rank(), rt.procs());
    let right = (me + 1) % n;
    let block = rt.alloc((ROWS * COLUMNS * 8) as u64)?;
    let mine: Vec<f64> = (0..ROWS * COLUMNS)
        .map(|i| f64::from(me) * 1e7 + i as f64)
        .collect();
    rt.put(block.ga(me)?, bytemuck::cast_slice(&mine), Handle::NULL)?;
    rt.all_fence()?;
    rt.barrier()?;
    let mut face = vec![0f64; COLUMNS];
    for round in 0..rounds {
        face.fill(-1.0);
        rt.get_section(
            &mut face,
            [1],
            [COLUMNS],
            GlobalPtr::new(block.ga(right)?),
            [ROWS],
        )?;
        let bad = (0..COLUMNS).find(|&j| face[j] != f64::from(right) * 1e7 + (j * ROWS) as f64);
        check(&rt, bad.is_none(), || {
            format!("round {round}: element {bad:?} of rank {right}'s face is wrong")
        });
    }
    say(&format!("rank {me}: face get ok in {rounds} rounds"));
    rt.barrier()?;
    rt.finalize()
}

/// Every rank but `holdout` waits in a barrier that `holdout` never enters; the test then
/// kills something and checks how the job ends.
fn barrier_wait(holdout: u32) -> Result<()> {
    let rt = gaspar::init()?.into_acp();
    say(&format!(
        "rank {} pid {} job {} waiting",
        rt.rank(),
        std::process::id(),
        std::env::var("GASPAR_JOB_ID").unwrap_or_default()
    ));
    if rt.rank() == holdout {
        loop {
            std::thread::park();
        }
    }
    let result = rt.barrier();
    say(&format!("rank {} left the barrier: {result:?}", rt.rank()));
    result?;
    rt.finalize()
}

/// Whether glibc counts this process as single-threaded: it never started a second
/// thread (glibc 2.32 and later; the flag stays false once a thread was created).
fn libc_single_threaded() -> bool {
    unsafe extern "C" {
        static __libc_single_threaded: std::ffi::c_char;
    }
    // SAFETY: glibc's own variable, only read, by the thread that could change it.
    unsafe { std::ptr::read_volatile(&raw const __libc_single_threaded) != 0 }
}

/// Each rank says whether it is still single-threaded in glibc's eyes after its waits'
/// budget was settled and some barriers waited: glibc's malloc locks its arena on every
/// call above its thread cache in a process that ever had a second thread.
fn single_threaded() -> Result<()> {
    let rt = gaspar::init()?.into_acp();
    for _ in 0..100 {
        rt.barrier()?;
    }
    let single = libc_single_threaded();
    // Asked last: a job of one rank without the launcher measures the budget only now.
    let limit = gaspar::spin_limit()?;
    say(&format!(
        "rank {}: single-threaded {single}, spin limit {} ns",
        rt.rank(),
        limit.as_nanos()
    ));
    rt.finalize()
}

fn abort() -> Result<()> {
    let rt = gaspar::init()?.into_acp();
    if rt.rank() == 1 {
        rt.abort("scenario abort: bad thing happened");
    }
    rt.barrier()?;
    rt.finalize()
}

fn panic_in_rank() -> Result<()> {
    let rt = gaspar::init()?.into_acp();
    if rt.rank() == 1 {
        panic!("scenario panic");
    }
    rt.barrier()?;
    rt.finalize()
}

fn exit_without_finalize() -> Result<()> {
    let rt = gaspar::init()?.into_acp();
    rt.barrier()?;
    std::mem::forget(rt);
    std::process::exit(0)
}

/// A program that initialized MPI itself below MPI_THREAD_MULTIPLE: gaspar works from
/// the thread that started it and refuses every other thread with an error.
#[cfg(feature = "mpi")]
fn mpi_single_thread() -> Result<()> {
    // SAFETY: MPI is not initialized yet; null argc/argv are allowed since MPI-2.
    unsafe { mpi::ffi::MPI_Init(std::ptr::null_mut(), std::ptr::null_mut()) };
    let runtime = gaspar::init()?;
    let rt = runtime.acp();
    let block = rt.alloc(64)?;
    let word = GlobalPtr::<u64>::new(block.ga(rt.rank())?);
    word.fetch_add(rt, 1)?;
    let from_another = std::thread::scope(|s| s.spawn(|| word.fetch_add(rt, 1)).join());
    match from_another {
        Ok(Err(Error::WrongThread { .. })) => {}
        other => rt.abort(&format!("another thread was not refused: {other:?}")),
    }
    check(rt, word.atomic_load(rt)? == 1, || {
        "the refused add happened".into()
    });
    // The typed API's heap paths too: its blocking put, get and atomics.
    let typed = runtime.alloc::<u64>(1)?;
    let me = rt.rank();
    typed.put(me, 0, &5)?;
    let refused = std::thread::scope(|s| {
        s.spawn(|| {
            [
                typed.put(me, 0, &6).err(),
                typed.get(me, 0).err(),
                typed.fetch_add(me, 0, 1).err(),
                typed.compare_swap(me, 0, 5, 7).err(),
            ]
        })
        .join()
    });
    match refused {
        Ok(errors)
            if errors
                .iter()
                .all(|e| matches!(e, Some(Error::WrongThread { .. }))) => {}
        other => rt.abort(&format!("another thread's typed calls: {other:?}")),
    }
    check(rt, typed.get(me, 0)? == 5, || {
        "a refused typed call changed the element".into()
    });
    typed.free()?;
    rt.barrier()?;
    say(&format!("rank {}: other threads refused", rt.rank()));
    runtime.finalize()?;
    // SAFETY: every MPI call of this program is done.
    unsafe { mpi::ffi::MPI_Finalize() };
    Ok(())
}

/// What one rank's operations to one target promise about their order, `rounds` times
/// with fresh values each round (every rank works on its right neighbour's memory):
/// a get sees the same rank's earlier put (8 bytes, and the last word of 4 KiB), the
/// later of two puts to one place wins, an atomic sees an earlier put, and two
/// overlapping strided puts land in issue order.
fn ordering(rounds: u64) -> Result<()> {
    use gaspar::strided::{AccKind, Descriptor};
    let rt = gaspar::init()?.into_acp();
    let (me, n) = (rt.rank(), rt.procs());
    let right = (me + 1) % n;
    let block = rt.alloc(16 * 1024)?;
    let word = block.ga(right)?;
    let page = word.offset(64).expect("in block");
    let grid = word.offset(8192).expect("in block");
    // 16 rows of 16 bytes, 32 bytes apart; the second put starts 8 bytes later, so each
    // of its rows covers the second half of one of the first put's rows.
    let desc = Descriptor::new(&[16, 16], &[16], &[32])?;
    let later = grid.offset(8).expect("in block");
    let extent = (desc.dst_extent() + 8) as usize;
    let mut back = vec![0u8; 4096];
    for round in 0..rounds {
        let value = (u64::from(me) << 48) | (round << 8);
        rt.put(word, &value.to_ne_bytes(), Handle::NULL)?;
        rt.get_blocking(&mut back[..8], word)?;
        check(&rt, back[..8] == value.to_ne_bytes(), || {
            format!("round {round}: a get missed the put of {value:#x} before it")
        });

        let fill = vec![round as u8 ^ 0x5a; 4096];
        rt.put(page, &fill, Handle::NULL)?;
        rt.get_blocking(&mut back[..8], page.offset(4088).expect("in block"))?;
        check(&rt, back[..8] == fill[..8], || {
            format!("round {round}: a get missed the end of the 4 KiB put before it")
        });

        rt.put(word, &(value + 1).to_ne_bytes(), Handle::NULL)?;
        rt.put(word, &(value + 2).to_ne_bytes(), Handle::NULL)?;
        let old = GlobalPtr::<u64>::new(word).fetch_add(&rt, 1)?;
        check(&rt, old == value + 2, || {
            format!(
                "round {round}: the atomic after two puts saw {old:#x}, not {:#x}",
                value + 2
            )
        });

        let (first, second) = ([round as u8; 256], [!(round as u8); 256]);
        rt.put_strided(&first, &desc, grid, Handle::NULL)?;
        rt.put_strided(&second, &desc, later, Handle::NULL)?;
        rt.get_blocking(&mut back[..extent], grid)?;
        let mut expected = vec![0u8; extent];
        for row in 0..16 {
            expected[row * 32..row * 32 + 8].fill(first[0]);
            expected[row * 32 + 8..row * 32 + 24].fill(second[0]);
        }
        let rows_differ =
            (0..16).any(|row| back[row * 32..row * 32 + 24] != expected[row * 32..row * 32 + 24]);
        check(&rt, !rows_differ, || {
            format!("round {round}: overlapping strided puts did not land in issue order")
        });

        // An accumulate lands after the put before it and before the put after it, and a
        // get after it sees it.
        let number = GlobalPtr::<f64>::new(word);
        let (two, one) = (2f64.to_ne_bytes(), 1f64.to_ne_bytes());
        let contiguous = Descriptor::contiguous(8)?;
        rt.put(word, &(round as f64).to_ne_bytes(), Handle::NULL)?;
        rt.acc_strided(AccKind::Double, &two, &one, &contiguous, word, Handle::NULL)?;
        let sum = number.get(&rt)?;
        check(&rt, sum == round as f64 + 2.0, || {
            format!("round {round}: put {round}, accumulated 2 * 1, then got {sum}")
        });
        rt.acc_strided(AccKind::Double, &one, &one, &contiguous, word, Handle::NULL)?;
        rt.put(word, &(-(round as f64)).to_ne_bytes(), Handle::NULL)?;
        let last = number.get(&rt)?;
        check(&rt, last == -(round as f64), || {
            format!("round {round}: accumulated, put -{round}, then got {last}")
        });
    }
    rt.barrier()?;
    say(&format!("rank {me}: ordering ok in {rounds} rounds"));
    rt.finalize()
}

/// The values of type `T` in `bytes`.
fn values<T: bytemuck::Pod>(bytes: &[u8]) -> Vec<T> {
    bytes
        .chunks_exact(std::mem::size_of::<T>())
        .map(bytemuck::pod_read_unaligned)
        .collect()
}

/// Every rank accumulates into every rank at once, `rounds` times, in each shape and type:
/// contiguous ints (scale 2), a strided section of doubles (scale 1, MPI's sum of the
/// source itself), an I/O vector of complex doubles (scale i) and contiguous longs (scale
/// -1); then each rank checks its own memory holds every update, none lost.
fn accumulate(rounds: u64) -> Result<()> {
    use gaspar::strided::{AccKind, Descriptor};
    const N: usize = 64;
    let rt = gaspar::init()?.into_acp();
    let (me, n) = (rt.rank(), rt.procs());
    // ints, longs, a 8 x 8 grid of doubles, N complex doubles.
    let (ints, longs, grid, complex) = (0u64, 256, 1024, 2048);
    let block = rt.alloc(4096)?;
    rt.put_blocking(block.ga(me)?, &[0u8; 4096])?;
    rt.barrier()?;
    let mine = i32::try_from(me + 1).expect("small rank");
    let int_src = bytemuck::cast_slice::<i32, u8>(&[mine; N]).to_vec();
    let long_src = bytemuck::cast_slice::<i64, u8>(&[i64::from(mine); N / 2]).to_vec();
    // A 4 x 3 section of doubles (rows 8 doubles apart in the grid, 3 apart at the source).
    let section = Descriptor::new(&[24, 4], &[24], &[64])?;
    let double_src = bytemuck::cast_slice::<f64, u8>(&[f64::from(mine); 12]).to_vec();
    // Every other complex element, from a packed source.
    let complex_src = bytemuck::cast_slice::<f64, u8>(&[f64::from(mine); N]).to_vec();
    let local: Vec<u64> = (0..N as u64 / 4).map(|k| 16 * k).collect();
    let remote: Vec<u64> = (0..N as u64 / 4).map(|k| 32 * k).collect();
    for _ in 0..rounds {
        for target in (0..n).map(|k| (me + k) % n) {
            let at = |offset: u64| {
                block
                    .ga(target)
                    .map(|ga| ga.offset(offset).expect("in block"))
            };
            rt.acc_strided(
                AccKind::Int,
                &2i32.to_ne_bytes(),
                &int_src,
                &Descriptor::contiguous(int_src.len() as u64)?,
                at(ints)?,
                Handle::NULL,
            )?;
            rt.acc_strided(
                AccKind::Double,
                &1f64.to_ne_bytes(),
                &double_src,
                &section,
                at(grid)?,
                Handle::NULL,
            )?;
            rt.acc_vector(
                AccKind::ComplexDouble,
                bytemuck::bytes_of(&[0f64, 1.0]),
                &complex_src,
                &local,
                at(complex)?,
                &remote,
                16,
                Handle::NULL,
            )?;
            rt.acc_strided(
                AccKind::Long,
                &(-1i64).to_ne_bytes(),
                &long_src,
                &Descriptor::contiguous(long_src.len() as u64)?,
                at(longs)?,
                Handle::NULL,
            )?;
        }
    }
    rt.barrier()?;
    let ranks_sum = i64::from(n) * i64::from(n + 1) / 2;
    let mut memory = vec![0u8; 4096];
    rt.get_blocking(&mut memory, block.ga(me)?)?;
    let read = |offset: u64, len: usize| memory[offset as usize..][..len].to_vec();
    let ints_ok = values::<i32>(&read(ints, 4 * N))
        .iter()
        .all(|&v| i64::from(v) == 2 * ranks_sum * rounds as i64);
    let longs_ok = values::<i64>(&read(longs, 4 * N))
        .iter()
        .all(|&v| v == -ranks_sum * rounds as i64);
    let doubles = values::<f64>(&read(grid, 512));
    let grid_ok = (0..64).all(|k| {
        let inside = k / 8 < 4 && k % 8 < 3;
        doubles[k]
            == if inside {
                (ranks_sum * rounds as i64) as f64
            } else {
                0.0
            }
    });
    // (0 + i) * (m + m i) = -m + m i, at every other complex element.
    let complex = values::<[f64; 2]>(&read(complex, 16 * N / 2));
    let total = (ranks_sum * rounds as i64) as f64;
    let complex_ok = (0..N / 2).all(|k| {
        complex[k]
            == if k % 2 == 0 {
                [-total, total]
            } else {
                [0.0, 0.0]
            }
    });
    check(&rt, ints_ok && longs_ok && grid_ok && complex_ok, || {
        format!(
            "rank {me}: lost accumulates: ints {ints_ok}, longs {longs_ok}, strided doubles \
             {grid_ok}, complex vector {complex_ok}"
        )
    });
    rt.barrier()?;
    rt.free(block)?;
    say(&format!("rank {me}: accumulates ok in {rounds} rounds"));
    rt.finalize()
}

/// Heap blocks are aligned to `gmem::heap::ALIGN` (64) bytes in this process's memory,
/// whatever alignment the transport's memory came with.
fn heap_alignment() -> Result<()> {
    let rt = gaspar::init()?.into_acp();
    let me = rt.rank();
    for len in [1u64, 24, 100, 4096, 7] {
        let block = rt.alloc(len)?;
        let address = rt.local_address(block.ga(me)?)?;
        check(&rt, address % 64 == 0, || {
            format!("a {len}-byte heap block is at {address:#x}, not 64-byte aligned")
        });
    }
    rt.barrier()?;
    say(&format!("rank {me}: heap blocks aligned"));
    rt.finalize()
}

/// Rank 0 makes another collective call than the rest, twice (alloc, then free, against
/// barrier): every rank gets the error, naming the calls as they were made, and the job
/// goes on.
fn collective_messages() -> Result<()> {
    let rt = gaspar::init()?.into_acp();
    let me = rt.rank();
    let odd_one_out = |call: &dyn Fn() -> Result<()>| {
        let result = if me == 0 { call() } else { rt.barrier() };
        match result {
            Err(e @ Error::MismatchedCollective { .. }) => say(&format!("rank {me}: {e}")),
            other => rt.abort(&format!("expected a mismatch, got {other:?}")),
        }
    };
    odd_one_out(&|| rt.alloc(64).map(drop));
    let block = rt.alloc(64)?;
    odd_one_out(&|| rt.free(block.clone()));
    rt.barrier()?;
    block.ga(me)?;
    rt.free(block)?;
    say(&format!("rank {me}: collective messages ok"));
    rt.finalize()
}

/// Transfers to another rank's heap are checked against the allocation too: a put past
/// a block's end and one through a freed handle are refused, and nothing is written.
fn remote_heap_bounds() -> Result<()> {
    let rt = gaspar::init()?.into_acp();
    let me = rt.rank();
    let right = (me + 1) % rt.procs();
    let a = rt.alloc(64)?;
    let b = rt.alloc(64)?;
    let gone = rt.alloc(64)?;
    rt.put(b.ga(me)?, &[me as u8 + 1; 64], Handle::NULL)?;
    rt.free(gone.clone())?;
    rt.barrier()?;
    match rt.put(a.ga(right)?, &[0xee; 128], Handle::NULL) {
        Err(Error::OutsideAllocation { .. }) => {}
        other => rt.abort(&format!("a put past a remote block gave {other:?}")),
    }
    match gone.ga(right) {
        Err(Error::FreedAllocation { .. }) => {}
        other => rt.abort(&format!("a freed handle gave {other:?}")),
    }
    rt.barrier()?;
    let mut back = [0u8; 64];
    rt.get(&mut back, b.ga(me)?, Handle::NULL)?;
    check(&rt, back == [me as u8 + 1; 64], || {
        format!("rank {me}: the block after a refused put changed: {back:?}")
    });
    rt.free(b)?;
    rt.free(a)?;
    say(&format!("rank {me}: remote heap bounds ok"));
    rt.finalize()
}

/// The scenarios of waiting (tests/failures.rs and tests/scenarios.rs).
fn waits_scenario(name: &str) -> Result<()> {
    match name {
        "waits-threaded-collectives" => threaded_collectives(),
        "waits-threaded-rma" => threaded_rma(),
        "waits-finalize-vs-barrier" => finalize_against(|rt| rt.barrier()),
        "waits-finalize-vs-alloc" => finalize_against(|rt| rt.alloc(64).map(drop)),
        "waits-early-return" => early_return(),
        "waits-until" => wait_until(),
        "waits-acc-holder-dies" => acc_holder_dies(),
        other => {
            eprintln!("unknown scenario {other:?}");
            std::process::exit(2)
        }
    }
}

/// Two threads of every rank call barriers at the same time: each call is one barrier
/// of the rank, so every rank makes 2 x 300 and the job ends.
fn threaded_collectives() -> Result<()> {
    let rt = gaspar::init()?.into_acp();
    std::thread::scope(|s| {
        let threads: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    for _ in 0..300 {
                        rt.barrier()?;
                    }
                    Ok::<(), Error>(())
                })
            })
            .collect();
        threads
            .into_iter()
            .try_for_each(|t| t.join().expect("barrier thread panicked"))
    })?;
    rt.barrier()?;
    say(&format!(
        "rank {}: 600 barriers from two threads",
        rt.rank()
    ));
    rt.finalize()
}

/// Two threads of every rank put, get and add on the next rank's memory at the same
/// time; one of them also calls barriers. Every value and count must come out right.
fn threaded_rma() -> Result<()> {
    const ROUNDS: u64 = 2000;
    let rt = gaspar::init()?.into_acp();
    let (me, procs) = (rt.rank(), rt.procs());
    // Per rank: a counter, then one word per (writer rank, thread).
    let block = rt.alloc(8 * (1 + 2 * u64::from(procs)))?;
    let right = (me + 1) % procs;
    let counter = GlobalPtr::<u64>::new(block.ga(right)?);
    let slot = |thread: u64| counter.add(1 + 2 * u64::from(me) + thread);
    rt.barrier()?;
    std::thread::scope(|s| {
        let worker = |thread: u64| {
            let rt = &rt;
            move || -> Result<()> {
                let mine = slot(thread)?;
                for k in 1..=ROUNDS {
                    let value = k * 10 + thread;
                    mine.put(rt, &value)?;
                    let back = mine.get(rt)?;
                    check(rt, back == value, || {
                        format!("thread {thread} read {back} after putting {value}")
                    });
                    counter.fetch_add(rt, 1)?;
                    if thread == 0 && k % 100 == 0 {
                        rt.barrier()?;
                    }
                }
                Ok(())
            }
        };
        let other = s.spawn(worker(1));
        let first = worker(0)();
        let second = other.join().expect("rma thread panicked");
        first.and(second)
    })?;
    rt.barrier()?;
    let mine = GlobalPtr::<u64>::new(block.ga(me)?);
    let total = mine.get(&rt)?;
    check(&rt, total == 2 * ROUNDS, || {
        format!("counter {total}, expected {}", 2 * ROUNDS)
    });
    say(&format!("rank {me}: two threads, counter {total}"));
    rt.free(block)?;
    rt.finalize()
}

/// Rank 0 finalizes while the others call `other` (a collective): every rank must fail
/// promptly instead of the others waiting forever for rank 0.
fn finalize_against(other: impl FnOnce(&Strided) -> Result<()>) -> Result<()> {
    use nix::sys::signal::{kill, SigSet, Signal};
    // Under MPICH a rank's exit ends the job at once, so each rank must have said how its
    // call ended before the other exits: rank 1 waits for rank 0 in a barrier that fails
    // or is ended with the job, and rank 0 waits for rank 1's SIGUSR1, which rank 1 sends
    // once it has spoken (a rank 1 that never fails shows as the test's timeout). Blocked
    // before init, so that no thread of the runtime takes it (it would end the process).
    let usr1 = SigSet::from(Signal::SIGUSR1);
    usr1.thread_block().map_err(|e| Error::Os {
        call: "pthread_sigmask",
        source: e.into(),
    })?;
    let rt = gaspar::init()?.into_acp();
    let mut rank0_pid = [std::process::id()];
    rt.team().broadcast(&rt, &mut rank0_pid, 0)?;
    rt.barrier()?;
    let result = if rt.rank() == 0 {
        let result = rt.finalize();
        if result.is_err() {
            say(&format!("finalize gave {result:?}"));
            let _ = usr1.wait();
            return result;
        }
        result
    } else {
        let result = other(&rt);
        say(&format!("rank {}: collective gave {result:?}", rt.rank()));
        if result.is_err() {
            if rt.rank() == 1 {
                let rank0 = nix::unistd::Pid::from_raw(rank0_pid[0] as i32);
                let _ = kill(rank0, Signal::SIGUSR1);
            }
            let _ = rt.barrier();
        }
        result?;
        rt.finalize()
    };
    say(&format!("finalize gave {result:?}"));
    result
}

/// Rank 1 leaves early with `?` (its runtime is dropped unfinalized) while rank 0 goes on
/// to a barrier and finalize: the job must end with rank 1's message, not hang.
fn early_return() -> Result<()> {
    let rt = gaspar::init()?.into_acp();
    rt.barrier()?;
    if rt.rank() == 1 {
        // A local error (no rank of that number): no other rank takes part.
        rt.starter_ga(rt.procs())?;
    }
    let result = rt.barrier();
    say(&format!("rank {}: barrier gave {result:?}", rt.rank()));
    result?;
    rt.finalize()
}

/// Rank 0 waits until words of its own heap are set by rank 1 with a put and with
/// atomics (u64, i64, u32, i32); rank 1 first spins a while so that rank 0 sleeps.
fn wait_until() -> Result<()> {
    use gaspar::Compare;
    let rt = gaspar::init()?.into_acp();
    let block = rt.alloc(64)?;
    let at = |rank: u32, byte: u64| -> Result<GlobalAddr> {
        block
            .ga(rank)?
            .offset(byte)
            .ok_or(Error::LengthOverflow { what: "word" })
    };
    let (put_word, add_word) = (
        GlobalPtr::<u64>::new(at(0, 0)?),
        GlobalPtr::<i64>::new(at(0, 8)?),
    );
    let (small, signed) = (
        GlobalPtr::<u32>::new(at(0, 16)?),
        GlobalPtr::<i32>::new(at(0, 20)?),
    );
    rt.barrier()?;
    match rt.rank() {
        0 => {
            let start = std::time::Instant::now();
            let put = put_word.wait_until(&rt, Compare::Eq, 42)?;
            let added = add_word.wait_until(&rt, Compare::Lt, -2)?;
            let swapped = small.wait_until(&rt, Compare::Ge, 7)?;
            let negative = signed.wait_until(&rt, Compare::Ne, 0)?;
            check(
                &rt,
                (put, added, swapped, negative) == (42, -3, 7, -1),
                || format!("woke with {put}, {added}, {swapped}, {negative}"),
            );
            // Another rank's memory cannot be waited on.
            let remote = GlobalPtr::<u64>::new(at(1, 0)?);
            match remote.wait_until(&rt, Compare::Eq, 0) {
                Err(Error::InvalidArgument {
                    call: "wait_until", ..
                }) => {}
                other => rt.abort(&format!("wait on rank 1's memory gave {other:?}")),
            }
            say(&format!(
                "rank 0: woken with 42, -3, 7, -1 after {:?}",
                start.elapsed()
            ));
        }
        1 => {
            let busy = std::time::Instant::now();
            while busy.elapsed() < std::time::Duration::from_millis(200) {
                std::hint::spin_loop();
            }
            put_word.put(&rt, &42)?;
            for _ in 0..3 {
                add_word.fetch_add(&rt, -1)?;
            }
            small.swap(&rt, 7)?;
            signed.compare_swap(&rt, 0, -1)?;
        }
        _ => {}
    }
    rt.barrier()?;
    rt.free(block)?;
    rt.finalize()
}

/// Rank 1 accumulates large blocks of ones into rank 0's heap, and a thread of its own
/// kills it in the middle of one (the block's first and last elements differ: rank 1
/// holds rank 0's accumulate lock); rank 0 accumulates small ones into the same rank's
/// memory, so it waits for that lock: it must end with the job's abort error, not be
/// killed by the launcher.
fn acc_holder_dies() -> Result<()> {
    use gaspar::strided::{AccKind, Descriptor};
    const BIG: u64 = 16 << 20;
    let rt = gaspar::init()?.into_acp();
    let block = rt.alloc(BIG + 64)?;
    let first = GlobalPtr::<f64>::new(block.ga(0)?);
    let last = first.add(BIG / 8 - 1)?;
    let (target, len) = if rt.rank() == 1 {
        (first.ga(), BIG)
    } else {
        (first.add(BIG / 8)?.ga(), 8)
    };
    rt.barrier()?;
    if rt.rank() == 0 {
        say("rank 0 accumulates");
    }
    let src = bytemuck::cast_slice::<f64, u8>(&vec![1.0; len as usize / 8]).to_vec();
    let desc = Descriptor::contiguous(len)?;
    let one = 1f64.to_ne_bytes();
    let result = std::thread::scope(|s| {
        if rt.rank() == 1 {
            s.spawn(|| -> Result<()> {
                while first.get(&rt)? == last.get(&rt)? {
                    std::hint::spin_loop();
                }
                let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
                Ok(())
            });
        }
        loop {
            if let Err(e) = rt.acc_strided(AccKind::Double, &one, &src, &desc, target, Handle::NULL)
            {
                break e;
            }
        }
    });
    say(&format!(
        "rank {}: accumulate gave Err({result:?})",
        rt.rank()
    ));
    Err(result)
}

/// A program's own polling loop over a blocking get, as users write it before they learn
/// `wait_until`: rank 0 spins on a word of its starter memory that rank 1 sets after a
/// barrier. Built in release mode by scripts/test, where a load hoisted out of the loop
/// would spin forever (the test's timeout ends it).
fn polling_get() -> Result<()> {
    let rt = gaspar::init()?.into_acp();
    let word = GlobalPtr::<u64>::new(rt.starter_ga(0)?);
    if rt.rank() == 0 {
        word.put(&rt, &0)?;
    }
    rt.barrier()?;
    if rt.rank() == 1 {
        word.put(&rt, &42)?;
    }
    if rt.rank() == 0 {
        let mut seen = 0;
        while seen == 0 {
            seen = word.get(&rt)?;
        }
        check(&rt, seen == 42, || format!("polled {seen}, expected 42"));
        say("rank 0: the polling loop saw 42");
    }
    rt.barrier()?;
    rt.finalize()
}

/// Transfers into another rank's local allocations (`alloc_local`, known only to their
/// owner) are checked against those allocations before anything moves: past a block's
/// end, into never-allocated heap, into a freed block (after the checking rank had used
/// it, so its copy of the owner's list is stale), through an address whose block was
/// freed and replaced by a smaller one. Put, get and atomics; the owner checks that
/// nothing changed. Every rank works on the rank to its right.
fn remote_local_bounds() -> Result<()> {
    let rt = gaspar::init()?.into_acp();
    let (me, procs) = (rt.rank(), rt.procs());
    let right = (me + 1) % procs;
    // The block to be freed at the top of the heap, so that a put past the end of `mine`
    // runs into it rather than past the heap.
    let doomed = rt.alloc_local(64)?;
    let mine = rt.alloc_local(64)?;
    let fill = [me as u8 + 1; 64];
    rt.put(mine.ga(), &fill, Handle::NULL)?;
    let mut offsets = vec![0u64; procs as usize];
    rt.allgather_u64(mine.heap_offset(), &mut offsets)?;
    let theirs = GlobalAddr::new(
        right,
        0,
        gaspar::gmem::Segment::Heap,
        offsets[right as usize],
    )
    .expect("a heap address");
    rt.allgather_u64(doomed.heap_offset(), &mut offsets)?;
    let their_doomed = GlobalAddr::new(
        right,
        0,
        gaspar::gmem::Segment::Heap,
        offsets[right as usize],
    )
    .expect("a heap address");
    rt.barrier()?;
    let refused = |what: &str, result: Result<Handle>, starts_in: Option<(u64, u64)>| match result {
        Err(Error::OutsideAllocation { allocation, .. }) if allocation == starts_in => {}
        other => rt.abort(&format!("rank {me}: {what} gave {other:?}")),
    };
    // Inside: fine, and it fills this rank's copy of the right rank's list.
    let mut back = [0u8; 64];
    rt.get(&mut back, theirs, Handle::NULL)?;
    check(&rt, back == [right as u8 + 1; 64], || {
        format!("rank {me}: read {back:?} from rank {right}'s local block")
    });
    rt.put(their_doomed, &[0xdd; 64], Handle::NULL)?;
    let block = Some((theirs.decode().expect("decodes").offset, 64));
    refused(
        "a put past the end of a remote local block",
        rt.put(theirs, &[0xee; 65], Handle::NULL),
        block,
    );
    refused(
        "a get past the end of a remote local block",
        rt.get(
            &mut [0u8; 72],
            theirs.offset(8).expect("fits"),
            Handle::NULL,
        ),
        block,
    );
    let nowhere = GlobalAddr::new(right, 0, gaspar::gmem::Segment::Heap, rt.heap_len() / 2)
        .expect("a heap address");
    let atomic_refused =
        |what: &str, ga: GlobalAddr| match GlobalPtr::<u64>::new(ga).fetch_add(&rt, 1) {
            Err(Error::OutsideAllocation { .. }) => {}
            other => rt.abort(&format!("rank {me}: an atomic {what} gave {other:?}")),
        };
    atomic_refused("into never-allocated heap", nowhere);
    refused(
        "a put into never-allocated heap",
        rt.put(nowhere, &[0xee; 8], Handle::NULL),
        None,
    );
    rt.barrier()?;
    rt.free_local(doomed)?;
    rt.barrier()?;
    refused(
        "a put into a freed remote local block",
        rt.put(their_doomed, &[0xee; 64], Handle::NULL),
        None,
    );
    rt.barrier()?;
    // A smaller block where the freed one was: the old address reaches only its bytes.
    let smaller = rt.alloc_local(32)?;
    rt.put(smaller.ga(), &[0x55; 32], Handle::NULL)?;
    rt.allgather_u64(smaller.heap_offset(), &mut offsets)?;
    rt.barrier()?;
    let their_smaller = offsets[right as usize];
    check(
        &rt,
        their_smaller == their_doomed.decode().expect("decodes").offset,
        || format!("rank {me}: the smaller block went to {their_smaller:#x}, not to the freed one"),
    );
    refused(
        "a put of the freed block's length through its old address",
        rt.put(their_doomed, &[0xee; 64], Handle::NULL),
        Some((their_smaller, 32)),
    );
    atomic_refused(
        "past the smaller block",
        their_doomed.offset(32).expect("fits"),
    );
    rt.barrier()?;
    let mut own = [0u8; 64];
    rt.get(&mut own, mine.ga(), Handle::NULL)?;
    check(&rt, own == fill, || {
        format!("rank {me}: a refused transfer changed the block: {own:?}")
    });
    let mut own = [0u8; 32];
    rt.get(&mut own, smaller.ga(), Handle::NULL)?;
    check(&rt, own == [0x55; 32], || {
        format!("rank {me}: a refused put changed the new block: {own:?}")
    });
    rt.barrier()?;
    rt.free_local(smaller)?;
    rt.free_local(mine)?;
    say(&format!("rank {me}: remote local bounds ok"));
    rt.finalize()
}
