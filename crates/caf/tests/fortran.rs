//! The repository's Fortran coarray programs (tests/fortran/*.f90 and the heat example),
//! built with `gaspar caf PROG.f90 -o PROG` and run with `gaspar run -n N ./PROG` exactly
//! as a user types them, at the job sizes tests/fortran/EXPECTED lists, against the outcome
//! it lists (both ways: see tests/common/expected.rs). A passing program exits 0 and prints
//! "PROGRAM ok"; a wrong value ends it in ERROR STOP naming the value.

mod common;

use std::path::PathBuf;

use common::expected::{self, Launch, Verdicts};
use common::*;

/// The expected-outcome list of the programs.
fn list() -> PathBuf {
    manifest_dir().join("tests/fortran/EXPECTED")
}

/// The jobs this build runs: `gaspar run` and programs alone in the default build, plain
/// `mpirun` in a build with the mpi feature (scripts/test runs both).
fn runs_here(launch: Launch) -> bool {
    match launch {
        Launch::Gaspar(_) | Launch::Alone => !cfg!(feature = "mpi"),
        Launch::Mpirun(_) => cfg!(feature = "mpi"),
    }
}

#[test]
fn every_program_has_an_expected_outcome_and_every_line_a_program() {
    let programs = programs();
    expected::assert_one_line_each(
        &expected::read(&list()),
        programs.iter().map(|(name, _)| name.as_str()),
        "programs of tests/fortran and examples",
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
                Launch::Alone => alone(&dir.0, name),
            });
            let ok_line = expected::ok_line(name, launch.images());
            verdicts.judge(
                &entry,
                launch,
                entry.expect.met_by(&outcome, Some(&ok_line)),
            );
        }
    }
    verdicts.finish("tests/fortran/EXPECTED");
}

/// `gaspar caf --show` prints the gfortran command it would run, with the library beside
/// gaspar and its run-time path.
#[test]
fn gaspar_caf_show_prints_the_gfortran_command() {
    ensure_built();
    let dir = work_dir("fortran-tests", "show");
    let out = gaspar_caf(&dir, &["--show", "prog.f90", "-o", "prog"]);
    let lib_dir = target_dir();
    assert_eq!(out.code, Some(0), "{}", out.summary());
    assert_eq!(
        out.stdout.trim_end(),
        format!(
            "gfortran -fcoarray=lib prog.f90 -o prog -L {0} -lcaf_gaspar -Wl,-rpath,{0}",
            lib_dir.display()
        )
    );
}

/// Without gfortran on the PATH, `gaspar caf` fails with one line saying so.
#[test]
fn gaspar_caf_without_gfortran_says_so_in_one_line() {
    ensure_built();
    let dir = work_dir("fortran-tests", "no-gfortran");
    let mut cmd = std::process::Command::new(gaspar());
    cmd.args(["caf", "prog.f90"]).env("PATH", &dir);
    let out = run_in(&dir, cmd);
    assert_eq!(out.code, Some(1), "{}", out.summary());
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.starts_with("gaspar caf: cannot run gfortran"),
        "{}",
        out.stderr
    );
}

/// A `gaspar` without libcaf_gaspar.so beside it fails with one line naming the directory.
#[test]
fn gaspar_caf_without_the_library_says_so_in_one_line() {
    ensure_built();
    let dir = work_dir("fortran-tests", "no-library");
    let lonely = dir.join("gaspar");
    std::fs::hard_link(gaspar(), &lonely)
        .or_else(|_| std::fs::copy(gaspar(), &lonely).map(drop))
        .expect("a gaspar without its library");
    let mut cmd = std::process::Command::new(&lonely);
    cmd.args(["caf", "prog.f90"]);
    let out = run_in(&dir, cmd);
    assert_eq!(out.code, Some(1), "{}", out.summary());
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!(
            "libcaf_gaspar.so is not next to gaspar in {}",
            dir.display()
        )),
        "{}",
        out.stderr
    );
}

