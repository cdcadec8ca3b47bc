//! The launcher, tested the way users start jobs: `gaspar run -n N PROG`.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

/// A process that holds one of a job's segments (`memfd:gaspar-JOB-RANK`): open as a
/// descriptor (`/proc/PID/fd`) or mapped (`/proc/PID/maps`).
struct Holder {
    pid: u32,
    command: String,
    /// Bytes of the held segment file (0 once the launcher emptied it); `None` when the
    /// segment is only mapped.
    bytes: Option<u64>,
}

impl std::fmt::Debug for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.bytes {
            Some(bytes) => write!(f, "{} ({}) has {bytes} bytes open", self.pid, self.command),
            None => write!(f, "{} ({}) maps it", self.pid, self.command),
        }
    }
}

/// Every process on the machine that holds a segment of job `job`.
fn segment_holders(job: &str) -> Vec<Holder> {
    assert!(job.len() >= 16, "bad job id {job:?}");
    let name = format!("memfd:gaspar-{job}-");
    let mut holders = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return holders;
    };
    for entry in procs.filter_map(|e| e.ok()) {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let dir = entry.path();
        let command = std::fs::read_to_string(dir.join("comm"))
            .unwrap_or_default()
            .trim()
            .to_string();
        let fds = std::fs::read_dir(dir.join("fd")).into_iter().flatten();
        for fd in fds.filter_map(|e| e.ok()) {
            let target = std::fs::read_link(fd.path()).unwrap_or_default();
            if target.to_string_lossy().contains(&name) {
                let bytes = std::fs::metadata(fd.path()).map(|m| m.len()).ok();
                holders.push(Holder {
                    pid,
                    command: command.clone(),
                    bytes,
                });
            }
        }
        let maps = std::fs::read_to_string(dir.join("maps")).unwrap_or_default();
        if maps.lines().any(|l| l.contains(&name)) {
            holders.push(Holder {
                pid,
                command,
                bytes: None,
            });
        }
    }
    holders
}

/// Waits up to two seconds for every holder of job `job`'s segments to be gone (processes
/// killed by the launcher release their files as they exit); returns those left.
fn wait_no_holders(job: &str) -> Vec<Holder> {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let left = segment_holders(job);
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        // Polling an external event (other processes' exit) with a deadline.
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Asserts that no process holds a segment of job `job`, after killing any that does so
/// that a failing test leaves nothing running either.
fn assert_nothing_holds_a_segment(job: &str) {
    let left = wait_no_holders(job);
    for holder in &left {
        kill_pid(holder.pid);
    }
    assert!(
        left.is_empty(),
        "segments of job {job} still held: {left:?}"
    );
}

fn kill_pid(pid: u32) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
}

/// The job id from a `job ID` line of a job's output.
fn job_of(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("job "))
        .unwrap_or_else(|| panic!("no job id in {stdout:?}"))
        .trim()
        .to_string()
}

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
        out.stderr
            .contains("cannot start \"/nonexistent/program\": No such file"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    // A directory, and an empty name, are named as such.
    let out = run(2, &[&"/tmp"]);
    assert_eq!(out.code(), Some(126));
    assert!(
        out.stderr
            .contains("cannot start \"/tmp\": it is a directory"),
        "{}",
        out.stderr
    );
    let out = run(2, &[&""]);
    assert_eq!(out.code(), Some(127));
    assert!(out.stderr.contains("cannot start \"\":"), "{}", out.stderr);
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
fn a_normal_run_leaves_no_process_holding_a_segment() {
    // Each rank leaves a child behind that inherited the segments' descriptors (not its
    // output: the job's end does not wait for it).
    let script = format!(
        "sleep 300 >/dev/null 2>&1 & exec {} job-id",
        example("scenarios").display()
    );
    let out = run(3, &[&"sh", &"-c", &script]);
    out.assert_success();
    let job = out
        .stdout
        .lines()
        .next()
        .unwrap()
        .trim_start_matches("job ")
        .to_string();
    assert_nothing_holds_a_segment(&job);
}

#[test]
fn the_children_of_a_failed_rank_are_ended_too() {
    // Rank 1 fails before it attaches; every rank, the failed one included, has a child
    // holding the segments.
    let script = format!(
        "echo job $GASPAR_JOB_ID; sleep 300 >/dev/null 2>&1 & if [ $GASPAR_RANK = 1 ]; then exit 3; fi; exec {} barrier-wait 9",
        example("scenarios").display()
    );
    let out = run(3, &[&"sh", &"-c", &script]);
    assert_eq!(out.code(), Some(3), "{}", out.stderr);
    assert_nothing_holds_a_segment(&job_of(&out.stdout));
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
    assert_nothing_holds_a_segment(&k.job);
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
    assert!(left[0].contains("the job was aborted"), "{left:?}");
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
        assert_eq!(wait_gone(&pids, Duration::ZERO), Vec::<u32>::new());
        assert_nothing_holds_a_segment(&id);
    }
}

