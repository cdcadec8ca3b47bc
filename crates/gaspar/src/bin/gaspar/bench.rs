//! `gaspar bench`: gaspar's put, get, atomics and barrier on 2 ranks, beside plain
//! memcpy and OpenMPI's MPI-3 RMA (osc/sm) from the same run, with ratios (bandwidth at
//! four placements of the buffers, memcpy between the same buffers: `placements`); then, at several
//! job sizes (more ranks than cores included), the barrier alone beside OpenMPI's
//! MPI_Barrier, and a signal ping-pong between ranks 0 and 1 (8 bytes of data, then a
//! signal word the other side waits on) while the other ranks wait in a barrier, beside
//! the same with OpenMPI's RMA (`bench_peer.c` says how); and the world team's allreduce
//! beside MPI_Allreduce (`allreduce`).
//!
//! Every figure is the median over repetitions of a timed loop. Each put is complete at
//! its target before the next (gaspar: a blocking put, MPI: `MPI_Put` + `MPI_Win_flush`).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use gaspar::launcher::LaunchSpec;
use gaspar::{Compare, GlobalPtr};

mod allreduce;
mod placements;
mod strided;

/// Largest transfer measured.
const MAX_SIZE: u64 = 4 << 20;
const PEER_SOURCE: &str = include_str!("bench_peer.c");

#[derive(clap::Args)]
pub(crate) struct BenchArgs {
    /// Repetitions of each timed loop (the median is reported).
    #[arg(long, default_value_t = 31, value_parser = clap::value_parser!(u32).range(1..))]
    reps: u32,
    /// Iterations of each latency loop.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    iters: u64,
    /// Write the figures as JSON to this file too.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Skip the OpenMPI peer.
    #[arg(long)]
    no_mpi: bool,
    /// Rounds of (gaspar, peer) run alternately; each figure is the median over rounds.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
    /// The transport gaspar runs on: `shm`, or `mpi` (started with the launcher of the MPI
    /// library gaspar was built against; needs a gaspar built with `--features mpi`).
    #[arg(long, default_value = "shm", value_parser = ["shm", "mpi"])]
    transport: String,
    /// Job sizes at which the barrier and the signal ping-pong are measured alone
    /// (the option with no value: none).
    #[arg(
        long,
        alias = "barrier-ranks",
        value_delimiter = ',',
        num_args = 0..,
        default_value = "2,4,8",
        value_parser = clap::value_parser!(u32).range(2..)
    )]
    scaling_ranks: Vec<u32>,
    /// Barriers per repetition in those jobs.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    barrier_iters: u64,
    /// Job sizes at which the allreduce of 1 and 1 Mi doubles is measured (the option
    /// with no value: none).
    #[arg(
        long,
        value_delimiter = ',',
        num_args = 0..,
        default_value = "2,4",
        value_parser = clap::value_parser!(u32).range(2..)
    )]
    allreduce_ranks: Vec<u32>,
    /// Ping-pong round trips per repetition in those jobs.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..))]
    pingpong_iters: u64,
    /// Measure only the barrier and the ping-pong at `--scaling-ranks`.
    #[arg(long)]
    scaling_only: bool,
    #[command(flatten)]
    pub(crate) report: crate::report::ReportArgs,
}

#[derive(clap::Args)]
pub(crate) struct RankArgs {
    #[arg(long)]
    reps: u32,
    #[arg(long)]
    iters: u64,
    /// Where rank 0 writes its figures.
    #[arg(long)]
    out: PathBuf,
    /// Measure the barrier and the signal ping-pong alone, on any number of ranks, with
    /// this many round trips per repetition.
    #[arg(long)]
    scaling_pingpong_iters: Option<u64>,
    /// Measure the allreduce alone, on any number of ranks.
    #[arg(long)]
    allreduce: bool,
}

/// (metric, size) -> nanoseconds per operation.
type Figures = BTreeMap<(String, u64), f64>;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn time_loop(reps: u32, iters: u64, mut body: impl FnMut()) -> f64 {
    median((0..reps).map(|_| time_once(iters, &mut body)).collect())
}

