//! Our peers' own test programs built against libarmci (MPI build) and run under plain
//! `mpirun`, as their users run them: Global Arrays' (global/testing of GA's source, with
//! Debian's libga-openmpi.a relinked on libarmci in place of ARMCI-MPI) and ARMCI-MPI's
//! (tests/ of its source, compiled against our armci.h). scripts/fetch-peer-tests fetches
//! the sources. Each job is checked against a list (`tests/peers/ga`,
//! `tests/peers/armci-mpi`) both ways: a program listed as not passing yet that passes
//! fails the test too, so the lists stay true.

#![cfg(feature = "mpi")]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// What a job must do.
#[derive(Debug, PartialEq)]
enum Expect {
    /// Exit 0, no stdout line saying "not OK", and stdout contains the text if one is given.
    Pass(Option<String>),
    /// Exit non-zero (the peer's own suite marks the program as failing by design).
    Fails,
}

/// One line of a list: `SOURCES | RANKS | EXPECT | TODAY | PEER` (see tests/peers/ga).
struct Entry {
    /// Source files, relative to the suite's directory; the program is named after the first.
    sources: Vec<String>,
    ranks: Vec<u32>,
    expect: Expect,
    /// `Some(reason)` when libarmci does not meet `expect` yet.
    not_yet: Option<String>,
    line: usize,
}

impl Entry {
    fn name(&self) -> String {
        let first = Path::new(&self.sources[0]);
        first.file_stem().unwrap().to_string_lossy().into_owned()
    }
}

fn parse_list(list: &str) -> Vec<Entry> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/peers")
        .join(list);
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|(i, l)| {
            let at = format!("{}:{}", path.display(), i + 1);
            let fields: Vec<&str> = l.split('|').map(str::trim).collect();
            let [sources, ranks, expect, today, _peer] = fields[..] else {
                panic!("{at}: {} fields, not 5", fields.len());
            };
            let expect = match expect {
                "pass" => Expect::Pass(None),
                "fails" => Expect::Fails,
                e => match e.strip_prefix("pass:") {
                    Some(text) => Expect::Pass(Some(text.trim().to_owned())),
                    None => panic!("{at}: EXPECT is {e:?}: pass, pass: TEXT or fails"),
                },
            };
            let not_yet = match today {
                "" => None,
                t => Some(
                    t.strip_prefix("not-yet:")
                        .unwrap_or_else(|| panic!("{at}: TODAY is {t:?}: empty or not-yet: WHY"))
                        .trim()
                        .to_owned(),
                ),
            };
            Entry {
                sources: sources.split_whitespace().map(str::to_owned).collect(),
                ranks: ranks
                    .split(',')
                    .map(|r| {
                        r.trim()
                            .parse()
                            .unwrap_or_else(|_| panic!("{at}: ranks {r:?}"))
                    })
                    .collect(),
                expect,
                not_yet,
                line: i + 1,
            }
        })
        .collect()
}

/// Where scripts/fetch-peer-tests put `package`'s sources.
fn peer_source(package: &str) -> PathBuf {
    std::env::var_os("GASPAR_PEER_SOURCES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/gaspar"))
        .join(package)
}

/// The `config.h` GA's test programs include (GA's configure writes it; these are the
/// values of Debian's build: 8-byte Fortran integers, MPI messaging).
const CONFIG_H: &str = "\
#define HAVE_STDIO_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_STRINGS_H 1
#define HAVE_MATH_H 1
#define HAVE_ASSERT_H 1
#define HAVE_UNISTD_H 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_LIMITS_H 1
#define HAVE_STDINT_H 1
#define HAVE_INTTYPES_H 1
#define HAVE_MEMCPY 1
#define HAVE_GETTIMEOFDAY 1
#define MSG_COMMS_MPI 1
#define ENABLE_F77 1
#define F77_FUNC(name,NAME) name ## _
#define F77_FUNC_(name,NAME) name ## _
#define SIZEOF_INT 4
#define SIZEOF_LONG 8
#define SIZEOF_LONG_LONG 8
#define SIZEOF_FLOAT 4
#define SIZEOF_DOUBLE 8
#define SIZEOF_VOIDP 8
#define SIZEOF_F77_INTEGER 8
#define SIZEOF_F77_REAL 4
#define SIZEOF_F77_DOUBLE_PRECISION 8
#define BLAS_SIZE 4
#define F2C_INTEGER_C_TYPE long
#define F2C_REAL_C_TYPE float
#define F2C_DOUBLE_PRECISION_C_TYPE double
";

/// Compiles one program of a suite: `flags` (include paths, defines), the entry's sources
/// (relative to `dir`), then `libs` around libarmci.so of this build.
fn build(entry: &Entry, dir: &Path, out_dir: &Path, flags: &[String], libs: &[&str]) -> PathBuf {
    let program = out_dir.join(entry.name());
    let lib_dir = target_dir();
    // A Fortran program (GA's .F tests, preprocessed) with Debian's GA integer size; the
    // Fortran compiler compiles the C helpers it is listed with too.
    let fortran = entry.sources[0].ends_with(".F");
    let mut cmd = Command::new(if fortran { "mpifort" } else { "mpicc" });
    if fortran {
        cmd.args(["-cpp", "-fdefault-integer-8", "-fallow-argument-mismatch"]);
    }
    let status = cmd
        .args(["-O1", "-w"])
        .args(flags)
        .args(entry.sources.iter().map(|s| dir.join(s)))
        .args(libs)
        .arg(format!("-L{}", lib_dir.display()))
        .arg("-larmci")
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .args(["-lgfortran", "-lm", "-o"])
        .arg(&program)
        .status()
        .expect("mpicc");
    assert!(
        status.success(),
        "building {} failed",
        entry.sources.join(" ")
    );
    program
}

