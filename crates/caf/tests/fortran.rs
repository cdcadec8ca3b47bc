//! The repository's Fortran coarray programs (tests/fortran/*.f90 and the heat example),
//! built with `gaspar caf PROG.f90 -o PROG` and run with `gaspar run -n N ./PROG` exactly
//! as a user types them, at the job sizes tests/fortran/EXPECTED lists, against the outcome
//! it lists (both ways: see tests/common/expected.rs). A passing program exits 0 and prints
//! "PROGRAM ok"; a wrong value ends it in ERROR STOP naming the value.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::expected::{self, Launch, Verdicts};
use common::*;

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The expected-outcome list of the programs.
fn list() -> PathBuf {
    manifest_dir().join("tests/fortran/EXPECTED")
}

/// Every program: tests/fortran/*.f90 and examples/*.f90, by name.
fn programs() -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    for dir in ["tests/fortran", "examples"] {
        for entry in std::fs::read_dir(manifest_dir().join(dir)).expect("read a program directory")
        {
            let path = entry.expect("a directory entry").path();
            if path.extension().is_some_and(|e| e == "f90") {
                let name = path.file_stem().unwrap().to_string_lossy().into_owned();
                found.push((name, path));
            }
        }
    }
    found.sort();
    found
}

/// The jobs this build runs: `gaspar run` in the default build, plain `mpirun` in a build
/// with the mpi feature (scripts/test runs both).
fn runs_here(launch: Launch) -> bool {
    match launch {
        Launch::Gaspar(_) => !cfg!(feature = "mpi"),
        Launch::Mpirun(_) => cfg!(feature = "mpi"),
    }
}

#[test]
fn every_program_has_an_expected_outcome_and_every_line_a_program() {
    let listed: BTreeSet<String> = expected::read(&list())
        .into_iter()
        .map(|e| e.program)
        .collect();
    let present: BTreeSet<String> = programs().into_iter().map(|(name, _)| name).collect();
    let unlisted: Vec<_> = present.difference(&listed).collect();
    let missing: Vec<_> = listed.difference(&present).collect();
    assert!(
        unlisted.is_empty(),
        "programs without a line in EXPECTED: {unlisted:?}"
    );
    assert!(
        missing.is_empty(),
        "lines in EXPECTED without a program: {missing:?}"
    );
}

#[test]
fn programs_meet_their_expected_outcomes() {
    if !gfortran_installed() {
        return;
    }
    if cfg!(feature = "mpi") && !mpirun_installed() {
        return;
    }
    ensure_built();
    let sources: std::collections::BTreeMap<_, _> = programs().into_iter().collect();
    let mut verdicts = Verdicts::default();
    let mut built = std::collections::BTreeMap::new();
    for entry in expected::read(&list()) {
        let source = &sources[&entry.program];
        let name = entry.program.as_str();
        let dir = built.entry(name.to_owned()).or_insert_with(|| {
            let dir = work_dir("fortran-tests", name);
            let build = gaspar_caf(&dir, &[&source.to_string_lossy(), "-o", name]);
            let result = match build.code {
                Some(0) => Ok(()),
                _ => Err(first_error(&build)),
            };
            (dir, result)
        });
        for &launch in entry.launches.iter().filter(|&&l| runs_here(l)) {
            let outcome = dir.1.clone().map(|()| match launch {
                Launch::Gaspar(n) => gaspar_run(&dir.0, n, name),
                Launch::Mpirun(n) => plain_mpirun(&dir.0, n, name),
            });
            let ok_line = format!("{name} ok");
            verdicts.judge(
                &entry,
                launch,
                entry.expect.met_by(&outcome, Some(&ok_line)),
            );
        }
    }
    verdicts.finish("tests/fortran/EXPECTED");
}

/// The line of a failed build that says why (the first error, or the last line).
fn first_error(build: &Outcome) -> String {
    let text = format!("{}{}", build.stdout, build.stderr);
    text.lines()
        .find(|l| l.contains("rror"))
        .or_else(|| text.lines().last())
        .unwrap_or("no output")
        .trim()
        .to_owned()
}

/// Whether OpenMPI's `mpirun` is installed (says "skipped" through [`skip`] otherwise).
fn mpirun_installed() -> bool {
    let installed = std::process::Command::new("mpirun")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        skip("mpirun is not installed (apt-get install openmpi-bin libopenmpi-dev)");
    }
    installed
}
