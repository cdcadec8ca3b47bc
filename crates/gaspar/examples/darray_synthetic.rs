//! The LAPPS paper's synthetic benchmarks (section 6.2) on a SIDE x SIDE array of f64
//! (default 512), every value read checked, printed by rank 0:
//!
//! * `init`: all-to-all prefetch (the entries' creation and first copy) in each consistency
//!   and static-domain variant, beside a whole-array copy (6.2.2);
//! * `update`: 100 fixed random remote reads after every barrier, which makes an automatic
//!   all-to-all entry stale each time: microseconds per iteration with and without the
//!   static domain (6.2.3);
//! * `ratio`: a star stencil of growing radius; the share of its reads that are remote
//!   (counted in the Base run) and the speedup of AC and MC over Base (6.2.5).
//!
//! ```sh
//! cargo build --release --example darray_synthetic
//! gaspar run -n 2 target/release/examples/darray_synthetic 512
//! ```

// Shared by the benchmarks; this one uses part of it.
#[allow(dead_code)]
#[path = "darray_bench/mod.rs"]
mod bench;

use std::time::Instant;

use bench::fail;
use gaspar::darray::{Darrays, DistArray, Prefetch};
use gaspar::Result;

/// Remote reads per iteration of the update benchmark.
const UPDATE_READS: usize = 100;
/// Iterations of the update benchmark.
const UPDATE_ITERATIONS: usize = 20;

fn main() {
    let side = match std::env::args().nth(1).map(|a| a.parse::<usize>()) {
        None => 512,
        Some(Ok(side)) if side >= 8 => side,
        Some(_) => {
            eprintln!("usage: darray_synthetic [SIDE (at least 8, default 512)]");
            std::process::exit(2);
        }
    };
    let ctx = match Darrays::init() {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("darray_synthetic: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = run(&ctx, side) {
        ctx.runtime().abort(&format!("darray_synthetic: {e}"))
    }
    if let Err(e) = ctx.finalize() {
        eprintln!("darray_synthetic: {e}");
        std::process::exit(1);
    }
}

const VARIANTS: [(&str, Prefetch); 4] = [
    ("ac", Prefetch::AUTOMATIC),
    ("mc", Prefetch::MANUAL),
    ("ac-sd", Prefetch::AUTOMATIC.with_static_domain()),
    ("mc-sd", Prefetch::MANUAL.with_static_domain()),
];

fn value_at([i, j]: [usize; 2], side: usize) -> f64 {
    (i * side + j) as f64
}

/// Checks a value read.
fn expect(index: [usize; 2], got: f64, side: usize) -> Result<()> {
    if got == value_at(index, side) {
        Ok(())
    } else {
        Err(fail(format!("{index:?} read {got}")))
    }
}

/// Milliseconds `body` takes between two barriers (rank 0's clock).
fn millis(ctx: &Darrays, body: impl FnOnce() -> Result<()>) -> Result<f64> {
    ctx.barrier()?;
    let start = Instant::now();
    body()?;
    ctx.barrier()?;
    Ok(start.elapsed().as_secs_f64() * 1e3)
}

fn run(ctx: &Darrays, side: usize) -> Result<()> {
    let mut a = DistArray::<f64, 2>::new(ctx, [side, side])?;
    for index in a.local_domain().iter() {
        a.set(index, value_at(index, side))?;
    }
    ctx.barrier()?;
    let remote: Vec<[usize; 2]> = a
        .domain()
        .iter()
        .filter(|&i| !a.local_domain().contains(i))
        .collect();
    initialization(ctx, &mut a, &remote, side)?;
    update(ctx, &mut a, &remote, side)?;
    ratio(ctx, &mut a, side)?;
    a.free()
}

fn initialization(
    ctx: &Darrays,
    a: &mut DistArray<'_, f64, 2>,
    remote: &[[usize; 2]],
    side: usize,
) -> Result<()> {
    let mut line = String::from("init: all-to-all prefetch");
    for (name, how) in VARIANTS {
        let ms = millis(ctx, || {
            a.all_to_all_prefetch(how)?;
            // An automatic entry is filled at its first read: read one of each source.
            for source in (0..ctx.procs()).filter(|&r| r != ctx.rank()) {
                let first = a.distribution().block_of(source).lo;
                if !a.distribution().block_of(source).is_empty() {
                    expect(first, a.get(first)?, side)?;
                }
            }
            Ok(())
        })?;
        for &index in remote {
            expect(index, a.get(index)?, side)?;
        }
        line += &format!(" {name} {ms:.2} ms,");
        a.evict_prefetch();
    }
    let mut copy = Vec::new();
    let ms = millis(ctx, || {
        copy = a.to_vec()?;
        Ok(())
    })?;
    for index in a.domain().iter() {
        expect(index, copy[a.domain().linear(index)], side)?;
    }
    if ctx.rank() == 0 {
        println!("{line} whole-array copy {ms:.2} ms");
    }
    Ok(())
}

fn update(
    ctx: &Darrays,
    a: &mut DistArray<'_, f64, 2>,
    remote: &[[usize; 2]],
    side: usize,
) -> Result<()> {
    let mut seed = 0x2545_f491_4f6c_dd1du64 ^ u64::from(ctx.rank());
    let picks: Vec<[usize; 2]> = (0..UPDATE_READS.min(remote.len()))
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            remote[(seed % remote.len() as u64) as usize]
        })
        .collect();
    let mut line = format!("update: {} remote reads after every barrier:", picks.len());
    for (name, how) in [VARIANTS[0], VARIANTS[2]] {
        a.all_to_all_prefetch(how)?;
        let ms = millis(ctx, || {
            for _ in 0..UPDATE_ITERATIONS {
                for &index in &picks {
                    expect(index, a.get(index)?, side)?;
                }
                ctx.barrier()?;
            }
            Ok(())
        })?;
        line += &format!(
            " {name} {:.1} us/iteration,",
            ms * 1e3 / UPDATE_ITERATIONS as f64
        );
        a.evict_prefetch();
    }
    if ctx.rank() == 0 {
        println!("{}", line.trim_end_matches(','));
    }
    Ok(())
}

