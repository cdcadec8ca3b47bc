//! Every command README.md gives a user, run exactly as written: through `sh -c` from the
//! repository root, with the paths the README names (`target/release/...`). The builds the
//! README asks for come first, without a time limit; the jobs after them have one.
//!
//! The README's release builds share `target/release`, and two of them build the examples
//! with different features: each test using it holds [`ReleaseTree`] (a lock on a file in
//! `target/`, taken by the ARMCI crate's README test too) from its build to the end of its
//! job.

mod common;

use std::fs::File;
use std::path::PathBuf;
use std::process::Command;

use common::*;
use nix::fcntl::{Flock, FlockArg};

/// The repository root, where the README's commands are typed.
fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

/// Exclusive use of the README's build trees, held until dropped.
struct ReleaseTree {
    _held: Flock<File>,
}

impl ReleaseTree {
    fn lock() -> ReleaseTree {
        let dir = repo_root().join("target");
        std::fs::create_dir_all(&dir).expect("create target/");
        let file = File::create(dir.join("readme-commands.lock")).expect("the lock file");
        ReleaseTree {
            _held: Flock::lock(file, FlockArg::LockExclusive).expect("lock target/"),
        }
    }
}

/// `sh -c SCRIPT` in the repository root, with a user's environment: none of cargo's
/// settings for this test (its library path would take another build's libraries), no
/// `OMPI_MCA_osc`, and OpenMPI's permission to run as root (only root needs it).
fn shell(script: &str) -> Command {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(script)
        .current_dir(repo_root())
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("OMPI_MCA_osc")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    cmd
}

