//! How long a read from another rank waits while that rank computes: rank 1 reads its own
//! block for BUSY milliseconds (local reads only, no synchronization) while rank 0 reads
//! one element of rank 1's block, right after the same barrier. Prints, per BUSY, rank 0's
//! wait and rank 1's local reads:
//!
//! ```text
//! darray-progress busy_ms=50 remote_read_us=12.3 source_local_reads=76000
//! ```
//!
//! On shared memory, and on transports whose one-sided reads complete without the
//! source's attention, the wait does not grow with BUSY; where a get needs the source to
//! make progress (MPI RMA over TCP: `scripts/bench-darray --hosts`), it lasts until the
//! source's next synchronization. Needs 2 ranks or more (ranks past 1 only synchronize).
//!
//! ```sh
//! cargo build --release --example darray_progress
//! gaspar run -n 2 target/release/examples/darray_progress
//! ```

use std::time::{Duration, Instant};

use gaspar::darray::{Darrays, DistArray};
use gaspar::world::World;
use gaspar::{Error, Result};

/// Elements of the 1-D array.
const LEN: usize = 1 << 16;
/// How long rank 1 computes in each measurement, in milliseconds (0: not at all).
const BUSY_MS: [u64; 3] = [0, 50, 200];
/// Local reads between two looks at the clock.
const READS_PER_LOOK: usize = 1000;

fn main() {
    let ctx = match Darrays::init() {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("darray_progress: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = measure(&ctx) {
        ctx.runtime().abort(&format!("darray_progress: {e}"))
    }
    if let Err(e) = ctx.finalize() {
        eprintln!("darray_progress: {e}");
        std::process::exit(1);
    }
}

fn value_at(i: usize) -> f64 {
    i as f64
}

fn fail(reason: String) -> Error {
    Error::InvalidArgument {
        call: "darray_progress",
        reason,
    }
}

fn measure(ctx: &Darrays) -> Result<()> {
    if ctx.procs() < 2 {
        return Err(fail(format!("needs 2 ranks or more, not {}", ctx.procs())));
    }
    let a = DistArray::<f64, 1>::new(ctx, [LEN])?;
    let mine = a.local_domain();
    for i in mine.lo[0]..mine.hi[0] {
        a.set([i], value_at(i))?;
    }
    let source = a.distribution().block_of(1);
    let reads = mine.lo[0]..mine.hi[0].min(mine.lo[0] + READS_PER_LOOK);
    // Per measurement: rank 0's wait in nanoseconds, rank 1's local reads.
    let mut measured = [0u64; BUSY_MS.len()];
    for (busy_ms, slot) in BUSY_MS.iter().zip(&mut measured) {
        ctx.barrier()?;
        match ctx.rank() {
            0 => {
                let start = Instant::now();
                let last = source.hi[0] - 1;
                let value = a.get([last])?;
                if value != value_at(last) {
                    return Err(fail(format!("element {last} read {value}")));
                }
                *slot = start.elapsed().as_nanos() as u64;
            }
            1 => {
                let busy = Duration::from_millis(*busy_ms);
                let start = Instant::now();
                while start.elapsed() < busy {
                    for i in reads.clone() {
                        if a.get([i])? != value_at(i) {
                            return Err(fail(format!("local element {i} is wrong")));
                        }
                    }
                    *slot += reads.len() as u64;
                }
            }
            _ => {}
        }
    }
    let world: &World = ctx.runtime();
    let mut all = vec![0u64; ctx.procs() as usize];
    for (busy_ms, value) in BUSY_MS.iter().zip(measured) {
        world.allgather_u64(value, &mut all)?;
        if ctx.rank() == 0 {
            println!(
                "darray-progress busy_ms={busy_ms} remote_read_us={:.1} source_local_reads={}",
                all[0] as f64 / 1e3,
                all[1]
            );
        }
    }
    ctx.barrier()?;
    a.free()
}
