//! A loop of N 8-byte operations from rank 0 on element 0 of rank 1, for timing one
//! operation alone and for counting the instructions it runs (this VM has no CPU
//! counters; valgrind's callgrind counts instructions): MODE is `typed-fadd`,
//! `typed-put`, `typed-get` (the typed API), `ptr-fadd` (`GlobalPtr`), `addr-put`,
//! `addr-get` (`put_blocking`/`get_blocking` on the address), or, under mpirun,
//! `raw-fadd`, `raw-put`, `raw-get` (the MPI calls alone, on a window of their own: `gaspar bench`'s),
//! or `pair-put`, `pair-get`, `pair-fadd`: the `addr-`/`ptr-` loop and the `raw-` loop
//! timed in alternation, N operations each, 11 times, in the same job (for a launch
//! `gaspar bench` cannot make itself, such as one rank on each of two hosts).
//!
//! `GASPAR_MPI_DIRECT=off mpirun -n 2 target/release/examples/op_loop MODE N` prints the
//! time per operation; `bench/probes/count_instructions.sh MODE` the instructions per
//! operation of rank 0's loop (commands and figures in `bench/probes/README.md`).

use std::time::Instant;

// The raw MPI calls are the in-job benchmark's own (`gaspar bench --transport mpi`), so that
// both count and time the same loop; this example uses only part of that module.
#[allow(dead_code)]
#[path = "../src/bin/gaspar/bench_raw.rs"]
mod bench_raw;

use bench_raw::RawWindow;

/// Repetitions of each loop in the `pair-` modes.
const PAIR_REPS: usize = 11;

/// Times `ours` and `raw`, `n` calls each, in alternation; prints the medians and the
/// median of the repetitions' ratios with their range.
fn time_pair(
    mode: &str,
    n: u64,
    mut ours: impl FnMut() -> gaspar::Result<()>,
    mut raw: impl FnMut(),
) -> gaspar::Result<()> {
    let per_op = |start: Instant| start.elapsed().as_nanos() as f64 / n.max(1) as f64;
    let (mut t_ours, mut t_raw, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..PAIR_REPS {
        let start = Instant::now();
        for _ in 0..n {
            ours()?;
        }
        t_ours.push(per_op(start));
        let start = Instant::now();
        (0..n).for_each(|_| raw());
        t_raw.push(per_op(start));
        ratios.push(t_ours[t_ours.len() - 1] / t_raw[t_raw.len() - 1]);
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (low, high) = ratios
        .iter()
        .fold((f64::MAX, 0f64), |(l, h), r| (l.min(*r), h.max(*r)));
    println!(
        "{mode}: gaspar {:.1} ns, raw MPI {:.1} ns per operation, gaspar/raw {:.3}x ({low:.3}-{high:.3}x; medians of {PAIR_REPS} alternated loops of {n})",
        median(t_ours),
        median(t_raw),
        median(ratios)
    );
    Ok(())
}

fn main() -> gaspar::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(mode), Some(n)) = (args.next(), args.next().and_then(|n| n.parse::<u64>().ok()))
    else {
        eprintln!("usage: op_loop MODE N");
        std::process::exit(2);
    };
    gaspar::run_job(|rt| {
        let word = rt.alloc::<u64>(1)?;
        let raw = RawWindow::new();
        rt.barrier()?;
        if rt.rank() == 0 {
            let start = Instant::now();
            match (mode.as_str(), &raw) {
                ("typed-fadd", _) => {
                    for _ in 0..n {
                        std::hint::black_box(word.fetch_add(1, 0, 1)?);
                    }
                }
                ("typed-put", _) => {
                    for _ in 0..n {
                        word.put(1, 0, &7)?;
                    }
                }
                ("typed-get", _) => {
                    for _ in 0..n {
                        std::hint::black_box(word.get(1, 0)?);
                    }
                }
                ("ptr-fadd", _) => {
                    let (ptr, acp) = (word.ptr(1, 0)?, rt.acp());
                    for _ in 0..n {
                        std::hint::black_box(ptr.fetch_add(acp, 1)?);
                    }
                }
                ("addr-put", _) => {
                    let (acp, target) = (rt.acp(), word.ptr(1, 0)?.ga());
                    for _ in 0..n {
                        acp.put_blocking(target, &[7; 8])?;
                    }
                }
                ("addr-get", _) => {
                    let (acp, target) = (rt.acp(), word.ptr(1, 0)?.ga());
                    for _ in 0..n {
                        let mut value = [0u8; 8];
                        acp.get_blocking(&mut value, target)?;
                        std::hint::black_box(value);
                    }
                }
                ("pair-put", Some(raw)) => {
                    let (acp, target) = (rt.acp(), word.ptr(1, 0)?.ga());
                    time_pair(
                        &mode,
                        n,
                        || acp.put_blocking(target, &[7; 8]),
                        || raw.put(&[7; 8]),
                    )?;
                }
                ("pair-get", Some(raw)) => {
                    let (acp, target) = (rt.acp(), word.ptr(1, 0)?.ga());
                    let mut value = [0u8; 8];
                    let mut raw_value = [0u8; 8];
                    time_pair(
                        &mode,
                        n,
                        || {
                            acp.get_blocking(&mut value, target)?;
                            std::hint::black_box(value);
                            Ok(())
                        },
                        || {
                            raw.get(&mut raw_value);
                            std::hint::black_box(raw_value);
                        },
                    )?;
                }
                ("pair-fadd", Some(raw)) => {
                    let (ptr, acp) = (word.ptr(1, 0)?, rt.acp());
                    time_pair(
                        &mode,
                        n,
                        || {
                            std::hint::black_box(ptr.fetch_add(acp, 1)?);
                            Ok(())
                        },
                        || {
                            std::hint::black_box(raw.fetch_add());
                        },
                    )?;
                    let total = word.get(1, 0)?;
                    if total != PAIR_REPS as u64 * n {
                        rt.abort(&format!(
                            "{mode}: {total} additions arrived of {}",
                            PAIR_REPS as u64 * n
                        ));
                    }
                }
                ("raw-fadd", Some(raw)) => (0..n).for_each(|_| {
                    std::hint::black_box(raw.fetch_add());
                }),
                ("raw-put", Some(raw)) => (0..n).for_each(|_| raw.put(&[7; 8])),
                ("raw-get", Some(raw)) => (0..n).for_each(|_| {
                    let mut value = [0u8; 8];
                    raw.get(&mut value);
                    std::hint::black_box(value);
                }),
                _ => rt.abort(&format!("unknown mode {mode:?} (raw modes need mpirun)")),
            }
            if !mode.starts_with("pair-") {
                let ns = start.elapsed().as_nanos() as f64 / n.max(1) as f64;
                println!("{mode}: {ns:.1} ns per operation ({n} operations)");
            }
        }
        rt.barrier()?;
        if let Some(raw) = raw {
            raw.free();
        }
        word.free()
    })
}