/// Nanoseconds per call of `body` over `iters` calls. Inlined, so that `body` inlines
/// into the loop as it would in a program's own loop (a call through `&mut F` here was
/// not inlined and charged gaspar's side alone with an extra call per operation).
#[inline(always)]
fn time_once(iters: u64, body: &mut impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..iters {
        body();
    }
    start.elapsed().as_nanos() as f64 / iters as f64
}

/// Two loops timed in alternation, repetition by repetition: (median of `a`, of `b`), so
/// that a slow spell of this noisy machine hits both.
fn time_pair(reps: u32, iters: u64, mut a: impl FnMut(), mut b: impl FnMut()) -> (f64, f64) {
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        ta.push(time_once(iters, &mut a));
        tb.push(time_once(iters, &mut b));
    }
    (median(ta), median(tb))
}

/// On the mpi transport: gaspar's latency operations and the raw MPI peer's, alternating
/// in this job (figures `alt_NAME` and `raw_NAME`). Collective; nothing on shm.
#[cfg(feature = "mpi")]
fn in_job_peer(
    rt: &gaspar::strided::Strided,
    target: gaspar::GlobalAddr,
    word: GlobalPtr<u64>,
    typed: &gaspar::SymmetricArray<'_, u64>,
    (reps, iters): (u32, u64),
    figures: &mut Figures,
) -> gaspar::Result<()> {
    use crate::bench_raw::{RawWindow, RAW_WINDOW_BYTES};
    let Some(peer) = RawWindow::new() else {
        return Ok(());
    };
    if rt.rank() == 0 {
        let (eight, mut small, mut scratch) = ([1u8; 8], [0u8; 8], [0u8; 8]);
        let mut record = |name: &str, size: usize, (ours, raw): (f64, f64)| {
            figures.insert((format!("alt_{name}"), size as u64), ours);
            figures.insert((format!("raw_{name}"), size as u64), raw);
        };
        record(
            "put_lat",
            8,
            time_pair(
                reps,
                iters,
                || rt.put_blocking(target, &eight).expect("put"),
                || peer.put(&eight),
            ),
        );
        record(
            "get_lat",
            8,
            time_pair(
                reps,
                iters,
                || rt.get_blocking(&mut small, target).expect("get"),
                || peer.get(&mut scratch),
            ),
        );
        let big = RAW_WINDOW_BYTES;
        let (src, mut dst, mut raw_dst) = (vec![1u8; big], vec![0u8; big], vec![0u8; big]);
        record(
            "put_lat",
            big,
            time_pair(
                reps,
                4 * bw_iters(big as u64),
                || rt.put_blocking(target, &src).expect("put"),
                || peer.put(&src),
            ),
        );
        record(
            "get_lat",
            big,
            time_pair(
                reps,
                4 * bw_iters(big as u64),
                || rt.get_blocking(&mut dst, target).expect("get"),
                || peer.get(&mut raw_dst),
            ),
        );
        record(
            "fadd_lat",
            8,
            time_pair(
                reps,
                iters,
                || {
                    std::hint::black_box(word.fetch_add(rt, 1).expect("fetch_add"));
                },
                || {
                    std::hint::black_box(peer.fetch_add());
                },
            ),
        );
        record(
            "cas_lat",
            8,
            time_pair(
                reps,
                iters,
                || {
                    std::hint::black_box(word.compare_swap(rt, 0, 0).expect("compare_swap"));
                },
                || {
                    std::hint::black_box(peer.compare_swap());
                },
            ),
        );
        // The same through the typed API (element 0 of rank 1's array): what a Rust
        // program calls, which checks its index and rank instead of decoding an address.
        let value = 7u64;
        record(
            "typed_put_lat",
            8,
            time_pair(
                reps,
                iters,
                || typed.put(1, 0, &value).expect("put"),
                || peer.put(&eight),
            ),
        );
        record(
            "typed_get_lat",
            8,
            time_pair(
                reps,
                iters,
                || {
                    std::hint::black_box(typed.get(1, 0).expect("get"));
                },
                || peer.get(&mut scratch),
            ),
        );
        record(
            "typed_fadd_lat",
            8,
            time_pair(
                reps,
                iters,
                || {
                    std::hint::black_box(typed.fetch_add(1, 0, 1).expect("fetch_add"));
                },
                || {
                    std::hint::black_box(peer.fetch_add());
                },
            ),
        );
        record(
            "typed_cas_lat",
            8,
            time_pair(
                reps,
                iters,
                || {
                    std::hint::black_box(typed.compare_swap(1, 0, 0, 0).expect("compare_swap"));
                },
                || {
                    std::hint::black_box(peer.compare_swap());
                },
            ),
        );
    }
    rt.barrier()?;
    peer.free();
    Ok(())
}

