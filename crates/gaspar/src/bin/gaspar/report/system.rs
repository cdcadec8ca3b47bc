//! What the report's header says about the machine: processor, cores, kernel, load,
//! the versions of gaspar and of the peers' libraries, and the command line.

use std::path::Path;
use std::process::Command;

/// The processor's model name (from /proc/cpuinfo).
pub(super) fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split_once(':'))
                .map(|(_, model)| model.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// The first core's data and unified caches, as "L1d 48K, L2 1024K, L3 32768K".
fn caches() -> String {
    let dir = Path::new("/sys/devices/system/cpu/cpu0/cache");
    let read = |index: &Path, name: &str| {
        std::fs::read_to_string(index.join(name))
            .map(|text| text.trim().to_string())
            .ok()
    };
    let mut caches: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let index = entry.path();
            let kind = match read(&index, "type")?.as_str() {
                "Data" => "d",
                "Unified" => "",
                _ => return None,
            };
            Some(format!(
                "L{}{kind} {}",
                read(&index, "level")?,
                read(&index, "size")?
            ))
        })
        .collect();
    caches.sort();
    caches.join(", ")
}

/// The load average over 1, 5 and 15 minutes, as /proc/loadavg says.
pub(super) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "unknown".into())
}

/// The output's first line of a command, if it ran and succeeded.
fn first_line(program: &str, args: &[&str], dir: Option<&Path>) -> Option<String> {
    let mut cmd = Command::new(program);
    cmd.args(args);
    if let Some(dir) = dir {
        cmd.current_dir(dir);
    }
    let out = cmd.output().ok().filter(|o| o.status.success())?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .next()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
}

/// A Debian package's installed version.
fn package(name: &str) -> String {
    first_line("dpkg-query", &["-W", "-f=${Version}", name], None)
        .unwrap_or_else(|| "not installed".into())
}

/// The current time in UTC, as `date -u` writes it.
fn now() -> String {
    first_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"], None).unwrap_or_default()
}

/// The command line that started this process, quoted for a POSIX shell where needed.
fn command_line() -> String {
    let quote = |arg: String| {
        let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=,:+@".contains(c);
        if !arg.is_empty() && arg.chars().all(plain) {
            arg
        } else {
            format!("'{}'", arg.replace('\'', r"'\''"))
        }
    };
    std::env::args().map(quote).collect::<Vec<_>>().join(" ")
}

/// The header's lines, as a Markdown list, for a run that began with load `load_at_start`.
pub(super) fn header(repo: Option<&Path>, load_at_start: &str, quick: bool) -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = first_line("uname", &["-sr"], None).unwrap_or_else(|| "unknown".into());
    let commit = repo
        .and_then(|dir| first_line("git", &["describe", "--always", "--dirty"], Some(dir)))
        .unwrap_or_else(|| "unknown".into());
    let gfortran = first_line("gfortran", &["-dumpfullversion"], None)
        .unwrap_or_else(|| "not installed".into());
    let rustc = first_line("rustc", &["--version"], None).unwrap_or_else(|| "unknown".into());
    let lines = [
        format!("command: `{}`", command_line()),
        format!(
            "mode: {}",
            if quick {
                "quick (few repetitions: the figures are rough)"
            } else {
                "full (each benchmark's default repetitions)"
            }
        ),
        format!("finished: {}", now()),
        format!("CPU: {}, {cores} cores; caches: {}", cpu_model(), caches()),
        format!("kernel: {kernel}"),
        format!(
            "load average (1, 5, 15 min): {load_at_start} at the start, {} at the end",
            load_average()
        ),
        format!(
            "gaspar {} (commit {commit}), {rustc}",
            env!("CARGO_PKG_VERSION")
        ),
        format!(
            "peers (Debian package versions): OpenMPI {}, MPICH {}, ARMCI-MPI {}, OpenCoarrays {}, gfortran {gfortran}",
            package("libopenmpi-dev"),
            package("libmpich-dev"),
            package("libarmci-mpi-dev"),
            package("libcoarrays-openmpi-dev"),
        ),
    ];
    lines.iter().map(|l| format!("- {l}\n")).collect()
}
