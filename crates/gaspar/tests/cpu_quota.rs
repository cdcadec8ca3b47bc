//! Jobs confined by a control group's CPU quota (as Docker's `--cpus` and Kubernetes' CPU
//! limits confine them): every core stays in the ranks' affinity masks, but the group may
//! use only one core's worth of time. A rank that waits must then leave that time to the
//! rank that computes, instead of spinning it away while the kernel stops the whole group.
//! The tests make a group of their own (as root, in cgroup v2 or v1's `cpu` hierarchy) and
//! remove it afterwards.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// A control group of this test's own with a quota of one core (one period's worth of CPU
/// time per period), removed when dropped.
struct OneCoreGroup {
    dir: PathBuf,
}

impl OneCoreGroup {
    /// In the first hierarchy that can hold a CPU quota here: cgroup v2 with the `cpu`
    /// controller enabled for its root's children, or cgroup v1's `cpu` hierarchy.
    fn create(name: &str) -> Result<OneCoreGroup, String> {
        let mountinfo = fs::read_to_string("/proc/self/mountinfo").map_err(|e| e.to_string())?;
        let dir_name = format!("gaspar-test-{}-{name}", std::process::id());
        for line in mountinfo.lines() {
            let Some((mount, fs_fields)) = line.split_once(" - ") else {
                continue;
            };
            let Some(point) = mount.split(' ').nth(4).map(PathBuf::from) else {
                continue;
            };
            let mut fs_fields = fs_fields.split(' ');
            let (fs_type, options) = (fs_fields.next(), fs_fields.nth(1).unwrap_or(""));
            let group = match fs_type {
                Some("cgroup2") => {
                    let enabled = fs::read_to_string(point.join("cgroup.subtree_control"))
                        .is_ok_and(|c| c.split_whitespace().any(|c| c == "cpu"));
                    if !enabled {
                        continue;
                    }
                    OneCoreGroup::make(point.join(&dir_name), |dir| {
                        write(dir, "cpu.max", "100000 100000")
                    })
                }
                Some("cgroup") if options.split(',').any(|o| o == "cpu") => {
                    OneCoreGroup::make(point.join(&dir_name), |dir| {
                        let period = fs::read_to_string(dir.join("cpu.cfs_period_us"))
                            .map_err(|e| format!("{}: {e}", dir.display()))?;
                        write(dir, "cpu.cfs_quota_us", period.trim())
                    })
                }
                _ => continue,
            };
            if let Ok(group) = &group {
                OneCoreGroup::remove_stale(group.dir.parent().expect("a hierarchy"));
            }
            return group;
        }
        Err("no cgroup hierarchy with the cpu controller is mounted".into())
    }

    /// [`create`](Self::create), or `None` after saying why the test is skipped.
    fn create_or_skip(name: &str) -> Option<OneCoreGroup> {
        OneCoreGroup::create(name)
            .map_err(|why| {
                skip(&format!(
                    "no control group with a CPU quota can be made ({why}; needs root)"
                ))
            })
            .ok()
    }

    /// Makes the group at `dir` and sets its quota with `limit`.
    fn make(
        dir: PathBuf,
        limit: impl FnOnce(&Path) -> Result<(), String>,
    ) -> Result<OneCoreGroup, String> {
        fs::create_dir(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        let group = OneCoreGroup { dir };
        limit(&group.dir)?;
        Ok(group)
    }

    /// Removes the groups earlier runs of these tests left (their process is gone).
    fn remove_stale(hierarchy: &Path) {
        let Ok(entries) = fs::read_dir(hierarchy) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let owner = name
                .strip_prefix("gaspar-test-")
                .and_then(|rest| rest.split('-').next()?.parse::<u32>().ok());
            if owner.is_some_and(|pid| !alive(pid)) {
                empty_and_remove(&entry.path());
            }
        }
    }

