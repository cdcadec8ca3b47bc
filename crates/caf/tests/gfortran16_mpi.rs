//! gfortran 16 programs against the mpi build of libcaf_gaspar, under plain `mpirun -n 2`
//! as a user runs them, inside the Debian sid chroot of scripts/sid-chroot (gfortran 16 and
//! Open MPI's mpirun; Debian 12 has neither gfortran 16 nor its accessor ABI), against the
//! `mpirun2` outcome tests/fortran/EXPECTED lists. scripts/test runs this file in its mpi
//! round (`--features mpi`); the default build has nothing here.
//!
//! A few programs, one per part of the accessor ABI over MPI, to keep CI short (about half
//! a minute): scalar_put_get (get_from_remote and send_to_remote, every kind: on mpi no
//! part is mapped, so each runs on the owner's service thread), sendget
//! (transfer_between_remotes), pointer_components (an accessor following a pointer into
//! ordinary memory of the owner), co_kinds (collectives of every kind), teams (GCC 16's
//! team entry points and TEAM= in coindices) and stop_code (ending a job under mpirun).
#![cfg(feature = "mpi")]

mod common;

use common::expected::{self, Launch};
use common::*;

/// The programs of tests/fortran run here (see the file's comment for why these).
const PROGRAMS: &[&str] = &[
    "scalar_put_get",
    "sendget",
    "pointer_components",
    "co_kinds",
    "teams",
    "stop_code",
];

#[test]
fn gfortran_16_programs_meet_their_expectations_under_plain_mpirun() {
    let root = match sid::ready() {
        Ok(root) => root,
        Err(reason) => {
            skip(&reason);
            return;
        }
    };
    if !root.join("usr/bin/mpirun").exists() {
        skip("the sid chroot has no mpirun: scripts/sid-chroot create installs openmpi-bin");
        return;
    }
    ensure_built();
    let entries = expected::read(&manifest_dir().join("tests/fortran/EXPECTED"));
    let mut failures = Vec::new();
    let mut checked = 0;
    for &name in PROGRAMS {
        let source = manifest_dir().join(format!("tests/fortran/{name}.f90"));
        let dir = work_dir("gfortran16-mpi", name);
        let built = sid::gaspar_caf(&dir, "gfortran-16", &source, name);
        let entry = entries
            .iter()
            .find(|e| e.program == name && e.launches.contains(&Launch::Mpirun(2)))
            .unwrap_or_else(|| panic!("tests/fortran/EXPECTED has no mpirun2 line for {name}"));
        checked += 1;
        let outcome = built.map(|()| {
            sid::run(
                &dir,
                &format!(
                    "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
                     mpirun -n 2 ./{name}"
                ),
            )
        });
        if let Err(how) = entry.expect.met_by(&outcome, Some(&format!("{name} ok"))) {
            failures.push(format!("{name} under mpirun -n 2: {how}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} gfortran 16 programs differ from tests/fortran/EXPECTED under mpirun:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("{checked} gfortran 16 programs as tests/fortran/EXPECTED expects under mpirun");
}
