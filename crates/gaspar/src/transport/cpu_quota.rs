//! The CPU quota of the control group a process runs in: how many cores' worth of time
//! the kernel lets the job use, whatever its affinity mask says.
//!
//! Containers (Docker's `--cpus`, Kubernetes' CPU limits, systemd's `CPUQuota=`) confine a
//! job by time, not by cores: every core stays in the affinity mask, and the group may use
//! `quota` microseconds of CPU per `period`. Ranks that spin in their waits there take the
//! quota from the ranks that compute, and the kernel then stops the whole group until the
//! next period: two ranks under a one-core quota on a two-core machine took 0.69-0.77 s for
//! a loop whose computing rank needed 0.40 s, the waiting rank having spun 0.36 s of it
//! (`examples/imbalance.rs`, AMD EPYC VM, 2026-11-29). So a wait counts the cores of its
//! job as the fewer of the affinity mask's and the quota's (whole cores, rounded down:
//! ranks that each need a core are throttled on a fraction of one).
//!
//! The limits are read as the kernel applies them: at the process's own group and at each
//! group above it up to the hierarchy's root, the smallest one counting; cgroup v2's
//! `cpu.max` ("max 100000", "150000 100000") and cgroup v1's `cpu.cfs_quota_us` (-1: none)
//! and `cpu.cfs_period_us`, wherever the `cpu` controller is mounted (a machine in hybrid
//! mode may have both).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A quota and the group it was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuQuota {
    /// Microseconds of CPU time the group may use per period.
    pub quota_us: u64,
    /// The period's length in microseconds.
    pub period_us: u64,
    /// The group directory whose limit this is.
    pub group: PathBuf,
}

impl CpuQuota {
    /// Whole cores' worth of CPU time per period, at least 1.
    pub fn cores(&self) -> usize {
        usize::try_from(self.quota_us / self.period_us)
            .unwrap_or(usize::MAX)
            .max(1)
    }

    /// The quota in cores (`1.5` for 150 000 us per 100 000 us).
    pub fn in_cores(&self) -> f64 {
        self.quota_us as f64 / self.period_us as f64
    }

    /// Whether this quota allows less CPU time than `other`.
    fn tighter_than(&self, other: &CpuQuota) -> bool {
        u128::from(self.quota_us) * u128::from(other.period_us)
            < u128::from(other.quota_us) * u128::from(self.period_us)
    }
}

/// The tightest CPU quota on this process's control groups, read once; `None` when none
/// is set (or the control-group files cannot be read).
pub fn cpu_quota() -> Option<&'static CpuQuota> {
    static QUOTA: OnceLock<Option<CpuQuota>> = OnceLock::new();
    QUOTA
        .get_or_init(|| {
            let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
            let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
            tightest_quota(&cgroups, &mountinfo, |file| {
                std::fs::read_to_string(file).ok()
            })
        })
        .as_ref()
}

/// The cores the ranks of a job may keep busy at once: `mask_cores` (from their affinity
/// masks), fewer under a CPU quota.
pub(crate) fn usable_cores(mask_cores: usize) -> usize {
    cpu_quota().map_or(mask_cores, |quota| mask_cores.min(quota.cores()))
}

/// The tightest quota on the groups `/proc/self/cgroup` (`cgroups`) names, in the
/// hierarchies `/proc/self/mountinfo` (`mountinfo`) mounts, reading files with `read`.
fn tightest_quota(
    cgroups: &str,
    mountinfo: &str,
    read: impl Fn(&Path) -> Option<String>,
) -> Option<CpuQuota> {
    let mut tightest: Option<CpuQuota> = None;
    for mount in mountinfo.lines().filter_map(CpuMount::parse) {
        let Some(group) = group_in(cgroups, mount.version) else {
            continue;
        };
        // The group's path as this mount shows it (inside a container, the mount's root is
        // often the container's own group).
        let Some(relative) = Path::new(group).strip_prefix(&mount.root).ok() else {
            continue;
        };
        let mut dir = mount.point.join(relative);
        loop {
            if let Some((quota_us, period_us)) = limit_at(&dir, mount.version, &read) {
                let here = CpuQuota {
                    quota_us,
                    period_us,
                    group: dir.clone(),
                };
                if tightest.as_ref().is_none_or(|t| here.tighter_than(t)) {
                    tightest = Some(here);
                }
            }
            if dir == mount.point || !dir.pop() {
                break;
            }
        }
    }
    tightest
}

