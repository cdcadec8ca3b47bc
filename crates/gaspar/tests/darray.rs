//! Distributed arrays with prefetching on 1 to 4 ranks, on every transport, launched as a
//! user launches a program (`gaspar run -n N`): each scenario of
//! `examples/darray_check.rs` checks its own values and prints one `ok` line per rank.

mod common;

use common::*;

fn scenario_on_every_rank(name: &str) {
    for t in transports() {
        for procs in 1..=4u32 {
            let out = run_on(t, procs, &[&example("darray_check"), &name]);
            out.assert_success();
            let ok = out
                .stdout
                .lines()
                .filter(|l| l.ends_with(&format!(": {name} ok")))
                .count();
            assert_eq!(ok, procs as usize, "{t}, {procs} ranks: {}", out.stdout);
        }
    }
}

#[test]
fn jacobi_with_stencil_prefetch_matches_the_serial_run_in_every_variant() {
    scenario_on_every_rank("stencil");
}

#[test]
fn local_prefetched_and_remote_reads_agree_and_writes_go_through() {
    scenario_on_every_rank("access");
}

#[test]
fn automatic_consistency_refills_after_a_barrier_and_manual_waits_for_update() {
    scenario_on_every_rank("consistency");
}

#[test]
fn every_prefetch_pattern_covers_what_its_reference_says_in_1_2_and_3_d() {
    scenario_on_every_rank("patterns");
}

#[test]
fn whole_array_and_slice_copies_move_strided_blocks() {
    scenario_on_every_rank("slices");
}

#[test]
fn invalid_indices_slices_ranks_and_grids_are_typed_errors() {
    scenario_on_every_rank("errors");
}

#[test]
fn a_lock_is_an_acquire_after_which_automatic_entries_are_refilled() {
    scenario_on_every_rank("lock");
}

#[test]
fn threads_of_a_rank_read_prefetched_data_at_once_also_during_a_refill() {
    scenario_on_every_rank("threads");
}

/// An array dropped without `free` ends the job at the rank's next collective darray call,
/// with a message naming it (as a dropped `SymmetricArray` does).
#[test]
fn a_dropped_array_ends_the_job_naming_the_leak() {
    for t in transports() {
        let out = run_on(t, 2, &[&example("darray_check"), &"leak"]);
        assert!(!out.status.success(), "{t}: {}", out.stdout);
        assert!(
            out.stderr
                .contains("dropped without free: DistArray<u64, 1> of extents [8] ("),
            "{t}: {}",
            out.stderr
        );
    }
}

#[test]
fn the_access_latency_benchmark_checks_its_reads_and_reports_every_kind() {
    for t in transports() {
        for procs in [1u32, 2] {
            let out = run_on(t, procs, &[&example("darray_access")]);
            out.assert_success();
            let reported = out.stdout.lines().any(|l| {
                l.starts_with("ns per read: local ")
                    && l.contains("automatic")
                    && l.contains("remote")
            });
            assert_eq!(reported, procs > 1, "{t}, {procs} ranks: {}", out.stdout);
        }
    }
}

/// The value of `name=VALUE` in `line` (a test failure when missing or malformed).
fn field<T: std::str::FromStr>(line: &str, name: &str) -> T {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name}=VALUE in {line:?}"))
}

/// On one host a read from another rank does not wait for that rank to stop computing:
/// the probe's read during the source's 200 ms of local reads takes less than those 200 ms
/// (across hosts over MPI RMA on TCP it does not: `scripts/bench-darray --hosts`).
#[test]
fn a_remote_read_on_one_host_completes_while_its_source_computes() {
    for t in transports() {
        for procs in [2u32, 3] {
            let out = run_on(t, procs, &[&example("darray_progress")]);
            out.assert_success();
            let lines: Vec<(u64, f64, u64)> = out
                .stdout
                .lines()
                .filter(|l| l.starts_with("darray-progress "))
                .map(|l| {
                    (
                        field(l, "busy_ms"),
                        field(l, "remote_read_us"),
                        field(l, "source_local_reads"),
                    )
                })
                .collect();
            let busy: Vec<u64> = lines.iter().map(|l| l.0).collect();
            assert_eq!(busy, [0, 50, 200], "{t}, {procs} ranks: {}", out.stdout);
            for (busy_ms, wait_us, source_reads) in lines {
                assert_eq!(
                    source_reads > 0,
                    busy_ms > 0,
                    "{t}, {procs}: {}",
                    out.stdout
                );
                if busy_ms == 200 {
                    assert!(
                        wait_us < busy_ms as f64 * 1e3,
                        "{t}, {procs}: {}",
                        out.stdout
                    );
                }
            }
        }
        let alone = run_on(t, 1, &[&example("darray_progress")]);
        assert!(!alone.status.success() && alone.stderr.contains("needs 2 ranks"));
    }
}

/// Every benchmark of the LAPPS paper (section 6.3), every variant, at a small size: each
/// checks its result against a serial computation and says so.
#[test]
fn every_benchmark_and_variant_matches_its_serial_computation() {
    let benchmarks = [
        ("sobel", "40", "2"),
        ("heat", "12", "2"),
        ("transpose", "24", "2"),
        ("dgemm", "40", "1"),
        ("sparse", "16", "2"),
    ];
    let variants = ["base", "handopt", "ac", "mc", "ac-sd", "mc-sd"];
    for t in transports() {
        for (name, size, iterations) in benchmarks {
            for (procs, variant) in variants
                .iter()
                .map(|v| (2u32, *v))
                .chain([(3, "ac"), (3, "mc-sd")])
            {
                let program = example(&format!("darray_{name}"));
                let out = run_on(t, procs, &[&program, &variant, &size, &iterations]);
                out.assert_success();
                let line = format!(
                    "darray-bench {name} variant={variant} ranks={procs} size={size} \
                     iterations={iterations} "
                );
                let reported = out
                    .stdout
                    .lines()
                    .any(|l| l.starts_with(&line) && l.ends_with(" check=passed"));
                assert!(reported, "{t}, {name} {variant} at {procs}: {}", out.stdout);
            }
        }
    }
}

/// The synthetic benchmarks of section 6.2 check every value they read and report each
/// measurement.
#[test]
fn the_synthetic_benchmarks_check_their_reads_and_report_each_measurement() {
    for t in transports() {
        let out = run_on(t, 2, &[&example("darray_synthetic"), &"32"]);
        out.assert_success();
        for kind in [
            "init: all-to-all prefetch ac ",
            "update: ",
            "ratio: radius 4 ",
        ] {
            assert!(
                out.stdout.lines().any(|l| l.starts_with(kind)),
                "{t}: no {kind:?} line in {}",
                out.stdout
            );
        }
    }
}
