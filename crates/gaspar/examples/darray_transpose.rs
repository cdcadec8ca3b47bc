//! PRK transpose (LAPPS paper 6.3): B += A^T, then A += 1, ITERATIONS times, on SIZE x SIZE
//! matrices distributed by rows, blocked in tiles of 8, in the variant given (see
//! `darray_bench/mod.rs`); B is checked against its closed form on rank 0.
//!
//! ```sh
//! cargo build --release --example darray_transpose
//! gaspar run -n 2 target/release/examples/darray_transpose ac 1024 4
//! ```

// Shared by the five benchmarks; each uses part of it.
#[allow(dead_code)]
#[path = "darray_bench/mod.rs"]
mod bench;

use bench::{close, fail, timed, HandCopies, Outcome, Params, Variant};
use gaspar::darray::{Darrays, DistArray, Domain, Grid};
use gaspar::Result;

/// Tile side of the blocked loops.
const TILE: usize = 8;

fn main() {
    bench::main_of("transpose", 1024, 4, run);
}

fn initial(index: [usize; 2], n: usize) -> f64 {
    (index[0] * n + index[1]) as f64
}

/// Tiles of `domain` (2-D), row-major, each at most `TILE` x `TILE`.
fn tiles(domain: Domain<2>) -> impl Iterator<Item = Domain<2>> {
    let rows = (domain.lo[0]..domain.hi[0]).step_by(TILE);
    rows.flat_map(move |i| {
        (domain.lo[1]..domain.hi[1]).step_by(TILE).map(move |j| {
            Domain::new(
                [i, j],
                [(i + TILE).min(domain.hi[0]), (j + TILE).min(domain.hi[1])],
            )
        })
    })
}

fn run(ctx: &Darrays, params: &Params) -> Result<Outcome> {
    let n = params.size;
    let by_rows = Grid::new([ctx.procs(), 1], ctx.procs())?;
    let mut a = DistArray::<f64, 2>::on_grid(ctx, [n, n], by_rows)?;
    let b = DistArray::<f64, 2>::on_grid(ctx, [n, n], by_rows)?;
    let mine = a.local_domain();
    for index in mine.iter() {
        a.set(index, initial(index, n))?;
    }
    // What this rank reads of A: the columns of its rows. The hand-optimized copies of
    // it are refreshed every iteration.
    let mut reversed = mine;
    reversed.lo.reverse();
    reversed.hi.reverse();
    let mut copies = HandCopies::new(&a, &[reversed]);
    let ((), measured) = timed(ctx, || {
        if let Some(how) = params.variant.prefetch() {
            a.transpose_prefetch(how)?;
        }
        for t in 0..params.iterations {
            if params.variant == Variant::HandOpt {
                copies.refresh(&a)?;
            }
            for tile in tiles(mine) {
                for index in tile.iter() {
                    let [i, j] = index;
                    let value = match params.variant {
                        Variant::HandOpt => copies.read(&a, [j, i])?,
                        _ => a.get([j, i])?,
                    };
                    b.set(index, b.get(index)? + value)?;
                }
            }
            // Every rank has read A: now it may change.
            ctx.barrier()?;
            for index in mine.iter() {
                a.set(index, a.get(index)? + 1.0)?;
            }
            ctx.barrier()?;
            // Manual consistency refreshes what the next iteration reads (none after
            // the last, as HandOpt copies before each iteration).
            if params.variant.manual() && t + 1 < params.iterations {
                a.update_prefetch()?;
            }
        }
        Ok(())
    })?;
    let passed = ctx.rank() != 0 || {
        let t = params.iterations as f64;
        let expected: Vec<f64> = Domain::of_extents([n, n])
            .iter()
            .map(|[i, j]| t * initial([j, i], n) + t * (t - 1.0) / 2.0)
            .collect();
        close(&b.to_vec()?, &expected)
    };
    ctx.barrier()?;
    if a.remote_reads() > 0 && params.variant.prefetch().is_some() {
        return Err(fail(format!("{} reads of A went remote", a.remote_reads())));
    }
    a.free()?;
    b.free()?;
    Ok(Outcome { measured, passed })
}
