//! Helpers for launching real jobs the way a user does: `gaspar run -n N PROG`.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::Once;
use std::time::{Duration, Instant};

/// No test job may run longer than this; a hang fails the test instead of the suite.
pub const JOB_TIMEOUT: Duration = Duration::from_secs(120);

pub fn gaspar() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_gaspar"))
}

/// The path of an example binary, building the examples when they are missing or were
/// built with other features than this test (the mpi transport's runs build them with
/// `--features mpi`; a marker file says which build is there).
pub fn example(name: &str) -> PathBuf {
    let dir = gaspar().parent().unwrap().join("examples");
    let path = dir.join(name);
    let features = if cfg!(feature = "mpi") {
        "mpi"
    } else {
        "default"
    };
    let marker = dir.join(".gaspar-example-features");
    static BUILD: Once = Once::new();
    let current = || std::fs::read_to_string(&marker).ok();
    // Stale when the last build of the examples (the marker's time) is older than this
    // test run's `gaspar` (rebuilt by cargo whenever the library changed) or than the
    // example's source: a test must never run an old build of an example.
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("examples/{name}.rs"));
    let stale = !path.exists()
        || match modified(&marker) {
            None => true,
            Some(built) => [modified(&gaspar()), modified(&source)]
                .into_iter()
                .any(|newer| newer.is_some_and(|t| t > built)),
        };
    if stale || current().as_deref() != Some(features) {
        BUILD.call_once(|| {
            let mut cmd = Command::new(env!("CARGO"));
            // Into the tree this test runs from (also under `--target-dir`).
            let target_dir = dir
                .parent()
                .and_then(Path::parent)
                .expect("target/<profile>");
            cmd.args(["build", "--examples", "-p", "gaspar", "--target-dir"])
                .arg(target_dir);
            if cfg!(feature = "mpi") {
                cmd.args(["--features", "mpi"]);
            }
            if dir.parent().unwrap().ends_with("release") {
                cmd.arg("--release");
            }
            let status = cmd.status().expect("cargo build --examples");
            assert!(status.success(), "building the examples failed");
            std::fs::write(&marker, features).expect("write the examples marker");
        });
    }
    assert!(path.exists(), "example {} was not built", path.display());
    path
}

pub struct Outcome {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Outcome {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    pub fn assert_success(&self) {
        assert!(
            self.status.success(),
            "job failed: {:?}\nstdout:\n{}\nstderr:\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
    }
}

/// Says why a test cannot run here ("skipped: <reason>" on stderr) before it returns
/// early. Where everything the tests need is installed (CI sets
/// `GASPAR_TEST_REQUIRE_ALL=1`), a test that cannot run fails instead.
pub fn skip(reason: &str) {
    if std::env::var("GASPAR_TEST_REQUIRE_ALL").as_deref() == Ok("1") {
        panic!("this test cannot run here ({reason}), and GASPAR_TEST_REQUIRE_ALL=1");
    }
    eprintln!("skipped: {reason}");
}

/// Whether OpenMPI's `mpirun` is installed (says "skipped" through [`skip`] otherwise).
pub fn mpirun_installed() -> bool {
    let installed = Command::new("mpirun")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        skip("mpirun is not installed (apt-get install openmpi-bin libopenmpi-dev)");
    }
    installed
}

/// Gives `to` the environment changes `from` has (set and removed variables), for a
/// command wrapped in another (a shell that prepares, then runs it).
pub fn copy_environment(from: &Command, to: &mut Command) {
    for (name, value) in from.get_envs() {
        match value {
            Some(value) => to.env(name, value),
            None => to.env_remove(name),
        };
    }
}

/// `mpirun -n N PROG ARGS`, exactly as a user types it: no options, OpenMPI's defaults
/// (no `OMPI_MCA_osc` inherited from the test's environment). Only running as root needs
/// OpenMPI's permission, given through the environment.
pub fn plain_mpirun(procs: u32, program: &Path, args: &[&str]) -> Outcome {
    let mut cmd = Command::new("mpirun");
    cmd.arg("-n")
        .arg(procs.to_string())
        .arg(program)
        .args(args)
        .env_remove("OMPI_MCA_osc")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    run_command(cmd)
}

/// The transports the multi-process tests run on: `shm` always; `mpi` (OpenMPI) when
/// gaspar was built with the `mpi` feature and mpirun is installed. `GASPAR_TEST_TRANSPORTS`
/// (a comma list) chooses instead; `mpich` runs the examples built against MPICH in
/// `GASPAR_TEST_MPICH_EXAMPLES` with `mpiexec.mpich` (see `scripts/test`).
pub fn transports() -> Vec<&'static str> {
    if let Ok(chosen) = std::env::var("GASPAR_TEST_TRANSPORTS") {
        return ["shm", "mpi", "mpich"]
            .into_iter()
            .filter(|t| chosen.split(',').any(|c| c.trim() == *t))
            .collect();
    }
    let mut list = vec!["shm"];
    if cfg!(feature = "mpi") && mpirun_installed() {
        list.push("mpi");
    }
    list
}