/// Runs `program` at `ranks` ranks under plain mpirun with gaspar's default heap (GA's
/// nbgetput2 needs more than 1 GiB per rank at 2 ranks, which `GASPAR_HEAP_SIZE=auto`
/// gives on one host); `Err` says how it differed.
fn run(program: &Path, ranks: u32, expect: &Expect) -> Result<(), String> {
    let mut cmd = Command::new("mpirun");
    cmd.env_remove("GASPAR_HEAP_SIZE")
        .args(["--oversubscribe", "-n", &ranks.to_string()])
        .arg(program)
        .current_dir(program.parent().unwrap())
        .env_remove("LD_LIBRARY_PATH")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    let out = output_within_timeout(cmd);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail = |s: &str| s.lines().rev().take(6).collect::<Vec<_>>().join(" / ");
    match expect {
        Expect::Fails if out.status.success() => Err("it exited 0".to_owned()),
        Expect::Fails => Ok(()),
        Expect::Pass(_) if !out.status.success() => Err(format!(
            "{}: {} / {}",
            out.status,
            tail(&stdout),
            tail(&stderr)
        )),
        Expect::Pass(_) if stdout.lines().any(|l| l.contains("not OK")) => Err(format!(
            "it says {:?}",
            stdout.lines().find(|l| l.contains("not OK")).unwrap_or("")
        )),
        Expect::Pass(Some(text)) if !stdout.contains(text.as_str()) => {
            Err(format!("no {text:?} in its output: {}", tail(&stdout)))
        }
        Expect::Pass(_) => Ok(()),
    }
}

/// Builds and runs every program of `list` (sources under `dir`), judging each job.
fn check_suite(list: &str, dir: &Path, flags: &[String], libs: &[&str]) {
    // libarmci.so with this test's features (the mpi build).
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "-p",
            "gaspar-armci",
            "--features",
            "gaspar-armci/mpi",
        ])
        .args(target_dir().ends_with("release").then_some("--release"))
        .status()
        .unwrap();
    assert!(status.success(), "cargo build failed");
    let out_dir = target_dir().join(format!("peer-tests-{list}"));
    std::fs::create_dir_all(&out_dir).unwrap();
    std::fs::write(out_dir.join("config.h"), CONFIG_H).unwrap();
    std::fs::write(out_dir.join("config.fh"), "").unwrap();
    let mut failures = Vec::new();
    let mut checked = 0;
    for entry in parse_list(list) {
        let program = build(&entry, dir, &out_dir, flags, libs);
        for &ranks in &entry.ranks {
            checked += 1;
            let what = format!("{} at {ranks} ranks (line {})", entry.name(), entry.line);
            match (run(&program, ranks, &entry.expect), &entry.not_yet) {
                (Ok(()), None) => {}
                (Err(how), Some(reason)) => eprintln!("not yet ({reason}): {what}: {how}"),
                (Err(how), None) => failures.push(format!("{what}: {how}")),
                (Ok(()), Some(_)) => failures.push(format!(
                    "{what}: meets its expectation now: clear its not-yet in tests/peers/{list}"
                )),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} jobs differ from tests/peers/{list}:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("{checked} jobs as tests/peers/{list} says");
}

/// Skips (or, in CI, fails) when a suite's sources are not fetched.
fn fetched(package: &str, marker: &str) -> Option<PathBuf> {
    let dir = peer_source(package);
    if dir.join(marker).exists() {
        return Some(dir);
    }
    skip(&format!(
        "{package}'s test programs are not in {} (scripts/fetch-peer-tests fetches them; \
         GASPAR_PEER_SOURCES names another root)",
        dir.display()
    ));
    None
}

#[test]
fn global_arrays_test_programs_meet_their_expected_outcomes() {
    let Some(source) = fetched("ga", "global/testing/testc.c") else {
        return;
    };
    if !Path::new("/usr/include/ga.h").exists() {
        return skip(
            "Global Arrays is not installed (apt-get install libglobalarrays-dev \
             libscalapack-openmpi-dev liblapack-dev libblas-dev)",
        );
    }
    let out_dir = target_dir().join("peer-tests-ga");
    // GA's tests that call ARMCI directly (lock.c) include "armci.h": ours, the library
    // they are linked with (Debian ships no armci.h beside libga).
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let flags: Vec<String> = [
        "-DHAVE_CONFIG_H".to_owned(),
        "-DMPI".to_owned(),
        format!("-I{}", out_dir.display()),
        format!("-I{}", include.display()),
        format!("-I{}", source.join("global/testing").display()),
        format!("-I{}", source.join("global/src").display()),
        format!("-I{}", source.join("ma").display()),
    ]
    .into();
    check_suite(
        "ga",
        &source.join("global/testing"),
        &flags,
        &["-lga-openmpi", "-lscalapack-openmpi", "-llapack", "-lblas"],
    );
}

#[test]
fn armci_mpi_test_programs_meet_their_expected_outcomes() {
    let Some(source) = fetched("armci-mpi", "tests/test_onesided.c") else {
        return;
    };
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let flags = vec![
        format!("-I{}", include.display()),
        format!("-I{}", source.join("tests/contrib").display()),
    ];
    check_suite("armci-mpi", &source.join("tests"), &flags, &[]);
}
