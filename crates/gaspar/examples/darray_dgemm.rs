//! PRK DGEMM (LAPPS paper 6.3): C += A B, ITERATIONS times, on block-distributed SIZE x SIZE
//! matrices, blocked in tiles of 32 (each rank computes its block of C from the rows of A
//! and the columns of B it needs), in the variant given (see `darray_bench/mod.rs`),
//! checked against a serial product on rank 0.
//!
//! ```sh
//! cargo build --release --example darray_dgemm
//! gaspar run -n 2 target/release/examples/darray_dgemm ac-sd 256 2
//! ```

// Shared by the five benchmarks; each uses part of it.
#[allow(dead_code)]
#[path = "darray_bench/mod.rs"]
mod bench;

use bench::{close, timed, HandCopies, Outcome, Params, Variant};
use gaspar::darray::{Darrays, DistArray, Domain};
use gaspar::Result;

/// Tile side of the blocked product.
const TILE: usize = 32;

fn main() {
    bench::main_of("dgemm", 256, 2, run);
}

fn a_at([i, k]: [usize; 2]) -> f64 {
    ((i + 2 * k) % 7) as f64
}

fn b_at([k, j]: [usize; 2]) -> f64 {
    ((3 * k + j) % 5) as f64
}

/// Reads the elements of `tile` (2-D) through `read` into `out`, densely (dimension 1
/// fastest, as the product loops read them).
#[inline(always)]
fn load_tile(
    tile: Domain<2>,
    out: &mut [f64],
    read: impl Fn([usize; 2]) -> Result<f64>,
) -> Result<()> {
    let width = tile.hi[1] - tile.lo[1];
    for i in tile.lo[0]..tile.hi[0] {
        for j in tile.lo[1]..tile.hi[1] {
            out[(i - tile.lo[0]) * width + (j - tile.lo[1])] = read([i, j])?;
        }
    }
    Ok(())
}

/// The starts of the tiles along `lo..hi`.
fn starts(lo: usize, hi: usize) -> impl Iterator<Item = usize> + Clone {
    (lo..hi).step_by(TILE)
}

fn run(ctx: &Darrays, params: &Params) -> Result<Outcome> {
    let n = params.size;
    let mut a = DistArray::<f64, 2>::new(ctx, [n, n])?;
    let mut b = DistArray::<f64, 2>::new(ctx, [n, n])?;
    let c = DistArray::<f64, 2>::new(ctx, [n, n])?;
    let mine = c.local_domain();
    for index in a.local_domain().iter() {
        a.set(index, a_at(index))?;
        b.set(index, b_at(index))?;
    }
    // What this rank reads: the rows of A and the columns of B of its block of C; the
    // hand-optimized copies of them are taken once (A and B do not change).
    let rows = Domain::new([mine.lo[0], 0], [mine.hi[0], n]);
    let cols = Domain::new([0, mine.lo[1]], [n, mine.hi[1]]);
    let mut a_copies = HandCopies::new(&a, &[rows]);
    let mut b_copies = HandCopies::new(&b, &[cols]);
    let (mut a_tile, mut b_tile, mut c_tile) =
        ([0.0; TILE * TILE], [0.0; TILE * TILE], [0.0; TILE * TILE]);
    let ((), measured) = timed(ctx, || {
        if let Some(how) = params.variant.prefetch() {
            a.row_wise_prefetch(how)?;
            b.col_wise_prefetch(how)?;
        }
        if params.variant == Variant::HandOpt {
            a_copies.refresh(&a)?;
            b_copies.refresh(&b)?;
        }
        for _ in 0..params.iterations {
            for i0 in starts(mine.lo[0], mine.hi[0]) {
                for j0 in starts(mine.lo[1], mine.hi[1]) {
                    let (ih, jh) = ((i0 + TILE).min(mine.hi[0]), (j0 + TILE).min(mine.hi[1]));
                    let (ti, tj) = (ih - i0, jh - j0);
                    c_tile[..ti * tj].fill(0.0);
                    for k0 in starts(0, n) {
                        let kh = (k0 + TILE).min(n);
                        let tk = kh - k0;
                        let a_part = Domain::new([i0, k0], [ih, kh]);
                        let b_part = Domain::new([k0, j0], [kh, jh]);
                        if params.variant == Variant::HandOpt {
                            load_tile(a_part, &mut a_tile, |x| a_copies.read(&a, x))?;
                            load_tile(b_part, &mut b_tile, |x| b_copies.read(&b, x))?;
                        } else {
                            load_tile(a_part, &mut a_tile, |x| a.get(x))?;
                            load_tile(b_part, &mut b_tile, |x| b.get(x))?;
                        }
                        for i in 0..ti {
                            for k in 0..tk {
                                let aik = a_tile[i * tk + k];
                                let b_row = &b_tile[k * tj..k * tj + tj];
                                let c_row = &mut c_tile[i * tj..i * tj + tj];
                                for (c, b) in c_row.iter_mut().zip(b_row) {
                                    *c += aik * b;
                                }
                            }
                        }
                    }
                    for i in 0..ti {
                        for j in 0..tj {
                            let index = [i0 + i, j0 + j];
                            c.set(index, c.get(index)? + c_tile[i * tj + j])?;
                        }
                    }
                }
            }
            ctx.barrier()?;
        }
        Ok(())
    })?;
    let passed = ctx.rank() != 0 || {
        let whole = Domain::of_extents([n, n]);
        let t = params.iterations as f64;
        let expected: Vec<f64> = whole
            .iter()
            .map(|[i, j]| t * (0..n).map(|k| a_at([i, k]) * b_at([k, j])).sum::<f64>())
            .collect();
        close(&c.to_vec()?, &expected)
    };
    ctx.barrier()?;
    a.free()?;
    b.free()?;
    c.free()?;
    Ok(Outcome { measured, passed })
}
