//! How jobs fail, on every transport (see `common::transports`): a rank that aborts,
//! panics, exits without finalizing or is killed ends the whole job with a clear message
//! and a failing status, and leaves no process behind. (On `shm` the launcher's own
//! reports are checked in more detail in `launcher.rs`.)

mod common;

use std::time::Duration;

use common::*;

fn scenario(transport: &str, procs: u32, name: &str) -> Outcome {
    run_on(transport, procs, &[&example("scenarios"), &name])
}

/// Checks the job's status: `expected` from gaspar's launcher and OpenMPI's mpirun; MPICH's
/// mpiexec reports either the failing rank's status or that of a rank it killed (9).
fn assert_status(t: &str, out: &Outcome, expected: i32) {
    let allowed: &[i32] = if t == "mpich" {
        &[expected, 9]
    } else {
        &[expected]
    };
    assert!(
        out.code().is_some_and(|c| allowed.contains(&c)),
        "{t}: status {:?}, expected {allowed:?}: {}",
        out.code(),
        out.stderr
    );
}

#[test]
fn an_aborting_rank_ends_the_job_with_its_message() {
    for t in transports() {
        let out = scenario(t, 3, "abort");
        assert_status(t, &out, 1);
        assert!(
            out.stderr
                .contains("rank 1 aborted the job: scenario abort: bad thing happened"),
            "{t}: {}",
            out.stderr
        );
    }
}

#[test]
fn a_panicking_rank_fails_the_job_with_its_status() {
    for t in transports() {
        let out = scenario(t, 3, "panic");
        assert_status(t, &out, 101);
        assert!(out.stderr.contains("scenario panic"), "{t}: {}", out.stderr);
    }
}

#[test]
fn a_rank_that_exits_without_finalizing_fails_the_job() {
    for t in transports() {
        let out = scenario(t, 2, "exit-without-finalize");
        assert_ne!(out.code(), Some(0), "{t}: {}", out.stderr);
        // (MPICH's mpiexec may drop a rank's last output when it kills the job.)
        assert!(
            t == "mpich" || out.stderr.contains("exited without finalizing"),
            "{t}: {}",
            out.stderr
        );
    }
}

#[test]
fn kill_9_of_a_rank_in_a_barrier_ends_the_job_and_leaves_no_process() {
    // On shm, launcher.rs checks the same with the launcher's own stricter promises.
    for t in transports().into_iter().filter(|&t| t != "shm") {
        let k = kill_a_rank_in_a_barrier(t);
        let stderr = &k.stderr;
        // MPICH's mpiexec reports the signal number itself as the status.
        let code = if t == "mpich" { 9 } else { 137 };
        assert_eq!(k.status.code(), Some(code), "{t}: {stderr}");
        // mpirun polls for dead ranks: allow it a few seconds.
        assert!(
            k.elapsed < Duration::from_secs(10),
            "{t}: took {:?}",
            k.elapsed
        );
        // (MPICH's mpiexec prints its report where it pleases; its status says it.)
        if t == "mpi" {
            assert!(stderr.contains("exited on signal 9"), "{t}: {stderr}");
        }
        assert_eq!(
            wait_gone(&k.pids, Duration::from_secs(5)),
            Vec::<u32>::new(),
            "{t}: ranks left behind"
        );
    }
}

/// The `write()` calls of a job of `procs` ranks of `scenarios NAME` on `transport`, as
/// `strace -f` saw them (`None`: strace is not installed).
fn traced_writes(transport: &str, procs: u32, name: &str) -> Option<(Outcome, String)> {
    if std::process::Command::new("strace")
        .arg("-V")
        .output()
        .is_err()
    {
        skip("strace is not installed (apt-get install strace)");
        return None;
    }
    let trace =
        std::env::temp_dir().join(format!("gaspar-strace-{transport}-{}", std::process::id()));
    let mut cmd = std::process::Command::new("strace");
    cmd.args(["-f", "-qq", "-e", "trace=write", "-e", "signal=none"])
        .args(["-s", "1000", "-o"])
        .arg(&trace)
        .arg(gaspar())
        .args(["run", "--transport", transport, "-n", &procs.to_string()])
        .arg(example("scenarios"))
        .arg(name);
    let out = run_command(cmd);
    let text = std::fs::read_to_string(&trace).unwrap_or_default();
    let _ = std::fs::remove_file(&trace);
    Some((out, text))
}

/// Messages of several processes must not mix: each one-line message is one `write()`.
#[test]
fn abort_and_failure_messages_are_written_in_one_piece() {
    // (mpiexec.mpich is not started through `gaspar run`; its ranks use the same code as
    // the `mpi` transport's.)
    for t in transports().into_iter().filter(|&t| t != "mpich") {
        let Some((out, trace)) = traced_writes(t, 3, "abort") else {
            return;
        };
        assert_ne!(out.code(), Some(0), "{t}: {}", out.stderr);
        let abort =
            "write(2, \"gaspar: rank 1 aborted the job: scenario abort: bad thing happened\\n\"";
        assert!(
            trace.contains(abort),
            "{t}: stderr:\n{}\ntrace:\n{trace}",
            out.stderr
        );
        if t == "shm" {
            let report = trace
                .lines()
                .find(|l| l.contains("gaspar run: rank 1 (pid"))
                .unwrap_or_else(|| panic!("{trace}"));
            assert!(
                report.contains("write(2, \"gaspar run: rank 1 (pid ")
                    && report.contains("the job was stopped\\n\""),
                "{report}"
            );
        }
    }
}
