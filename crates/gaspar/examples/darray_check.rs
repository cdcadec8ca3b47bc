//! Distributed arrays with prefetching, checked on every rank: each scenario asserts its
//! values and prints `rank R: NAME ok`.
//!
//! ```sh
//! gaspar run -n 4 target/debug/examples/darray_check stencil
//! ```
//!
//! Scenarios: `stencil` (2-D Jacobi with stencil prefetch, every variant against a serial
//! run), `access` (local, prefetched and remote reads agree; write-through), `consistency`
//! (automatic refills after a barrier, manual only on update; evict), `patterns` (every
//! prefetch pattern on 1-D, 2-D and 3-D arrays against a local reference), `slices` (strided
//! whole-array and slice copies on a 3-D array), `lock` (a lock is an acquire: automatic
//! entries are refilled after it), `errors` (typed errors), `leak` (an array dropped without
//! free: the next barrier ends the job), `threads` (threads of a rank read one prefetched
//! array at once, also while an automatic entry is refilled).

use gaspar::darray::{DarrayError, Darrays, DistArray, Domain, Grid, Prefetch};
use gaspar::{Error, Result};

fn main() {
    let scenario = std::env::args().nth(1).unwrap_or_default();
    let ctx = match Darrays::init() {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("darray_check: {e}");
            std::process::exit(1);
        }
    };
    let result = match scenario.as_str() {
        "stencil" => stencil(&ctx),
        "access" => access(&ctx),
        "consistency" => consistency(&ctx),
        "slices" => slices(&ctx),
        "patterns" => patterns(&ctx),
        "errors" => errors(&ctx),
        "lock" => lock(&ctx),
        "threads" => threads(&ctx),
        "leak" => leak(&ctx),
        other => Err(fail(format!("unknown scenario {other:?}"))),
    };
    match result {
        Ok(()) => println!("rank {}: {scenario} ok", ctx.rank()),
        // The others may wait for this rank in a collective: end the job, saying why.
        Err(e) => ctx
            .runtime()
            .abort(&format!("darray_check {scenario}: {e}")),
    }
    if let Err(e) = ctx.finalize() {
        eprintln!("darray_check: {e}");
        std::process::exit(1);
    }
}

/// A failed check.
fn fail(reason: String) -> Error {
    Error::InvalidArgument {
        call: "darray_check",
        reason,
    }
}

fn check(ok: bool, what: impl FnOnce() -> String) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(fail(what()))
    }
}

/// The grid of the Jacobi run (uneven for every rank count).
const GRID: [usize; 2] = [19, 14];
const STEPS: usize = 6;

fn initial(index: [usize; 2]) -> f64 {
    ((index[0] * 7 + index[1] * 13) % 17) as f64
}

/// One Jacobi step at `index` reading `read` (boundary elements keep their value).
fn jacobi(index: [usize; 2], read: impl Fn([usize; 2]) -> Result<f64>) -> Result<f64> {
    let [i, j] = index;
    if i == 0 || j == 0 || i == GRID[0] - 1 || j == GRID[1] - 1 {
        return read(index);
    }
    Ok(0.25 * (read([i - 1, j])? + read([i + 1, j])? + read([i, j - 1])? + read([i, j + 1])?))
}

/// The serial run, stored as the arrays store it (dimension 0 fastest).
fn serial_jacobi() -> Result<Vec<f64>> {
    let whole = Domain::of_extents(GRID);
    let mut grid: Vec<f64> = whole.iter().map(initial).collect();
    for _ in 0..STEPS {
        let old = grid.clone();
        for index in whole.iter() {
            grid[whole.linear(index)] = jacobi(index, |at| Ok(old[whole.linear(at)]))?;
        }
    }
    Ok(grid)
}

