//! The coarray layer beside the raw runtime calls it is built on, in the same run:
//! `gaspar run -n N target/release/examples/coarray_bench` (N >= 2). Image 1 prints one
//! line per operation: the coarray figure, the raw figure, and the layer's overhead. The
//! latency, sync and small-collective rows time the two in alternation (see `paired`).
//! `coarray_bench memory` times allocate + deallocate under each memory method (RS, RA,
//! CA; registered memory on mpi needs `mpirun --mca osc ucx`). `scripts/bench-coarray`
//! runs both beside OpenMPI's figures (`coarray_bench_peer.c`).

use std::time::Instant;

use gaspar::coarray::{CoResult, Dim, Elem, ElemType, Images, MemoryMethod, Section};
use gaspar::strided::Descriptor;
use gaspar::world::ReduceOp;
use gaspar::{Handle, Width};

const R8: Elem = Elem::new(ElemType::Real, 8);

fn main() {
    let memory_mode = std::env::args().nth(1).as_deref() == Some("memory");
    let result = Images::init().and_then(|mut images| {
        if memory_mode {
            allocation_costs(&mut images)?;
        } else {
            bench(&mut images)?;
        }
        images.finalize()
    });
    if let Err(e) = result {
        eprintln!("coarray_bench: {e}");
        std::process::exit(1);
    }
}

/// Nanoseconds per iteration of `f`, after a warm-up, best of three runs.
fn time(iterations: u32, mut f: impl FnMut() -> CoResult<()>) -> CoResult<f64> {
    for _ in 0..iterations / 10 + 1 {
        f()?;
    }
    let mut best = f64::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        for _ in 0..iterations {
            f()?;
        }
        best = best.min(start.elapsed().as_nanos() as f64 / f64::from(iterations));
    }
    Ok(best)
}

/// Which of the two paths a paired measurement times.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Path {
    Coarray,
    Raw,
}

/// Nanoseconds per iteration of `f(Path::Coarray)` and of `f(Path::Raw)`, timed in
/// alternation (five rounds of each, the best of each kept), so that a change of the
/// machine's load during the run hits both alike.
fn paired(iterations: u32, mut f: impl FnMut(Path) -> CoResult<()>) -> CoResult<(f64, f64)> {
    let mut best = [f64::MAX; 2];
    for path in [Path::Coarray, Path::Raw] {
        for _ in 0..iterations / 10 + 1 {
            f(path)?;
        }
    }
    for _ in 0..5 {
        for (slot, path) in [Path::Coarray, Path::Raw].into_iter().enumerate() {
            let start = Instant::now();
            for _ in 0..iterations {
                f(path)?;
            }
            let ns = start.elapsed().as_nanos() as f64 / f64::from(iterations);
            best[slot] = best[slot].min(ns);
        }
    }
    Ok((best[0], best[1]))
}

/// [`paired`] for operations whose images contend with each other (a lock every image
/// takes): every image starts each timed round together (a barrier, outside the timing),
/// so that both paths are timed under the same contention.
fn paired_in_step(
    images: &mut Images,
    iterations: u32,
    mut f: impl FnMut(&mut Images, Path) -> CoResult<()>,
) -> CoResult<(f64, f64)> {
    let mut best = [f64::MAX; 2];
    for path in [Path::Coarray, Path::Raw] {
        images.runtime().barrier()?;
        for _ in 0..iterations / 10 + 1 {
            f(images, path)?;
        }
    }
    for _ in 0..5 {
        for (slot, path) in [Path::Coarray, Path::Raw].into_iter().enumerate() {
            images.runtime().barrier()?;
            let start = Instant::now();
            for _ in 0..iterations {
                f(images, path)?;
            }
            let ns = start.elapsed().as_nanos() as f64 / f64::from(iterations);
            best[slot] = best[slot].min(ns);
        }
    }
    Ok((best[0], best[1]))
}

fn report(me: u32, n: u32, what: &str, coarray: f64, raw: Option<f64>) {
    report_as(me, n, what, "coarray", coarray, raw)
}

