//! gfortran 16 programs against the mpi build of libcaf_gaspar, under plain `mpirun -n 2`
//! (Open MPI) and `mpiexec.mpich -n 2` (MPICH) as a user runs them, inside the Debian sid
//! chroot of scripts/sid-chroot (gfortran 16, Open MPI's mpirun and MPICH's mpiexec; Debian
//! 12 has neither gfortran 16 nor its accessor ABI), against the `mpirun2` outcome
//! tests/fortran/EXPECTED lists. scripts/test runs this file in its mpi round
//! (`--features mpi`), with `GASPAR_TEST_MPICH_CAF` naming the directory of a gaspar and a
//! libcaf_gaspar.so built against MPICH; the default build has nothing here.
//!
//! A few programs, one per part of the accessor ABI over MPI, to keep CI short (about a
//! minute for both MPIs): scalar_put_get (get_from_remote and send_to_remote, every kind:
//! on mpi no part is mapped, so each runs on the owner's service thread), sendget
//! (transfer_between_remotes), pointer_components (an accessor following a pointer into
//! ordinary memory of the owner), co_kinds (collectives of every kind), teams (GCC 16's
//! team entry points and TEAM= in coindices) and stop_code (ending a job under mpirun).
#![cfg(feature = "mpi")]

mod common;
#[path = "../../gaspar/tests/common/two_hosts.rs"]
mod two_hosts;

use std::path::Path;

use common::expected::{self, Launch};
use common::*;
use two_hosts::TwoHosts;

/// The programs of tests/fortran run here (see the file's comment for why these).
const PROGRAMS: &[&str] = &[
    "scalar_put_get",
    "sendget",
    "pointer_components",
    "co_kinds",
    "teams",
    "stop_code",
];

/// Whether the chroot is ready and has `launcher` (a path inside it); says "skipped" when
/// not.
fn chroot_has(launcher: &str) -> bool {
    let root = match sid::ready() {
        Ok(root) => root,
        Err(reason) => {
            skip(&reason);
            return false;
        }
    };
    let found = root.join(launcher.trim_start_matches('/')).exists();
    if !found {
        skip(&format!(
            "the sid chroot has no {launcher}: scripts/sid-chroot create installs it"
        ));
    }
    found
}

/// Builds each program of `programs` in the chroot with `gaspar` (`gaspar caf`, gfortran
/// 16) and runs it with `launch` (a shell command line before `./program`), against its
/// `mpirun2` line of tests/fortran/EXPECTED; `mpi` names the MPI in messages.
fn programs_meet_their_expectations(mpi: &str, gaspar: &Path, launch: &str) {
    programs_launched_meet_their_expectations(mpi, gaspar, PROGRAMS, &|dir, name| {
        sid::run(dir, &format!("{launch} ./{name}"))
    });
}

/// [`programs_meet_their_expectations`] for `programs`, each started by `launch(dir, name)`
/// (`name` built in `dir`).
fn programs_launched_meet_their_expectations(
    mpi: &str,
    gaspar: &Path,
    programs: &[&str],
    launch: &dyn Fn(&Path, &str) -> Outcome,
) {
    let entries = expected::read(&manifest_dir().join("tests/fortran/EXPECTED"));
    let mut failures = Vec::new();
    let mut checked = 0;
    for &name in programs {
        let source = manifest_dir().join(format!("tests/fortran/{name}.f90"));
        let dir = work_dir(&format!("gfortran16-{mpi}"), name);
        let built = sid::gaspar_caf_with(gaspar, &dir, "gfortran-16", &source, name);
        let entry = entries
            .iter()
            .find(|e| e.program == name && e.launches.contains(&Launch::Mpirun(2)))
            .unwrap_or_else(|| panic!("tests/fortran/EXPECTED has no mpirun2 line for {name}"));
        checked += 1;
        let outcome = built.map(|()| launch(&dir, name));
        if let Err(how) = entry
            .expect
            .met_by(&outcome, Some(&expected::ok_line(name, 2)))
        {
            failures.push(format!("{name} with {mpi}: {how}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} gfortran 16 programs differ from tests/fortran/EXPECTED with {mpi}:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("{checked} gfortran 16 programs as tests/fortran/EXPECTED expects with {mpi}");
}

#[test]
fn gfortran_16_programs_meet_their_expectations_under_plain_mpirun() {
    if !chroot_has("/usr/bin/mpirun") {
        return;
    }
    ensure_built();
    programs_meet_their_expectations(
        "openmpi",
        &gaspar(),
        "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -n 2",
    );
}

#[test]
fn gfortran_16_programs_meet_their_expectations_under_mpich_mpiexec() {
    let Some(built) = std::env::var_os("GASPAR_TEST_MPICH_CAF") else {
        skip(
            "GASPAR_TEST_MPICH_CAF does not name a gaspar and libcaf_gaspar.so built with \
             MPICH (scripts/test builds them into target/mpich/debug)",
        );
        return;
    };
    if !chroot_has("/usr/bin/mpiexec.mpich") {
        return;
    }
    let gaspar = Path::new(&built).join("gaspar");
    assert!(
        gaspar.exists() && Path::new(&built).join("libcaf_gaspar.so").exists(),
        "GASPAR_TEST_MPICH_CAF={} has no gaspar and libcaf_gaspar.so",
        gaspar.display()
    );
    programs_meet_their_expectations("mpich", &gaspar, "mpiexec.mpich -n 2");
}

/// The programs run across two hosts: those of [`PROGRAMS`] (on two hosts no part of a
/// coarray is mapped in the other image, and every accessor of pointer_components and
/// derived_types runs on its owner's service, reached over TCP), and derived_types.
const PROGRAMS_ACROSS_HOSTS: &[&str] = &[
    "scalar_put_get",
    "sendget",
    "pointer_components",
    "derived_types",
    "co_kinds",
    "teams",
    "stop_code",
];

/// Across two "hosts" (two network namespaces joined by a veth pair, one image in each, the
/// chroot's Open MPI 6 over TCP with the one-sided component it picks: gaspar's
/// tests/common/two_hosts.rs), as on one host.
#[test]
fn gfortran_16_programs_meet_their_expectations_across_two_hosts() {
    if !chroot_has("/usr/bin/mpirun") {
        return;
    }
    // Inside the repository: the chroot sees the launcher files at the same path.
    let hosts_dir = work_dir("gfortran16-two-hosts", "hosts");
    let hosts = match TwoHosts::new(&hosts_dir, "cs") {
        Ok(hosts) => hosts,
        Err(e) => return skip(&format!("cannot make two network namespaces here: {e}")),
    };
    ensure_built();
    let before = hosts.received_bytes();
    programs_launched_meet_their_expectations(
        "openmpi-two-hosts",
        &gaspar(),
        PROGRAMS_ACROSS_HOSTS,
        &|dir, name| {
            run_in(
                dir,
                hosts.mpirun_in_sid_chroot(&sid::script(), "", &format!("./{name}")),
            )
        },
    );
    let after = hosts.received_bytes();
    assert!(
        after > before + 50_000,
        "hardly any traffic crossed the link: {before} -> {after} bytes"
    );
}
