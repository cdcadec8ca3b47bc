//! More than one host: two network namespaces joined by a veth pair stand for two hosts,
//! one rank in each, talking over OpenMPI's TCP transport (nothing may assume shared
//! memory between them). The recipe and its pitfalls: ../shared/reference/multihost-netns.md.
//! Needs root and iproute2; elsewhere the test says "skipped: <reason>".
#![cfg(feature = "mpi")]

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

/// Two namespaces with a veth link between them; removed (with anything left running in
/// them) when dropped.
struct Hosts {
    names: [String; 2],
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

impl Hosts {
    fn new() -> Result<Hosts, String> {
        let id = std::process::id();
        let hosts = Hosts {
            names: [format!("gsp{id}a"), format!("gsp{id}b")],
        };
        let [a, b] = &hosts.names;
        for ns in [a, b] {
            ip(&["netns", "add", ns])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        ip(&[
            "link", "add", "veth0", "netns", a, "type", "veth", "peer", "name", "veth0", "netns", b,
        ])?;
        ip(&["-n", a, "addr", "add", "10.231.0.1/24", "dev", "veth0"])?;
        ip(&["-n", b, "addr", "add", "10.231.0.2/24", "dev", "veth0"])?;
        for ns in [a, b] {
            ip(&["-n", ns, "link", "set", "veth0", "up"])?;
        }
        // The link comes up asynchronously; UCX refuses a device that is not up yet.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        for ns in [a, b] {
            loop {
                let out = Command::new("ip")
                    .args(["-n", ns, "link", "show", "veth0"])
                    .output()
                    .map_err(|e| e.to_string())?;
                if String::from_utf8_lossy(&out.stdout).contains("state UP") {
                    break;
                }
                if std::time::Instant::now() > deadline {
                    return Err(format!("veth0 in {ns} did not come up"));
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        Ok(hosts)
    }

    fn received_bytes(&self) -> u64 {
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.names[0],
                "cat",
                "/sys/class/net/veth0/statistics/rx_bytes",
            ])
            .output()
            .expect("ip netns exec");
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or(0)
    }

    /// Runs `program args` with one rank in each namespace, mpirun in the first.
    fn mpirun(&self, dir: &Path, program: &Path, args: &[&str]) -> Outcome {
        self.mpirun_with(dir, "", program, args)
    }

    /// [`mpirun`](Self::mpirun) with more of mpirun's options (`-x NAME=VALUE`, ...).
    fn mpirun_with(&self, dir: &Path, options: &str, program: &Path, args: &[&str]) -> Outcome {
        let [a, _] = &self.names;
        let agent = dir.join("agent.sh");
        let inner = format!(
            "hostname {a}; exec mpirun --allow-run-as-root --hostfile {hostfile} --map-by node -np 2 \
             --bind-to none --mca mpi_yield_when_idle 1 --mca plm_rsh_agent {agent} \
             --mca btl tcp,self --mca btl_tcp_if_include veth0 --mca oob_tcp_if_include veth0 \
             --mca osc ucx --mca osc_ucx_tls any --mca osc_ucx_devices any \
             -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=veth0 {options} {program} {args}",
            hostfile = dir.join("hostfile").display(),
            agent = agent.display(),
            program = program.display(),
            args = args.join(" "),
        );
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", a, "unshare", "--uts", "sh", "-c", &inner]);
        run_command(cmd)
    }
}

impl Drop for Hosts {
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

#[test]
fn allgather_and_counter_across_two_hosts() {
    if !nix::unistd::geteuid().is_root() {
        return skip("network namespaces need root");
    }
    if !mpirun_installed() {
        return;
    }
    let hosts = match Hosts::new() {
        Ok(h) => h,
        Err(e) => return skip(&format!("cannot make network namespaces here: {e}")),
    };
    let dir = std::env::temp_dir().join(format!("gaspar-multihost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("agent.sh"),
        "#!/bin/sh\nhost=$1; shift\n[ -e \"/run/netns/$host\" ] || { echo \"no netns $host\" >&2; exit 1; }\n\
         exec ip netns exec \"$host\" unshare --uts sh -c \"hostname $host; $*\"\n",
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(dir.join("agent.sh"))
        .status()
        .unwrap();
    std::fs::write(
        dir.join("hostfile"),
        format!("{} slots=2\n{} slots=2\n", hosts.names[0], hosts.names[1]),
    )
    .unwrap();

    // The ranks really are on different "hosts".
    let out = hosts.mpirun(&dir, &example("scenarios"), &["where"]);
    out.assert_success();
    let mut namespaces: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|l| l.split(" netns ").nth(1))
        .map(|r| r.split(' ').next().unwrap())
        .collect();
    namespaces.sort();
    namespaces.dedup();
    assert_eq!(
        namespaces.len(),
        2,
        "ranks are not in two namespaces: {}",
        out.stdout
    );

    let before = hosts.received_bytes();
    let out = hosts.mpirun(&dir, &example("allgather"), &["256"]);
    out.assert_success();
    assert_eq!(
        out.stdout.matches("allgather of 2 x 256 bytes ok").count(),
        2,
        "{}",
        out.stdout
    );
    let out = hosts.mpirun(&dir, &example("counter"), &["2000"]);
    out.assert_success();
    assert_eq!(
        out.stdout.matches("counter = 4000 (expected 4000)").count(),
        2,
        "{}",
        out.stdout
    );
    // Ordering over the network, where MPI orders neither put after put nor get after put
    // (osc/ucx): a get sees the earlier put, the later put wins, strided puts in order.
    let out = hosts.mpirun(&dir, &example("scenarios"), &["ordering", "300"]);
    out.assert_success();
    assert_eq!(
        out.stdout.matches("ordering ok in 300 rounds").count(),
        2,
        "{}",
        out.stdout
    );
    // A rank computing without calling gaspar: osc/ucx completes another rank's
    // operations on its memory only inside MPI calls, which the transport's progress
    // thread makes (on by default across hosts); switched off, they wait for the target.
    let out = hosts.mpirun(&dir, &example("scenarios"), &["busy-target"]);
    out.assert_success();
    assert!(
        out.stdout
            .contains("rank 0: cas, put and get on a busy target took"),
        "{}",
        out.stdout
    );
    let out = hosts.mpirun_with(
        &dir,
        "-x GASPAR_MPI_PROGRESS=off",
        &example("scenarios"),
        &["busy-target"],
    );
    assert!(
        !out.status.success() && out.stderr.contains("operations on a busy target took"),
        "without the progress thread the busy target should have held the operations up:\n{}\n{}",
        out.stdout,
        out.stderr
    );
    // Strided gets over the network: the transport times a datatype against a sieved
    // span on the first face get, then reads every face the faster way; both give the
    // same bytes, and so does a forced datatype.
    for options in ["", "-x GASPAR_MPI_SIEVE=never"] {
        let out = hosts.mpirun_with(&dir, options, &example("scenarios"), &["face-get", "4"]);
        out.assert_success();
        assert_eq!(
            out.stdout.matches("face get ok in 4 rounds").count(),
            2,
            "{options}: {}",
            out.stdout
        );
    }
    let after = hosts.received_bytes();
    assert!(
        after > before + 10_000,
        "hardly any traffic crossed the link: {before} -> {after}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
