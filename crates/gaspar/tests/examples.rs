//! The examples, each run through the launcher as a user would, checked by their output
//! (each example also checks its own results and aborts the job when one is wrong), on
//! every transport (see `common::transports`).

mod common;

use common::*;

fn sorted_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

#[test]
fn hello_reports_rank_and_size() {
    for t in transports() {
        for procs in [1u32, 4] {
            let out = run_on(t, procs, &[&example("hello")]);
            out.assert_success();
            let expected: Vec<String> = (0..procs)
                .map(|r| format!("hello from rank {r} of {procs}"))
                .collect();
            assert_eq!(sorted_lines(&out.stdout), expected);
        }
    }
}

#[test]
fn ring_passes_every_rank_to_its_right_neighbour() {
    for t in transports() {
        for procs in [1u32, 2, 5] {
            let out = run_on(t, procs, &[&example("ring")]);
            out.assert_success();
            for r in 0..procs {
                let left = (r + procs - 1) % procs;
                let line = format!("rank {r}: ring of {procs} ok, last value from rank {left}");
                assert!(
                    out.stdout.contains(&line),
                    "missing {line:?} in {}",
                    out.stdout
                );
            }
        }
    }
}

#[test]
fn counter_is_exactly_n_times_100_000() {
    for t in transports() {
        let out = run_on(t, 4, &[&example("counter")]);
        out.assert_success();
        for r in 0..4 {
            let line = format!("rank {r}: counter = 400000 (expected 400000)");
            assert!(
                out.stdout.contains(&line),
                "missing {line:?} in {}",
                out.stdout
            );
        }
    }
}

#[test]
fn allgather_delivers_every_block_everywhere() {
    for t in transports() {
        for (procs, block) in [
            (1u32, "64"),
            (2, "8"),
            (3, "1000"),
            (5, "1024"),
            (8, "4096"),
        ] {
            let out = run_on(t, procs, &[&example("allgather"), &block]);
            out.assert_success();
            let ok = out
                .stdout
                .lines()
                .filter(|l| l.contains(&format!("allgather of {procs} x {block} bytes ok")))
                .count();
            assert_eq!(ok, procs as usize, "{}", out.stdout);
        }
    }
}

#[test]
fn halo_exchange_matches_the_serial_computation() {
    for t in transports() {
        for (procs, cells, steps) in [
            (1u32, "50", "20"),
            (2, "1", "30"),
            (3, "100", "100"),
            (4, "1000", "200"),
        ] {
            let out = run_on(t, procs, &[&example("halo"), &cells, &steps]);
            out.assert_success();
            for r in 0..procs {
                let line = format!("rank {r}: halo of {procs} x {cells} cells, {steps} steps ok");
                assert!(
                    out.stdout.contains(&line),
                    "missing {line:?} in {}",
                    out.stdout
                );
            }
        }
    }
}

#[test]
fn allgather_larger_than_starter_memory_is_an_error_not_a_crash() {
    for t in transports() {
        // 4 ranks x 32 KiB blocks need 128 KiB of the 64 KiB starter memory.
        let out = run_on(t, 4, &[&example("allgather"), &"32768"]);
        assert!(!out.status.success(), "{}", out.stderr);
        assert!(
            out.stderr.contains("runs past the end of its segment"),
            "{}",
            out.stderr
        );
    }
}

/// A program built without the `mpi` feature, started by mpirun as several ranks, says so
/// and fails, instead of running as independent one-rank jobs.
#[cfg(not(feature = "mpi"))]
#[test]
fn a_program_without_the_mpi_feature_refuses_to_run_under_mpirun() {
    if !mpirun_installed() {
        return;
    }
    let mut cmd = std::process::Command::new("mpirun");
    cmd.args(["-n", "2", "--oversubscribe", "--allow-run-as-root"])
        .arg(example("hello"))
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    let out = run_command(cmd);
    assert_ne!(out.code(), Some(0), "{}", out.stdout);
    assert!(
        out.stderr.contains("built without gaspar's `mpi` feature"),
        "{}",
        out.stderr
    );
    assert!(!out.stdout.contains("hello from rank"), "{}", out.stdout);
}

