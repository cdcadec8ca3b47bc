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
