//! The coarray benchmarks build with the timing module they share (bench/caf/timing.f90,
//! compiled first, as scripts/bench-caf, scripts/bench-caf16 and the benches' headers do)
//! and print what their readers expect: bench/caf/bench.f90 a line `NAME VALUE UNIT` per
//! figure (the scripts' awk reads the fields, memcpy_4MiB and the 4 MiB put and get among
//! them), each of crates/caf/benches/{atomics_alone,transfer_between,is_present,short_sections,copies_4mib}.f90 its
//! one line. Built by gfortran 12 with `gaspar caf` and run with `gaspar run -n 2`; then
//! by gfortran 16 in the sid chroot of scripts/sid-chroot (the headers' compiler), run the
//! same, and built against GCC 16's caf_shmem as the headers' peer command does.

mod common;

use std::process::Command;

use common::*;

/// A benchmark: its source (from the repository's root), the arguments it is run with,
/// and the shape of each line image 1 prints.
struct Bench {
    name: &'static str,
    source: &'static str,
    args: &'static str,
    lines: fn(&str) -> Result<(), String>,
}

const BENCHES: &[Bench] = &[
    Bench {
        name: "bench",
        source: "bench/caf/bench.f90",
        args: "1",
        lines: figures,
    },
    Bench {
        name: "atomics_alone",
        source: "crates/caf/benches/atomics_alone.f90",
        args: "",
        lines: |out| one_line(out, "alone: atomic_add # us, lock_unlock # us"),
    },
    Bench {
        name: "transfer_between",
        source: "crates/caf/benches/transfer_between.f90",
        args: "",
        lines: |out| one_line(out, "x[2] = y[n]: # us"),
    },
    Bench {
        name: "is_present",
        source: "crates/caf/benches/is_present.f90",
        args: "",
        lines: |out| one_line(out, "allocated(o[2]%a): # us"),
    },
    Bench {
        name: "short_sections",
        source: "crates/caf/benches/short_sections.f90",
        args: "",
        lines: |out| {
            one_line(
                out,
                "n 1: put # get # | n 8: put # get # | n 64: put # get # | const 8: put # get # \
                 | const 64: put # get #",
            )
        },
    },
    Bench {
        name: "copies_4mib",
        source: "crates/caf/benches/copies_4mib.f90",
        args: "",
        lines: |out| one_line(out, "put [1], put [2], local (GB/s): # # #"),
    },
];

/// The module every benchmark uses, compiled before it.
const TIMING: &str = "bench/caf/timing.f90";

/// Whether `field` is a number the benchmark measured (finite, not negative).
fn is_figure(field: &str) -> bool {
    field
        .parse::<f64>()
        .is_ok_and(|v| v.is_finite() && v >= 0.0)
}

/// `out` is one line whose fields are `template`'s, each `#` a figure.
fn one_line(out: &str, template: &str) -> Result<(), String> {
    let lines: Vec<&str> = out.lines().filter(|l| !l.trim().is_empty()).collect();
    let [line] = lines[..] else {
        return Err(format!("{} lines, not one: {out:?}", lines.len()));
    };
    let fields: Vec<&str> = line.split_whitespace().collect();
    let want: Vec<&str> = template.split_whitespace().collect();
    let same = fields.len() == want.len()
        && fields
            .iter()
            .zip(&want)
            .all(|(&f, &w)| if w == "#" { is_figure(f) } else { f == w });
    if same {
        Ok(())
    } else {
        Err(format!("{line:?} is not of the form {template:?}"))
    }
}

/// bench.f90's output: every line `NAME VALUE UNIT`, with the figures the scripts use.
fn figures(out: &str) -> Result<(), String> {
    let mut names = Vec::new();
    for line in out.lines().filter(|l| !l.trim().is_empty()) {
        match line.split_whitespace().collect::<Vec<_>>()[..] {
            [name, value, "us" | "ms" | "MB/s"] if is_figure(value) => names.push(name),
            _ => return Err(format!("{line:?} is not NAME VALUE UNIT")),
        }
    }
    let wanted = [
        "put_latency_8B",
        "put_bw_4MiB",
        "get_bw_4MiB",
        "memcpy_4MiB",
        "atomic_add",
        "lock_unlock",
        "event_pingpong",
    ];
    match wanted.iter().find(|w| !names.contains(w)) {
        Some(missing) => Err(format!("no {missing} figure in {out:?}")),
        None => Ok(()),
    }
}

/// What went wrong with `bench` (built by `compiler`), if anything: `build` and `run` are
/// its build and its job at 2 images.
fn check(
    compiler: &str,
    bench: &Bench,
    build: Outcome,
    run: impl FnOnce() -> Outcome,
) -> Option<String> {
    let what = format!("{compiler}: {}", bench.name);
    if build.code != Some(0) {
        return Some(format!("{what}: build failed: {}", build.summary()));
    }
    let run = run();
    if run.code != Some(0) {
        return Some(format!("{what}: run failed: {}", run.summary()));
    }
    (bench.lines)(&run.stdout)
        .err()
        .map(|e| format!("{what}: {e}"))
}

#[test]
fn benchmarks_build_with_their_timing_module_and_print_what_their_readers_expect() {
    if cfg!(feature = "mpi") || !gfortran_installed() {
        return;
    }
    ensure_built();
    let repo = manifest_dir().join("../..");
    let path = |p: &str| repo.join(p).to_string_lossy().into_owned();
    let timing = path(TIMING);
    let mut failures = Vec::new();
    for bench in BENCHES {
        let dir = work_dir("benches/gfortran-12", bench.name);
        let source = path(bench.source);
        let build = gaspar_caf(&dir, &["-O2", &timing, &source, "-o", bench.name]);
        let run = || {
            let mut cmd = Command::new(gaspar());
            cmd.args(["run", "-n", "2", &format!("./{}", bench.name)]);
            cmd.args(bench.args.split_whitespace());
            run_in(&dir, cmd)
        };
        failures.extend(check("gfortran 12", bench, build, run));
    }
    match sid::ready() {
        Err(reason) => skip(&reason),
        Ok(_) => {
            let gaspar = gaspar();
            let gaspar = gaspar.to_string_lossy();
            for bench in BENCHES {
                let dir = work_dir("benches/gfortran-16", bench.name);
                let (name, source) = (bench.name, path(bench.source));
                let build = sid::run(
                    &dir,
                    &format!(
                        "FC=gfortran-16 {gaspar} caf -O2 {timing} {source} -o {name} && \
                         gfortran-16 -O2 -fcoarray=shared {timing} {source} -o {name}-shmem \
                         -lcaf_shmem"
                    ),
                );
                let run = || sid::run(&dir, &format!("{gaspar} run -n 2 ./{name} {}", bench.args));
                failures.extend(check("gfortran 16", bench, build, run));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