/// Runs a build command of the README to its end (no time limit: a release build from
/// scratch takes minutes here); it must succeed.
fn build(script: &str) {
    let out = shell(script).output().expect("start sh");
    assert!(
        out.status.success(),
        "`{script}` failed: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs a job command of the README, with the jobs' time limit.
fn job(script: &str) -> Outcome {
    run_command(shell(script))
}

/// The `gaspar` the README's `gaspar ...` commands mean: this build's, first on PATH.
fn with_gaspar_on_path(mut cmd: Command) -> Command {
    let dir = gaspar().parent().unwrap().to_path_buf();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![dir];
    dirs.extend(std::env::split_paths(&path));
    cmd.env("PATH", std::env::join_paths(dirs).unwrap());
    cmd
}

fn sorted_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

fn this_hostname() -> String {
    let out = Command::new("hostname").output().expect("hostname");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Quick start: `cargo run --release -- demo -n 4`.
#[test]
fn quick_start_demo() {
    let _tree = ReleaseTree::lock();
    build("cargo build --release");
    let out = job("cargo run --release -- demo -n 4");
    out.assert_success();
    assert!(
        out.stdout.contains("[0] counter: 4000 (expected 4000)"),
        "{}",
        out.stdout
    );
    for r in 0..4 {
        let left = (r + 3) % 4;
        for line in [
            format!("[{r}] rank {r} of 4 on pid "),
            format!("[{r}] ring: received {left} from my left neighbour"),
            format!("[{r}] allgather: [100, 101, 102, 103]"),
        ] {
            assert!(out.stdout.contains(&line), "{line:?}: {}", out.stdout);
        }
    }
}

/// The examples: `cargo build --release --bins --examples`, then
/// `target/release/gaspar run -n 4 target/release/examples/counter`, (the coarray
/// section) `target/release/gaspar run -n 4 target/release/examples/coarray_heat` and (the
/// darray section) `target/release/gaspar run -n 2 target/release/examples/darray_access`.
#[test]
fn release_examples_run_under_the_release_launcher() {
    let _tree = ReleaseTree::lock();
    build("cargo build --release --bins --examples");
    let out = job("target/release/gaspar run -n 4 target/release/examples/counter");
    out.assert_success();
    assert_eq!(
        sorted_lines(&out.stdout),
        (0..4)
            .map(|r| format!("rank {r}: counter = 400000 (expected 400000)"))
            .collect::<Vec<_>>(),
        "{}",
        out.stderr
    );
    let out = job("target/release/gaspar run -n 4 target/release/examples/coarray_heat");
    out.assert_success();
    for image in 1..=4 {
        let line = format!("image {image}: coarray_heat ok: 200 steps on 32x48");
        assert!(out.stdout.contains(&line), "{line:?}: {}", out.stdout);
    }
    let out = job("target/release/gaspar run -n 2 target/release/examples/darray_access");
    out.assert_success();
    // One line of four timings, each a positive number of nanoseconds.
    let line = out.stdout.lines().next().unwrap_or("");
    let timings: Vec<f64> = line
        .split(',')
        .filter_map(|part| part.split_whitespace().last()?.parse().ok())
        .collect();
    assert!(
        line.starts_with("ns per read: local ")
            && timings.len() == 4
            && timings.iter().all(|&ns| ns > 0.0),
        "{}",
        out.stdout
    );
}

/// `target/release/gaspar run -n 2 valgrind -q --error-exitcode=1
/// target/release/examples/ring`: a tool between the launcher and the program sees a
/// whole job (memcheck finds no error in either rank, and the ring completes).
#[test]
fn ranks_run_under_valgrind() {
    let installed = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        return skip("valgrind is not installed (scripts/setup installs it)");
    }
    let _tree = ReleaseTree::lock();
    build("cargo build --release --bins --examples");
    let out = job(
        "target/release/gaspar run -n 2 valgrind -q --error-exitcode=1 target/release/examples/ring",
    );
    out.assert_success();
    assert_eq!(
        sorted_lines(&out.stdout),
        [
            "rank 0: ring of 2 ok, last value from rank 1",
            "rank 1: ring of 2 ok, last value from rank 0"
        ],
        "{}",
        out.stderr
    );
}

/// `gaspar run -n 2 hostname`: PROG may be any program.
#[test]
fn gaspar_run_n_2_hostname() {
    let out = run_command(with_gaspar_on_path(shell("gaspar run -n 2 hostname")));
    out.assert_success();
    let host = this_hostname();
    assert_eq!(out.stdout.lines().collect::<Vec<_>>(), [&host, &host]);
}

/// `gaspar run -n N [--label] PROG`: every line prefixed with `[rank] `.
#[test]
fn gaspar_run_with_label() {
    let out = run_command(with_gaspar_on_path(shell(
        "gaspar run -n 2 --label hostname",
    )));
    out.assert_success();
    let host = this_hostname();
    assert_eq!(
        sorted_lines(&out.stdout),
        [format!("[0] {host}"), format!("[1] {host}")]
    );
}

/// The copy-engine paragraph's benchmark: `target/release/gaspar bench --rounds 3
/// --scaling-ranks --allreduce-ranks --no-mpi` prints a put and a get bandwidth beside
/// memcpy's for every size from 8 B to 4 MiB.
#[test]
fn shm_bandwidth_benchmark_prints_every_size_beside_memcpy() {
    let _tree = ReleaseTree::lock();
    build("cargo build --release");
    let out =
        job("target/release/gaspar bench --rounds 3 --scaling-ranks --allreduce-ranks --no-mpi");
    out.assert_success();
    for op in ["put_bw", "get_bw"] {
        let rows: Vec<&str> = out
            .stdout
            .lines()
            .filter(|line| line.split_whitespace().next() == Some(op))
            .collect();
        // 8 B to 4 MiB: 20 sizes, each with gaspar's and memcpy's bandwidth in GB/s.
        assert_eq!(rows.len(), 20, "{op}: {}", out.stdout);
        for row in rows {
            let rates: Vec<f64> = row
                .split_whitespace()
                .collect::<Vec<_>>()
                .windows(2)
                .filter(|w| w[1] == "GB/s")
                .map(|w| w[0].parse().expect("a bandwidth"))
                .collect();
            assert_eq!(rates.len(), 2, "gaspar and memcpy: {row}");
            assert!(rates.iter().all(|&r| r > 0.0), "{row}");
        }
    }
}

/// `gaspar info`: the version and every setting of the configuration table.
#[test]
fn gaspar_info() {
    let out = run_command(with_gaspar_on_path(shell("gaspar info")));
    out.assert_success();
    assert_eq!(
        out.stdout.lines().next(),
        Some(format!("gaspar {}", env!("CARGO_PKG_VERSION")).as_str())
    );
    let transports = if cfg!(feature = "mpi") {
        "shm mpi"
    } else {
        "shm"
    };
    assert!(
        out.stdout.contains(&format!("transports: {transports}\n")),
        "{}",
        out.stdout
    );
    for setting in gaspar::config::SETTINGS {
        assert!(out.stdout.contains(setting.name), "{}", out.stdout);
    }
}

/// A plain mpirun: `cargo build --release --features mpi --examples`, then
/// `mpirun -n 2 target/release/examples/counter`.
#[test]
fn release_examples_run_under_plain_mpirun() {
    if !mpirun_installed() {
        return;
    }
    let _tree = ReleaseTree::lock();
    build("cargo build --release --features mpi --examples");
    let out = job("mpirun -n 2 target/release/examples/counter");
    out.assert_success();
    assert_eq!(
        sorted_lines(&out.stdout),
        (0..2)
            .map(|r| format!("rank {r}: counter = 200000 (expected 200000)"))
            .collect::<Vec<_>>(),
        "{}",
        out.stderr
    );
}

/// MPICH: `MPICC=mpicc.mpich cargo build --features mpi --examples --target-dir target/mpich`,
/// then `mpiexec.mpich -n 2 target/mpich/debug/examples/hello` (scripts/test builds the
/// same tree for its MPICH tests, so this costs it nothing more).
#[test]
fn examples_built_against_mpich_run_under_mpiexec_mpich() {
    if Command::new("mpiexec.mpich")
        .arg("--version")
        .output()
        .is_err()
    {
        return skip("MPICH is not installed (apt-get install mpich libmpich-dev)");
    }
    build("MPICC=mpicc.mpich cargo build --features mpi --examples --target-dir target/mpich");
    let out = job("mpiexec.mpich -n 2 target/mpich/debug/examples/hello");
    out.assert_success();
    assert_eq!(
        sorted_lines(&out.stdout),
        ["hello from rank 0 of 2", "hello from rank 1 of 2"]
    );
}

/// `scripts/setup` (which `scripts/test` runs first): where everything the tests need is
/// installed, it says nothing and succeeds; elsewhere (not root) it names what is missing.
#[test]
fn setup_finds_everything_installed() {
    let out = job("scripts/setup");
    if !out.status.success() && out.stderr.starts_with("scripts/setup: the tests need ") {
        return skip(out.stderr.trim());
    }
    out.assert_success();
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("", ""));
}