/// The command that starts a job of `procs` ranks on `transport`, the program and its
/// arguments still to be added: `gaspar run`, or for `mpich` MPICH's own mpiexec.
fn job_command(transport: &str, procs: u32) -> Command {
    if transport == "mpich" {
        let mut cmd = Command::new("mpiexec.mpich");
        cmd.arg("-n").arg(procs.to_string());
        return cmd;
    }
    let mut cmd = Command::new(gaspar());
    cmd.arg("run")
        .args(["--transport", transport])
        .arg("-n")
        .arg(procs.to_string());
    cmd
}

/// The program as `transport` runs it: for `mpich`, the same example built against MPICH.
pub fn program_for(transport: &str, program: &std::ffi::OsStr) -> std::ffi::OsString {
    if transport != "mpich" {
        return program.to_os_string();
    }
    let dir = std::env::var_os("GASPAR_TEST_MPICH_EXAMPLES")
        .expect("GASPAR_TEST_MPICH_EXAMPLES names the examples built against MPICH");
    let name = Path::new(program).file_name().expect("a program path");
    Path::new(&dir).join(name).into_os_string()
}

/// `gaspar run --transport T -n N <args...>`, waited for with a timeout.
pub fn run_on(transport: &str, procs: u32, args: &[&dyn AsRef<std::ffi::OsStr>]) -> Outcome {
    run_on_within(JOB_TIMEOUT, transport, procs, args)
}

/// [`run_on`] of a job that must end within `limit` (a hang fails the test quickly).
pub fn run_on_within(
    limit: Duration,
    transport: &str,
    procs: u32,
    args: &[&dyn AsRef<std::ffi::OsStr>],
) -> Outcome {
    run_on_with_env(limit, transport, procs, &[], args)
}

/// [`run_on_within`] with `env` (name, value) set for the job's ranks.
pub fn run_on_with_env(
    limit: Duration,
    transport: &str,
    procs: u32,
    env: &[(&str, &str)],
    args: &[&dyn AsRef<std::ffi::OsStr>],
) -> Outcome {
    let mut cmd = job_command(transport, procs);
    cmd.envs(env.iter().copied());
    for (k, a) in args.iter().enumerate() {
        if k == 0 {
            cmd.arg(program_for(transport, a.as_ref()));
        } else {
            cmd.arg(a);
        }
    }
    run_command_within(cmd, limit)
}

/// The command of a job of `procs` ranks on `transport` running `program args`, as
/// [`run_on`] starts it.
pub fn job_on(transport: &str, procs: u32, program: &Path, args: &[&str]) -> Command {
    let mut cmd = job_command(transport, procs);
    cmd.arg(program_for(transport, program.as_os_str()))
        .args(args);
    cmd
}

/// `gaspar run -n N <args...>`, waited for with a timeout.
pub fn run(procs: u32, args: &[&dyn AsRef<std::ffi::OsStr>]) -> Outcome {
    let mut cmd = Command::new(gaspar());
    cmd.arg("run").arg("-n").arg(procs.to_string());
    for a in args {
        cmd.arg(a);
    }
    run_command(cmd)
}

pub fn run_command(cmd: Command) -> Outcome {
    run_command_within(cmd, JOB_TIMEOUT)
}

/// Runs `cmd` to its end, which must come within `limit`: otherwise the command (the
/// launcher, whose ranks die with it) is killed and the test fails.
pub fn run_command_within(mut cmd: Command, limit: Duration) -> Outcome {
    let start = Instant::now();
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start gaspar");
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let output = match rx.recv_timeout(limit) {
        Ok(out) => out.expect("wait for gaspar"),
        Err(_) => {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            panic!("{cmd:?} hung: the job did not end within {limit:?}");
        }
    };
    Outcome {
        status: output.status,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        elapsed: start.elapsed(),
    }
}

/// A job whose stdout is read line by line while it runs.
pub struct LiveJob {
    pub child: Child,
    lines: mpsc::Receiver<String>,
    pub seen: Vec<String>,
}

impl LiveJob {
    pub fn start(procs: u32, label: bool, program: &Path, args: &[&str]) -> LiveJob {
        LiveJob::start_on("shm", procs, label, program, args)
    }