/// The star stencil of `radius` at `index` (indices outside the array skipped).
fn star(a: &DistArray<'_, f64, 2>, index: [usize; 2], radius: usize, side: usize) -> Result<f64> {
    let [i, j] = index;
    let mut sum = a.get(index)?;
    for d in 1..=radius {
        for (x, y) in [
            (i.wrapping_sub(d), j),
            (i + d, j),
            (i, j.wrapping_sub(d)),
            (i, j + d),
        ] {
            if x < side && y < side {
                sum += a.get([x, y])?;
            }
        }
    }
    Ok(sum)
}

fn ratio(ctx: &Darrays, a: &mut DistArray<'_, f64, 2>, side: usize) -> Result<()> {
    let mine = a.local_domain();
    let mut radius = 1;
    while radius <= side / 8 {
        let mut times = Vec::new();
        let mut reference: Option<Vec<f64>> = None;
        let before = a.remote_reads();
        let mut reads = 0usize;
        for how in [None, Some(Prefetch::AUTOMATIC), Some(Prefetch::MANUAL)] {
            let mut sums = Vec::with_capacity(mine.len());
            let ms = millis(ctx, || {
                if let Some(how) = how {
                    a.stencil_prefetch(radius, false, how)?;
                }
                for index in mine.iter() {
                    sums.push(star(a, index, radius, side)?);
                }
                Ok(())
            })?;
            if how.is_none() {
                reads = mine
                    .iter()
                    .map(|[i, j]| star_reads([i, j], radius, side))
                    .sum();
            }
            match &reference {
                None => reference = Some(sums),
                Some(r) if *r == sums => {}
                Some(_) => return Err(fail(format!("radius {radius}: sums differ"))),
            }
            times.push(ms);
            a.evict_prefetch();
        }
        let remote = (a.remote_reads() - before) as f64 / reads.max(1) as f64;
        if ctx.rank() == 0 {
            println!(
                "ratio: radius {radius} remote {:.1} %: base {:.2} ms, ac {:.2} ms ({:.2}x), \
                 mc {:.2} ms ({:.2}x)",
                100.0 * remote,
                times[0],
                times[1],
                times[0] / times[1],
                times[2],
                times[0] / times[2]
            );
        }
        radius *= 2;
    }
    Ok(())
}

/// Reads the star stencil of `radius` makes at `index`.
fn star_reads([i, j]: [usize; 2], radius: usize, side: usize) -> usize {
    1 + (1..=radius)
        .map(|d| {
            usize::from(i >= d)
                + usize::from(i + d < side)
                + usize::from(j >= d)
                + usize::from(j + d < side)
        })
        .sum::<usize>()
}
