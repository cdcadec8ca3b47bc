//! gfortran's own runnable coarray tests (gcc/testsuite/gfortran.dg/coarray, `dg-do run`),
//! extracted at test time from Debian's gcc-12-source tarball (no GCC source is kept in
//! this repository), built with `gaspar caf -O2 [dg-options]` as GCC's caf.exp builds them
//! and run with `gaspar run -n 2` and `-n 4`, against tests/gcc-coarray/EXPECTED (both
//! ways: see tests/common/expected.rs). A GCC test passes when it exits 0.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::expected::{self, Verdicts};
use common::*;

/// Where Debian's gcc-12-source puts GCC's sources.
const GCC_SOURCE_DIR: &str = "/usr/src/gcc-12";
/// The tests' directory inside the tarball, below its top directory.
const TESTS_IN_TARBALL: &str = "gcc/testsuite/gfortran.dg/coarray";

fn list() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/gcc-coarray/EXPECTED")
}

/// GCC's source tarball (gcc-VERSION-dfsg.tar.xz), or why there is none.
fn tarball() -> Result<PathBuf, String> {
    let missing =
        || format!("no GCC source tarball in {GCC_SOURCE_DIR} (apt-get install gcc-12-source)");
    std::fs::read_dir(GCC_SOURCE_DIR)
        .map_err(|_| missing())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("gcc-") && name.ends_with(".tar.xz")
        })
        .ok_or_else(missing)
}

/// Extracts the coarray tests into target/<profile>/gcc-coarray/src and returns the
/// runnable ones by name (file stem), with their sources.
fn extract(tarball: &Path) -> BTreeMap<String, PathBuf> {
    let dest = target_dir().join("gcc-coarray/src");
    let _ = std::fs::remove_dir_all(&dest);
    std::fs::create_dir_all(&dest).expect("create the extraction directory");
    let status = Command::new("tar")
        .arg("-xJf")
        .arg(tarball)
        .arg("-C")
        .arg(&dest)
        .args(["--strip-components=5", "--wildcards"])
        .arg(format!("*/{TESTS_IN_TARBALL}/*"))
        .status()
        .expect("run tar");
    assert!(
        status.success(),
        "extracting {TESTS_IN_TARBALL} from {} failed",
        tarball.display()
    );
    let mut runnable = BTreeMap::new();
    for entry in std::fs::read_dir(&dest).expect("read the extracted tests") {
        let path = entry.expect("a directory entry").path();
        let fortran = path
            .extension()
            .is_some_and(|e| ["f90", "f08", "f", "F90"].iter().any(|x| e == *x));
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if fortran && text.contains("dg-do run") {
            runnable.insert(
                path.file_stem().unwrap().to_string_lossy().into_owned(),
                path,
            );
        }
    }
    runnable
}

/// The options a test asks for (`dg-options "..."`), or caf.exp's default.
fn dg_options(source: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(source).expect("read a GCC test");
    let options = text.lines().find_map(|l| {
        let rest = &l[l.find("dg-options \"")? + "dg-options \"".len()..];
        Some(rest[..rest.find('"')?].to_owned())
    });
    options
        .unwrap_or_else(|| "-pedantic-errors".to_owned())
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

#[test]
fn gfortran_coarray_tests_meet_their_expected_outcomes() {
    if !gfortran_installed() {
        return;
    }
    let tarball = match tarball() {
        Ok(t) => t,
        Err(reason) => return skip(&reason),
    };
    ensure_built();
    let runnable = extract(&tarball);
    let entries = expected::read(&list());
    expected::assert_one_line_each(
        &entries,
        runnable.keys().map(String::as_str),
        "runnable GCC tests of the tarball",
    );

    let mut verdicts = Verdicts::default();
    for entry in &entries {
        let name = entry.program.as_str();
        let source = &runnable[name];
        let dir = work_dir("gcc-coarray", name);
        let mut args = vec!["-O2".to_owned()];
        args.extend(dg_options(source));
        args.extend([
            source.to_string_lossy().into_owned(),
            "-o".into(),
            name.into(),
        ]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let build = gaspar_caf(&dir, &args);
        for &launch in &entry.launches {
            let expected::Launch::Gaspar(n) = launch else {
                panic!("line {}: GCC tests run under gaspar run only", entry.line);
            };
            let outcome = match build.code {
                Some(0) => Ok(gaspar_run(&dir, n, name)),
                _ => Err(build.summary()),
            };
            verdicts.judge(entry, launch, entry.expect.met_by(&outcome, None));
        }
    }
    verdicts.finish("tests/gcc-coarray/EXPECTED");
}
