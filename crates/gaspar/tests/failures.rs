//! How jobs fail, on every transport (see `common::transports`): a rank that aborts,
//! panics, exits without finalizing or is killed ends the whole job with a clear message
//! and a failing status, and leaves no process behind, and no file in /dev/shm or TMPDIR.
//! (On `shm` the launcher's own reports are checked in more detail in `launcher.rs`.)

mod common;

use std::process::Command;
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

/// A rank that exits 0 without ever calling init: the others, waiting for it in init's
/// start-up barrier, find out and fail (they used to wait forever).
#[test]
fn a_rank_that_exits_before_init_fails_the_others_instead_of_hanging() {
    let hello = example("hello");
    let script = format!(
        "[ $GASPAR_RANK = 0 ] && exec {}; exit 0",
        hello.to_str().unwrap()
    );
    let out = run_on_within(Duration::from_secs(20), "shm", 2, &[&"sh", &"-c", &script]);
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("Error: rank 1 exited while this rank was waiting for it"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("rank 0 (pid"), "{}", out.stderr);
}

/// Rank 0 finalizes while rank 1 is in another collective (a barrier, an alloc): both
/// get an error and the job fails (the finalizer used to exit 0 and the other to wait
/// forever, or to pass a barrier rank 0 never called; on mpi, finalize's MPI collectives
/// met the other rank's).
#[test]
fn finalizing_while_another_rank_is_in_a_collective_fails_every_rank() {
    for t in transports() {
        for scenario in ["waits-finalize-vs-barrier", "waits-finalize-vs-alloc"] {
            let program = example("scenarios");
            let out = run_on_within(Duration::from_secs(20), t, 2, &[&program, &scenario]);
            assert_status(t, &out, 1);
            assert!(
                out.stdout.contains("rank 1: collective gave Err(")
                    && out
                        .stdout
                        .contains("every rank must make the same collective calls)"),
                "{t} {scenario}: {}",
                out.stdout
            );
            assert!(
                out.stdout
                    .contains("finalize gave Err(finalize: another rank was in a collective"),
                "{t} {scenario}: {}",
                out.stdout
            );
        }
    }
}

/// Rank 1 leaves with `?` while rank 0 is in a barrier: dropping the runtime unfinalized
/// ends the job with a message; it must not finalize, which joined rank 0's barrier and
/// let it pass a barrier rank 1 never called.
#[test]
fn an_early_return_ends_the_job_instead_of_joining_a_collective() {
    for t in transports() {
        let out = scenario(t, 2, "waits-early-return");
        assert_ne!(out.code(), Some(0), "{t}: {}", out.stderr);
        assert!(
            !out.stdout.contains("rank 0: barrier gave Ok"),
            "{t}: {}",
            out.stdout
        );
        assert!(
            out.stderr
                .contains("rank 1 aborted the job: the runtime was dropped without finalize"),
            "{t}: {}",
            out.stderr
        );
    }
}

/// A rank killed while it holds the accumulate lock of another rank's memory: a rank
/// waiting for that lock ends with an error (it used to spin until the launcher killed
/// it): the job's abort, or the holder's death when the waiter notices it before the
/// launcher's abort reaches it (both seen in CI).
#[test]
fn a_rank_waiting_for_the_accumulate_lock_of_a_killed_rank_gets_job_aborted() {
    let program = example("scenarios");
    let out = run_on_within(
        Duration::from_secs(20),
        "shm",
        2,
        &[&program, &"waits-acc-holder-dies"],
    );
    assert!(out.stdout.contains("rank 0 accumulates"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("rank 0: accumulate gave Err(the job was aborted)")
            || out.stdout.contains(
                "rank 0: accumulate gave Err(rank 1 exited while this rank was waiting for it)"
            ),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    assert_eq!(out.code(), Some(137), "{}", out.stderr);
}

/// `cmd` in a mount namespace of its own whose /dev/shm is a fresh, empty tmpfs, and with
/// `TMPDIR` naming another (where MPI and a launcher would leave shared-memory files,
/// window backing files and session directories; OpenMPI and MPICH put theirs under
/// `TMPDIR`). /tmp itself is not replaced: the build under test may live there. After the
/// job, every file left in either is listed on stderr as `left: PATH` (the second as
/// `left: TMPDIR/...`), and the status is `cmd`'s. Root only.
fn with_private_tmp(cmd: &Command) -> Command {
    let mut wrapped = Command::new("unshare");
    wrapped
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(
            "tmp=$(mktemp -d /run/gaspar-leak-check.XXXXXX) || exit 90; \
             mount -t tmpfs gaspar-shm /dev/shm && mount -t tmpfs gaspar-tmp \"$tmp\" \
               || { rmdir \"$tmp\"; exit 90; }; \
             TMPDIR=$tmp \"$@\"; status=$?; \
             find /dev/shm \"$tmp\" -mindepth 1 | sed \"s|^$tmp|TMPDIR|; s|^|left: |\" >&2; \
             umount \"$tmp\"; rmdir \"$tmp\"; exit $status",
        )
        .arg("sh")
        .arg(cmd.get_program())
        .args(cmd.get_args());
    copy_environment(cmd, &mut wrapped);
    wrapped
}

/// The files a job left (the `left:` lines of [`with_private_tmp`]).
fn files_left(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("left: "))
        .collect()
}

#[test]
fn failed_jobs_leave_no_file_in_dev_shm_or_tmpdir() {
    if !nix::unistd::geteuid().is_root() {
        return skip("a private /dev/shm and TMPDIR (a mount namespace) need root");
    }
    // The check sees what a job leaves there.
    let probe = run_command(with_private_tmp(&{
        let mut c = Command::new("sh");
        c.args(["-c", "touch /dev/shm/probe \"$TMPDIR/probe\""]);
        c
    }));
    assert_eq!(
        files_left(&probe.stderr),
        ["/dev/shm/probe", "TMPDIR/probe"],
        "{}",
        probe.stderr
    );
    for t in transports() {
        // The job ran and failed as the tests above expect, so that an empty listing means
        // something.
        for (scenario, status, says) in [
            ("abort", 1, "scenario abort: bad thing happened"),
            ("panic", 101, "scenario panic"),
        ] {
            let out = run_command(with_private_tmp(&job_on(
                t,
                3,
                &example("scenarios"),
                &[scenario],
            )));
            assert_status(t, &out, status);
            assert!(out.stderr.contains(says), "{t} {scenario}: {}", out.stderr);
            assert_eq!(
                files_left(&out.stderr),
                Vec::<&str>::new(),
                "{t} {scenario}: files left"
            );
        }
        // A rank killed in a barrier: the launcher cleans up after it.
        let KilledJob { status, stderr, .. } = kill_rank_2_when_all_wait(LiveJob::start_command(
            with_private_tmp(&job_on(t, 4, &example("scenarios"), &["barrier-wait", "2"])),
        ));
        // As kill_9_of_a_rank_in_a_barrier_ends_the_job_and_leaves_no_process expects.
        let killed = if t == "mpich" { 9 } else { 137 };
        assert_eq!(status.code(), Some(killed), "{t}: {stderr}");
        assert_eq!(
            files_left(&stderr),
            Vec::<&str>::new(),
            "{t} kill -9: files left"
        );
    }
}
