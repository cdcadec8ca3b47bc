//! The launcher, tested the way users start jobs: `gaspar run -n N PROG`.

mod common;

use std::time::Duration;

use common::*;

#[test]
fn any_program_runs_on_every_rank() {
    let out = run(
        3,
        &[&"sh", &"-c", &"echo rank=$GASPAR_RANK procs=$GASPAR_PROCS"],
    );
    out.assert_success();
    let mut lines: Vec<&str> = out.stdout.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        ["rank=0 procs=3", "rank=1 procs=3", "rank=2 procs=3"]
    );
}

#[test]
fn hostname_runs_like_under_mpirun() {
    let out = run(2, &[&"hostname"]);
    out.assert_success();
    assert_eq!(out.stdout.lines().count(), 2);
}

#[test]
fn label_prefixes_stdout_and_stderr_lines() {
    let out = run(
        2,
        &[
            &"--label",
            &"sh",
            &"-c",
            &"echo out; echo err >&2; printf 'no newline'",
        ],
    );
    out.assert_success();
    for rank in 0..2 {
        assert!(
            out.stdout.contains(&format!("[{rank}] out\n")),
            "{}",
            out.stdout
        );
        assert!(
            out.stdout.contains(&format!("[{rank}] no newline\n")),
            "{}",
            out.stdout
        );
        assert!(
            out.stderr.contains(&format!("[{rank}] err\n")),
            "{}",
            out.stderr
        );
    }
}

#[test]
fn first_failing_status_is_the_exit_status_and_the_rest_are_stopped() {
    // Rank 1 fails at once; the others would run for a minute. They are not gaspar
    // programs, so they get SIGTERM at once: the 5 s SIGKILL grace period is never reached.
    let mut cmd = std::process::Command::new(gaspar());
    cmd.env("GASPAR_KILL_GRACE_MS", "5000")
        .args(["run", "-n", "4", "sh", "-c"]);
    cmd.arg("if [ $GASPAR_RANK = 1 ]; then exit 7; fi; exec sleep 60");
    let out = run_command(cmd);
    assert_eq!(out.code(), Some(7), "{}", out.stderr);
    assert!(out.stderr.contains("rank 1 (pid"), "{}", out.stderr);
    assert!(
        out.stderr.contains("exited with status 7"),
        "{}",
        out.stderr
    );
    assert!(
        out.elapsed < Duration::from_secs(3),
        "took {:?}",
        out.elapsed
    );
}