/// The examples under the MPI libraries' own launchers exactly as a user types them,
/// `mpirun -n 2 PROG` (OpenMPI with its defaults, whose osc/rdma crashes on a 64-bit
/// compare-and-swap unless gaspar steers it away; the README's
/// `mpirun -n 2 target/release/examples/counter`) and `mpiexec.mpich -n 2 PROG`.
#[cfg(feature = "mpi")]
#[test]
fn the_examples_run_under_plain_mpirun_and_mpiexec() {
    let cases: [(&str, &[&str], &str); 4] = [
        ("hello", &[], "hello from rank 1 of 2"),
        ("ring", &[], "rank 1: ring of 2 ok, last value from rank 0"),
        ("allgather", &["1000"], "allgather of 2 x 1000 bytes ok"),
        ("counter", &[], "counter = 200000 (expected 200000)"),
    ];
    for t in transports().into_iter().filter(|&t| t != "shm") {
        for (name, args, line) in cases {
            let out = if t == "mpi" {
                plain_mpirun(2, &example(name), args)
            } else {
                let program = example(name);
                let mut job: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&program];
                for a in args {
                    job.push(a);
                }
                run_on(t, 2, &job)
            };
            out.assert_success();
            assert!(out.stdout.contains(line), "{t} {name}: {}", out.stdout);
        }
    }
}

/// `gaspar run --transport mpi` starts the job with the launcher of the MPI library the
/// gaspar binary was built against: a gaspar and a program built against MPICH make one
/// job of N ranks (under Open MPI's mpirun they were N jobs of one rank), and `--label`
/// prefixes each line with its rank. (The `mpi` transport's own tests start every job so.)
#[cfg(feature = "mpi")]
#[test]
fn gaspar_run_starts_an_mpich_build_with_mpich_s_launcher() {
    for t in transports().into_iter().filter(|&t| t == "mpich") {
        let program = program_for(t, std::ffi::OsStr::new("hello"));
        let gaspar = std::path::Path::new(&program)
            .parent()
            .and_then(std::path::Path::parent)
            .expect("the MPICH examples' directory has a parent")
            .join("gaspar");
        let mut cmd = std::process::Command::new(&gaspar);
        cmd.args(["run", "--transport", "mpi", "-n", "3", "--label"])
            .arg(&program);
        let out = run_command(cmd);
        out.assert_success();
        let expected: Vec<String> = (0..3)
            .map(|r| format!("[{r}] hello from rank {r} of 3"))
            .collect();
        assert_eq!(sorted_lines(&out.stdout), expected, "{}", gaspar.display());
    }
}

/// Where the user chose OpenMPI's osc/rdma (with `--mca osc rdma`, or in OpenMPI's
/// parameter file `~/.openmpi/mca-params.conf`), gaspar respects the choice and cannot
/// steer: the job stops with one line saying what to pass, instead of a crash.
#[cfg(feature = "mpi")]
#[test]
fn a_chosen_osc_rdma_stops_the_job_with_what_to_pass() {
    if !transports().contains(&"mpi") {
        return;
    }
    let home = std::env::temp_dir().join(format!("gaspar-osc-choice-{}", std::process::id()));
    std::fs::create_dir_all(home.join(".openmpi")).unwrap();
    std::fs::write(home.join(".openmpi/mca-params.conf"), "osc = rdma\n").unwrap();
    for by_file in [false, true] {
        let mut cmd = std::process::Command::new("mpirun");
        cmd.args(["-n", "2"]);
        if by_file {
            cmd.env("HOME", &home);
        } else {
            cmd.args(["--mca", "osc", "rdma"]);
        }
        cmd.arg(example("counter"))
            .arg("1000")
            .env_remove("OMPI_MCA_osc")
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        let out = run_command(cmd);
        assert_ne!(out.code(), Some(0), "{}", out.stdout);
        assert_ne!(out.code(), None, "ended by a signal: {}", out.stderr);
        assert!(
            out.stderr.contains("(allowed by its setting `osc = rdma`)")
                && out
                    .stderr
                    .contains("pass `--mca osc sm` to mpirun on one host"),
            "chosen by file: {by_file}: {}",
            out.stderr
        );
        assert!(!out.stdout.contains("counter ="), "{}", out.stdout);
    }
    let _ = std::fs::remove_dir_all(&home);
}

/// The time per operation a timing probe printed on its line starting with `prefix`.
fn times_per_operation(stdout: &str, prefix: &str) -> Vec<f64> {
    stdout
        .lines()
        .filter_map(|line| line.strip_prefix(prefix))
        .filter_map(|rest| rest.split_whitespace().next()?.parse().ok())
        .collect()
}