/// Ranks that write without pause through `--label` (the launcher forwards every line)
/// cannot keep the launcher from a signal: it stops the job at once. Before, it read a
/// flooding pipe until the pipe ran dry, which it never did.
#[test]
fn a_flood_of_labelled_output_does_not_hold_off_a_signal() {
    let mut job = LiveJob::start(2, true, Path::new("yes"), &[]);
    job.wait_for("] y", 100);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(job.child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let (status, elapsed, stderr) = job.finish();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(elapsed < Duration::from_secs(2), "took {elapsed:?}");
}

/// With `--label`, a reader that goes away (`| head -1`) ends the job as it does without
/// `--label`: the launcher stops forwarding, the rank's next write meets a closed pipe
/// (SIGPIPE), and the job fails with 128 + 13.
#[test]
fn a_closed_reader_of_labelled_output_ends_the_job() {
    for label in ["", "--label "] {
        let mut cmd = Command::new("bash");
        cmd.arg("-c").arg(format!(
            "{} run -n 2 {label}yes | head -1; echo \"status ${{PIPESTATUS[0]}}\"",
            gaspar().display()
        ));
        let out = run_command(cmd);
        out.assert_success();
        assert!(
            out.stdout.ends_with("status 141\n"),
            "{label}: {}",
            out.stdout
        );
        assert!(out.stderr.contains("SIGPIPE"), "{label}: {}", out.stderr);
    }
}

/// A launcher started ignoring SIGHUP (`nohup gaspar run ...`) keeps ignoring it: a
/// SIGHUP then a SIGTERM end the job by the SIGTERM (143). Read through its signalfd, the
/// SIGHUP used to stop the job (129).
#[test]
fn nohup_leaves_sighup_ignored() {
    let mut cmd = Command::new("nohup");
    cmd.arg(gaspar())
        .args(["run", "-n", "2", "sh", "-c", "echo up; exec sleep 300"]);
    let mut job = LiveJob::start_command(cmd);
    job.wait_for("up", 2);
    let launcher = nix::unistd::Pid::from_raw(job.child.id() as i32);
    for signal in [
        nix::sys::signal::Signal::SIGHUP,
        nix::sys::signal::Signal::SIGTERM,
    ] {
        nix::sys::signal::kill(launcher, signal).unwrap();
    }
    let (status, _, stderr) = job.finish();
    assert_eq!(status.code(), Some(143), "{stderr}");
}

#[test]
fn kill_9_of_the_launcher_leaves_nothing_behind() {
    // Each rank has a child of its own, which PR_SET_PDEATHSIG does not reach.
    let script = format!(
        "sleep 300 >/dev/null 2>&1 & exec {} barrier-wait 1",
        example("scenarios").display()
    );
    let mut job = LiveJob::start(3, false, Path::new("sh"), &["-c", &script]);
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
    assert_nothing_holds_a_segment(&id);
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

/// A bad setting the ranks would read is refused by the launcher before any rank starts,
/// in one line naming it (each rank used to end the job with a message about dropping the
/// runtime); a rank started alone says the same through its `main`. Heap sizes that are
/// not whole pages are rounded up (they failed in every rank); values are read without
/// regard to case or surrounding blanks.
#[test]
fn bad_rank_settings_are_refused_in_one_line_before_the_ranks_start() {
    let hello = example("hello");
    for (name, value) in [
        ("GASPAR_STRIDED_METHOD", "sideways"),
        ("GASPAR_STRIDED_BUFFER", "64X"),
        ("GASPAR_SPIN_LIMIT", "1e3"),
        ("GASPAR_SHM_PLACEMENT", "somewhere"),
    ] {
        let mut cmd = Command::new(gaspar());
        cmd.env(name, value).args(["run", "-n", "2"]).arg(&hello);
        let out = run_command(cmd);
        assert_eq!(out.code(), Some(1), "{name}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{name}: {}", out.stderr);
        assert!(out.stderr.contains(name), "{name}: {}", out.stderr);
        assert!(
            out.stdout.is_empty(),
            "{name}: a rank started: {}",
            out.stdout
        );
        if name == "GASPAR_SHM_PLACEMENT" {
            continue; // read only where the launcher's segments are mapped
        }
        let mut alone = Command::new(&hello);
        alone.env(name, value);
        let out = run_command(alone);
        assert_eq!(out.code(), Some(1), "{name} alone: {}", out.stderr);
        assert!(out.stderr.contains(name), "{name} alone: {}", out.stderr);
        assert!(
            !out.stderr.contains("dropped"),
            "{name} alone: {}",
            out.stderr
        );
    }
    for (name, value) in [
        ("GASPAR_HEAP_SIZE", "1000001"),
        ("GASPAR_HEAP_SIZE", "1023"),
        ("GASPAR_HEAP_SIZE", "0"),
        ("GASPAR_STRIDED_METHOD", " Direct "),
        ("GASPAR_SHM_PLACEMENT", "ANYWHERE"),
        ("GASPAR_SPIN_LIMIT", "Auto"),
    ] {
        let mut cmd = Command::new(gaspar());
        cmd.env(name, value).args(["run", "-n", "2"]).arg(&hello);
        let out = run_command(cmd);
        out.assert_success();
        assert_eq!(
            out.stdout.lines().count(),
            2,
            "{name}={value:?}: {}",
            out.stdout
        );
    }
}

/// The launcher's log lines carry no terminal colour codes when stderr is not a
/// terminal (a log file, a pipe, this test).
#[test]
fn log_lines_off_a_terminal_have_no_colour_codes() {
    let mut cmd = Command::new(gaspar());
    cmd.env("GASPAR_LOG", "debug")
        .args(["run", "-n", "1", "true"]);
    let out = run_command(cmd);
    out.assert_success();
    assert!(out.stderr.contains("DEBUG"), "{}", out.stderr);
    assert!(!out.stderr.contains('\x1b'), "{:?}", out.stderr);
}

/// `gaspar bench` refuses repetitions or iterations of 0 (it panicked, or printed
/// inf/NaN and exited 0) and a JSON path it cannot write (found only after the whole
/// benchmark), before measuring anything.
#[test]
fn bench_refuses_bad_options_before_it_measures() {
    for args in [
        &["--reps", "0"][..],
        &["--iters", "0"],
        &["--scaling-ranks", "1"],
    ] {
        let mut cmd = Command::new(gaspar());
        cmd.arg("bench").args(args);
        let out = run_command(cmd);
        assert_eq!(out.code(), Some(2), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(args[0]), "{args:?}: {}", out.stderr);
        assert!(!out.stderr.contains("panicked"), "{args:?}: {}", out.stderr);
    }
    let mut cmd = Command::new(gaspar());
    cmd.args([
        "bench",
        "--no-mpi",
        "--json",
        "/nonexistent-dir/figures.json",
    ]);
    let out = run_command(cmd);
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("cannot write /nonexistent-dir/figures.json"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty(), "it measured: {}", out.stdout);
}

#[test]
fn label_ends_with_the_ranks_not_with_their_children() {
    // A child of the rank keeps the rank's stdout open: the job still ends with the rank.
    let script = format!("sleep 300 & exec {}", example("hello").display());
    let out = run(2, &[&"--label", &"sh", &"-c", &script]);
    out.assert_success();
    assert!(
        out.stdout.contains("[1] hello from rank 1 of 2"),
        "{}",
        out.stdout
    );
    assert!(
        out.elapsed < Duration::from_secs(10),
        "took {:?}",
        out.elapsed
    );
}

#[test]
fn label_ends_with_the_ranks_even_when_a_daemon_keeps_their_output() {
    // A daemon (own session, out of the rank's process group) keeps stdout and the
    // segments' descriptors: the job ends all the same, and the segments it holds are empty.
    let script = format!(
        "setsid sleep 300 & echo daemon $!; echo job $GASPAR_JOB_ID; {}; printf last",
        example("hello").display()
    );
    let out = run(1, &[&"--label", &"sh", &"-c", &script]);
    let daemon: u32 = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("[0] daemon "))
        .unwrap_or_else(|| panic!("no daemon pid in {:?}", out.stdout))
        .parse()
        .unwrap();
    let job = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("[0] job "))
        .unwrap()
        .to_string();
    let holders = segment_holders(&job);
    kill_pid(daemon);
    out.assert_success();
    assert!(
        out.stdout
            .contains("[0] hello from rank 0 of 1\n[0] last\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.elapsed < Duration::from_secs(10),
        "took {:?}",
        out.elapsed
    );
    assert!(
        holders
            .iter()
            .all(|h| h.pid == daemon && h.bytes == Some(0)),
        "{holders:?}"
    );
}

#[test]
fn two_processes_cannot_attach_as_one_rank() {
    let counter = example("counter").display().to_string();
    let script = format!("{counter} 1000 & {counter} 1000; wait");
    let out = run(2, &[&"sh", &"-c", &script]);
    let counts: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        counts.len(),
        2,
        "stdout:\n{}\nstderr:\n{}",
        out.stdout,
        out.stderr
    );
    assert!(
        counts
            .iter()
            .all(|l| l.ends_with("counter = 2000 (expected 2000)")),
        "{}",
        out.stdout
    );
    assert_eq!(
        out.stderr.matches("cannot join").count(),
        2,
        "{}",
        out.stderr
    );
}

