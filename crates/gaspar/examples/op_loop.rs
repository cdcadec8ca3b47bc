//! A loop of N 8-byte operations from rank 0 on element 0 of rank 1, for timing one
//! operation alone and for counting the instructions it runs (this VM has no CPU
//! counters; valgrind's callgrind counts instructions): MODE is `typed-fadd`,
//! `typed-put`, `typed-get` (the typed API), `ptr-fadd` (`GlobalPtr`), `addr-put`,
//! `addr-get` (`put_blocking`/`get_blocking` on the address), or, under mpirun,
//! `raw-fadd`, `raw-put`, `raw-get` (the MPI calls alone, on a window of their own: `gaspar bench`'s).
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
            let ns = start.elapsed().as_nanos() as f64 / n.max(1) as f64;
            println!("{mode}: {ns:.1} ns per operation ({n} operations)");
        }
        rt.barrier()?;
        if let Some(raw) = raw {
            raw.free();
        }
        word.free()
    })
}