fn report_as(me: u32, n: u32, what: &str, label: &str, ns: f64, raw: Option<f64>) {
    if me != 1 {
        return;
    }
    match raw {
        Some(raw) => println!(
            "{n} images  {what:<40} {label} {ns:>12.0} ns   raw {raw:>12.0} ns   overhead {:+6.1} %",
            100.0 * (ns - raw) / raw
        ),
        None => println!("{n} images  {what:<40} {label} {ns:>12.0} ns"),
    }
}

fn dense(count: usize) -> [Dim; 1] {
    [Dim {
        extent: count,
        stride: 8,
    }]
}

/// Allocate + deallocate of 8 B, 64 KiB and 4 MiB under each memory method (raw: the
/// runtime's symmetric alloc + free), and CA's registration of memory the caller
/// allocated once (register + deregister).
fn allocation_costs(images: &mut Images) -> CoResult<()> {
    let (me, n) = (images.this_image(), images.num_images());
    let methods = [
        MemoryMethod::RuntimeSharing,
        MemoryMethod::RuntimeAllocation,
        MemoryMethod::CompilerAllocation,
    ];
    for bytes in [8usize, 64 << 10, 4 << 20] {
        for method in methods {
            images.set_memory_method(method);
            let c = time(100, || {
                let token = images.allocate(bytes)?;
                images.deallocate(token)
            })?;
            let raw = (method == MemoryMethod::RuntimeSharing)
                .then(|| {
                    time(100, || {
                        let block = images.runtime().alloc(bytes as u64)?;
                        Ok(images.runtime().free(block)?)
                    })
                })
                .transpose()?;
            let what = format!("allocate+free {bytes} B {}", method.abbreviation());
            report(me, n, &what, c, raw);
        }
        let mut memory = Some(vec![0u128; bytes.div_ceil(16)].into_boxed_slice());
        let c = time(100, || {
            let caller_memory = memory.take().unwrap_or_default();
            let token = images.register(caller_memory)?;
            memory = Some(images.deregister(token)?);
            Ok(())
        })?;
        report(
            me,
            n,
            &format!("register {bytes} B CA (caller memory)"),
            c,
            None,
        );
    }
    images.set_memory_method(MemoryMethod::RuntimeSharing);
    Ok(())
}

/// An atomic add of `value` (wrapping: `u64::MAX` subtracts one).
fn add(value: u64) -> gaspar::AtomicOp {
    gaspar::AtomicOp::Add(value)
}

/// The word of `block` on `image` that image `from` writes.
fn word(block: &gaspar::SymmetricAlloc, image: u32, from: u32) -> CoResult<gaspar::GlobalAddr> {
    block
        .ga(image - 1)?
        .offset(8 * u64::from(from - 1))
        .ok_or_else(|| gaspar::coarray::CoError::invalid("bench", "word past the block"))
}

/// Zeroes this image's `n` words of `block`, then waits for every image to do the same.
fn zero_own(images: &mut Images, block: &gaspar::SymmetricAlloc, n: u32) -> CoResult<()> {
    let me = images.this_image();
    images
        .runtime()
        .put_blocking(block.ga(me - 1)?, &vec![0u8; 8 * n as usize])?;
    images.sync_all()
}

