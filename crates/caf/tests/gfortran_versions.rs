//! Every Fortran program of tests/fortran (and examples/) compiled by gfortran 13, 14, 15
//! and 16 with `gaspar caf` and run with `gaspar run -n 2` and `-n 4`, inside the Debian
//! sid chroot scripts/sid-chroot makes (Debian 12 has gfortran 12 only), against the
//! outcome tests/fortran/EXPECTED lists. gfortran 13 and 14 speak gfortran 12's ABI, so a
//! `not-yet` there holds for them too; gfortran 15 and 16 use the accessor family, where
//! every program must meet its expectation. Needs root and debootstrap (or the chroot
//! made already).

mod common;

use common::expected::{self, Launch, Today};
use common::*;

/// The compilers, and whether each uses the accessor family (gfortran 15 and later).
const COMPILERS: &[(&str, bool)] = &[
    ("gfortran-13", false),
    ("gfortran-14", false),
    ("gfortran-15", true),
    ("gfortran-16", true),
];
/// The job sizes run for each program and compiler.
const JOB_SIZES: &[u32] = &[2, 4];
/// Programs a compiler gets wrong by itself, or that it compiles into code the library
/// cannot check (an invalid program's subscripts inside a generated accessor), with what
/// it does, and whether the job differs from its expectation every time (checked both
/// ways then: a changed compiler shows here) or only in some interleavings of the images.
const COMPILER_BUGS: &[(&str, &str, &str, bool)] = &[
    (
        "gfortran-15",
        "sections",
        "internal compiler error in check_add_new_component (fortran/coarray.cc)",
        true,
    ),
    (
        "gfortran-16",
        "sections",
        "internal compiler error in check_add_new_component (fortran/coarray.cc)",
        true,
    ),
    (
        "gfortran-15",
        "component_bounds",
        "an invalid program: the generated accessor indexes the component unchecked (as caf_shmem runs it)",
        true,
    ),
    (
        "gfortran-16",
        "component_bounds",
        "an invalid program: the generated accessor indexes the component unchecked (as caf_shmem runs it)",
        true,
    ),
    (
        "gfortran-15",
        "substring_gets",
        "`t = s[j](3:5)`: error: size of variable 'caf_res' is too large",
        true,
    ),
    (
        "gfortran-16",
        "substring_gets",
        "`t = s[j](3:5)`: error: size of variable 'caf_res' is too large",
        true,
    ),
    (
        "gfortran-15",
        "locks",
        "`total[1] = total[1] + 1` compiled as a send of the LOCAL total + 1 (no get_from_remote)",
        true,
    ),
    (
        "gfortran-15",
        "teams",
        "`x[1] = x[1] + me` compiled as a send of the LOCAL x + me, wrong unless image 1 runs last",
        false,
    ),
];

