//! GCC 16's own runnable coarray tests (gcc/testsuite/gfortran.dg/coarray, `dg-do run`:
//! 82), extracted at test time from the gcc-16-source tarball in the sid chroot of
//! scripts/sid-chroot, built there with `FC=gfortran-16 gaspar caf -O2 [dg-options]
//! SOURCE [dg-additional-sources]` and run with `gaspar run -n N`, against
//! tests/gcc16-coarray/EXPECTED (both ways: see tests/common/expected.rs). A GCC test
//! passes when it exits 0.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::expected::{self, Verdicts};
use common::*;

/// The tests' directory inside the tarball, below its top directory.
const TESTS_IN_TARBALL: &str = "gcc/testsuite/gfortran.dg/coarray";

fn list() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/gcc16-coarray/EXPECTED")
}

/// The gcc-16-source tarball in the chroot.
fn tarball(chroot: &Path) -> Result<PathBuf, String> {
    let dir = chroot.join("usr/src/gcc-16");
    std::fs::read_dir(&dir)
        .map_err(|e| {
            format!(
                "no {} ({e}): gcc-16-source missing in the chroot",
                dir.display()
            )
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("gcc-") && name.ends_with(".tar.xz")
        })
        .ok_or_else(|| format!("no GCC tarball in {}", dir.display()))
}

/// Extracts the coarray tests into target/<profile>/gcc16-coarray/src and returns the
/// runnable ones by name, with their sources.
fn extract(tarball: &Path) -> BTreeMap<String, PathBuf> {
    let dest = target_dir().join("gcc16-coarray/src");
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
    assert!(status.success(), "extracting {TESTS_IN_TARBALL} failed");
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

/// The text of a directive `{ dg-NAME "..." }` or `{ dg-NAME ... }` in a test.
fn directive(text: &str, name: &str) -> Option<String> {
    let key = format!("dg-{name} ");
    text.lines().find_map(|l| {
        let rest = l[l.find(&key)? + key.len()..].trim_start();
        let rest = rest.strip_prefix('"').unwrap_or(rest);
        let end = rest.find(['"', '}']).unwrap_or(rest.len());
        Some(rest[..end].trim().to_owned())
    })
}

/// gaspar caf's arguments for a test: -O2, its options (caf.exp's default when none),
/// the source and its additional sources.
fn build_args(source: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(source).expect("read a GCC test");
    let mut args = vec!["-O2".to_owned()];
    let options = directive(&text, "options").unwrap_or_else(|| "-pedantic-errors".into());
    args.extend(options.split_whitespace().map(str::to_owned));
    args.push(source.to_string_lossy().into_owned());
    let dir = source.parent().expect("a test directory");
    if let Some(extra) = directive(&text, "additional-sources") {
        args.extend(
            extra
                .split_whitespace()
                .map(|f| dir.join(f).to_string_lossy().into_owned()),
        );
    }
    args
}

#[test]
fn gcc16_coarray_tests_meet_their_expected_outcomes() {
    let chroot = match sid::ready() {
        Ok(dir) => dir,
        Err(reason) => return skip(&reason),
    };
    let tarball = match tarball(&chroot) {
        Ok(t) => t,
        Err(reason) => return skip(&reason),
    };
    ensure_built();
    let runnable = extract(&tarball);
    let entries = expected::read(&list());
    expected::assert_one_line_each(
        &entries,
        runnable.keys().map(String::as_str),
        "runnable GCC 16 tests of the tarball",
    );

    let gaspar = gaspar();
    let gaspar = gaspar.to_string_lossy();
    let mut verdicts = Verdicts::default();
    let mut built = BTreeMap::new();
    for entry in &entries {
        let name = entry.program.as_str();
        let (dir, build) = built.entry(name.to_owned()).or_insert_with(|| {
            let dir = work_dir("gcc16-coarray/run", name);
            let args = build_args(&runnable[name]).join(" ");
            let build = sid::run(
                &dir,
                &format!("FC=gfortran-16 {gaspar} caf {args} -o {name}"),
            );
            let result = match build.code {
                Some(0) => Ok(()),
                _ => Err(build.summary()),
            };
            (dir, result)
        });
        for &launch in &entry.launches {
            let expected::Launch::Gaspar(n) = launch else {
                panic!("line {}: GCC tests run under gaspar run only", entry.line);
            };
            let outcome = build
                .clone()
                .map(|()| sid::run(dir, &format!("{gaspar} run -n {n} ./{name}")));
            verdicts.judge(entry, launch, entry.expect.met_by(&outcome, None));
        }
    }
    verdicts.finish("tests/gcc16-coarray/EXPECTED");
}