/// The distributed run with `how` (no prefetch with `None`); returns the result and the
/// remote reads it made.
fn distributed_jacobi(ctx: &Darrays, how: Option<Prefetch>) -> Result<(Vec<f64>, u64)> {
    let mut arrays = [
        DistArray::<f64, 2>::new(ctx, GRID)?,
        DistArray::<f64, 2>::new(ctx, GRID)?,
    ];
    for index in arrays[0].local_domain().iter() {
        arrays[0].set(index, initial(index))?;
    }
    // A manually consistent prefetch copies the data now: after the owners wrote it.
    ctx.barrier()?;
    if let Some(how) = how {
        for array in &mut arrays {
            array.stencil_prefetch(1, false, how)?;
        }
    }
    ctx.barrier()?;
    for step in 0..STEPS {
        let (src, dst) = (&arrays[step % 2], &arrays[(step + 1) % 2]);
        for index in dst.local_domain().iter() {
            dst.set(index, jacobi(index, |at| src.get(at))?)?;
        }
        ctx.barrier()?;
        if how.is_some_and(|h| !h.consistent) {
            dst.update_prefetch()?;
        }
    }
    let result = arrays[STEPS % 2].to_vec()?;
    let remote = arrays.iter().map(|a| a.remote_reads()).sum();
    let [a, b] = arrays;
    a.free()?;
    b.free()?;
    Ok((result, remote))
}

fn stencil(ctx: &Darrays) -> Result<()> {
    let expected = serial_jacobi()?;
    let variants = [
        ("Base", None),
        ("AC", Some(Prefetch::AUTOMATIC)),
        ("AC+SD", Some(Prefetch::AUTOMATIC.with_static_domain())),
        ("MC", Some(Prefetch::MANUAL)),
        ("MC+SD", Some(Prefetch::MANUAL.with_static_domain())),
    ];
    for (name, how) in variants {
        let (result, remote) = distributed_jacobi(ctx, how)?;
        check(result == expected, || {
            format!("{name}: differs from the serial run")
        })?;
        let remote_expected = how.is_none() && ctx.procs() > 1;
        check((remote > 0) == remote_expected, || {
            format!("{name}: {remote} remote reads")
        })?;
    }
    Ok(())
}

fn value_2d(index: [usize; 2]) -> i64 {
    (index[0] * 1000 + index[1]) as i64
}

fn access(ctx: &Darrays) -> Result<()> {
    let (me, procs) = (ctx.rank(), ctx.procs());
    let mut a = DistArray::<i64, 2>::new(ctx, [10, 9])?;
    for index in a.local_domain().iter() {
        a.set(index, value_2d(index))?;
    }
    ctx.barrier()?;
    // Remote (and local) reads.
    for index in a.domain().iter() {
        check(a.get(index)? == value_2d(index), || {
            format!("plain read of {index:?}")
        })?;
    }
    let remote_before = a.remote_reads();
    let remote_elements = a.domain().len() - a.local_domain().len();
    check(remote_before == remote_elements as u64, || {
        format!("{remote_before} remote reads for {remote_elements} remote elements")
    })?;
    // Every other block prefetched: the same values, and no read leaves the rank.
    for source in (0..procs).filter(|&r| r != me) {
        a.request_prefetch(source, None, Prefetch::MANUAL.with_static_domain())?;
    }
    let expected_bytes = remote_elements * std::mem::size_of::<i64>();
    check(a.prefetch_bytes() == expected_bytes, || {
        format!(
            "{} prefetched bytes, not {expected_bytes}",
            a.prefetch_bytes()
        )
    })?;
    for index in a.domain().iter() {
        let owner = a.owner(index)?;
        check(a.get(index)? == value_2d(index), || {
            format!("prefetched read of {index:?}")
        })?;
        let prefetched = a.access_prefetch(owner, index)?;
        check(prefetched.is_some() == (owner != me), || {
            format!("access_prefetch({owner}, {index:?}) = {prefetched:?}")
        })?;
    }
    check(a.remote_reads() == remote_before, || {
        "a prefetched read went remote".into()
    })?;
    // Write-through: the writer's copy at once, the owner's block after the barrier.
    ctx.barrier()?;
    if procs > 1 {
        let target = a.distribution().block_of((me + 1) % procs).lo;
        a.set(target, -1 - i64::from(me))?;
        check(a.get(target)? == -1 - i64::from(me), || {
            "write-through copy".into()
        })?;
    }
    ctx.barrier()?;
    if procs > 1 {
        let mine = a.local_domain().lo;
        let writer = (me + procs - 1) % procs;
        check(a.get(mine)? == -1 - i64::from(writer), || {
            "written-through owner".into()
        })?;
    }
    a.evict_prefetch();
    // 1-D and 3-D arrays: every read agrees with the owner's writes.
    let line = DistArray::<u32, 1>::new(ctx, [11])?;
    let mut cube = DistArray::<u16, 3>::new(ctx, [5, 4, 3])?;
    for index in line.local_domain().iter() {
        line.set(index, 3 * index[0] as u32)?;
    }
    for index in cube.local_domain().iter() {
        cube.set(index, (index[0] + 10 * index[1] + 100 * index[2]) as u16)?;
    }
    ctx.barrier()?;
    cube.stencil_prefetch(1, true, Prefetch::AUTOMATIC)?;
    for index in line.domain().iter() {
        check(line.get(index)? == 3 * index[0] as u32, || {
            format!("1-D {index:?}")
        })?;
    }
    for index in cube.domain().iter() {
        let expected = (index[0] + 10 * index[1] + 100 * index[2]) as u16;
        check(cube.get(index)? == expected, || format!("3-D {index:?}"))?;
    }
    cube.free()?;
    line.free()?;
    a.free()
}

