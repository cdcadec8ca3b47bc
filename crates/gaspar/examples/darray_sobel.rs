//! Sobel edge detection (LAPPS paper 6.3): a 2-D 9-point stencil over a block-distributed
//! SIZE x SIZE image, ITERATIONS passes, in the variant given (see `darray_bench/mod.rs`),
//! checked against a serial computation on rank 0.
//!
//! ```sh
//! cargo build --release --example darray_sobel
//! gaspar run -n 2 target/release/examples/darray_sobel ac 1024 4
//! ```

// Shared by the five benchmarks; each uses part of it.
#[allow(dead_code)]
#[path = "darray_bench/mod.rs"]
mod bench;

use bench::{close, timed, HandCopies, Outcome, Params, Variant};
use gaspar::darray::{Darrays, DistArray, Domain};
use gaspar::Result;

fn main() {
    bench::main_of("sobel", 1024, 4, run);
}

fn pixel(index: [usize; 2]) -> f64 {
    ((index[0] * 31 + index[1] * 17 + index[0] * index[1]) % 256) as f64
}

/// The gradient magnitude at `index` of an `n` x `n` image read by `read` (0 on the border).
#[inline(always)]
fn sobel(index: [usize; 2], n: usize, read: impl Fn([usize; 2]) -> Result<f64>) -> Result<f64> {
    let [i, j] = index;
    if i == 0 || j == 0 || i == n - 1 || j == n - 1 {
        return Ok(0.0);
    }
    let (nw, n_, ne) = (
        read([i - 1, j - 1])?,
        read([i - 1, j])?,
        read([i - 1, j + 1])?,
    );
    let (w, e) = (read([i, j - 1])?, read([i, j + 1])?);
    let (sw, s, se) = (
        read([i + 1, j - 1])?,
        read([i + 1, j])?,
        read([i + 1, j + 1])?,
    );
    let gx = (ne + 2.0 * e + se) - (nw + 2.0 * w + sw);
    let gy = (sw + 2.0 * s + se) - (nw + 2.0 * n_ + ne);
    Ok((gx * gx + gy * gy).sqrt())
}

fn run(ctx: &Darrays, params: &Params) -> Result<Outcome> {
    let n = params.size.max(3);
    let mut image = DistArray::<f64, 2>::new(ctx, [n, n])?;
    let edges = DistArray::<f64, 2>::new(ctx, [n, n])?;
    let mine = image.local_domain();
    for index in mine.iter() {
        image.set(index, pixel(index))?;
    }
    let mut copies = HandCopies::new(&image, &[mine.grown(1, [true; 2])]);
    let ((), measured) = timed(ctx, || {
        if let Some(how) = params.variant.prefetch() {
            image.stencil_prefetch(1, true, how)?;
        }
        for pass in 0..params.iterations {
            match params.variant {
                Variant::HandOpt => {
                    if pass == 0 {
                        copies.refresh(&image)?;
                    }
                    for index in mine.iter() {
                        edges.set(index, sobel(index, n, |at| copies.read(&image, at))?)?;
                    }
                }
                _ => {
                    for index in mine.iter() {
                        edges.set(index, sobel(index, n, |at| image.get(at))?)?;
                    }
                }
            }
            ctx.barrier()?;
        }
        Ok(())
    })?;
    let passed = ctx.rank() != 0 || {
        let whole = Domain::of_extents([n, n]);
        let serial: Vec<f64> = whole
            .iter()
            .map(|index| sobel(index, n, |at| Ok(pixel(at))))
            .collect::<Result<_>>()?;
        close(&edges.to_vec()?, &serial)
    };
    ctx.barrier()?;
    image.free()?;
    edges.free()?;
    Ok(Outcome { measured, passed })
}
