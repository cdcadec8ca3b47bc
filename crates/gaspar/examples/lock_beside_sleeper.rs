//! Image 1 takes and releases image 2's coarray lock N times (default 200 000) through the
//! Rust API while image 2 waits in `sync_all`, and prints the time per lock + unlock: what
//! an UNLOCK costs when the lock's owner sleeps on its memory and nobody waits for the
//! lock (it rang the owner's doorbell each time before `Transport::atomic_unwatched`).
//!
//! ```text
//! cargo build --release --example lock_beside_sleeper
//! target/release/gaspar run -n 2 target/release/examples/lock_beside_sleeper [N]
//! GASPAR_SPIN_LIMIT=0 target/release/gaspar run -n 2 target/release/examples/lock_beside_sleeper
//! ```

use gaspar::coarray::{CoError, Coarrays};

fn main() -> Result<(), CoError> {
    let n: u32 = match std::env::args().nth(1) {
        Some(arg) => arg
            .parse()
            .map_err(|_| CoError::invalid("lock_beside_sleeper", "N must be a count"))?,
        None => 200_000,
    };
    let mut co = Coarrays::init()?;
    if co.num_images() < 2 {
        return Err(CoError::invalid(
            "lock_beside_sleeper",
            "run it on 2 images",
        ));
    }
    let locks = co.allocate_locks(1)?;
    co.sync_all()?;
    if co.this_image() == 1 {
        co.lock(&locks, 0, 2, false)?;
        co.unlock(&locks, 0, 2)?;
        let start = std::time::Instant::now();
        for _ in 0..n {
            co.lock(&locks, 0, 2, false)?;
            co.unlock(&locks, 0, 2)?;
        }
        let ns = start.elapsed().as_nanos() as f64 / f64::from(n.max(1));
        println!("lock + unlock of image 2's lock while it waits in sync_all: {ns:.2} ns");
    }
    co.sync_all()?;
    co.deallocate(locks)?;
    co.finalize()
}
