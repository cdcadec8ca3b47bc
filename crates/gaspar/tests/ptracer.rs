//! Who may attach to a rank (hardening item 18). Registered memory on the shm transport is
//! reached with cross-memory attach, which Yama's restricted ptrace scope allows only to
//! a process the target named (and that process's descendants). Every rank names the
//! launcher, `gaspar run`, whose descendants are exactly the job's processes — never
//! `PR_SET_PTRACER_ANY`, which would open the ranks to every process of the user.
//!
//! What Yama then allows cannot be observed on a kernel without Yama (the call fails with
//! EINVAL and nothing changes), so this test checks the call itself, with strace, on a
//! real job: each rank names the process the user started, also when the rank is not the
//! launcher's child but a grandchild (a shell in between).

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::*;

/// A process that ran the scenarios program: its pid, and what each of its PR_SET_PTRACER
/// calls named.
type RankCalls = (u32, Vec<String>);

/// `gaspar run -n 2 ARGS...` under `strace -f`: the launcher's pid, and every rank's calls.
fn ptracer_calls(args: &[&str]) -> Option<(u32, Vec<RankCalls>)> {
    let traced = Command::new("strace").arg("-V").output();
    if !traced.is_ok_and(|o| o.status.success()) {
        skip("strace is not installed (apt-get install strace)");
        return None;
    }
    let log = std::env::temp_dir().join(format!("gaspar-ptracer-{}.txt", std::process::id()));
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-qq", "-e", "trace=execve,prctl", "-o"])
        .arg(&log)
        .arg(gaspar())
        .args(["run", "-n", "2"])
        .args(args);
    run_command(cmd).assert_success();
    let text = std::fs::read_to_string(&log).expect("strace's log");
    std::fs::remove_file(&log).ok();
    let pid = |line: &str| -> u32 { line.split_whitespace().next().unwrap().parse().unwrap() };
    let launcher = pid(text.lines().next().expect("a traced call"));
    let ranks: BTreeSet<u32> = text
        .lines()
        .filter(|l| l.contains("execve(") && l.contains("examples/scenarios\""))
        .map(pid)
        .collect();
    let calls = ranks
        .into_iter()
        .map(|rank| {
            let named = text
                .lines()
                .filter(|l| pid(l) == rank && l.contains("prctl(PR_SET_PTRACER"))
                .map(|l| {
                    let argument = l.split("PR_SET_PTRACER, ").nth(1).unwrap_or_default();
                    // A pid, or PR_SET_PTRACER_ANY / a number; strace may cut the line
                    // after it ("<unfinished ...>") when calls interleave.
                    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
                    argument
                        .split(|c| !word(c))
                        .next()
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect();
            (rank, named)
        })
        .collect();
    Some((launcher, calls))
}

#[test]
fn every_rank_lets_only_the_launcher_and_its_descendants_attach() {
    let scenarios = example("scenarios");
    let program = scenarios.to_str().expect("a UTF-8 path");
    let through_a_shell = format!("{program} job-id; true");
    for args in [vec![program, "job-id"], vec!["sh", "-c", &through_a_shell]] {
        let Some((launcher, calls)) = ptracer_calls(&args) else {
            return;
        };
        assert_eq!(calls.len(), 2, "two ranks in {args:?}: {calls:?}");
        for (rank, named) in calls {
            assert_eq!(
                named,
                [launcher.to_string()],
                "rank process {rank} of {args:?} must name the launcher {launcher}, once"
            );
        }
    }
}