#[test]
fn every_program_meets_its_expectation_with_gfortran_13_to_16() {
    let Some(gaspar) = sid::ready_with_gaspar() else {
        return;
    };
    let sources: std::collections::BTreeMap<_, _> = programs().into_iter().collect();
    let entries = expected::read(&manifest_dir().join("tests/fortran/EXPECTED"));
    let mut failures = Vec::new();
    let mut checked = 0;
    for &(compiler, accessors) in COMPILERS {
        for (name, source) in &sources {
            let dir = work_dir(&format!("gfortran-versions/{compiler}"), name);
            let built = sid::gaspar_caf(&dir, compiler, source, name);
            for entry in entries.iter().filter(|e| &e.program == name) {
                for &n in JOB_SIZES {
                    if !entry.launches.contains(&Launch::Gaspar(n)) {
                        continue;
                    }
                    checked += 1;
                    let outcome = built
                        .clone()
                        .map(|()| sid::run(&dir, &format!("{gaspar} run -n {n} ./{name}")));
                    let result = entry
                        .expect
                        .met_by(&outcome, Some(&expected::ok_line(name, n)));
                    let what = format!("{compiler}: {name} at {n} images");
                    let bug = COMPILER_BUGS
                        .iter()
                        .find(|&&(c, p, _, _)| c == compiler && p == name);
                    match (result, &entry.today) {
                        (Ok(()), _) if bug.is_some_and(|b| b.3) => failures.push(format!(
                            "{what}: meets its expectation now: remove it from COMPILER_BUGS"
                        )),
                        (Err(how), _) if bug.is_some() => {
                            eprintln!("compiler bug ({}): {what}: {how}", bug.unwrap().2)
                        }
                        (Ok(()), _) => {}
                        (Err(how), Today::NotYet(reason)) if !accessors => {
                            eprintln!("not yet ({reason}): {what}: {how}")
                        }
                        (Err(how), _) => failures.push(format!("{what}: {how}")),
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} jobs differ from tests/fortran/EXPECTED:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("{checked} jobs as tests/fortran/EXPECTED expects");
}

/// A program `gaspar caf` links for gfortran 16 (with the assembly that sends GCC 16's
/// changed names to the library's GCC 16 forms) describes those names as functions that
/// end inside `.text`: a name without its own size took the library function's, which ran
/// past the end of `.text`, and valgrind stopped on the program with an assertion.
/// A gfortran 16 program built by `gaspar caf` and started as caf_shmem's are
/// (`GFORTRAN_NUM_IMAGES=4 ./prog`) runs 4 images.
#[test]
fn gfortran_16_programs_start_gfortran_num_images_images_alone() {
    let Some(_gaspar) = sid::ready_with_gaspar() else {
        return;
    };
    let name = "collectives";
    let source = manifest_dir().join(format!("tests/fortran/{name}.f90"));
    let dir = work_dir("gfortran-versions/num-images", name);
    sid::gaspar_caf(&dir, "gfortran-16", &source, name)
        .unwrap_or_else(|e| panic!("gaspar caf with gfortran-16: {e}"));
    let out = sid::run(&dir, &format!("GFORTRAN_NUM_IMAGES=4 ./{name}"));
    assert_eq!(out.code, Some(0), "{}", out.summary());
    assert_eq!(
        out.stdout.trim(),
        expected::ok_line(name, 4),
        "{}",
        out.summary()
    );
}

#[test]
fn gfortran_16_programs_give_the_shims_their_own_size() {
    let Some(_gaspar) = sid::ready_with_gaspar() else {
        return;
    };
    let source = manifest_dir().join("tests/fortran/scalar_put_get.f90");
    let dir = work_dir("gfortran-versions/symbols", "scalar_put_get");
    sid::gaspar_caf(&dir, "gfortran-16", &source, "scalar_put_get")
        .unwrap_or_else(|e| panic!("gaspar caf with gfortran-16: {e}"));
    let sections = sid::run(&dir, "readelf -SW ./scalar_put_get");
    let symbols = sid::run(&dir, "readelf -sW ./scalar_put_get");
    assert_eq!(symbols.code, Some(0), "{}", symbols.summary());
    // `[13] .text PROGBITS 0000000000002310 002310 000979 00 AX 0 0 16`
    let text = sections
        .stdout
        .lines()
        .find_map(|l| {
            let rest = l.split_once(']')?.1;
            let f: Vec<_> = rest.split_whitespace().collect();
            (f.first() == Some(&".text")).then(|| {
                let hex = |s: &str| u64::from_str_radix(s, 16).unwrap();
                let (index, start) = (
                    l.split_once(']')?.0.trim_start_matches([' ', '[']),
                    hex(f[2]),
                );
                Some((index.trim().to_owned(), start, start + hex(f[4])))
            })?
        })
        .unwrap_or_else(|| panic!("no .text in:\n{}", sections.stdout));
    let (index, start, end) = text;
    let mut checked = 0;
    for line in symbols.stdout.lines() {
        // `47: 0000000000002c70 5 FUNC GLOBAL DEFAULT 13 _gfortran_caf_send_to_remote`
        let f: Vec<_> = line.split_whitespace().collect();
        if f.len() < 8 || f[3] != "FUNC" || f[6] != index || !f[7].starts_with("_gfortran_caf_") {
            continue;
        }
        let value = u64::from_str_radix(f[1], 16).unwrap();
        let size: u64 = f[2].parse().unwrap();
        assert!(
            value >= start && value + size <= end,
            "{} at {value:#x}, {size} bytes, outside .text {start:#x}..{end:#x}",
            f[7]
        );
        checked += 1;
    }
    assert!(
        checked > 0,
        "no _gfortran_caf_ function defined in the program:\n{}",
        symbols.stdout
    );
}

/// libcaf_gaspar leaves no hole in the program's malloc heap: gfortran 16 allocates a
/// temporary for every section transfer, and one carved from a hole (between blocks that
/// stay) is split from it and merged back into it by every statement's malloc and free,
/// glibc's slow path (a 4 KiB section put 20-40 % slower than caf_shmem's). The library's
/// start-up once called getifaddrs (an 11 KB hole) and made its own allocations there
/// (2.5 KB); tests/heap/largest_hole.c walks the heap from inside the program.
#[test]
fn gfortran_16_programs_keep_a_heap_without_holes() {
    let Some(gaspar) = sid::ready_with_gaspar() else {
        return;
    };
    let dir = work_dir("gfortran-versions/heap", "heap_shape");
    let sources = manifest_dir().join("tests/heap");
    let build = sid::run(
        &dir,
        &format!(
            "gcc -O2 -c {c} -o largest_hole.o && \
             FC=gfortran-16 {gaspar} caf {f} largest_hole.o -o heap_shape",
            c = sources.join("largest_hole.c").to_string_lossy(),
            f = sources.join("heap_shape.f90").to_string_lossy(),
        ),
    );
    assert_eq!(build.code, Some(0), "{}", build.summary());
    let out = sid::run(&dir, &format!("{gaspar} run -n 2 ./heap_shape"));
    assert_eq!(out.code, Some(0), "{}", out.summary());
    let hole: i64 = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("largest hole: ")?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no figure:\n{}", out.summary()));
    assert!(
        hole >= 0,
        "the walk did not end at the top chunk:\n{}",
        out.summary()
    );
    // Requests up to 1032 bytes are the thread cache's; a larger one needs a chunk of
    // 1056 bytes or more. None such may lie under live blocks (the library before this
    // test: 12944 bytes from getifaddrs, then 2592 from its own allocations).
    assert!(
        hole < 1056,
        "a free chunk of {hole} bytes under live blocks"
    );
}