/// Which cgroup interface a hierarchy has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// A mounted hierarchy that may hold CPU limits: cgroup v2, or cgroup v1 with the `cpu`
/// controller.
#[derive(Debug, PartialEq, Eq)]
struct CpuMount {
    version: Version,
    /// The group the mount shows at its mount point.
    root: PathBuf,
    point: PathBuf,
}

impl CpuMount {
    /// From a line of `/proc/self/mountinfo`: "ID PARENT MAJ:MIN ROOT POINT OPTIONS
    /// [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS".
    fn parse(line: &str) -> Option<CpuMount> {
        let (mount, fs) = line.split_once(" - ")?;
        let mut mount = mount.split(' ');
        let (root, point) = (mount.nth(3)?, mount.next()?);
        let mut fs = fs.split(' ');
        let version = match (fs.next()?, fs.nth(1)) {
            ("cgroup2", _) => Version::V2,
            ("cgroup", Some(options)) if options.split(',').any(|o| o == "cpu") => Version::V1,
            _ => return None,
        };
        Some(CpuMount {
            version,
            root: PathBuf::from(unescape(root)),
            point: PathBuf::from(unescape(point)),
        })
    }
}

/// A mountinfo path with the kernel's octal escapes (`\040` for a space) undone.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|digits| {
            let text = std::str::from_utf8(digits).ok()?;
            u8::from_str_radix(text, 8).ok()
        });
        match (bytes[i], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// This process's group in a hierarchy of `version`, from the text of `/proc/self/cgroup`
/// ("ID:CONTROLLERS:PATH"; cgroup v2's line is "0::PATH").
fn group_in(cgroups: &str, version: Version) -> Option<&str> {
    cgroups.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (id, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let matches = match version {
            Version::V2 => id == "0" && controllers.is_empty(),
            Version::V1 => controllers.split(',').any(|c| c == "cpu"),
        };
        matches.then_some(path)
    })
}

