//! The repository's Fortran coarray programs (gfortran 12, the mpi build of
//! libcaf_gaspar) on two "hosts": two network namespaces joined by a veth pair, one image
//! in each, MPI over TCP (the recipe of gaspar's tests/common/two_hosts.rs), so that no
//! image's memory is mapped in the other and every coindexed access, collective, event,
//! lock and stop crosses the network. Each program with a `mpirun2` line in
//! tests/fortran/EXPECTED must do across the hosts what that line expects under plain
//! `mpirun -n 2` on one host (both ways: a `not-yet` must still fail). Needs root and
//! iproute2; elsewhere the test says "skipped: <reason>". scripts/test runs it in its mpi
//! round.
#![cfg(feature = "mpi")]

mod common;
#[path = "../../gaspar/tests/common/two_hosts.rs"]
mod two_hosts;

use std::collections::BTreeMap;

use common::expected::{self, Launch, Verdicts};
use common::*;
use two_hosts::TwoHosts;

#[test]
fn programs_do_across_two_hosts_what_they_do_under_mpirun() {
    if !gfortran_installed() || !mpirun_installed() {
        return;
    }
    let hosts_dir = work_dir("multihost", "hosts");
    let hosts = match TwoHosts::new(&hosts_dir, "cf") {
        Ok(hosts) => hosts,
        Err(e) => return skip(&format!("cannot make two network namespaces here: {e}")),
    };
    ensure_built();
    let sources: BTreeMap<_, _> = programs().into_iter().collect();
    let mut verdicts = Verdicts::default();
    let before = hosts.received_bytes();
    for entry in expected::read(&manifest_dir().join("tests/fortran/EXPECTED")) {
        let launch = Launch::Mpirun(2);
        if !entry.launches.contains(&launch) {
            continue;
        }
        let name = entry.program.as_str();
        let dir = work_dir("multihost", name);
        let build = gaspar_caf(&dir, &[&sources[name].to_string_lossy(), "-o", name]);
        let outcome = match build.code {
            Some(0) => Ok(run_in(
                &dir,
                hosts.mpirun("", &dir.join(name).to_string_lossy()),
            )),
            _ => Err(build.summary()),
        };
        verdicts.judge(
            &entry,
            launch,
            entry
                .expect
                .met_by(&outcome, Some(&expected::ok_line(name, 2))),
        );
    }
    let after = hosts.received_bytes();
    // The programs' own traffic: every one moves coarray data between the images.
    assert!(
        after > before + 100_000,
        "hardly any traffic crossed the link: {before} -> {after} bytes"
    );
    verdicts.finish("tests/fortran/EXPECTED (mpirun2 lines, across two hosts)");
}