fn consistency(ctx: &Darrays) -> Result<()> {
    let (me, procs) = (ctx.rank(), ctx.procs());
    let per_rank = 4;
    let mut auto = DistArray::<u64, 1>::new(ctx, [per_rank * procs as usize])?;
    let mut manual = DistArray::<u64, 1>::new(ctx, [per_rank * procs as usize])?;
    let fill = |auto: &DistArray<'_, u64, 1>, manual: &DistArray<'_, u64, 1>, generation: u64| {
        for index in auto.local_domain().iter() {
            auto.set(index, generation * 1000 + index[0] as u64)?;
            manual.set(index, generation * 1000 + index[0] as u64)?;
        }
        Ok::<(), Error>(())
    };
    fill(&auto, &manual, 1)?;
    ctx.barrier()?;
    let next = (me + 1) % procs;
    if procs > 1 {
        auto.request_prefetch(next, None, Prefetch::AUTOMATIC.with_static_domain())?;
        manual.request_prefetch(next, None, Prefetch::MANUAL)?;
    }
    ctx.barrier()?;
    let probe = auto.distribution().block_of(next).lo;
    check(auto.get(probe)? == 1000 + probe[0] as u64, || {
        "automatic first fill".into()
    })?;
    check(manual.get(probe)? == 1000 + probe[0] as u64, || {
        "manual fill".into()
    })?;
    // The owners write generation 2; after the barrier the automatic entry is stale and
    // refilled, the manual one keeps generation 1 until updated.
    ctx.barrier()?;
    fill(&auto, &manual, 2)?;
    ctx.barrier()?;
    check(auto.get(probe)? == 2000 + probe[0] as u64, || {
        "automatic refill".into()
    })?;
    let old = if procs > 1 { 1000 } else { 2000 };
    check(manual.get(probe)? == old + probe[0] as u64, || {
        "manual kept".into()
    })?;
    manual.update_prefetch()?;
    check(manual.get(probe)? == 2000 + probe[0] as u64, || {
        "manual update".into()
    })?;
    check(auto.remote_reads() + manual.remote_reads() == 0, || {
        "remote reads".into()
    })?;
    // Evict returns the bytes; reads then go to the owner.
    let held = if procs > 1 { per_rank * 8 } else { 0 };
    check(ctx.prefetch_bytes() == 2 * held, || "buffer bytes".into())?;
    check(auto.evict_prefetch() == held, || "evicted bytes".into())?;
    check(
        auto.prefetch_bytes() == 0 && manual.prefetch_bytes() == held,
        || "bytes after evict".into(),
    )?;
    check(auto.get(probe)? == 2000 + probe[0] as u64, || {
        "read after evict".into()
    })?;
    check(auto.remote_reads() == u64::from(procs > 1), || {
        "evicted read went remote".into()
    })?;
    manual.free()?;
    auto.free()
}

