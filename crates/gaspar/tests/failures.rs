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
    for t in transports() {
        let mut job = LiveJob::start_on(t, 4, false, &example("scenarios"), &["barrier-wait", "2"]);
        let lines = job.wait_for("waiting", 4);
        let (pids, _) = pids_and_job(&lines);
        let victim = lines.iter().find(|l| l.starts_with("rank 2 ")).unwrap();
        let victim_pid: i32 = victim.split_whitespace().nth(3).unwrap().parse().unwrap();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(victim_pid),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        let (status, elapsed, stderr) = job.finish();
        // MPICH's mpiexec reports the signal number itself as the status.
        let code = if t == "mpich" { 9 } else { 137 };
        assert_eq!(status.code(), Some(code), "{t}: {stderr}");
        // mpirun polls for dead ranks: allow it a few seconds; the launcher takes < 1 s.
        assert!(elapsed < Duration::from_secs(10), "{t}: took {elapsed:?}");
        // (MPICH's mpiexec prints its report where it pleases; its status says it.)
        let said = match t {
            "mpi" => "exited on signal 9",
            "mpich" => "",
            _ => "killed by signal 9",
        };
        assert!(stderr.contains(said), "{t}: {stderr}");
        assert_eq!(
            wait_gone(&pids, Duration::from_secs(5)),
            Vec::<u32>::new(),
            "{t}: ranks left behind"
        );
    }
}
