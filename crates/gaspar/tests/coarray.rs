//! The coarray engine on 1 to 4 images, on every transport, launched as a user launches
//! a program (`gaspar run -n N`): each scenario of `examples/coarray_engine.rs` checks
//! its own values and prints one `ok` line per image.

mod common;

use common::*;

fn scenario_on_every_image(name: &str) {
    for t in transports() {
        for procs in 1..=4u32 {
            let out = run_on(t, procs, &[&example("coarray_engine"), &name]);
            out.assert_success();
            let ok = out
                .stdout
                .lines()
                .filter(|l| l.ends_with(&format!(": {name} ok")))
                .count();
            assert_eq!(ok, procs as usize, "{t}, {procs} images: {}", out.stdout);
        }
    }
}

#[test]
fn allocations_are_zeroed_aligned_and_checked_for_equal_sizes() {
    scenario_on_every_image("alloc");
}

#[test]
fn sections_move_with_strides_negative_strides_conversions_and_third_parties() {
    scenario_on_every_image("transfer");
}

#[test]
fn sync_images_counts_its_signals_across_repeated_and_overlapping_syncs() {
    scenario_on_every_image("sync");
}

#[test]
fn atomics_are_atomic_across_images() {
    scenario_on_every_image("atomics");
}

#[test]
fn locks_exclude_each_other_and_report_their_stat_codes() {
    scenario_on_every_image("locks");
}

#[test]
fn events_carry_a_producer_consumer_exchange() {
    scenario_on_every_image("events");
}

#[test]
fn collectives_reduce_every_type_deterministically_to_one_image_or_all() {
    scenario_on_every_image("collectives");
}

#[test]
fn images_that_go_on_see_a_stopped_image_in_syncs_and_status() {
    scenario_on_every_image("stop-early");
}

#[test]
fn stop_code_is_the_exit_status_of_the_job() {
    for t in transports() {
        for procs in [1u32, 3] {
            let out = run_on(t, procs, &[&example("coarray_engine"), &"stop-code"]);
            assert_eq!(out.code(), Some(3), "{t}: {}", out.stderr);
            assert_eq!(out.stdout.matches("stopping").count(), procs as usize);
        }
    }
}

#[test]
fn error_stop_ends_every_image_with_its_code() {
    for t in transports() {
        let started = std::time::Instant::now();
        let out = run_on(t, 3, &[&example("coarray_engine"), &"error-stop"]);
        // Under mpirun the process that leaves without MPI_Finalize ends the job through
        // MPI_Abort, whose exit status is 1, not the error stop code.
        let expected = if t == "shm" { 5 } else { 1 };
        assert_eq!(out.code(), Some(expected), "{t}: {}", out.stderr);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{t}: error stop took {:?}",
            started.elapsed()
        );
    }
}