fn bw_iters(size: u64) -> u64 {
    ((16u64 << 20) / size).clamp(4, 10_000)
}

fn sizes() -> impl Iterator<Item = u64> {
    std::iter::successors(Some(8u64), |s| (s * 2 <= MAX_SIZE).then_some(s * 2))
}

/// One rank of the gaspar measurement; rank 0 times, rank 1 is the passive target.
pub(crate) fn rank(args: RankArgs) -> ExitCode {
    match measure_rank(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gaspar bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Rank 0 writes its figures as `metric size ns` lines.
fn write_figures(out: &Path, figures: &Figures) -> gaspar::Result<()> {
    let text: String = figures
        .iter()
        .map(|((name, size), ns)| format!("{name} {size} {ns:.3}\n"))
        .collect();
    std::fs::write(out, text).map_err(|e| gaspar::Error::Os {
        call: "write benchmark figures",
        source: e,
    })
}

/// Every rank times `iters` barriers per repetition, then ranks 0 and 1 play
/// `pingpong_iters` round trips of the signal ping-pong per repetition while the others
/// wait in a barrier; rank 0 reports the medians as `barrier_ranks PROCS` and
/// `pingpong_ranks PROCS` (one round trip).
fn measure_scaling(
    rt: gaspar::strided::Strided,
    args: &RankArgs,
    pingpong_iters: u64,
) -> gaspar::Result<()> {
    rt.barrier()?;
    let barrier = time_loop(args.reps, args.iters, || rt.barrier().expect("barrier"));
    let pingpong = signal_pingpong(&rt, args.reps, pingpong_iters)?;
    if let Some(pingpong) = pingpong {
        let procs = u64::from(rt.procs());
        let figures = Figures::from([
            (("barrier_ranks".to_string(), procs), barrier),
            (("pingpong_ranks".to_string(), procs), pingpong),
        ]);
        write_figures(&args.out, &figures)?;
    }
    rt.finalize()
}

/// Half a round of the ping-pong: 8 bytes of data into `data`, then `round` into the
/// peer's signal word, ordered after the data (OpenSHMEM's `put_signal`).
fn put_signal(
    rt: &gaspar::strided::Strided,
    data: GlobalPtr<u64>,
    signal: GlobalPtr<u64>,
    round: u64,
) -> gaspar::Result<()> {
    rt.put_signal(
        data.ga(),
        &round.to_ne_bytes(),
        signal.ga(),
        gaspar::SignalOp::Set(round),
    )
}

/// Collective: ranks 0 and 1 send each other the data and a signal in turn (rank 0
/// first, each waiting on its own signal word with `wait_until`) while the other ranks
/// wait in a barrier. Rank 0 gets the median time of one round trip.
fn signal_pingpong(
    rt: &gaspar::strided::Strided,
    reps: u32,
    iters: u64,
) -> gaspar::Result<Option<f64>> {
    let block = rt.alloc(16)?;
    let me = rt.rank();
    let mut round_trip = None;
    if me < 2 {
        let peer = 1 - me;
        let data = GlobalPtr::<u64>::new(block.ga(peer)?);
        let signal = data.add(1)?;
        let mine = GlobalPtr::<u64>::new(block.ga(me)?).add(1)?;
        let mut round = 0u64;
        let mut times = Vec::with_capacity(reps as usize);
        for _ in 0..reps {
            let start = Instant::now();
            for _ in 0..iters {
                round += 1;
                if me == 0 {
                    put_signal(rt, data, signal, round)?;
                    mine.wait_until(rt, Compare::Ge, round)?;
                } else {
                    mine.wait_until(rt, Compare::Ge, round)?;
                    put_signal(rt, data, signal, round)?;
                }
            }
            times.push(start.elapsed().as_nanos() as f64 / iters as f64);
        }
        round_trip = (me == 0).then(|| median(times));
    }
    rt.barrier()?;
    rt.free(block)?;
    Ok(round_trip)
}

fn measure_rank(args: &RankArgs) -> gaspar::Result<()> {
    let runtime = gaspar::init()?;
    if let Some(pingpong_iters) = args.scaling_pingpong_iters {
        return measure_scaling(runtime.into_acp(), args, pingpong_iters);
    }
    if args.allreduce {
        return allreduce::measure(runtime.into_acp(), args);
    }
    let rt = runtime.acp();
    if rt.procs() != 2 {
        rt.abort("the benchmark needs exactly 2 ranks");
    }
    let (reps, iters) = (args.reps, args.iters);
    let block_len = MAX_SIZE + 2 * placements::SLACK;
    let block = rt.alloc(block_len)?;
    let target = block.ga(1)?;
    let word = GlobalPtr::<u64>::new(target.offset(block_len - 64).expect("inside the block"));
    let mut storage = vec![1u8; (MAX_SIZE + 2 * placements::SLACK) as usize];
    let local = placements::page_aligned(&mut storage);
    let mut figures = Figures::new();
    let me = rt.rank();
    let mut measure = |name: &str, size: u64, f: &mut dyn FnMut() -> f64| -> gaspar::Result<()> {
        rt.barrier()?;
        if me == 0 {
            figures.insert((name.to_string(), size), f());
        }
        rt.barrier()
    };
    measure("put_lat", 8, &mut || {
        time_loop(reps, iters, || {
            rt.put_blocking(target, &local[..8]).expect("put");
        })
    })?;
    let mut small = [0u8; 8];
    measure("get_lat", 8, &mut || {
        time_loop(reps, iters, || {
            rt.get_blocking(&mut small, target).expect("get");
        })
    })?;
    measure("fadd_lat", 8, &mut || {
        time_loop(reps, iters, || {
            word.fetch_add(rt, 1).expect("fetch_add");
        })
    })?;
    measure("cas_lat", 8, &mut || {
        time_loop(reps, iters, || {
            word.compare_swap(rt, 0, 0).expect("compare_swap");
        })
    })?;
    rt.barrier()?;
    if me == 0 {
        // Rank 1's block from its first page boundary on (the heap's alignment here).
        let mapped = rt.mapped_address(target, block_len)?;
        let skip = mapped.map_or(0, |address| (4096 - address % 4096) % 4096);
        let remote = target.offset(skip as u64).expect("inside the block");
        let buffers = placements::Buffers {
            local,
            remote,
            mapped: mapped.map(|address| address + skip),
        };
        placements::measure(rt, buffers, reps, &mut figures)?;
        strided::measure(rt, target, reps, &mut figures)?;
    }
    rt.barrier()?;
    #[cfg(feature = "mpi")]
    {
        // The typed API's element (a symmetric array of the runtime) beside the address.
        let typed = runtime.alloc::<u64>(1)?;
        in_job_peer(rt, target, word, &typed, (reps, iters), &mut figures)?;
        typed.free()?;
    }
    // Barrier: both ranks loop; rank 0 reports.
    let t = time_loop(reps, iters, || rt.barrier().expect("barrier"));
    if me == 0 {
        figures.insert(("barrier".into(), 0), t);
        write_figures(&args.out, &figures)?;
    }
    rt.free(block)?;
    runtime.finalize()
}

fn parse_figures(text: &str) -> Figures {
    text.lines()
        .filter_map(|line| {
            let mut w = line.split_whitespace();
            let name = w.next()?.to_string();
            let size = w.next()?.parse().ok()?;
            let ns = w.next()?.parse().ok()?;
            Some(((name, size), ns))
        })
        .collect()
}

fn memcpy_figures(reps: u32, iters: u64) -> Figures {
    let src = vec![1u8; MAX_SIZE as usize];
    let mut dst = vec![0u8; MAX_SIZE as usize];
    let mut figures = Figures::new();
    let lat = time_loop(reps, iters, || {
        dst[..8].copy_from_slice(std::hint::black_box(&src[..8]));
        std::hint::black_box(&mut dst);
    });
    figures.insert(("put_lat".into(), 8), lat);
    figures.insert(("get_lat".into(), 8), lat);
    for size in sizes() {
        let n = size as usize;
        let t = time_loop(reps, bw_iters(size), || {
            dst[..n].copy_from_slice(std::hint::black_box(&src[..n]));
            std::hint::black_box(&mut dst);
        });
        figures.insert(("put_bw".into(), size), t);
        figures.insert(("get_bw".into(), size), t);
    }
    figures
}

/// Builds the OpenMPI peer; `Err` says why it could not.
fn build_peer(dir: &Path) -> Result<PathBuf, String> {
    let source = dir.join("bench_peer.c");
    let binary = dir.join("bench_peer");
    std::fs::write(&source, PEER_SOURCE).map_err(|e| e.to_string())?;
    let built = Command::new("mpicc")
        .args(["-O2", "-o"])
        .arg(&binary)
        .arg(&source)
        .status()
        .map_err(|e| format!("mpicc not found ({e}); install libopenmpi-dev openmpi-bin"))?;
    if !built.success() {
        return Err("mpicc failed to build the peer".into());
    }
    Ok(binary)
}

/// What one job measures: everything on 2 ranks, or the barrier and the signal
/// ping-pong alone on `procs` (with `pingpong_iters` round trips per repetition).
#[derive(Clone, Copy)]
enum Job {
    Everything,
    Scaling { procs: u32, pingpong_iters: u64 },
    Allreduce { procs: u32 },
}

impl Job {
    fn procs(self) -> u32 {
        match self {
            Job::Everything => 2,
            Job::Scaling { procs, .. } | Job::Allreduce { procs } => procs,
        }
    }
}

/// Runs the OpenMPI peer once.
fn openmpi_figures(binary: &Path, reps: u32, iters: u64, job: Job) -> Result<Figures, String> {
    let mut args = vec![reps.to_string(), iters.to_string()];
    match job {
        Job::Scaling { pingpong_iters, .. } => {
            args.extend(["scaling".into(), pingpong_iters.to_string()]);
        }
        Job::Allreduce { .. } => args.push("allreduce".into()),
        Job::Everything => {}
    }
    let out = crate::mpi_launch::Library::OpenMpi
        .command(job.procs(), false)
        .arg(binary)
        .args(args)
        .output()
        .map_err(|e| format!("mpirun: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "mpirun failed: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .next()
                .unwrap_or("")
        ));
    }
    Ok(parse_figures(&String::from_utf8_lossy(&out.stdout)))
}

fn gaspar_figures(
    reps: u32,
    iters: u64,
    dir: &Path,
    transport: &str,
    job: Job,
) -> Result<Figures, String> {
    let out = dir.join("gaspar.txt");
    let program: OsString = crate::this_program()?;
    let mut args: Vec<OsString> = vec![
        "bench-rank".into(),
        "--reps".into(),
        reps.to_string().into(),
        "--iters".into(),
        iters.to_string().into(),
        "--out".into(),
        out.clone().into(),
    ];
    match job {
        Job::Scaling { pingpong_iters, .. } => args.extend([
            "--scaling-pingpong-iters".into(),
            pingpong_iters.to_string().into(),
        ]),
        Job::Allreduce { .. } => args.push("--allreduce".into()),
        Job::Everything => {}
    }
    if transport == "mpi" {
        // The same launcher settings as the peer's under Open MPI, so that the two differ
        // only by gaspar (a gaspar built against MPICH runs under MPICH's launcher, its
        // in-job raw MPI figures MPICH's).
        let status = crate::mpi_launch::Library::linked()
            .command(job.procs(), false)
            .arg(&program)
            .args(&args)
            .status()
            .map_err(|e| format!("the MPI launcher: {e}"))?;
        if !status.success() {
            return Err(format!(
                "benchmark job under the MPI launcher failed: {status}"
            ));
        }
    } else {
        let spec = LaunchSpec {
            procs: job.procs(),
            label: false,
            program,
            args,
        };
        match gaspar::launcher::run(&spec) {
            Ok(None) => {}
            Ok(Some(failure)) => return Err(format!("benchmark job failed: {failure}")),
            Err(e) => return Err(e.to_string()),
        }
    }
    let text = std::fs::read_to_string(&out).map_err(|e| e.to_string())?;
    Ok(parse_figures(&text))
}

fn human_size(size: u64) -> String {
    match size {
        0 => "-".into(),
        s if s >= 1 << 20 => format!("{} MiB", s >> 20),
        s if s >= 1 << 10 => format!("{} KiB", s >> 10),
        s => format!("{s} B"),
    }
}

/// Whether figure `name` is a bandwidth (`put_bw`, `get_bw_ahead`, ...).
fn is_bandwidth(name: &str) -> bool {
    name.ends_with("_bw") || name.contains("_bw_")
}

/// A figure as printed: latency in ns, bandwidth in GB/s.
fn shown(name: &str, size: u64, ns: Option<f64>) -> String {
    match ns {
        None => "n/a".into(),
        Some(ns) if is_bandwidth(name) => format!("{:.2} GB/s", size as f64 / ns),
        Some(ns) => format!("{ns:.1} ns"),
    }
}

/// The ratio the targets are stated in: time ratio for latency (lower is
/// better), bandwidth ratio for bandwidth (higher is better).
fn ratio(name: &str, ours: f64, peer: Option<f64>) -> Option<f64> {
    let peer = peer?;
    Some(if is_bandwidth(name) {
        peer / ours
    } else {
        ours / peer
    })
}

pub(crate) fn run(args: BenchArgs) -> ExitCode {
    if let Some(dir) = &args.report.dir {
        return crate::report::run(&args.report, dir);
    }
    // The JSON file is made now, so that a path that cannot be written is said before the
    // benchmark runs, not after.
    if let Some(path) = &args.json {
        if let Err(e) = std::fs::File::create(path) {
            eprintln!("gaspar bench: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    let dir = std::env::temp_dir().join(format!("gaspar-bench-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("gaspar bench: cannot make {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    let result = report(&args, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gaspar bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Per figure, the median over several runs.
fn median_of(runs: &[Figures]) -> Figures {
    let mut out = Figures::new();
    if let Some(first) = runs.first() {
        for key in first.keys() {
            let values: Vec<f64> = runs.iter().filter_map(|r| r.get(key).copied()).collect();
            out.insert(key.clone(), median(values));
        }
    }
    out
}

fn report(args: &BenchArgs, dir: &Path) -> Result<(), String> {
    let peer = if args.no_mpi {
        Err("skipped (--no-mpi)".to_string())
    } else {
        build_peer(dir).map_err(|e| format!("unavailable: {e}"))
    };
    let mut stdout = std::io::stdout().lock();
    let mut json_rows = Vec::new();
    let mpi_note = if args.scaling_only {
        peer.as_ref()
            .map_or_else(|e| e.clone(), |_| "OpenMPI osc/sm".to_string())
    } else {
        two_rank_tables(args, dir, &peer, &mut stdout, &mut json_rows)?
    };
    scaling_table(args, dir, &peer, &mut stdout, &mut json_rows)?;
    allreduce::table(args, dir, &peer, &mut stdout, &mut json_rows)?;
    let json = serde_json::json!({
        "ranks": 2,
        "transport": args.transport,
        "repetitions": args.reps,
        "rounds": args.rounds.max(1),
        "latency_iterations": args.iters,
        "peer": mpi_note,
        "results": json_rows,
    });
    let text = serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?;
    match &args.json {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?,
        None => {
            let _ = writeln!(stdout, "{text}");
        }
    }
    Ok(())
}

/// Everything on 2 ranks beside memcpy and OpenMPI: the main table and, on the mpi
/// transport, the in-job comparison with raw MPI. Returns what the peer was.
fn two_rank_tables(
    args: &BenchArgs,
    dir: &Path,
    peer: &Result<PathBuf, String>,
    stdout: &mut impl Write,
    json_rows: &mut Vec<serde_json::Value>,
) -> Result<String, String> {
    // Ours and the peer in alternating rounds, so that a slow spell of this noisy machine
    // hits both; each figure is then the median over the rounds.
    let (mut our_runs, mut peer_runs, mut copy_runs) = (Vec::new(), Vec::new(), Vec::new());
    let mut mpi_note = match &peer {
        Ok(_) => "OpenMPI osc/sm, MPI_Win_allocate + lock_all, flush per op".to_string(),
        Err(e) => e.clone(),
    };
    for _ in 0..args.rounds.max(1) {
        our_runs.push(gaspar_figures(
            args.reps,
            args.iters,
            dir,
            &args.transport,
            Job::Everything,
        )?);
        copy_runs.push(memcpy_figures(args.reps, args.iters));
        if let Ok(binary) = peer {
            match openmpi_figures(binary, args.reps, args.iters, Job::Everything) {
                Ok(f) => peer_runs.push(f),
                Err(e) => mpi_note = format!("unavailable: {e}"),
            }
        }
    }
    let (ours, copy, mpi) = (
        median_of(&our_runs),
        median_of(&copy_runs),
        median_of(&peer_runs),
    );
    let _ = writeln!(
        stdout,
        "gaspar bench: 2 ranks on {}, median of {} repetitions, median of {} alternating rounds; peer: {mpi_note}; \
         memcpy: between the same buffers (bandwidth: _ahead/_behind = destination 256 B ahead of/behind the source in its page, _odd = 1 B ahead)",
        args.transport, args.reps, args.rounds.max(1)
    );
    let _ = writeln!(
        stdout,
        "{:<10} {:>8} {:>13} {:>13} {:>13} {:>12} {:>12}",
        "operation", "size", "gaspar", "memcpy", "OpenMPI", "vs OpenMPI", "vs memcpy"
    );
    let in_job = |name: &str| name.starts_with("alt_") || name.starts_with("raw_");
    let same_buffers = |name: &str| name.starts_with("memcpy_");
    for ((name, size), &ns) in ours
        .iter()
        .filter(|((n, _), _)| !in_job(n) && !same_buffers(n))
    {
        // memcpy between the same buffers where rank 0 measured it, else between two
        // buffers of this process.
        let m = ours
            .get(&(format!("memcpy_{name}"), *size))
            .or_else(|| copy.get(&(name.clone(), *size)))
            .copied();
        let p = mpi.get(&(name.clone(), *size)).copied();
        let fmt_ratio =
            |r: Option<f64>| r.map(|r| format!("{r:.2}x")).unwrap_or_else(|| "-".into());
        let _ = writeln!(
            stdout,
            "{:<10} {:>8} {:>13} {:>13} {:>13} {:>12} {:>12}",
            name,
            human_size(*size),
            shown(name, *size, Some(ns)),
            shown(name, *size, m),
            shown(name, *size, p),
            fmt_ratio(ratio(name, ns, p)),
            fmt_ratio(ratio(name, ns, m)),
        );
        json_rows.push(serde_json::json!({
            "operation": name,
            "size": size,
            "gaspar_ns": ns,
            "memcpy_ns": m,
            "openmpi_ns": p,
            "ratio_vs_openmpi": ratio(name, ns, p),
            "ratio_vs_memcpy": ratio(name, ns, m),
        }));
    }
    let _ = writeln!(
        stdout,
        "ratios: latency = gaspar time / peer time (lower is better); bandwidth = gaspar GB/s / peer GB/s (higher is better)"
    );
    // The raw MPI peer inside gaspar's own job (mpi transport), in alternation.
    let pairs: Vec<(&str, u64, f64, f64)> = ours
        .iter()
        .filter_map(|((name, size), &g)| {
            let name = name.strip_prefix("alt_")?;
            let raw = ours.get(&(format!("raw_{name}"), *size))?;
            Some((name, *size, g, *raw))
        })
        .collect();
    if !pairs.is_empty() {
        let _ = writeln!(
            stdout,
            "in the same job, alternating repetitions (the C peer's MPI calls on a window set up as it does):"
        );
        let _ = writeln!(
            stdout,
            "{:<10} {:>8} {:>13} {:>13} {:>12}",
            "operation", "size", "gaspar", "raw MPI", "gaspar/MPI"
        );
        for (name, size, g, r) in &pairs {
            let _ = writeln!(
                stdout,
                "{:<10} {:>8} {:>13} {:>13} {:>11.3}x",
                name,
                human_size(*size),
                format!("{g:.1} ns"),
                format!("{r:.1} ns"),
                g / r
            );
            json_rows.push(serde_json::json!({
                "operation": format!("{name}_in_job"),
                "size": size,
                "gaspar_ns": g,
                "raw_mpi_ns": r,
                "ratio_vs_raw_mpi": g / r,
            }));
        }
    }
    Ok(mpi_note)
}

/// The barrier and the signal ping-pong alone at each of `--scaling-ranks`, gaspar's and
/// OpenMPI's jobs in alternating rounds (median over the rounds). The ping-pong's ratio
/// is to the faster of OpenMPI's two ways of waiting for the signal.
fn scaling_table(
    args: &BenchArgs,
    dir: &Path,
    peer: &Result<PathBuf, String>,
    stdout: &mut impl Write,
    json_rows: &mut Vec<serde_json::Value>,
) -> Result<(), String> {
    if args.scaling_ranks.is_empty() {
        return Ok(());
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let _ = writeln!(
        stdout,
        "alone, {cores} cores: barrier ({} per repetition); signal ping-pong round trip \
         between ranks 0 and 1 ({} per repetition) while the others wait in a barrier \
         (OpenMPI: MPI_Barrier; ping-pong waiting with MPI_Win_sync + load, or with \
         MPI_Fetch_and_op: the \"fop\" column):",
        args.barrier_iters, args.pingpong_iters
    );
    let _ = writeln!(
        stdout,
        "{:<10} {:>6} {:>13} {:>13} {:>13} {:>12}",
        "operation", "ranks", "gaspar", "OpenMPI", "OpenMPI fop", "vs OpenMPI"
    );
    for &procs in &args.scaling_ranks {
        let job = Job::Scaling {
            procs,
            pingpong_iters: args.pingpong_iters,
        };
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
        let (ours, theirs) = (median_of(&ours), median_of(&theirs));
        let size = u64::from(procs);
        let figure = |f: &Figures, name: &str| f.get(&(name.to_string(), size)).copied();
        let rows = [
            ("barrier", "barrier_ranks", "barrier_ranks", None),
            (
                "pingpong",
                "pingpong_ranks",
                "pingpong_sync_ranks",
                Some("pingpong_fop_ranks"),
            ),
        ];
        for (operation, ours_name, peer_name, second_peer_name) in rows {
            let g = figure(&ours, ours_name);
            let p = figure(&theirs, peer_name);
            let p2 = second_peer_name.and_then(|name| figure(&theirs, name));
            let best_peer = match (p, p2) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let r = g.and_then(|g| ratio(operation, g, best_peer));
            let _ = writeln!(
                stdout,
                "{:<10} {:>6} {:>13} {:>13} {:>13} {:>12}",
                operation,
                procs,
                shown(operation, 0, g),
                shown(operation, 0, p),
                p2.map_or_else(|| "-".into(), |p2| shown(operation, 0, Some(p2))),
                r.map(|r| format!("{r:.2}x")).unwrap_or_else(|| "-".into()),
            );
            json_rows.push(serde_json::json!({
                "operation": operation,
                "ranks": procs,
                "gaspar_ns": g,
                "openmpi_ns": p,
                "openmpi_fop_ns": p2,
                "ratio_vs_openmpi": r,
            }));
        }
    }
    Ok(())
}
