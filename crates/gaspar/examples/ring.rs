//! Each rank puts its rank into its right neighbour's starter memory, then checks that it
//! received its left neighbour's: `gaspar run -n 4 target/debug/examples/ring`.

use gaspar::GlobalPtr;

fn main() -> gaspar::Result<()> {
    gaspar::run_job(|rt| {
        let (me, n) = (rt.rank(), rt.procs());
        let right = (me + 1) % n;
        let left = (me + n - 1) % n;
        // Rounds so that a stale value from an earlier round cannot pass the check.
        for round in 0..100u64 {
            let value = round * 1000 + u64::from(me);
            GlobalPtr::<u64>::new(rt.starter_ga(right)?).put(rt, &value)?;
            rt.barrier()?;
            let got = GlobalPtr::<u64>::new(rt.starter_ga(me)?).get(rt)?;
            let expected = round * 1000 + u64::from(left);
            if got != expected {
                rt.abort(&format!(
                    "round {round}: got {got} from the left, expected {expected}"
                ));
            }
            rt.barrier()?;
        }
        println!("rank {me}: ring of {n} ok, last value from rank {left}");
        Ok(())
    })
}
