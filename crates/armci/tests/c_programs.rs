//! C programs written against armci.h, compiled with cc, linked to libarmci.so and run
//! through `gaspar run` as users run them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Once;

/// target/<profile>, found from this test executable (target/<profile>/deps/...).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// Builds libarmci.so and the gaspar launcher with this test's features (a test build
/// does not always refresh the cdylib in target/<profile>; a no-op when up to date).
fn ensure_built() {
    static BUILD: Once = Once::new();
    BUILD.call_once(|| {
        let dir = target_dir();
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "-p", "gaspar-armci", "-p", "gaspar"]);
        if cfg!(feature = "mpi") {
            cmd.args(["--features", "gaspar-armci/mpi"]);
        }
        if dir.ends_with("release") {
            cmd.arg("--release");
        }
        assert!(cmd.status().unwrap().success(), "cargo build failed");
    });
}

fn compile(name: &str) -> PathBuf {
    compile_with("cc", name, "")
}

/// Compiles tests/c/NAME.c with `compiler`; tests running at the same time use different
/// `variant`s so that none overwrites a program another is running.
fn compile_with(compiler: &str, name: &str, variant: &str) -> PathBuf {
    ensure_built();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = target_dir().join(format!("armci-test-{variant}{name}"));
    let status = Command::new(compiler)
        .arg("-O1")
        .arg("-Wall")
        .arg("-I")
        .arg(manifest.join("include"))
        .arg(manifest.join("tests/c").join(format!("{name}.c")))
        .arg("-L")
        .arg(target_dir())
        .arg("-larmci")
        .arg(format!("-Wl,-rpath,{}", target_dir().display()))
        .arg("-o")
        .arg(&out)
        .status()
        .expect("cc");
    assert!(status.success(), "compiling {name}.c failed");
    out
}

/// `gaspar run -n procs program args`; a job that hangs fails the test after 2 minutes.
fn run(procs: u32, program: &Path, args: &[&str]) -> std::process::Output {
    let child = Command::new(target_dir().join("gaspar"))
        .args(["run", "-n", &procs.to_string()])
        .arg(program)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("gaspar run");
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(120)) {
        Ok(out) => out.expect("wait"),
        Err(_) => {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
            panic!("{} did not finish within 2 minutes", program.display());
        }
    }
}

/// Runs tests/c/NAME.c under the launcher with each job size; every rank must print
/// "NAME ok rank R of N" (the programs check their own results and abort otherwise).
fn runs_everywhere(name: &str, sizes: &[u32]) {
    let program = compile(name);
    for &procs in sizes {
        let out = run(procs, &program, &[]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{name}, {procs} ranks: {}\n{}",
            stdout,
            String::from_utf8_lossy(&out.stderr)
        );
        for rank in 0..procs {
            assert!(
                stdout.contains(&format!("{name} ok rank {rank} of {procs}")),
                "{stdout}"
            );
        }
    }
}

#[test]
fn armci_programs_run_under_the_launcher() {
    runs_everywhere("armci_basic", &[1, 2, 4]);
}

#[test]
fn armci_groups_work_as_in_armci_mpi() {
    runs_everywhere("armci_groups", &[1, 2, 3, 5]);
}

#[test]
fn bad_input_ends_the_job_with_a_message_naming_the_call() {
    let program = compile("armci_bad_input");
    for (case, message) in [
        ("address", "ARMCI_Put: address"),
        ("past-end", "ARMCI_PutS: access of"),
        ("negative-stride", "ARMCI_PutS: negative"),
        ("rank", "ARMCI_Put: rank 7 is out of range"),
        ("overlap", "write some bytes twice"),
        ("vector-past-end", "ARMCI_PutV: segment 2: remote"),
        ("vector-null", "ARMCI_GetV: segment 1: remote"),
        (
            "group-pid",
            "ARMCI_Group_create: pid_list[1] = 99 is not a rank",
        ),
        (
            "group-duplicate",
            "ARMCI_Group_create: rank 0 appears twice",
        ),
    ] {
        let out = run(2, &program, &[case]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{case}: {stderr}");
        assert!(stderr.contains(message), "{case}: {stderr}");
        assert!(!stdout.contains("not reached"), "{case}: {stdout}");
    }
}

/// An ARMCI-MPI program (MPI_Init first, MPI calls of its own) under mpirun, on gaspar's
/// mpi transport.
#[cfg(feature = "mpi")]
#[test]
fn armci_mpi_programs_run_unchanged_under_mpirun() {
    if Command::new("mpicc").arg("--version").output().is_err() {
        eprintln!("skipped: mpicc is not installed");
        return;
    }
    // An ARMCI-MPI program with MPI calls of its own, then the basic and group programs
    // (no MPI calls; gaspar initializes MPI itself).
    for (name, compiler) in [
        ("armci_with_mpi", "mpicc"),
        ("armci_basic", "cc"),
        ("armci_groups", "cc"),
    ] {
        let program = compile_with(compiler, name, "mpirun-");
        let out = Command::new("mpirun")
            .args([
                "-n",
                "3",
                "--oversubscribe",
                "--allow-run-as-root",
                "--mca",
                "osc",
                "sm",
            ])
            .arg(&program)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .output()
            .expect("mpirun");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{name}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for rank in 0..3 {
            assert!(
                stdout.contains(&format!("{name} ok rank {rank} of 3")),
                "{stdout}"
            );
        }
    }
}

/// A rank killed while another waits for it (holding the mutex it waits for, or owing it
/// a message): the waiting rank sees the job's abort flag and ends with the one-line
/// message naming its call, instead of being killed by the launcher after the grace.
#[test]
fn a_rank_waiting_for_a_killed_rank_ends_with_a_message() {
    let program = compile("armci_holder_dies");
    for (case, call) in [("mutex", "ARMCI_Lock"), ("message", "armci_msg_rcv")] {
        let out = run(2, &program, &[case]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stdout.contains("rank 0 waits"), "{case}: {stdout}");
        assert!(
            stderr.contains(&format!(
                "rank 0 aborted the job: {call}: the job was aborted"
            )),
            "{case}: {stderr}"
        );
        assert!(stderr.contains("rank 1 (pid"), "{case}: {stderr}");
        assert_eq!(out.status.code(), Some(137), "{case}: {stderr}");
    }
}
