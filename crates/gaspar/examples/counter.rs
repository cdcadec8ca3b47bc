//! N ranks x 100 000 fetch-adds on one word on rank 0 must give exactly N x 100 000:
//! `gaspar run -n 4 target/debug/examples/counter [ITERATIONS]`.

use gaspar::GlobalPtr;

fn main() -> gaspar::Result<()> {
    let iterations: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("ITERATIONS must be a number"))
        .unwrap_or(100_000);
    gaspar::run_job(|rt| {
        let word = GlobalPtr::<u64>::new(rt.starter_ga(0)?);
        if rt.rank() == 0 {
            word.atomic_store(rt, 0)?;
        }
        rt.barrier()?;
        let mut seen_max = 0;
        for _ in 0..iterations {
            let old = word.fetch_add(rt, 1)?;
            seen_max = seen_max.max(old);
        }
        rt.barrier()?;
        let total = word.atomic_load(rt)?;
        let expected = iterations * u64::from(rt.procs());
        println!(
            "rank {}: counter = {total} (expected {expected})",
            rt.rank()
        );
        if total != expected || seen_max >= expected {
            rt.abort(&format!("counter is {total}, expected {expected}"));
        }
        Ok(())
    })
}