#[test]
fn a_rank_killed_by_a_signal_gives_128_plus_signal() {
    let out = run(
        2,
        &[
            &"sh",
            &"-c",
            &"if [ $GASPAR_RANK = 0 ]; then kill -SEGV $$; fi; exec sleep 60",
        ],
    );
    assert_eq!(out.code(), Some(128 + 11), "{}", out.stderr);
    assert!(
        out.stderr.contains("killed by signal 11 (SIGSEGV)"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_missing_program_is_reported() {
    let out = run(2, &[&"/nonexistent/program"]);
    assert_eq!(out.code(), Some(127));
    assert!(
        out.stderr.contains("cannot start /nonexistent/program"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("rank 0 could not be started"),
        "{}",
        out.stderr
    );
}

#[test]
fn bad_rank_counts_are_refused() {
    let out = run(0, &[&"true"]);
    assert!(!out.status.success());
    assert!(
        out.stderr.contains("-n must be between 1 and 65536"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_gaspar_program_without_the_launcher_is_one_rank() {
    let out = run_command(std::process::Command::new(example("hello")));
    out.assert_success();
    assert_eq!(out.stdout.trim(), "hello from rank 0 of 1");
}

#[test]
fn no_segment_is_left_after_a_normal_run() {
    let out = run(3, &[&example("scenarios"), &"job-id"]);
    out.assert_success();
    let job = out
        .stdout
        .lines()
        .next()
        .unwrap()
        .trim_start_matches("job ")
        .to_string();
    assert_eq!(segments_of(&job), Vec::<String>::new());
}

#[test]
fn a_rank_that_exits_without_finalizing_fails_the_job() {
    let out = run(2, &[&example("scenarios"), &"exit-without-finalize"]);
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains("exited without finalizing"),
        "{}",
        out.stderr
    );
}

#[test]
fn abort_ends_the_job_with_its_message() {
    let out = run(3, &[&example("scenarios"), &"abort"]);
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("rank 1 aborted the job: scenario abort: bad thing happened"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("gaspar run: rank 1 (pid"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_panicking_rank_fails_the_job_and_the_others_are_released() {
    let out = run(3, &[&example("scenarios"), &"panic"]);
    assert_eq!(out.code(), Some(101), "{}", out.stderr);
    assert!(out.stderr.contains("scenario panic"), "{}", out.stderr);
}

/// The acceptance test of the issue: kill -9 of one rank while the others wait in a
/// barrier ends the job within a second, leaving no segment and no process.
#[test]
fn kill_9_of_a_rank_in_a_barrier_ends_the_job_within_a_second() {
    let k = kill_a_rank_in_a_barrier("shm");
    let stderr = &k.stderr;
    assert_eq!(k.status.code(), Some(137), "{stderr}");
    assert!(
        k.elapsed < Duration::from_secs(1),
        "launcher took {:?}",
        k.elapsed
    );
    assert!(stderr.contains("rank 2 (pid"), "{stderr}");
    assert!(stderr.contains("killed by signal 9"), "{stderr}");
    assert_eq!(segments_of(&k.job), Vec::<String>::new());
    assert_eq!(
        wait_gone(&k.pids, Duration::ZERO),
        Vec::<u32>::new(),
        "ranks left behind"
    );
}

#[test]
fn survivors_of_a_failure_get_an_error_not_a_hang() {
    let mut job = LiveJob::start(3, false, &example("scenarios"), &["barrier-wait", "0"]);
    let lines = job.wait_for("waiting", 3);
    let rank0: i32 = lines
        .iter()
        .find(|l| l.starts_with("rank 0 "))
        .unwrap()
        .split_whitespace()
        .nth(3)
        .unwrap()
        .parse()
        .unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(rank0),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let left = job.wait_for("left the barrier", 1);
    assert!(left[0].contains("JobAborted"), "{left:?}");
    let (status, _, _) = job.finish();
    assert!(!status.success());
}

#[test]
fn sigterm_to_the_launcher_stops_every_rank() {
    for signal in [
        nix::sys::signal::Signal::SIGTERM,
        nix::sys::signal::Signal::SIGINT,
    ] {
        let mut job = LiveJob::start(3, false, &example("scenarios"), &["barrier-wait", "1"]);
        let lines = job.wait_for("waiting", 3);
        let (pids, id) = pids_and_job(&lines);
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(job.child.id() as i32), signal).unwrap();
        let (status, elapsed, stderr) = job.finish();
        assert_eq!(status.code(), Some(128 + signal as i32), "{stderr}");
        assert!(elapsed < Duration::from_secs(1), "took {elapsed:?}");
        assert!(stderr.contains("launcher received signal"), "{stderr}");
        assert_eq!(segments_of(&id), Vec::<String>::new());
        assert_eq!(wait_gone(&pids, Duration::ZERO), Vec::<u32>::new());
    }
}

#[test]
fn kill_9_of_the_launcher_leaves_nothing_behind() {
    let mut job = LiveJob::start(3, false, &example("scenarios"), &["barrier-wait", "1"]);
    let lines = job.wait_for("waiting", 3);
    let (pids, id) = pids_and_job(&lines);
    job.child.kill().unwrap();
    job.child.wait().unwrap();
    // The ranks die of PR_SET_PDEATHSIG; give the kernel a moment to deliver it.
    assert_eq!(
        wait_gone(&pids, Duration::from_secs(2)),
        Vec::<u32>::new(),
        "ranks outlived the launcher"
    );
    assert_eq!(segments_of(&id), Vec::<String>::new());
}

#[test]
fn the_quick_start_demo_runs_four_ranks() {
    let mut cmd = std::process::Command::new(gaspar());
    cmd.args(["demo", "-n", "4"]);
    let out = run_command(cmd);
    out.assert_success();
    assert!(
        out.stdout.contains("[0] counter: 4000 (expected 4000)"),
        "{}",
        out.stdout
    );
    for r in 0..4 {
        let left = (r + 3) % 4;
        assert!(
            out.stdout.contains(&format!(
                "[{r}] ring: received {left} from my left neighbour"
            )),
            "{}",
            out.stdout
        );
        assert!(
            out.stdout
                .contains(&format!("[{r}] allgather: [100, 101, 102, 103]")),
            "{}",
            out.stdout
        );
    }
}

#[test]
fn info_prints_the_configuration_table() {
    let mut cmd = std::process::Command::new(gaspar());
    cmd.arg("info").env("GASPAR_HEAP_SIZE", "12M");
    let out = run_command(cmd);
    out.assert_success();
    for setting in gaspar::config::SETTINGS {
        assert!(out.stdout.contains(setting.name), "{}", out.stdout);
    }
    assert!(out.stdout.contains("12M"), "{}", out.stdout);
}

#[test]
fn heap_size_comes_from_the_environment() {
    let mut cmd = std::process::Command::new(gaspar());
    cmd.env("GASPAR_HEAP_SIZE", "1M")
        .args(["run", "-n", "2"])
        .arg(example("scenarios"))
        .arg("job-id");
    run_command(cmd).assert_success();
    let mut bad = std::process::Command::new(gaspar());
    bad.env("GASPAR_HEAP_SIZE", "lots")
        .args(["run", "-n", "2", "true"]);
    let out = run_command(bad);
    assert!(!out.status.success());
    assert!(out.stderr.contains("GASPAR_HEAP_SIZE"), "{}", out.stderr);
}
