//! 3-D heat diffusion (LAPPS paper 6.3): a 6-point stencil over a block-distributed
//! SIZE^3 grid, ITERATIONS explicit steps (two arrays, swapped), in the variant given (see
//! `darray_bench/mod.rs`), checked against a serial computation on rank 0.
//!
//! ```sh
//! cargo build --release --example darray_heat
//! gaspar run -n 2 target/release/examples/darray_heat mc-sd 96 8
//! ```

// Shared by the five benchmarks; each uses part of it.
#[allow(dead_code)]
#[path = "darray_bench/mod.rs"]
mod bench;

use bench::{close, timed, HandCopies, Outcome, Params, Variant};
use gaspar::darray::{Darrays, DistArray, Domain};
use gaspar::Result;

/// The diffusion coefficient times the time step over the grid step squared.
const ALPHA: f64 = 0.1;

fn main() {
    bench::main_of("heat", 96, 8, run);
}

fn initial(index: [usize; 3]) -> f64 {
    ((index[0] * 7 + index[1] * 3 + index[2] * 5) % 23) as f64
}

/// The next temperature at `index` of an `n`^3 grid read by `read` (the boundary is fixed).
#[inline(always)]
fn step(index: [usize; 3], n: usize, read: impl Fn([usize; 3]) -> Result<f64>) -> Result<f64> {
    let [i, j, k] = index;
    let here = read(index)?;
    if index.iter().any(|&x| x == 0 || x == n - 1) {
        return Ok(here);
    }
    let around = read([i - 1, j, k])?
        + read([i + 1, j, k])?
        + read([i, j - 1, k])?
        + read([i, j + 1, k])?
        + read([i, j, k - 1])?
        + read([i, j, k + 1])?;
    Ok(here + ALPHA * (around - 6.0 * here))
}

fn serial(n: usize, steps: usize) -> Result<Vec<f64>> {
    let whole = Domain::of_extents([n; 3]);
    let mut grid: Vec<f64> = whole.iter().map(initial).collect();
    for _ in 0..steps {
        grid = whole
            .iter()
            .map(|index| step(index, n, |at| Ok(grid[whole.linear(at)])))
            .collect::<Result<_>>()?;
    }
    Ok(grid)
}

fn run(ctx: &Darrays, params: &Params) -> Result<Outcome> {
    let n = params.size.max(3);
    let mut grids = [
        DistArray::<f64, 3>::new(ctx, [n; 3])?,
        DistArray::<f64, 3>::new(ctx, [n; 3])?,
    ];
    let mine = grids[0].local_domain();
    for index in mine.iter() {
        grids[0].set(index, initial(index))?;
    }
    // The hand-optimized copies of the six faces around this rank's block, refreshed
    // before every step.
    let faces: Vec<Domain<3>> = (0..3)
        .map(|k| mine.grown(1, std::array::from_fn(|j| j == k)))
        .collect();
    let mut copies = HandCopies::new(&grids[0], &faces);
    let ((), measured) = timed(ctx, || {
        if let Some(how) = params.variant.prefetch() {
            for grid in &mut grids {
                grid.stencil_prefetch(1, false, how)?;
            }
        }
        for t in 0..params.iterations {
            let (src, dst) = (&grids[t % 2], &grids[(t + 1) % 2]);
            if params.variant == Variant::HandOpt {
                copies.refresh(src)?;
                for index in mine.iter() {
                    dst.set(index, step(index, n, |at| copies.read(src, at))?)?;
                }
            } else {
                for index in mine.iter() {
                    dst.set(index, step(index, n, |at| src.get(at))?)?;
                }
            }
            ctx.barrier()?;
            // Manual consistency refreshes what the next iteration reads (none after
            // the last, as HandOpt copies before each iteration).
            if params.variant.manual() && t + 1 < params.iterations {
                dst.update_prefetch()?;
            }
        }
        Ok(())
    })?;
    let result = &grids[params.iterations % 2];
    let passed = ctx.rank() != 0 || close(&result.to_vec()?, &serial(n, params.iterations)?);
    ctx.barrier()?;
    let [a, b] = grids;
    a.free()?;
    b.free()?;
    Ok(Outcome { measured, passed })
}
