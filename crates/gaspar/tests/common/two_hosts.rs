//! Two "hosts" on one machine: two network namespaces joined by a veth pair, one MPI rank
//! in each, talking over OpenMPI's TCP transport (Open MPI 4.1: osc/ucx restricted to TCP
//! for RMA; Open MPI 6 of the sid chroot: osc/rdma over the TCP BTL), so nothing may assume
//! shared memory between them. The same recipe as scripts/lib/two-hosts.sh. Needs root and
//! iproute2. Used by gaspar's multihost tests and, through `#[path]`, by gaspar-caf's
//! (coarray programs across hosts).
#![allow(dead_code)] // each test binary uses its own part

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Two namespaces with a veth link between them, and the launcher files of `mpirun` for
/// them (a host file and the agent that starts a rank in the other namespace); removed,
/// with anything left running in them, when dropped.
pub struct TwoHosts {
    names: [String; 2],
    dir: PathBuf,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl TwoHosts {
    /// Makes the namespaces (named after this process and `tag`, so that two test binaries
    /// running at once do not collide) and writes the launcher files into `dir`.
    pub fn new(dir: &Path, tag: &str) -> Result<TwoHosts, String> {
        if !nix::unistd::geteuid().is_root() {
            return Err("network namespaces need root".into());
        }
        let id = std::process::id();
        let hosts = TwoHosts {
            names: [format!("g{tag}{id}a"), format!("g{tag}{id}b")],
            dir: dir.to_owned(),
        };
        let [a, b] = &hosts.names;
        for ns in [a, b] {
            ip(&["netns", "add", ns])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        // The veth ends have the same name inside each namespace: the MCA options name it.
        ip(&[
            "link", "add", "veth0", "netns", a, "type", "veth", "peer", "name", "veth0", "netns", b,
        ])?;
        ip(&["-n", a, "addr", "add", "10.231.0.1/24", "dev", "veth0"])?;
        ip(&["-n", b, "addr", "add", "10.231.0.2/24", "dev", "veth0"])?;
        for ns in [a, b] {
            ip(&["-n", ns, "link", "set", "veth0", "up"])?;
        }
        // The link comes up asynchronously and UCX refuses a device that is not up yet;
        // `ip` has nothing to wait on, so its state is polled.
        let deadline = Instant::now() + Duration::from_secs(10);
        for ns in [a, b] {
            loop {
                let out = Command::new("ip")
                    .args(["-n", ns, "link", "show", "veth0"])
                    .output()
                    .map_err(|e| e.to_string())?;
                if String::from_utf8_lossy(&out.stdout).contains("state UP") {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(format!("veth0 in {ns} did not come up"));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        // How mpirun starts the rank of the other host: `ip netns exec` on this system,
        // `nsenter` inside the sid chroot (which has no `ip`; scripts/sid-chroot makes the
        // namespaces reachable there).
        let enter = [
            (hosts.agent(), "ip netns exec \"$host\""),
            (hosts.chroot_agent(), "nsenter --net=\"/run/netns/$host\""),
        ];
        for (agent, how) in enter {
            std::fs::write(
                &agent,
                format!(
                    "#!/bin/sh\nhost=$1; shift\n[ -e \"/run/netns/$host\" ] || {{ echo \"no netns $host\" >&2; exit 1; }}\n\
                     exec {how} unshare --uts sh -c \"hostname $host; $*\"\n"
                ),
            )
            .map_err(|e| format!("{}: {e}", agent.display()))?;
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| format!("{}: {e}", agent.display()))?;
        }
        std::fs::write(dir.join("hostfile"), format!("{a} slots=2\n{b} slots=2\n"))
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(hosts)
    }

    fn agent(&self) -> PathBuf {
        self.dir.join("agent.sh")
    }

    fn chroot_agent(&self) -> PathBuf {
        self.dir.join("chroot-agent.sh")
    }

    /// Bytes the first namespace's end of the link has received so far.
    pub fn received_bytes(&self) -> u64 {
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.names[0],
                "cat",
                "/sys/class/net/veth0/statistics/rx_bytes",
            ])
            .output();
        out.map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse()
                .unwrap_or(0)
        })
        .unwrap_or(0)
    }

    /// The command that runs `command_line` (a program and its arguments) with one rank in
    /// each namespace, mpirun in the first; `options` are more of mpirun's options
    /// (`-x NAME=VALUE`, ...).
    pub fn mpirun(&self, options: &str, command_line: &str) -> Command {
        let [a, _] = &self.names;
        let inner = format!(
            "hostname {a}; exec mpirun --allow-run-as-root --hostfile {hostfile} --map-by node -np 2 \
             --bind-to none --mca mpi_yield_when_idle 1 --mca plm_rsh_agent {agent} \
             --mca btl tcp,self --mca btl_tcp_if_include veth0 --mca oob_tcp_if_include veth0 \
             --mca osc ucx --mca osc_ucx_tls any --mca osc_ucx_devices any \
             -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=veth0 {options} {command_line}",
            hostfile = self.dir.join("hostfile").display(),
            agent = self.agent().display(),
        );
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", a, "unshare", "--uts", "sh", "-c", &inner]);
        cmd
    }

    /// [`mpirun`](Self::mpirun) inside the Debian sid chroot that the script `sid_chroot`
    /// (scripts/sid-chroot) runs commands in, with its Open MPI 6 (PRRTE's launcher, the
    /// one-sided component it picks itself: osc/rdma over the TCP BTL); `dir` of
    /// [`new`](Self::new) must lie in the repository, which the chroot sees at the same
    /// path.
    pub fn mpirun_in_sid_chroot(
        &self,
        sid_chroot: &Path,
        options: &str,
        command_line: &str,
    ) -> Command {
        let [a, b] = &self.names;
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", a, "unshare", "--uts", "sh", "-c"])
            .arg("hostname \"$0\"; exec \"$@\"")
            .arg(a)
            .arg(sid_chroot)
            .args(["run", "--", "sh", "-c"])
            .arg(format!(
                "exec mpirun --allow-run-as-root --hostfile {hostfile} --map-by node -np 2 \
                 --bind-to none --mca mpi_yield_when_idle 1 --mca plm_rsh_agent {agent} \
                 --mca btl tcp,self --mca btl_tcp_if_include veth0 --mca prte_if_include veth0 \
                 {options} {command_line}",
                hostfile = self.dir.join("hostfile").display(),
                agent = self.chroot_agent().display(),
            ))
            .env("GASPAR_SID_NETNS", format!("{a} {b}"));
        cmd
    }
}

impl Drop for TwoHosts {
    fn drop(&mut self) {
        for ns in &self.names {
            if let Ok(out) = Command::new("ip").args(["netns", "pids", ns]).output() {
                for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                    let _ = Command::new("kill").args(["-9", pid]).status();
                }
            }
            let _ = ip(&["netns", "del", ns]);
        }
    }
}
