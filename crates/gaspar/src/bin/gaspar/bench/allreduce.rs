//! The allreduce (sum) of 1 and of 1 Mi doubles on the world team, at each of
//! `--allreduce-ranks`, beside OpenMPI's MPI_Allreduce: gaspar's and the peer's jobs in
//! alternating rounds, each figure the median over the rounds.

use std::io::Write;
use std::path::{Path, PathBuf};

use gaspar::world::ReduceOp;

use super::{
    gaspar_figures, median, openmpi_figures, ratio, shown, time_loop, write_figures, BenchArgs,
    Figures, Job, RankArgs,
};

/// Doubles per allreduce: one (latency), and 1 Mi (bandwidth).
const COUNTS: [u64; 2] = [1, 1 << 20];

/// Calls per repetition for `count` doubles: `iters` for one, `iters / 200` for 1 Mi (as
/// the OpenMPI peer does).
fn calls(iters: u64, count: u64) -> u64 {
    if count == 1 {
        iters
    } else {
        (iters / 200).max(1)
    }
}

/// The figure's name at `procs` ranks (its size is the number of doubles).
fn figure(procs: u32) -> String {
    format!("allreduce_ranks_{procs}")
}

/// Every rank times the allreduces; rank 0 reports the medians.
pub(super) fn measure(rt: gaspar::strided::Strided, args: &RankArgs) -> gaspar::Result<()> {
    let team = rt.team();
    let mut figures = Figures::new();
    for count in COUNTS {
        let input: Vec<f64> = (0..count)
            .map(|i| f64::from(rt.rank()) + (i % 1000) as f64)
            .collect();
        let mut values = input.clone();
        rt.barrier()?;
        let t = time_loop(args.reps, calls(args.iters, count), || {
            values.copy_from_slice(&input);
            team.allreduce(&rt, &mut values, ReduceOp::Sum)
                .expect("allreduce");
        });
        figures.insert((figure(rt.procs()), count), t);
    }
    if rt.rank() == 0 {
        write_figures(&args.out, &figures)?;
    }
    rt.finalize()
}

/// The table: one line per job size and count.
pub(super) fn table(
    args: &BenchArgs,
    dir: &Path,
    peer: &Result<PathBuf, String>,
    stdout: &mut impl Write,
    json_rows: &mut Vec<serde_json::Value>,
) -> Result<(), String> {
    if args.allreduce_ranks.is_empty() {
        return Ok(());
    }
    let _ = writeln!(
        stdout,
        "allreduce (sum of doubles) on the world team, {} calls per repetition for 1 double, {} for 1 Mi:",
        calls(args.barrier_iters, 1),
        calls(args.barrier_iters, 1 << 20)
    );
    let _ = writeln!(
        stdout,
        "{:<10} {:>8} {:>10} {:>13} {:>13} {:>12}",
        "operation", "ranks", "doubles", "gaspar", "OpenMPI", "vs OpenMPI"
    );
    for &procs in &args.allreduce_ranks {
        let job = Job::Allreduce { procs };
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for _ in 0..args.rounds.max(1) {
            ours.push(gaspar_figures(
                args.reps,
                args.barrier_iters,
                dir,
                &args.transport,
                job,
            )?);
            if let Ok(binary) = peer {
                if let Ok(figures) = openmpi_figures(binary, args.reps, args.barrier_iters, job) {
                    theirs.push(figures);
                }
            }
        }
        for count in COUNTS {
            let key = (figure(procs), count);
            let of = |runs: &[Figures]| {
                let values: Vec<f64> = runs.iter().filter_map(|f| f.get(&key).copied()).collect();
                (!values.is_empty()).then(|| median(values))
            };
            let (g, p) = (of(&ours), of(&theirs));
            let r = g.and_then(|g| ratio("allreduce", g, p));
            let _ = writeln!(
                stdout,
                "{:<10} {:>8} {:>10} {:>13} {:>13} {:>12}",
                "allreduce",
                procs,
                count,
                shown("allreduce", 0, g),
                shown("allreduce", 0, p),
                r.map(|r| format!("{r:.2}x")).unwrap_or_else(|| "-".into()),
            );
            json_rows.push(serde_json::json!({
                "operation": "allreduce",
                "ranks": procs,
                "doubles": count,
                "gaspar_ns": g,
                "openmpi_ns": p,
                "ratio_vs_openmpi": r,
            }));
        }
    }
    Ok(())
}
