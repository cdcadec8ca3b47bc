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

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

/// A quota and the group it was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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
    pub fn whole_cores(&self) -> usize {
        usize::try_from(self.quota_us / self.period_us)
            .unwrap_or(usize::MAX)
            .max(1)
    }

    /// The quota in cores, fractions included (`1.5` for 150 000 us per 100 000 us).
    pub fn cores_f64(&self) -> f64 {
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
    cpu_quota().map_or(mask_cores, |quota| mask_cores.min(quota.whole_cores()))
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
        // often the container's own group). A group outside the mount (a cgroup namespace
        // shows the groups above its root as "..") is not walked.
        let Some(relative) = Path::new(group).strip_prefix(&mount.root).ok() else {
            continue;
        };
        if relative.components().any(|c| c == Component::ParentDir) {
            continue;
        }
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

/// A mountinfo path with the kernel's octal escapes (`\040` for a space, `\134` for a
/// backslash) undone, byte for byte.
fn unescape(field: &str) -> OsString {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = match bytes.get(i..i + 4) {
            Some([b'\\', digits @ ..]) if digits.iter().all(|d| (b'0'..=b'7').contains(d)) => {
                digits
                    .iter()
                    .try_fold(0u8, |byte, d| byte.checked_mul(8)?.checked_add(d - b'0'))
            }
            _ => None,
        };
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    OsString::from_vec(out)
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
        assert_eq!(quota.whole_cores(), 2, "2.5 cores' worth rounds down");
        assert_eq!(quota.cores_f64(), 2.5);
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
        assert_eq!((quota.whole_cores(), quota.cores_f64()), (1, 0.5));
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
        assert_eq!((quota.whole_cores(), quota.cores_f64()), (2, 2.0));
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
    fn a_group_above_a_cgroup_namespace_is_not_walked() {
        let mounts = "30 24 0:28 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        let read = files(&[("/sys/fs/cgroup/cpu.max", "100000 100000")]);
        assert_eq!(tightest_quota("0::/../../other\n", mounts, read), None);
    }

    #[test]
    fn only_a_backslash_and_three_octal_digits_are_an_escape() {
        assert_eq!(unescape("a\\134b"), OsString::from("a\\b"));
        assert_eq!(unescape("\\+12x\\08"), OsString::from("\\+12x\\08"));
        assert_eq!(unescape("\\377"), OsString::from_vec(vec![0xff]));
        assert_eq!(unescape("\\400"), OsString::from("\\400"), "past a byte");
        assert_eq!(unescape("end\\04"), OsString::from("end\\04"));
    }
}