    /// `cmd` started inside the group (by a shell that moves itself in, then runs it).
    fn run(&self, cmd: &Command) -> Outcome {
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg(r#"echo $$ > "$0/cgroup.procs" && exec "$@""#)
            .arg(&self.dir)
            .arg(cmd.get_program())
            .args(cmd.get_args());
        copy_environment(cmd, &mut sh);
        run_command(sh)
    }
}

impl Drop for OneCoreGroup {
    fn drop(&mut self) {
        empty_and_remove(&self.dir);
    }
}

/// Kills whatever still runs in the group at `dir` (after a job that timed out, its
/// ranks), waits until they are gone, and removes the group.
fn empty_and_remove(dir: &Path) {
    let members = |dir: &Path| -> Vec<u32> {
        fs::read_to_string(dir.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|pid| pid.trim().parse().ok())
            .collect()
    };
    let left = members(dir);
    for &pid in &left {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let survivors = wait_gone(&left, std::time::Duration::from_secs(10));
    if let Err(e) = fs::remove_dir(dir) {
        eprintln!(
            "could not remove {} ({e}; processes left: {survivors:?})",
            dir.display()
        );
    }
}

fn write(dir: &Path, file: &str, value: &str) -> Result<(), String> {
    fs::write(dir.join(file), value).map_err(|e| format!("{}/{file}: {e}", dir.display()))
}

/// What each rank of an `imbalance` job printed, by rank: the CPU time it used
/// (microseconds) and the cores its waits counted on.
fn cpu_times_and_cores(stdout: &str, procs: usize) -> Vec<(u64, usize)> {
    let mut ranks = vec![None; procs];
    for line in stdout.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let ["rank", rank, "cpu_us", cpu, "wall_us", _, "cores", cores] = words[..] {
            let rank: usize = rank.parse().expect("a rank");
            ranks[rank] = Some((
                cpu.parse().expect("microseconds"),
                cores.parse().expect("a count of cores"),
            ));
        }
    }
    ranks
        .into_iter()
        .enumerate()
        .map(|(rank, r)| r.unwrap_or_else(|| panic!("rank {rank} printed nothing:\n{stdout}")))
        .collect()
}

#[test]
fn ranks_waiting_under_a_one_core_quota_leave_it_to_the_rank_that_computes() {
    let Some(group) = OneCoreGroup::create_or_skip("waits") else {
        return;
    };
    let (rounds, work_us) = (100u64, 2000u64);
    for transport in transports() {
        for procs in [2usize, 3] {
            let job = job_on(
                transport,
                procs as u32,
                &example("imbalance"),
                &[&rounds.to_string(), &work_us.to_string()],
            );
            // Spinning through rank 0's work, each waiting rank would take about as much
            // CPU time as rank 0 gets (measured when the quota was not read: 360 ms against
            // rank 0's 400); a wait that sleeps after its budget takes a few percent (shm,
            // 3 ranks: 4.6-9.5 ms of 202 ms in 30 jobs, 2026-11-30). Until waits kept to
            // their start-up budget while crowded, a wake-up slowed by the quota's period
            // could make a waiting rank poll through every later round: 43-129 ms in 8 of
            // 107 jobs.
            let outcome = group.run(&job);
            outcome.assert_success();
            let ranks = cpu_times_and_cores(&outcome.stdout, procs);
            // Whether waits spin or sleep depends on the machine's load too (a wait past
            // its budget sleeps while other programs want the cores, quota or not), so what
            // the waits count on is checked as such, on every rank.
            for (rank, &(_, cores)) in ranks.iter().enumerate() {
                assert_eq!(
                    cores, 1,
                    "{transport}, {procs} ranks: rank {rank}'s waits count {cores} cores under a quota of one"
                );
            }
            let computed = ranks[0].0;
            for (rank, &(waited, _)) in ranks.iter().enumerate().skip(1) {
                assert!(
                    waited * 4 < computed,
                    "{transport}, {procs} ranks, under a quota of one core: rank {rank} used {waited} us of CPU while waiting for rank 0's {computed} us of work"
                );
            }
        }
    }
}

#[test]
fn gaspar_info_names_the_quota_its_waits_count_with() {
    let Some(group) = OneCoreGroup::create_or_skip("info") else {
        return;
    };
    let mut info = Command::new(gaspar());
    info.arg("info");
    let outcome = group.run(&info);
    outcome.assert_success();
    let line = outcome
        .stdout
        .lines()
        .find(|l| l.starts_with("cores for waits:"))
        .unwrap_or_else(|| panic!("no line about cores:\n{}", outcome.stdout));
    assert!(
        line.starts_with("cores for waits: 1 ") && line.contains("CPU quota of 1.00 core(s)"),
        "{line}"
    );
    assert!(line.contains(&*group.dir.to_string_lossy()), "{line}");
}
