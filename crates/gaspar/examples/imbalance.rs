//! An imbalanced loop: each round rank 0 computes for WORK_US microseconds of CPU time
//! while the other ranks wait for it in a barrier. Every rank prints the CPU time it used,
//! the loop's wall time and the cores its waits count on ([`World::usable_cores`]): a wait
//! that leaves its core to others uses little CPU while it waits, one that spins uses all
//! it is given (which, under a CPU quota, is taken from the rank that computes).
//! `gaspar run -n 2 target/release/examples/imbalance 200 2000`.
//!
//! [`World::usable_cores`]: gaspar::world::World::usable_cores

use std::time::{Duration, Instant};

use nix::time::{clock_gettime, ClockId};

fn cpu_time(clock: ClockId) -> Duration {
    clock_gettime(clock).map_or(Duration::ZERO, Duration::from)
}

fn main() -> gaspar::Result<()> {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u64>().ok());
    let (Some(Some(rounds)), Some(Some(work_us))) = (args.next(), args.next()) else {
        eprintln!("usage: imbalance ROUNDS WORK_US");
        std::process::exit(2);
    };
    gaspar::run_job(|rt| {
        rt.barrier()?;
        let (wall, cpu) = (Instant::now(), cpu_time(ClockId::CLOCK_PROCESS_CPUTIME_ID));
        for _ in 0..rounds {
            if rt.rank() == 0 {
                let until =
                    cpu_time(ClockId::CLOCK_THREAD_CPUTIME_ID) + Duration::from_micros(work_us);
                let mut x = 1u64;
                while cpu_time(ClockId::CLOCK_THREAD_CPUTIME_ID) < until {
                    for _ in 0..1000 {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                }
            }
            rt.barrier()?;
        }
        let (wall, cpu) = (
            wall.elapsed(),
            cpu_time(ClockId::CLOCK_PROCESS_CPUTIME_ID) - cpu,
        );
        println!(
            "rank {} cpu_us {} wall_us {} cores {}",
            rt.rank(),
            cpu.as_micros(),
            wall.as_micros(),
            rt.world().usable_cores()
        );
        Ok(())
    })
}
