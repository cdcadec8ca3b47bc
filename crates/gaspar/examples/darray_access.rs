//! Access latency of a distributed array's element reads (LAPPS paper, section 6.2.1):
//! local, prefetched with manual and with automatic consistency, and remote, in
//! nanoseconds per read, measured on rank 0 reading rank 1's block (every value checked).
//!
//! ```sh
//! cargo build --release --example darray_access
//! gaspar run -n 2 target/release/examples/darray_access
//! ```

use std::time::Instant;

use gaspar::darray::{Darrays, DistArray, Domain, Prefetch};
use gaspar::{Error, Result};

/// Elements along each dimension of the 2-D array.
const SIDE: usize = 256;
/// Times every element of the measured block is read.
const ROUNDS: usize = 4;

fn main() {
    let ctx = match Darrays::init() {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("darray_access: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = measure(&ctx) {
        ctx.runtime().abort(&format!("darray_access: {e}"))
    }
    if let Err(e) = ctx.finalize() {
        eprintln!("darray_access: {e}");
        std::process::exit(1);
    }
}

/// Reads every element of `block` `ROUNDS` times; returns nanoseconds per read.
fn time_reads(a: &DistArray<'_, f64, 2>, block: Domain<2>) -> Result<f64> {
    let start = Instant::now();
    for _ in 0..ROUNDS {
        for index in block.iter() {
            let value = a.get(index)?;
            if value != value_at(index) {
                return Err(Error::InvalidArgument {
                    call: "darray_access",
                    reason: format!("{index:?} read {value}"),
                });
            }
        }
    }
    Ok(start.elapsed().as_nanos() as f64 / (ROUNDS * block.len()) as f64)
}

fn value_at(index: [usize; 2]) -> f64 {
    (index[0] * SIDE + index[1]) as f64
}

fn measure(ctx: &Darrays) -> Result<()> {
    let mut a = DistArray::<f64, 2>::new(ctx, [SIDE, SIDE])?;
    for index in a.local_domain().iter() {
        a.set(index, value_at(index))?;
    }
    ctx.barrier()?;
    if ctx.rank() == 0 && ctx.procs() > 1 {
        let local = time_reads(&a, a.local_domain())?;
        let theirs = a.distribution().block_of(1);
        let remote = time_reads(&a, theirs)?;
        a.request_prefetch(1, None, Prefetch::MANUAL.with_static_domain())?;
        let manual = time_reads(&a, theirs)?;
        a.evict_prefetch();
        a.request_prefetch(1, None, Prefetch::AUTOMATIC.with_static_domain())?;
        let automatic = time_reads(&a, theirs)?;
        println!(
            "ns per read: local {local:.1}, prefetched (manual) {manual:.1}, \
             prefetched (automatic) {automatic:.1}, remote {remote:.1}"
        );
    }
    ctx.barrier()?;
    a.free()
}