fn slices(ctx: &Darrays) -> Result<()> {
    let a = DistArray::<f32, 3>::new(ctx, [7, 5, 4])?;
    let whole = a.domain();
    let model: Vec<f32> = whole
        .iter()
        .map(|[i, j, k]| (i + 7 * j + 35 * k) as f32)
        .collect();
    if ctx.rank() == 0 {
        a.write_slice(whole, &model)?;
    }
    ctx.barrier()?;
    check(a.to_vec()? == model, || "whole array".into())?;
    let slice = Domain::new([1, 2, 1], [6, 5, 3]);
    let expected: Vec<f32> = slice
        .iter()
        .map(|index| model[whole.linear(index)])
        .collect();
    check(a.read_slice(slice)? == expected, || "slice read".into())?;
    ctx.barrier()?;
    // Every rank writes one plane (k = rank mod 4) of a slice; all read it back.
    let plane = ctx.rank() as usize % 4;
    let target = Domain::new([0, 0, plane], [7, 5, plane + 1]);
    if ctx.rank() < 4 {
        let values: Vec<f32> = target
            .iter()
            .map(|[i, j, _]| -((i + 10 * j) as f32))
            .collect();
        a.write_slice(target, &values)?;
    }
    ctx.barrier()?;
    for index in whole.iter() {
        let [i, j, k] = index;
        let expected = if (k as u32) < ctx.procs() {
            -((i + 10 * j) as f32)
        } else {
            model[whole.linear(index)]
        };
        check(a.get(index)? == expected, || {
            format!("after plane writes, {index:?}")
        })?;
    }
    a.free()
}

/// Checks that `result` failed with the darray error `expected` says it is.
fn expect_darray_error<T: std::fmt::Debug>(
    what: &str,
    result: Result<T>,
    expected: impl Fn(&DarrayError) -> bool,
) -> Result<()> {
    match result {
        Err(Error::Darray(e)) if expected(&e) => Ok(()),
        other => Err(fail(format!("{what}: {other:?}"))),
    }
}

fn errors(ctx: &Darrays) -> Result<()> {
    let (me, procs) = (ctx.rank(), ctx.procs());
    let mut a = DistArray::<u8, 2>::new(ctx, [4, 3])?;
    expect_darray_error("index past the end", a.get([4, 0]), |e| {
        *e == DarrayError::IndexOutside {
            index: vec![4, 0],
            extents: vec![4, 3],
        }
    })?;
    expect_darray_error("set past the end", a.set([0, 3], 1), |e| {
        matches!(e, DarrayError::IndexOutside { .. })
    })?;
    expect_darray_error(
        "slice",
        a.read_slice(Domain::new([0, 0], [5, 1])),
        |e| matches!(e, DarrayError::SliceOutside { call: "read_slice", hi, .. } if *hi == [5, 1]),
    )?;
    expect_darray_error(
        "count",
        a.write_slice(Domain::new([0, 0], [2, 1]), &[1]),
        |e| {
            *e == DarrayError::LengthMismatch {
                call: "write_slice",
                values: 1,
                slice_len: 2,
            }
        },
    )?;
    expect_darray_error(
        "prefetch from self",
        a.request_prefetch(me, None, Prefetch::AUTOMATIC),
        |e| *e == DarrayError::SourceIsLocal { source_rank: me },
    )?;
    expect_darray_error(
        "prefetch from a rank past the job",
        a.request_prefetch(procs, None, Prefetch::AUTOMATIC),
        |e| {
            *e == DarrayError::SourceOutOfRange {
                source_rank: procs,
                procs,
            }
        },
    )?;
    if procs > 1 {
        let other = (me + 1) % procs;
        let outside = Domain::new([0, 0], [4, 3]);
        expect_darray_error(
            "slice outside the source's block",
            a.request_prefetch(other, Some(outside), Prefetch::AUTOMATIC),
            |e| matches!(e, DarrayError::SliceNotInSource { source_rank, .. } if *source_rank == other),
        )?;
    }
    expect_darray_error(
        "a grid of the wrong size",
        Grid::<2>::new([3, 3], procs),
        |e| matches!(e, DarrayError::GridMismatch { procs: p, .. } if *p == procs),
    )?;
    expect_darray_error("unlock of a lock not held", ctx.unlock(0), |e| {
        *e == DarrayError::LockNotHeld { rank: 0 }
    })?;
    expect_darray_error("lock past the job", ctx.lock(procs), |e| {
        *e == DarrayError::LockOutOfRange { rank: procs, procs }
    })?;
    a.free()
}

