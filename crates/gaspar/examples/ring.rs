//! Each rank puts its rank into its right neighbour's slot, then checks that it received
//! its left neighbour's: `gaspar run -n 4 target/debug/examples/ring`.

fn main() -> gaspar::Result<()> {
    gaspar::run_job(|rt| {
        let (me, n) = (rt.rank(), rt.procs());
        let right = (me + 1) % n;
        let left = (me + n - 1) % n;
        let slot = rt.alloc::<u64>(1)?;
        // Rounds so that a stale value from an earlier round cannot pass the check.
        for round in 0..100u64 {
            slot.put(right, 0, &(round * 1000 + u64::from(me)))?;
            rt.barrier()?;
            let got = slot.local().get(0)?;
            let expected = round * 1000 + u64::from(left);
            if got != expected {
                rt.abort(&format!(
                    "round {round}: got {got} from the left, expected {expected}"
                ));
            }
            rt.barrier()?;
        }
        slot.free()?;
        println!("rank {me}: ring of {n} ok, last value from rank {left}");
        Ok(())
    })
}
