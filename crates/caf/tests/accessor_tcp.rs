//! The accessor service's path to images on other nodes (TCP), forced on one host with
//! `GASPAR_CAF_ACCESSORS=tcp`: every image then listens on TCP only (no Unix socket), so a
//! program whose accessors run on the owner's service passes only if TCP carried every
//! request. `GASPAR_SHM_PLACEMENT=anywhere` maps the shm segments where the kernel picks,
//! as on another node no pointer of the owner is valid in the caller: every accessor of a
//! derived-type coarray then runs on the owner's service. gfortran 16 programs (the
//! accessor ABI) in the sid chroot of scripts/sid-chroot, run with `gaspar run -n 2` and
//! `-n 4` against the outcome tests/fortran/EXPECTED lists: pointer_components (accessors
//! following pointers into ordinary memory of the owner, and calling back to the caller
//! for its vector subscripts), pointer_retargeted (a pointer component retargeted between
//! segments) and derived_types (allocatable components).

mod common;

use common::expected::{self, Launch};
use common::*;

/// The programs run (see the file's comment).
const PROGRAMS: &[&str] = &["pointer_components", "pointer_retargeted", "derived_types"];
/// The job sizes.
const JOB_SIZES: &[u32] = &[2, 4];

#[test]
fn accessors_reach_their_owners_over_tcp() {
    if cfg!(feature = "mpi") {
        // the mpi round runs `mpirun` jobs only (this file's jobs are `gaspar run` ones)
        return;
    }
    let Some(gaspar) = sid::ready_with_gaspar() else {
        return;
    };
    let entries = expected::read(&manifest_dir().join("tests/fortran/EXPECTED"));
    let mut failures = Vec::new();
    let mut checked = 0;
    for &name in PROGRAMS {
        let source = manifest_dir().join(format!("tests/fortran/{name}.f90"));
        let dir = work_dir("accessor-tcp", name);
        let built = sid::gaspar_caf(&dir, "gfortran-16", &source, name);
        for &n in JOB_SIZES {
            let entry = entries
                .iter()
                .find(|e| e.program == name && e.launches.contains(&Launch::Gaspar(n)))
                .unwrap_or_else(|| panic!("tests/fortran/EXPECTED runs {name} at {n}"));
            checked += 1;
            let outcome = built.clone().map(|()| {
                sid::run(
                    &dir,
                    &format!(
                        "GASPAR_CAF_ACCESSORS=tcp GASPAR_SHM_PLACEMENT=anywhere {gaspar} run -n {n} ./{name}"
                    ),
                )
            });
            if let Err(how) = entry
                .expect
                .met_by(&outcome, Some(&expected::ok_line(name, n)))
            {
                failures.push(format!("{name} at {n} images over TCP: {how}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} jobs differ from tests/fortran/EXPECTED:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("{checked} jobs over TCP as tests/fortran/EXPECTED expects");
}