/// Each rank prefetches the next rank's block (automatic consistency), then writes that
/// block at its owner with `write_slice` (which leaves prefetched copies alone): the copy
/// keeps the old value until this rank takes a lock, an acquire, and is refilled after.
fn lock(ctx: &Darrays) -> Result<()> {
    let (me, procs) = (ctx.rank(), ctx.procs());
    let mut a = DistArray::<u32, 1>::new(ctx, [3 * procs as usize])?;
    let next = (me + 1) % procs;
    let theirs = a.distribution().block_of(next);
    a.write_slice(theirs, &vec![1; theirs.len()])?;
    ctx.barrier()?;
    if procs > 1 {
        a.request_prefetch(next, None, Prefetch::AUTOMATIC)?;
    }
    check(a.get(theirs.lo)? == 1, || "first fill".into())?;
    a.write_slice(theirs, &vec![2; theirs.len()])?;
    let kept = if procs > 1 { 1 } else { 2 };
    check(a.get(theirs.lo)? == kept, || {
        "no synchronization: the copy is kept".into()
    })?;
    let before = ctx.acquires();
    ctx.lock(next)?;
    check(ctx.acquires() == before + 1, || {
        "a lock is an acquire".into()
    })?;
    check(a.get(theirs.lo)? == 2, || "refilled after the lock".into())?;
    ctx.unlock(next)?;
    check(a.remote_reads() == 0, || "every read was prefetched".into())?;
    ctx.barrier()?;
    a.free()
}

/// Threads reading a whole prefetched block at once, after each of two generations of
/// writes by its owner: every read is right and none goes remote; the automatic entry is
/// refilled once per barrier, by whichever thread reads first.
fn threads(ctx: &Darrays) -> Result<()> {
    const THREADS: usize = 4;
    let (me, procs) = (ctx.rank(), ctx.procs());
    let mut a = DistArray::<u64, 2>::new(ctx, [6 * procs as usize, 5])?;
    let next = (me + 1) % procs;
    let theirs = a.distribution().block_of(next);
    if procs > 1 {
        a.request_prefetch(next, None, Prefetch::AUTOMATIC)?;
    }
    for generation in 1..=2u64 {
        let value = |[i, j]: [usize; 2]| generation * 1000 + (i * 5 + j) as u64;
        for index in a.local_domain().iter() {
            a.set(index, value(index))?;
        }
        ctx.barrier()?;
        let a = &a;
        std::thread::scope(|scope| {
            let readers: Vec<_> = (0..THREADS)
                .map(|_| {
                    scope.spawn(move || -> Result<()> {
                        for _ in 0..50 {
                            for index in theirs.iter() {
                                let got = a.get(index)?;
                                check(got == value(index), || {
                                    format!("generation {generation}: {index:?} read {got}")
                                })?;
                            }
                        }
                        Ok(())
                    })
                })
                .collect();
            readers.into_iter().try_for_each(|reader| {
                reader
                    .join()
                    .map_err(|_| fail("a reader thread panicked".into()))?
            })
        })?;
        ctx.barrier()?;
    }
    check(a.remote_reads() == 0, || "a read went remote".into())?;
    a.free()
}

/// Drops an array without freeing it: the barrier after it ends the job, naming it.
fn leak(ctx: &Darrays) -> Result<()> {
    let a = DistArray::<u64, 1>::new(ctx, [8])?;
    drop(a);
    ctx.barrier()
}