/// The quota and period (microseconds) set on the group at `dir`, if any.
fn limit_at(
    dir: &Path,
    version: Version,
    read: impl Fn(&Path) -> Option<String>,
) -> Option<(u64, u64)> {
    let (quota, period) = match version {
        Version::V2 => {
            let text = read(&dir.join("cpu.max"))?;
            let mut fields = text.split_ascii_whitespace();
            (fields.next()?.parse().ok()?, fields.next()?.parse().ok()?)
        }
        Version::V1 => (
            // -1 (no quota) does not parse as a u64.
            read(&dir.join("cpu.cfs_quota_us"))?.trim().parse().ok()?,
            read(&dir.join("cpu.cfs_period_us"))?.trim().parse().ok()?,
        ),
    };
    (quota > 0 && period > 0).then_some((quota, period))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Reads from a map of file contents.
    fn files(entries: &[(&str, &str)]) -> impl Fn(&Path) -> Option<String> + use<> {
        let map: HashMap<PathBuf, String> = entries
            .iter()
            .map(|(p, t)| (PathBuf::from(p), t.to_string()))
            .collect();
        move |path| map.get(path).cloned()
    }

    const HYBRID_MOUNTS: &str = "\
24 30 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
25 24 0:23 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw
27 24 0:25 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct
28 24 0:26 / /sys/fs/cgroup/cpuset rw,nosuid - cgroup cgroup rw,cpuset
29 24 0:27 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
";

    #[test]
    fn a_v1_quota_on_the_group_or_above_it_counts_in_whole_cores() {
        let cgroups = "4:memory:/job\n3:cpu,cpuacct:/batch/job\n2:cpuset:/\n0::/\n";
        let dir = "/sys/fs/cgroup/cpu,cpuacct";
        let read = files(&[
            (&format!("{dir}/batch/job/cpu.cfs_quota_us"), "-1\n"),
            (&format!("{dir}/batch/job/cpu.cfs_period_us"), "100000\n"),
            (&format!("{dir}/batch/cpu.cfs_quota_us"), "250000\n"),
            (&format!("{dir}/batch/cpu.cfs_period_us"), "100000\n"),
            (&format!("{dir}/cpu.cfs_quota_us"), "-1\n"),
            (&format!("{dir}/cpu.cfs_period_us"), "100000\n"),
        ]);
        let quota = tightest_quota(cgroups, HYBRID_MOUNTS, read).expect("the parent's quota");
        assert_eq!(quota.cores(), 2, "2.5 cores' worth rounds down");
        assert_eq!(quota.in_cores(), 2.5);
        assert_eq!(quota.group, PathBuf::from(format!("{dir}/batch")));
    }

    #[test]
    fn the_tightest_of_v1_and_v2_limits_wins_and_a_quota_below_one_core_is_one() {
        let cgroups = "3:cpu,cpuacct:/a\n0::/b/c\n";
        let read = files(&[
            ("/sys/fs/cgroup/cpu,cpuacct/a/cpu.cfs_quota_us", "300000"),
            ("/sys/fs/cgroup/cpu,cpuacct/a/cpu.cfs_period_us", "100000"),
            ("/sys/fs/cgroup/unified/b/c/cpu.max", "max 100000\n"),
            ("/sys/fs/cgroup/unified/b/cpu.max", "50000 100000\n"),
        ]);
        let quota = tightest_quota(cgroups, HYBRID_MOUNTS, read).expect("a quota");
        assert_eq!((quota.cores(), quota.in_cores()), (1, 0.5));
        assert_eq!(quota.group, PathBuf::from("/sys/fs/cgroup/unified/b"));
    }

    #[test]
    fn no_quota_anywhere_is_none() {
        let cgroups = "3:cpu,cpuacct:/\n0::/\n";
        let read = files(&[
            ("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1"),
            ("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000"),
            ("/sys/fs/cgroup/unified/cpu.max", "max 100000"),
        ]);
        assert_eq!(tightest_quota(cgroups, HYBRID_MOUNTS, read), None);
        assert_eq!(tightest_quota("", "", files(&[])), None);
    }

    #[test]
    fn a_container_mount_shows_its_own_group_at_the_mount_point() {
        // cgroup v2 in a container without a cgroup namespace: the mount's root is the
        // container's group, which /proc/self/cgroup names in full.
        let mounts = "1300 1290 0:30 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw\n";
        let cgroups = "0::/docker/abc\n";
        let read = files(&[("/sys/fs/cgroup/cpu.max", "200000 100000\n")]);
        let quota = tightest_quota(cgroups, mounts, read).expect("the container's quota");
        assert_eq!((quota.cores(), quota.in_cores()), (2, 2.0));
        assert_eq!(quota.group, PathBuf::from("/sys/fs/cgroup"));
    }

    #[test]
    fn mount_points_with_escaped_spaces_are_read_as_the_kernel_wrote_them() {
        let line = "30 24 0:28 / /mnt/with\\040space rw - cgroup2 cgroup2 rw";
        let mount = CpuMount::parse(line).expect("a cgroup2 mount");
        assert_eq!(mount.point, PathBuf::from("/mnt/with space"));
        assert_eq!(mount.version, Version::V2);
        assert_eq!(
            CpuMount::parse("28 24 0:26 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset"),
            None,
            "a v1 hierarchy without the cpu controller holds no quota"
        );
    }

    #[test]
    fn usable_cores_never_exceed_the_masks_cores() {
        assert!(usable_cores(1) == 1);
        assert!(usable_cores(64) <= 64);
    }
}
