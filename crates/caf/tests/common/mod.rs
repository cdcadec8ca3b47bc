//! Helpers of the Fortran tests: building programs with `gaspar caf` and running them with
//! `gaspar run` as a user does, jobs with a time limit, skipping that CI refuses, and the
//! expected-outcome lists the drivers check both ways.
#![allow(dead_code)] // each test binary uses its own part

pub mod expected;
pub mod sid;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Once;
use std::time::Duration;

/// No Fortran job may run longer than this; a hang is an outcome ("timed out"), not a
/// hung suite.
pub const JOB_TIMEOUT: Duration = Duration::from_secs(120);

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

/// Whether gfortran is installed (says "skipped" through [`skip`] otherwise).
pub fn gfortran_installed() -> bool {
    let installed = Command::new("gfortran")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        skip("gfortran is not installed (apt-get install gfortran)");
    }
    installed
}

/// The crate's directory (crates/caf).
pub fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every program of our own: tests/fortran/*.f90 and examples/*.f90, by name.
pub fn programs() -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    for dir in ["tests/fortran", "examples"] {
        for entry in std::fs::read_dir(manifest_dir().join(dir)).expect("read a program directory")
        {
            let path = entry.expect("a directory entry").path();
            if path.extension().is_some_and(|e| e == "f90") {
                let name = path.file_stem().unwrap().to_string_lossy().into_owned();
                found.push((name, path));
            }
        }
    }
    found.sort();
    found
}

/// target/<profile>, found from this test executable (target/<profile>/deps/...).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable");
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// The `gaspar` executable, with libcaf_gaspar.so beside it.
pub fn gaspar() -> PathBuf {
    target_dir().join("gaspar")
}

/// Builds the gaspar launcher and libcaf_gaspar.so with this test's features and profile
/// (a test build does not always refresh the cdylib in target/<profile>; a no-op when up
/// to date).
pub fn ensure_built() {
    static BUILD: Once = Once::new();
    BUILD.call_once(|| {
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "-p", "gaspar", "-p", "gaspar-caf"]);
        if cfg!(feature = "mpi") {
            cmd.args(["--features", "gaspar-caf/mpi,gaspar/mpi"]);
        }
        if target_dir().ends_with("release") {
            cmd.arg("--release");
        }
        assert!(cmd.status().unwrap().success(), "cargo build failed");
    });
}

/// A fresh working directory for one test program, under target/<profile>.
pub fn work_dir(suite: &str, name: &str) -> PathBuf {
    let dir = target_dir().join(suite).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a test directory");
    dir
}

/// What a build or a job did.
#[derive(Debug)]
pub struct Outcome {
    /// The exit status; `None` when the job was killed by a signal or timed out.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// The job did not end within [`JOB_TIMEOUT`] and was killed.
    pub timed_out: bool,
}

impl Outcome {
    /// One line saying what happened, for failure reports.
    pub fn summary(&self) -> String {
        let status = match (self.timed_out, self.code) {
            (true, _) => "timed out".to_owned(),
            (false, Some(code)) => format!("exit {code}"),
            (false, None) => "killed by a signal".to_owned(),
        };
        // The program's own words: its first stderr line that is not the launcher's.
        let said = self
            .stderr
            .lines()
            .find(|l| !l.trim().is_empty() && !l.starts_with("gaspar run:"))
            .unwrap_or("");
        let last = self.stdout.lines().rev().find(|l| !l.trim().is_empty());
        format!(
            "{status}; stdout: {:?}; stderr: {said:?}",
            last.unwrap_or("")
        )
    }
}

/// Runs `cmd` in `dir` to its end with its output captured; a job still running after
/// [`JOB_TIMEOUT`] is killed (the launcher's ranks die with it).
pub fn run_in(dir: &Path, mut cmd: Command) -> Outcome {
    // As from a user's shell: cargo's LD_LIBRARY_PATH (target/<profile>/deps) would load
    // that build's libcaf_gaspar.so before the one a program was linked with (the MPICH
    // build's programs then ran as Open MPI singletons under mpiexec.mpich).
    let child = cmd
        .env_remove("LD_LIBRARY_PATH")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(JOB_TIMEOUT) {
        Ok(out) => {
            let out = out.expect("wait for a job");
            Outcome {
                code: out.status.code(),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
                timed_out: false,
            }
        }
        Err(_) => {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
            Outcome {
                code: None,
                stdout: String::new(),
                stderr: String::new(),
                timed_out: true,
            }
        }
    }
}

/// `gaspar caf ARGS` in `dir`, as a user types it.
pub fn gaspar_caf(dir: &Path, args: &[&str]) -> Outcome {
    let mut cmd = Command::new(gaspar());
    cmd.arg("caf").args(args);
    run_in(dir, cmd)
}

/// `gaspar run -n N ./PROG` in `dir`, as a user types it.
pub fn gaspar_run(dir: &Path, procs: u32, program: &str) -> Outcome {
    let mut cmd = Command::new(gaspar());
    cmd.args(["run", "-n", &procs.to_string(), &format!("./{program}")]);
    run_in(dir, cmd)
}

/// `./PROG` in `dir`, without a launcher (and without caf_shmem's GFORTRAN_NUM_IMAGES,
/// with which a program started alone runs that many images).
pub fn alone(dir: &Path, program: &str) -> Outcome {
    let mut cmd = Command::new(dir.join(program));
    cmd.env_remove("GFORTRAN_NUM_IMAGES");
    run_in(dir, cmd)
}

/// `mpirun -n N ./PROG` in `dir`, as a user types it (running as root needs OpenMPI's
/// permission, given through the environment).
pub fn plain_mpirun(dir: &Path, procs: u32, program: &str) -> Outcome {
    let mut cmd = Command::new("mpirun");
    cmd.args(["-n", &procs.to_string(), &format!("./{program}")])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    run_in(dir, cmd)
}