fn patterns(ctx: &Darrays) -> Result<()> {
    patterns_in(ctx, DistArray::<u32, 1>::new(ctx, [13])?)?;
    patterns_in(ctx, DistArray::<u32, 2>::new(ctx, [9, 9])?)?;
    patterns_in(ctx, DistArray::<u32, 3>::new(ctx, [5, 5, 5])?)?;
    // A grid given instead of chosen: all ranks along dimension 1.
    let given = Grid::new([1, ctx.procs()], ctx.procs())?;
    patterns_in(ctx, DistArray::<u32, 2>::on_grid(ctx, [9, 9], given)?)
}

/// Which indices a pattern prefetches, given this rank's block.
type Covers<const D: usize> = Box<dyn Fn([usize; D]) -> bool>;

/// Every pattern on `a` (cubic extents): after it, this rank's prefetched bytes are the
/// covered remote elements, every covered element reads its value without going remote,
/// and the other remote elements are not prefetched.
fn patterns_in<const D: usize>(ctx: &Darrays, mut a: DistArray<'_, u32, D>) -> Result<()> {
    let whole = a.domain();
    let mine = a.local_domain();
    let n = whole.hi[0];
    for index in mine.iter() {
        a.set(index, whole.linear(index) as u32)?;
    }
    a.stencil_prefetch(0, true, Prefetch::MANUAL)?;
    check(a.prefetch_bytes() == 0, || {
        "depth 0 prefetches nothing".into()
    })?;
    let custom = [
        Domain::new([1; D], [3; D]),
        Domain::new([n - 2; D], [n + 3; D]),
    ];
    let mut reversed = mine;
    reversed.lo.reverse();
    reversed.hi.reverse();
    let cases: Vec<(&str, Covers<D>)> = vec![
        ("stencil 2 with corners", {
            let grown = mine.grown(2, [true; D]);
            Box::new(move |i| grown.contains(i))
        }),
        ("stencil 1 without corners", {
            let arms: Vec<_> = (0..D)
                .map(|k| mine.grown(1, std::array::from_fn(|j| j == k)))
                .collect();
            Box::new(move |i| arms.iter().any(|arm| arm.contains(i)))
        }),
        (
            "row-wise",
            Box::new(move |i| mine.lo[0] <= i[0] && i[0] < mine.hi[0]),
        ),
        (
            "column-wise",
            Box::new(move |i| mine.lo[D - 1] <= i[D - 1] && i[D - 1] < mine.hi[D - 1]),
        ),
        ("transpose", Box::new(move |i| reversed.contains(i))),
        ("all-to-all", Box::new(|_| true)),
        (
            "custom",
            Box::new(move |i| custom.iter().any(|d| d.contains(i))),
        ),
    ];
    ctx.barrier()?;
    for (name, covers) in cases {
        let how = Prefetch::MANUAL.with_static_domain();
        match name {
            "stencil 2 with corners" => a.stencil_prefetch(2, true, how)?,
            "stencil 1 without corners" => a.stencil_prefetch(1, false, how)?,
            "row-wise" => a.row_wise_prefetch(how)?,
            "column-wise" => a.col_wise_prefetch(how)?,
            "transpose" => a.transpose_prefetch(how)?,
            "all-to-all" => a.all_to_all_prefetch(how)?,
            _ => a.custom_prefetch(&custom, how)?,
        }
        let remote: Vec<[usize; D]> = whole.iter().filter(|&i| !mine.contains(i)).collect();
        let covered = remote.iter().filter(|&&i| covers(i)).count();
        check(a.prefetch_bytes() == 4 * covered, || {
            format!(
                "{name}: {} bytes for {covered} elements",
                a.prefetch_bytes()
            )
        })?;
        let before = a.remote_reads();
        for &index in &remote {
            let prefetched = a.access_prefetch(a.owner(index)?, index)?;
            let expected = covers(index).then_some(whole.linear(index) as u32);
            check(prefetched == expected, || {
                format!("{name}: {index:?} prefetched as {prefetched:?}, not {expected:?}")
            })?;
            if expected.is_some() {
                check(a.get(index)? == whole.linear(index) as u32, || {
                    format!("{name}: read of {index:?}")
                })?;
            }
        }
        check(a.remote_reads() == before, || {
            format!("{name}: a read went remote")
        })?;
        a.evict_prefetch();
    }
    a.free()
}