#[test]
fn two_ranks_claiming_one_rank_number_end_the_job() {
    let script = format!("GASPAR_RANK=0 exec {}", example("hello").display());
    let out = run(2, &[&"sh", &"-c", &script]);
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("rank 0 of this job is taken by pid"),
        "{}",
        out.stderr
    );
    assert!(
        out.elapsed < Duration::from_secs(10),
        "took {:?}",
        out.elapsed
    );
}

#[test]
fn a_segment_descriptor_that_is_not_a_segment_is_left_alone() {
    // fd 2 is a regular file: init refuses it without closing it, so the error reaches it.
    let file = std::env::temp_dir().join(format!("gaspar-fd2-{}", std::process::id()));
    let script = format!(
        "GASPAR_SEGMENT_FDS=2 {} 2>{}; cat {} >&2",
        example("hello").display(),
        file.display(),
        file.display()
    );
    let out = run(1, &[&"sh", &"-c", &script]);
    let _ = std::fs::remove_file(&file);
    assert!(
        out.stderr
            .contains("descriptor 2 (GASPAR_SEGMENT_FDS) is not a gaspar segment"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_heap_larger_than_global_addresses_reach_is_refused() {
    let mut cmd = std::process::Command::new(gaspar());
    cmd.env("GASPAR_HEAP_SIZE", "300G")
        .args(["run", "-n", "1"])
        .arg(example("hello"));
    let out = run_command(cmd);
    assert!(!out.status.success(), "{}", out.stdout);
    assert!(
        out.stderr
            .contains("GASPAR_HEAP_SIZE=\"300G\" is more than the 256G a global address can reach"),
        "{}",
        out.stderr
    );
    let alone = std::process::Command::new(example("hello"))
        .env("GASPAR_HEAP_SIZE", "300G")
        .output()
        .unwrap();
    assert!(!alone.status.success());
}