#[test]
fn copy_loop_times_every_mode_on_shm() {
    // The README's short-copy figures (`copy_loop MODE SIZE N`): one line per round, five
    // rounds, each a positive time.
    for mode in ["put", "get", "get-handle", "memcpy"] {
        let out = run_on("shm", 2, &[&example("copy_loop"), &mode, &"64", &"1000"]);
        out.assert_success();
        let times = times_per_operation(&out.stdout, &format!("{mode} 64: "));
        assert_eq!(times.len(), 5, "{mode}: {}", out.stdout);
        assert!(times.iter().all(|&ns| ns > 0.0), "{mode}: {}", out.stdout);
    }
    // The paired modes: gaspar's loop and memcpy's alternated, one line with both medians
    // and memcpy's time over gaspar's.
    for mode in ["put+memcpy", "get+memcpy"] {
        let out = run_on("shm", 2, &[&example("copy_loop"), &mode, &"1024", &"1000"]);
        out.assert_success();
        let line = out
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{mode} 1024: ")))
            .unwrap_or_else(|| panic!("{mode}: {}", out.stdout));
        let numbers: Vec<f64> = line
            .split([' ', ','])
            .filter_map(|w| w.trim_end_matches('x').parse().ok())
            .collect();
        let [ours, memcpy, ratio] = numbers[..] else {
            panic!("{mode}: {line}");
        };
        assert!(ours > 0.0 && memcpy > 0.0, "{mode}: {line}");
        assert!((ratio - memcpy / ours).abs() < 0.01, "{mode}: {line}");
    }
}

#[test]
fn strided_loop_times_puts_and_gets_and_reads_back_its_rows() {
    // The probe of the Rust API's strided fixed cost (`strided_loop put|get ROWS N`): five
    // positive times, then its own check of the rows read back (exit 1 otherwise).
    for mode in ["put", "get"] {
        for rows in ["2", "300"] {
            let out = run_on("shm", 2, &[&example("strided_loop"), &mode, &rows, &"200"]);
            out.assert_success();
            let times = times_per_operation(&out.stdout, &format!("{mode} {rows} rows: "));
            assert_eq!(times.len(), 5, "{mode}: {}", out.stdout);
            assert!(times.iter().all(|&ns| ns > 0.0), "{mode}: {}", out.stdout);
        }
    }
}

// op_loop is built with the `mpi` feature only (its raw modes call MPI).
#[cfg(feature = "mpi")]
#[test]
fn op_loop_finishes_with_more_ranks_than_cores_on_the_mpi_path() {
    // The README's oversubscribed figures: rank 0's puts and gets to rank 1 while ranks
    // 1-3 wait in the barrier, every operation an MPI call (`GASPAR_MPI_DIRECT=off`), so
    // that a sleeping target must be woken or reached by its timed wake-ups; each job
    // must end within the time limit and print its time per operation.
    for t in transports() {
        for mode in ["addr-put", "addr-get"] {
            let out = run_on_with_env(
                JOB_TIMEOUT,
                t,
                4,
                &[("GASPAR_MPI_DIRECT", "off")],
                &[&example("op_loop"), &mode, &"2000"],
            );
            out.assert_success();
            let times = times_per_operation(&out.stdout, &format!("{mode}: "));
            assert_eq!(times.len(), 1, "{t} {mode}: {}", out.stdout);
            assert!(times[0] > 0.0, "{t} {mode}: {}", out.stdout);
        }
    }
}

// The alternated modes of `scripts/bench-mpi-hosts`: each prints both medians and a ratio
// inside the range of its repetitions; pair-fadd also checks that every addition arrived.
#[cfg(feature = "mpi")]
#[test]
fn op_loop_pairs_gaspar_with_the_raw_mpi_calls() {
    for t in transports().into_iter().filter(|t| *t != "shm") {
        for mode in ["pair-put", "pair-get", "pair-fadd"] {
            let out = run_on_with_env(
                JOB_TIMEOUT,
                t,
                2,
                &[("GASPAR_MPI_DIRECT", "off")],
                &[&example("op_loop"), &mode, &"500"],
            );
            out.assert_success();
            let line = out
                .stdout
                .lines()
                .find(|l| l.starts_with(&format!("{mode}: gaspar ")))
                .unwrap_or_else(|| panic!("{t} {mode}: {}", out.stdout));
            let numbers: Vec<f64> = line
                .split(|c: char| !(c.is_ascii_digit() || c == '.'))
                .filter_map(|w| w.parse().ok())
                .collect();
            // gaspar ns, raw ns, ratio, low, high, repetitions, operations
            assert_eq!(numbers.len(), 7, "{t}: {line}");
            let (ours, raw, ratio, low, high) =
                (numbers[0], numbers[1], numbers[2], numbers[3], numbers[4]);
            assert!(ours > 0.0 && raw > 0.0, "{t}: {line}");
            assert!(low <= ratio && ratio <= high, "{t}: {line}");
            assert_eq!(numbers[6], 500.0, "{t}: {line}");
        }
    }
}
