//! More than one host: two network namespaces joined by a veth pair stand for two hosts,
//! one rank in each, talking over OpenMPI's TCP transport (nothing may assume shared
//! memory between them), with the system's Open MPI 4.1 and with Open MPI 6 of the sid
//! chroot. The recipe: tests/common/two_hosts.rs. Needs root and iproute2 (and the chroot
//! for Open MPI 6); elsewhere the tests say "skipped: <reason>".
#![cfg(feature = "mpi")]

mod common;
#[path = "common/two_hosts.rs"]
mod two_hosts;

use std::path::{Path, PathBuf};

use common::*;
use two_hosts::TwoHosts;

/// The MPI of a job: the system's (Debian 12: Open MPI 4.1, osc/ucx over TCP), or Open
/// MPI 6 in the Debian sid chroot of scripts/sid-chroot (osc/rdma over the TCP BTL, the
/// component it picks itself), the script given.
enum Mpi {
    System,
    SidChroot(PathBuf),
}

/// `program args` with one rank on each host, under `mpi`.
fn mpirun(hosts: &TwoHosts, mpi: &Mpi, options: &str, program: &Path, args: &[&str]) -> Outcome {
    let line = format!("{} {}", program.display(), args.join(" "));
    run_command(match mpi {
        Mpi::System => hosts.mpirun(options, &line),
        Mpi::SidChroot(script) => hosts.mpirun_in_sid_chroot(script, options, &line),
    })
}

/// Two hosts with their launcher files in a directory of the build (which the sid chroot
/// sees at the same path), or why they cannot be had here.
fn two_hosts(tag: &str) -> Result<TwoHosts, String> {
    let dir = example("scenarios")
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/examples")
        .join(format!("multihost-{tag}"));
    TwoHosts::new(&dir, tag).map_err(|e| format!("cannot make two network namespaces here: {e}"))
}

/// The examples and scenarios every MPI must run across the hosts.
fn examples_work_across(hosts: &TwoHosts, mpi: &Mpi) {
    // The ranks really are on different "hosts".
    let out = mpirun(hosts, mpi, "", &example("scenarios"), &["where"]);
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
    let out = mpirun(hosts, mpi, "", &example("allgather"), &["256"]);
    out.assert_success();
    assert_eq!(
        out.stdout.matches("allgather of 2 x 256 bytes ok").count(),
        2,
        "{}",
        out.stdout
    );
    let out = mpirun(hosts, mpi, "", &example("counter"), &["2000"]);
    out.assert_success();
    assert_eq!(
        out.stdout.matches("counter = 4000 (expected 4000)").count(),
        2,
        "{}",
        out.stdout
    );
    // Ordering over the network, where MPI orders neither put after put nor get after put
    // (osc/ucx): a get sees the earlier put, the later put wins, strided puts in order.
    let out = mpirun(hosts, mpi, "", &example("scenarios"), &["ordering", "300"]);
    out.assert_success();
    assert_eq!(
        out.stdout.matches("ordering ok in 300 rounds").count(),
        2,
        "{}",
        out.stdout
    );
    // A rank computing without calling gaspar: Open MPI 4.1's osc/ucx completes another
    // rank's operations on its memory only inside MPI calls, which the transport's
    // progress thread makes (on by default across hosts).
    let out = mpirun(hosts, mpi, "", &example("scenarios"), &["busy-target"]);
    out.assert_success();
    assert!(
        out.stdout
            .contains("rank 0: cas, put, get, strided put and accumulate on a busy target took"),
        "{}",
        out.stdout
    );
    // Strided gets over the network: the transport times a datatype against a sieved
    // span on the first face get, then reads every face the faster way; both give the
    // same bytes, and so does a forced datatype.
    for options in ["", "-x GASPAR_MPI_SIEVE=never"] {
        let out = mpirun(
            hosts,
            mpi,
            options,
            &example("scenarios"),
            &["face-get", "4"],
        );
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
}

#[test]
fn allgather_and_counter_across_two_hosts() {
    if !mpirun_installed() {
        return;
    }
    let hosts = match two_hosts("sp") {
        Ok(h) => h,
        Err(e) => return skip(&e),
    };
    examples_work_across(&hosts, &Mpi::System);
    // Switched off, the busy target's operations wait for it (osc/ucx of Open MPI 4.1).
    let out = mpirun(
        &hosts,
        &Mpi::System,
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
}

/// The same with Open MPI 6 (Debian sid), whose default one-sided component across hosts
/// is osc/rdma: gaspar leaves it allowed there (it excludes it for Open MPI 4 only), and no
/// option is needed.
#[test]
fn the_same_across_two_hosts_with_open_mpi_6() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/sid-chroot");
    if !nix::unistd::geteuid().is_root() {
        return skip("the sid chroot of scripts/sid-chroot needs root");
    }
    let made = std::process::Command::new(&script).arg("create").output();
    match made {
        Ok(out) if out.status.success() => {}
        Ok(out) => {
            return skip(&format!(
                "scripts/sid-chroot create failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
        Err(e) => return skip(&format!("cannot run scripts/sid-chroot: {e}")),
    }
    let hosts = match two_hosts("s6") {
        Ok(h) => h,
        Err(e) => return skip(&e),
    };
    examples_work_across(&hosts, &Mpi::SidChroot(script));
}
