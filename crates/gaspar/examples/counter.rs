//! N ranks x 100 000 fetch-adds on one word on rank 0 must give exactly N x 100 000:
//! `gaspar run -n 4 target/debug/examples/counter [ITERATIONS]`.

fn main() -> gaspar::Result<()> {
    let iterations: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("ITERATIONS must be a number"))
        .unwrap_or(100_000);
    gaspar::run_job(|rt| {
        // One word on every rank, zero to start with; all ranks count on rank 0's.
        let counter = rt.alloc::<u64>(1)?;
        let mut seen_max = 0;
        for _ in 0..iterations {
            let old = counter.fetch_add(0, 0, 1)?;
            seen_max = seen_max.max(old);
        }
        rt.barrier()?;
        let total = counter.atomic_load(0, 0)?;
        let expected = iterations * u64::from(rt.procs());
        println!(
            "rank {}: counter = {total} (expected {expected})",
            rt.rank()
        );
        if total != expected || seen_max >= expected {
            rt.abort(&format!("counter is {total}, expected {expected}"));
        }
        counter.free()
    })
}