/// The library's messages are each one `write()` (so that the lines of several images
/// never mix), and a job that ends because an image failed says so in one line naming it.
/// Runs in the shm round (builds without the mpi feature).
#[cfg(not(feature = "mpi"))]
#[test]
fn gaspar_caf_messages_are_written_in_one_piece() {
    if !gfortran_installed() {
        return;
    }
    if std::process::Command::new("strace")
        .arg("-V")
        .output()
        .is_err()
    {
        skip("strace is not installed (apt-get install strace)");
        return;
    }
    ensure_built();
    let name = "image_failed_no_stat";
    let dir = work_dir("fortran-tests", "one-write");
    let source = manifest_dir().join(format!("tests/fortran/{name}.f90"));
    let build = gaspar_caf(&dir, &[&source.to_string_lossy(), "-o", name]);
    assert_eq!(build.code, Some(0), "{}", build.summary());
    let trace = dir.join("strace.out");
    let mut cmd = std::process::Command::new("strace");
    cmd.args(["-f", "-qq", "-e", "trace=write", "-e", "signal=none"])
        .args(["-s", "1000", "-o"])
        .arg(&trace)
        .arg(gaspar())
        .args(["run", "-n", "4", &format!("./{name}")]);
    let out = run_in(&dir, cmd);
    assert_eq!(out.code, Some(1), "{}", out.summary());
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(lines.len(), 1, "{}", out.summary());
    assert!(
        lines[0].starts_with("gaspar caf: image ")
            && lines[0].ends_with(": SYNC ALL: image 4 has failed"),
        "{}",
        out.summary()
    );
    let text = std::fs::read_to_string(&trace).expect("the strace output");
    let whole = format!("write(2, \"{}\\n\"", lines[0]);
    assert!(text.contains(&whole), "{whole} not in:\n{text}");
}

/// A coarray statement from a thread other than the image's own (an OpenMP worker) is
/// refused with STAT= and ERRMSG= saying why, and the image's own thread goes on (the
/// engine belongs to the image's thread, which reaches it without a lock).
/// Runs in the shm round (builds without the mpi feature).
#[cfg(not(feature = "mpi"))]
#[test]
fn a_statement_from_another_thread_is_refused() {
    if !gfortran_installed() {
        return;
    }
    ensure_built();
    let name = "other_thread";
    let dir = work_dir("fortran-tests", name);
    let source = manifest_dir().join(format!("tests/threads/{name}.f90"));
    let build = gaspar_caf(&dir, &["-fopenmp", &source.to_string_lossy(), "-o", name]);
    assert_eq!(build.code, Some(0), "{}", build.summary());
    let out = gaspar_run(&dir, 2, &format!("./{name}"));
    assert_eq!(out.code, Some(0), "{}", out.summary());
    assert_eq!(out.stdout.trim(), "other_thread ok", "{}", out.summary());
}

/// A program started alone with caf_shmem's `GFORTRAN_NUM_IMAGES=N` runs N images (it
/// launches them itself, as `gaspar run -n N` would), 1 stays one image, a bad value is
/// one line; under `gaspar run` the variable is ignored. No image outlives its job.
#[test]
fn gfortran_num_images_starts_that_many_images_of_a_program_started_alone() {
    if !gfortran_installed() {
        return;
    }
    ensure_built();
    let name = "collectives";
    let dir = work_dir("fortran-num-images", name);
    let source = manifest_dir().join(format!("tests/fortran/{name}.f90"));
    let build = gaspar_caf(&dir, &[&source.to_string_lossy(), "-o", name]);
    assert_eq!(build.code, Some(0), "{}", build.summary());
    let started = |images: &str| {
        let mut cmd = std::process::Command::new(dir.join(name));
        cmd.env("GFORTRAN_NUM_IMAGES", images);
        run_in(&dir, cmd)
    };
    for (images, count) in [("3", 3), (" 2 ", 2), ("1", 1)] {
        let out = started(images);
        assert_eq!(out.code, Some(0), "{images}: {}", out.summary());
        assert_eq!(
            out.stdout.trim(),
            expected::ok_line(name, count),
            "{images}: {}",
            out.summary()
        );
    }
    for bad in ["0", "four", "-2"] {
        let out = started(bad);
        assert_eq!(out.code, Some(1), "{bad}: {}", out.summary());
        assert_eq!(
            out.stderr.trim(),
            format!("gaspar caf: GFORTRAN_NUM_IMAGES={bad} is not a number of images (1 or more)"),
            "{bad}"
        );
    }
    let mut cmd = std::process::Command::new(common::gaspar());
    cmd.args(["run", "-n", "2", &format!("./{name}")])
        .env("GFORTRAN_NUM_IMAGES", "3");
    let out = run_in(&dir, cmd);
    assert_eq!(out.code, Some(0), "{}", out.summary());
    assert_eq!(out.stdout.trim(), expected::ok_line(name, 2));
    assert_eq!(running(&dir.join(name)), 0, "an image outlived its job");
}

/// How many processes run `program` (by their /proc/PID/exe link).
fn running(program: &std::path::Path) -> usize {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|e| std::fs::read_link(e.ok()?.path().join("exe")).ok())
        .filter(|exe| exe == program)
        .count()
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
