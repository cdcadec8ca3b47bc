//! PRK sparse (LAPPS paper 6.3): y += A x, then x[i] += i + 1, ITERATIONS times, with A the
//! matrix of a 2-D star stencil of radius 6 (25 nonzeros per row, periodic) on a SIZE x SIZE
//! grid (SIZE^2 rows, distributed by rows) and x a block-distributed vector, in the variant
//! given (see `darray_bench/mod.rs`); y is checked against a serial computation on rank 0.
//!
//! ```sh
//! cargo build --release --example darray_sparse
//! gaspar run -n 2 target/release/examples/darray_sparse mc 256 4
//! ```

// Shared by the five benchmarks; each uses part of it.
#[allow(dead_code)]
#[path = "darray_bench/mod.rs"]
mod bench;

use bench::{close, timed, HandCopies, Outcome, Params, Variant};
use gaspar::darray::{Darrays, DistArray, Domain};
use gaspar::Result;

/// The stencil's radius: 4 * RADIUS + 1 nonzeros per row.
const RADIUS: usize = 6;

fn main() {
    bench::main_of("sparse", 256, 4, run);
}

/// The nonzeros of `row` of the matrix for a `side` x `side` grid: (column, value).
fn row_of(row: usize, side: usize) -> Vec<(usize, f64)> {
    let (i, j) = (row / side, row % side);
    let mut entries = vec![(row, 4.0 * RADIUS as f64)];
    for d in 1..=RADIUS {
        let weight = -1.0 / d as f64;
        for (di, dj) in [(d, 0), (side - d, 0), (0, d), (0, side - d)] {
            entries.push(((i + di) % side * side + (j + dj) % side, weight));
        }
    }
    entries
}

/// The columns rows `lo..hi` read: the band of RADIUS grid rows around them, wrapped.
fn band(lo: usize, hi: usize, side: usize) -> Vec<Domain<1>> {
    let (n, reach) = (side * side, RADIUS * side);
    if lo >= hi {
        return Vec::new();
    }
    if hi - lo + 2 * reach >= n {
        return vec![Domain::new([0], [n])];
    }
    let mut pieces = vec![Domain::new(
        [lo.saturating_sub(reach)],
        [(hi + reach).min(n)],
    )];
    if lo < reach {
        pieces.push(Domain::new([n - (reach - lo)], [n]));
    }
    if hi + reach > n {
        pieces.push(Domain::new([0], [hi + reach - n]));
    }
    pieces
}

fn serial(side: usize, iterations: usize) -> Vec<f64> {
    let n = side * side;
    let mut x: Vec<f64> = vec![0.0; n];
    let mut y = vec![0.0; n];
    for _ in 0..iterations {
        for (row, out) in y.iter_mut().enumerate() {
            *out += row_of(row, side)
                .iter()
                .map(|&(c, v)| v * x[c])
                .sum::<f64>();
        }
        for (i, v) in x.iter_mut().enumerate() {
            *v += (i + 1) as f64;
        }
    }
    y
}

fn run(ctx: &Darrays, params: &Params) -> Result<Outcome> {
    let side = params.size.max(2 * RADIUS + 1);
    let n = side * side;
    let mut x = DistArray::<f64, 1>::new(ctx, [n])?;
    let y = DistArray::<f64, 1>::new(ctx, [n])?;
    let mine = x.local_domain();
    // This rank's rows, compressed (CSR): the same in every variant.
    let mut starts = vec![0];
    let mut entries = Vec::new();
    for row in mine.lo[0]..mine.hi[0] {
        entries.extend(row_of(row, side));
        starts.push(entries.len());
    }
    let needed = band(mine.lo[0], mine.hi[0], side);
    let mut copies = HandCopies::new(&x, &needed);
    let mut sums = vec![0.0; mine.len()];
    let ((), measured) = timed(ctx, || {
        if let Some(how) = params.variant.prefetch() {
            x.custom_prefetch(&needed, how)?;
        }
        for t in 0..params.iterations {
            if params.variant == Variant::HandOpt {
                copies.refresh(&x)?;
            }
            for (r, sum) in sums.iter_mut().enumerate() {
                let row = &entries[starts[r]..starts[r + 1]];
                let mut dot = 0.0;
                for &(col, value) in row {
                    let xc = match params.variant {
                        Variant::HandOpt => copies.read(&x, [col])?,
                        _ => x.get([col])?,
                    };
                    dot += value * xc;
                }
                *sum += dot;
            }
            // Every rank has read x: now it may change.
            ctx.barrier()?;
            for i in mine.lo[0]..mine.hi[0] {
                x.set([i], x.get([i])? + (i + 1) as f64)?;
            }
            ctx.barrier()?;
            // Manual consistency refreshes what the next iteration reads (none after
            // the last, as HandOpt copies before each iteration).
            if params.variant.manual() && t + 1 < params.iterations {
                x.update_prefetch()?;
            }
        }
        Ok(())
    })?;
    y.write_slice(mine, &sums)?;
    ctx.barrier()?;
    let passed = ctx.rank() != 0 || close(&y.to_vec()?, &serial(side, params.iterations));
    ctx.barrier()?;
    x.free()?;
    y.free()?;
    Ok(Outcome { measured, passed })
}