    /// [`start`](Self::start) on `transport`.
    pub fn start_on(
        transport: &str,
        procs: u32,
        label: bool,
        program: &Path,
        args: &[&str],
    ) -> LiveJob {
        let mut cmd = job_command(transport, procs);
        if label {
            cmd.arg(if transport == "mpich" {
                "-prepend-rank"
            } else {
                "--label"
            });
        }
        cmd.arg(program_for(transport, program.as_os_str()))
            .args(args);
        LiveJob::start_command(cmd)
    }

    /// Starts `cmd`, a job whose ranks' output is read as it comes.
    pub fn start_command(mut cmd: Command) -> LiveJob {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start gaspar");
        let (tx, lines) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        LiveJob {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Reads lines until `count` of them contain `needle`; returns those lines.
    pub fn wait_for(&mut self, needle: &str, count: usize) -> Vec<String> {
        let deadline = Instant::now() + JOB_TIMEOUT;
        loop {
            let found: Vec<String> = self
                .seen
                .iter()
                .filter(|l| l.contains(needle))
                .cloned()
                .collect();
            if found.len() >= count {
                return found;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(_) => {
                    let _ = self.child.kill();
                    panic!(
                        "never saw {count} lines with {needle:?}; saw {:?}",
                        self.seen
                    );
                }
            }
        }
    }

    /// Waits for the launcher to exit; returns its status, the time it took, and stderr.
    pub fn finish(mut self) -> (ExitStatus, Duration, String) {
        let start = Instant::now();
        let mut stderr = self.child.stderr.take().unwrap();
        let pid = self.child.id();
        let (tx, rx) = mpsc::channel();
        let mut child = self.child;
        std::thread::spawn(move || {
            let status = child.wait();
            let _ = tx.send(status);
        });
        let status = match rx.recv_timeout(JOB_TIMEOUT) {
            Ok(s) => s.expect("wait"),
            Err(_) => {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
                panic!("launcher did not exit");
            }
        };
        let elapsed = start.elapsed();
        let mut err = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut err);
        (status, elapsed, err)
    }
}

/// Whether process `pid` still exists (a zombie counts as gone: it runs nothing).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|s| s.split_whitespace().next());
            !matches!(state, Some("Z") | Some("X"))
        }
    }
}

/// Waits up to `limit` for every pid to be gone; returns the ones still alive.
pub fn wait_gone(pids: &[u32], limit: Duration) -> Vec<u32> {
    let deadline = Instant::now() + limit;
    loop {
        let left: Vec<u32> = pids.iter().copied().filter(|&p| alive(p)).collect();
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        // Polling an external event (another process's death) with a deadline.
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What `kill -9` of rank 2 of a 4-rank job waiting in a barrier led to.
pub struct KilledJob {
    /// The ranks' pids.
    pub pids: Vec<u32>,
    /// The job id (empty under mpirun).
    pub job: String,
    pub status: ExitStatus,
    /// From the kill to the launcher's exit.
    pub elapsed: Duration,
    pub stderr: String,
}

/// Starts 4 ranks of the `barrier-wait` scenario on `transport` (rank 2 never enters the
/// barrier), kills rank 2 with SIGKILL once all are up, and waits for the job to end.
pub fn kill_a_rank_in_a_barrier(transport: &str) -> KilledJob {
    kill_rank_2_when_all_wait(LiveJob::start_on(
        transport,
        4,
        false,
        &example("scenarios"),
        &["barrier-wait", "2"],
    ))
}

/// Kills rank 2 of `live` (4 ranks of `scenarios barrier-wait 2`, however started) with
/// SIGKILL once all four say they are waiting, and waits for the job to end.
pub fn kill_rank_2_when_all_wait(mut live: LiveJob) -> KilledJob {
    let lines = live.wait_for("waiting", 4);
    let (pids, job) = pids_and_job(&lines);
    let victim = lines.iter().find(|l| l.starts_with("rank 2 ")).unwrap();
    let victim_pid: i32 = victim.split_whitespace().nth(3).unwrap().parse().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(victim_pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let (status, elapsed, stderr) = live.finish();
    KilledJob {
        pids,
        job,
        status,
        elapsed,
        stderr,
    }
}

/// Parses `rank R pid P job J waiting` lines.
pub fn pids_and_job(lines: &[String]) -> (Vec<u32>, String) {
    let mut pids = Vec::new();
    let mut job = String::new();
    for line in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        let at = |key: &str| words.iter().position(|w| *w == key).map(|i| words[i + 1]);
        pids.push(at("pid").unwrap().parse().unwrap());
        job = at("job").unwrap().to_string();
    }
    (pids, job)
}