fn bench(images: &mut Images) -> CoResult<()> {
    let (me, n) = (images.this_image(), images.num_images());
    let right = me % n + 1;
    let right_rank = right - 1;
    const MAX: usize = 4 << 20;
    let token = images.allocate(MAX)?;
    let raw = images.runtime().alloc(MAX as u64)?;
    let src = vec![1u8; MAX];
    let mut dst = vec![0u8; MAX];

    // 8-byte put (issue; completed by the sync after the loop) and get.
    let scalar = Section::scalar(8, 0);
    // The raw calls move the same bytes as the coarray ones (the right image's part of
    // the coarray): the copy engine picks its method by where source and destination lie
    // within a page, so a raw row on another block would time another copy.
    let target = gaspar::GlobalAddr::from_bits(images.part(&token, right)?.ga_bits);
    let (c, r) = paired(20_000, |path| match path {
        Path::Coarray => images.put(&token, 0, right, &scalar, R8, &src[..8], &scalar, R8),
        Path::Raw => {
            images.runtime().put(target, &src[..8], Handle::NULL)?;
            Ok(())
        }
    })?;
    images.sync_all()?;
    report(me, n, "put 8 B", c, Some(r));
    // The raw put above reuses an address computed once; the coarray put finds its
    // address on every call (image to rank in the team, offset into the coarray, checked
    // against its size), as a raw put to an image and offset given each time does.
    let (c, r) = paired(20_000, |path| match path {
        Path::Coarray => images.put(&token, 0, right, &scalar, R8, &src[..8], &scalar, R8),
        Path::Raw => {
            let target = raw.ga(right_rank)?;
            images.runtime().put(target, &src[..8], Handle::NULL)?;
            Ok(())
        }
    })?;
    images.sync_all()?;
    report(me, n, "put 8 B (raw: address each time)", c, Some(r));
    let (c, r) = paired(20_000, |path| match path {
        Path::Coarray => images.get(&token, 0, right, &scalar, R8, &mut dst[..8], &scalar, R8),
        Path::Raw => Ok(images.runtime().get_blocking(&mut dst[..8], target)?),
    })?;
    report(me, n, "get 8 B", c, Some(r));
    images.sync_all()?;

    // Bandwidth: contiguous put and get, completed each time.
    for len in [8 << 10, 256 << 10, 4 << 20] {
        let count = len / 8;
        let dims = dense(count);
        let section = Section {
            elem_len: 8,
            start: 0,
            dims: &dims,
        };
        let iterations = (64 << 20) / len as u32;
        let (c, r) = paired(iterations, |path| match path {
            Path::Coarray => {
                images.put(&token, 0, right, &section, R8, &src[..len], &section, R8)?;
                images.sync_memory()
            }
            Path::Raw => Ok(images.runtime().put_blocking(target, &src[..len])?),
        })?;
        report(me, n, &format!("put {} KiB", len >> 10), c, Some(r));
        // The same statement against the raw calls that match its two steps: a
        // nonblocking put, then the fence that completes it at its target (the coarray
        // put is nonblocking; sync memory, an image control statement, completes it).
        let (c, r) = paired(iterations, |path| match path {
            Path::Coarray => {
                images.put(&token, 0, right, &section, R8, &src[..len], &section, R8)?;
                images.sync_memory()
            }
            Path::Raw => {
                images.runtime().put(target, &src[..len], Handle::NULL)?;
                Ok(images.runtime().fence(right_rank)?)
            }
        })?;
        report(
            me,
            n,
            &format!("put {} KiB (raw: put + fence)", len >> 10),
            c,
            Some(r),
        );
        let (c, r) = paired(iterations, |path| match path {
            Path::Coarray => images.get(
                &token,
                0,
                right,
                &section,
                R8,
                &mut dst[..len],
                &section,
                R8,
            ),
            Path::Raw => Ok(images.runtime().get_blocking(&mut dst[..len], target)?),
        })?;
        report(me, n, &format!("get {} KiB", len >> 10), c, Some(r));
    }
    images.sync_all()?;

    // Strided: 256 x 64 doubles into every other column of a 256 x 128 array.
    let remote = [
        Dim {
            extent: 64,
            stride: 16,
        },
        Dim {
            extent: 256,
            stride: 128 * 8,
        },
    ];
    let local = [
        Dim {
            extent: 64,
            stride: 8,
        },
        Dim {
            extent: 256,
            stride: 64 * 8,
        },
    ];
    let desc = Descriptor::new(&[8, 64, 256], &[8, 64 * 8], &[16, 128 * 8])?;
    let (c, r) = paired(200, |path| match path {
        Path::Coarray => {
            let remote = Section {
                elem_len: 8,
                start: 0,
                dims: &remote,
            };
            let local = Section {
                elem_len: 8,
                start: 0,
                dims: &local,
            };
            images.put(&token, 0, right, &remote, R8, &src, &local, R8)?;
            images.sync_memory()
        }
        Path::Raw => {
            let h = images
                .runtime()
                .put_strided(&src, &desc, target, Handle::NULL)?;
            Ok(images.runtime().complete(h)?)
        }
    })?;
    report(me, n, "strided put 256x64 doubles", c, Some(r));
    images.sync_all()?;

    // Synchronization.
    let (c, r) = paired(2_000, |path| match path {
        Path::Coarray => images.sync_all(),
        Path::Raw => Ok(images.runtime().barrier()?),
    })?;
    report(me, n, "sync all (vs the runtime's barrier)", c, Some(r));
    let left = (me + n - 2) % n + 1;
    let neighbours = if n == 2 {
        vec![right]
    } else {
        vec![left, right]
    };
    // Raw: what sync images does, on the runtime's calls: an atomic add to a word of
    // each neighbour, then a wait for each neighbour's add to this image's word.
    let signals = images.runtime().alloc(8 * u64::from(n))?;
    zero_own(images, &signals, n)?;
    // Its words' addresses found once (the coarray layer finds them on every call).
    let words = neighbours
        .iter()
        .map(|&image| {
            Ok((
                word(&signals, image, me)?,
                word(&signals, me, image)?,
                image,
            ))
        })
        .collect::<CoResult<Vec<_>>>()?;
    let mut rounds = 0u64;
    let (c, r) = paired(2_000, |path| {
        if path == Path::Coarray {
            return images.sync_images(Some(&neighbours));
        }
        rounds += 1;
        let rt = images.runtime();
        for &(out, _, _) in &words {
            rt.atomic_blocking(out, Width::W8, add(1))?;
        }
        for &(_, own, image) in &words {
            rt.wait(me - 1, Some(image - 1), || {
                Ok(rt.atomic_blocking(own, Width::W8, gaspar::AtomicOp::Load)? >= rounds)
            })?;
        }
        Ok(())
    })?;
    report(me, n, "sync images (ring)", c, Some(r));

    // co_sum of one double and of 1 Mi doubles, beside the team's allreduce.
    for count in [1usize, 1 << 20] {
        let mut values = vec![1.0f64; count];
        let iterations = if count == 1 { 2_000 } else { 10 };
        let (c, r) = paired(iterations, |path| match path {
            Path::Coarray => images.co_sum(&mut values, None),
            Path::Raw => Ok(images.runtime().team().allreduce(
                images.runtime(),
                &mut values,
                ReduceOp::Sum,
            )?),
        })?;
        report(me, n, &format!("co_sum of {count} doubles"), c, Some(r));
    }

    // co_broadcast of one double from image 1, one way, beside the world layer's
    // broadcast, which has every image agree on the call first (a round trip).
    let mut value = [f64::from(me)];
    let (c, r) = paired(2_000, |path| match path {
        Path::Coarray => images.co_broadcast(&mut value, 1),
        Path::Raw => Ok(images
            .runtime()
            .team()
            .broadcast(images.runtime(), &mut value, 0)?),
    })?;
    report(me, n, "co_broadcast of 1 double (vs agreeing)", c, Some(r));

    // Lock round trip on image 1's lock, and an event ping-pong between images 1 and 2.
    let locks = images.allocate_locks(1)?;
    // Raw: compare-and-swap until the word on image 1 is taken, waiting while it is not
    // free; a compare-and-swap from this image's number frees it (as the layer's unlock
    // must, to report an unlock of a lock it does not hold).
    let lock_word = signals.ga(0)?;
    zero_own(images, &signals, n)?;
    let (c, r) = paired_in_step(images, 2_000, |images, path| {
        if path == Path::Coarray {
            images.lock(&locks, 0, 1, false)?;
            return images.unlock(&locks, 0, 1);
        }
        let rt = images.runtime();
        loop {
            let cas = gaspar::AtomicOp::CompareSwap {
                expected: 0,
                new: u64::from(me),
            };
            let holder = rt.atomic_blocking(lock_word, Width::W8, cas)?;
            if holder == 0 {
                break;
            }
            rt.wait(0, Some(holder as u32 - 1), || {
                Ok(rt.atomic_blocking(lock_word, Width::W8, gaspar::AtomicOp::Load)? != holder)
            })?;
        }
        let release = gaspar::AtomicOp::CompareSwap {
            expected: u64::from(me),
            new: 0,
        };
        rt.atomic_blocking(lock_word, Width::W8, release)?;
        Ok(())
    })?;
    report(me, n, "lock + unlock (every image, image 1's)", c, Some(r));
    // The same without contention: each image takes the lock on the next image, which
    // only it takes (the layer's own cost, where the row above is mostly who waits).
    let right_word = signals.ga(right_rank)?;
    zero_own(images, &signals, n)?;
    let (c, r) = paired_in_step(images, 20_000, |images, path| {
        if path == Path::Coarray {
            images.lock(&locks, 0, right, false)?;
            return images.unlock(&locks, 0, right);
        }
        let rt = images.runtime();
        let cas = gaspar::AtomicOp::CompareSwap {
            expected: 0,
            new: u64::from(me),
        };
        if rt.atomic_blocking(right_word, Width::W8, cas)? != 0 {
            return Err(gaspar::coarray::CoError::invalid(
                "bench",
                "uncontended lock held",
            ));
        }
        // Released by the compare-and-swap the layer's unlock makes, not a plain swap:
        // an unlock must tell its holder's release from STAT_UNLOCKED and
        // STAT_LOCKED_OTHER_IMAGE, so the word's old value is checked as it is cleared.
        let release = gaspar::AtomicOp::CompareSwap {
            expected: u64::from(me),
            new: 0,
        };
        rt.atomic_blocking(right_word, Width::W8, release)?;
        Ok(())
    })?;
    report(me, n, "lock + unlock (the next image's, alone)", c, Some(r));
    images.sync_all()?;
    let events = images.allocate_events(1)?;
    let c = time(1_000, || match me {
        1 => {
            images.event_post(&events, 0, 2)?;
            images.event_wait(&events, 0, 1)
        }
        2 => {
            images.event_wait(&events, 0, 1)?;
            images.event_post(&events, 0, 1)
        }
        _ => Ok(()),
    })?;
    images.sync_all()?;
    // Raw: an atomic add to the partner's counter; waiting, until the own counter is
    // positive, then an atomic add takes the count off.
    zero_own(images, &signals, n)?;
    let r = time(1_000, || {
        let rt = images.runtime();
        let post = |to: u32| -> CoResult<()> {
            rt.atomic_blocking(signals.ga(to - 1)?, Width::W8, add(1))?;
            Ok(())
        };
        let wait = |from: u32| -> CoResult<()> {
            let own = signals.ga(me - 1)?;
            rt.wait(me - 1, Some(from - 1), || {
                Ok(rt.atomic_blocking(own, Width::W8, gaspar::AtomicOp::Load)? >= 1)
            })?;
            rt.atomic_blocking(own, Width::W8, add(u64::MAX))?;
            Ok(())
        };
        match me {
            1 => {
                post(2)?;
                wait(2)
            }
            2 => {
                wait(1)?;
                post(1)
            }
            _ => Ok(()),
        }
    })?;
    report(me, n, "event ping-pong round trip", c, Some(r));
    // The raw counterpart of an 8-byte atomic, as locks and events use it.
    let r = time(20_000, || {
        Ok(images
            .runtime()
            .atomic_blocking(target, Width::W8, gaspar::AtomicOp::Load)
            .map(drop)?)
    })?;
    report_as(me, n, "remote 8-byte atomic load", "raw    ", r, None);
    images.sync_all()?;
    images.deallocate(events)?;
    images.deallocate(locks)?;
    images.runtime().free(raw)?;
    images.runtime().free(signals)?;
    images.deallocate(token)
}
