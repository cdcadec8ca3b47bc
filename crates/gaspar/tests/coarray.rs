//! The coarray engine on 1 to 4 images, on every transport, launched as a user launches
//! a program (`gaspar run -n N`): each scenario of `examples/coarray_engine.rs` checks
//! its own values and prints one `ok` line per image.

mod common;

use common::*;

/// How many images printed `<name> ok` (each prints `image N: <name> ok`).
fn ok_lines(out: &Outcome, name: &str) -> usize {
    out.stdout
        .lines()
        .filter(|l| l.ends_with(&format!(": {name} ok")))
        .count()
}

fn scenario_on_every_image(name: &str) {
    for t in transports() {
        for procs in 1..=4u32 {
            let out = run_on(t, procs, &[&example("coarray_engine"), &name]);
            out.assert_success();
            let ok = ok_lines(&out, name);
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
fn teams_renumber_images_and_scope_syncs_transfers_and_collectives() {
    scenario_on_every_image("teams");
}

#[test]
fn the_typed_api_moves_sections_by_ranges_with_steps() {
    scenario_on_every_image("typed");
}

/// Runs example `name` on 1 to 4 images on every transport; each image must print a
/// line containing `needle`.
fn example_on_every_image(name: &str, needle: &str) {
    for t in transports() {
        for procs in 1..=4u32 {
            let out = run_on(t, procs, &[&example(name)]);
            out.assert_success();
            let ok = out.stdout.matches(needle).count();
            assert_eq!(ok, procs as usize, "{t}, {procs} images: {}", out.stdout);
        }
    }
}

#[test]
fn coarray_heat_matches_the_serial_run() {
    example_on_every_image("coarray_heat", "equal to the serial run");
}

#[test]
fn coarray_sum_adds_up_with_co_sum() {
    example_on_every_image("coarray_sum", "= 500000500000 ok");
}

#[test]
fn coarray_events_carries_every_item_from_producers_to_the_consumer() {
    example_on_every_image("coarray_events", " ok");
}

#[test]
fn coarray_queue_hands_out_every_task_once_under_a_lock() {
    example_on_every_image("coarray_queue", " tasks ok");
}

/// A co_broadcast's source that stops right after it (without waiting for the others,
/// which reach their co_broadcast later): every image still gets the values.
#[test]
fn a_broadcast_source_that_stops_at_once_leaves_its_value_to_every_image() {
    scenario_on_every_image("broadcast-then-stop");
}

#[test]
fn images_that_go_on_see_a_stopped_image_in_syncs_and_status() {
    scenario_on_every_image("stop-early");
    // The Rust API's normal end (finalize, no exit) stops the image the same way.
    scenario_on_every_image("finalize-early");
}

/// On `shm` a small co_broadcast goes one way, in notes from the source to each image: the
/// source runs 100 calls ahead of images that have not reached them yet.
#[test]
fn a_broadcast_source_runs_ahead_of_images_not_there_yet() {
    let name = "broadcasts-ahead";
    for procs in 2..=4u32 {
        let limit = std::time::Duration::from_secs(30);
        let out = run_on_within(limit, "shm", procs, &[&example("coarray_engine"), &name]);
        out.assert_success();
        let ok = ok_lines(&out, name);
        assert_eq!(ok, procs as usize, "{procs} images: {}", out.stdout);
    }
}

/// A failed image: `fail image`, or a process killed by a signal. On `gaspar run` the other
/// images go on among themselves (MPI without fault tolerance cannot: the job ends). The
/// job's status: 0 after a `fail image` (the program's own doing, which the others
/// handled), the killed image's after a crash; the launcher's last line says which rank
/// failed and that the others went on.
#[test]
fn images_that_go_on_see_a_failed_image_in_syncs_and_status() {
    for (scenario, status) in [("fail-image", 0), ("killed-image", 128 + 6)] {
        for procs in 2..=4u32 {
            let out = run_on("shm", procs, &[&example("coarray_engine"), &scenario]);
            let ok = ok_lines(&out, scenario);
            assert_eq!(
                ok, procs as usize,
                "{procs} images: {}\n{}",
                out.stdout, out.stderr
            );
            assert_eq!(out.code(), Some(status), "{}", out.stderr);
            let last = out.stderr.lines().last().unwrap_or("");
            assert!(
                last.starts_with("gaspar run: rank ")
                    && last.ends_with("the other ranks went on without it"),
                "{}",
                out.stderr
            );
        }
    }
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
        // gaspar run exits with the code (and adds no line: the image said why); mpirun
        // with the code of MPI_Abort; MPICH's mpiexec too, or with 9 when its SIGKILL
        // reached another rank before MPICH ended it (README), the code in its first line.
        if t == "mpich" {
            assert!(
                matches!(out.code(), Some(5 | 9)),
                "{t}: exit status {:?}\nstdout:\n{}\nstderr:\n{}",
                out.code(),
                out.stdout,
                out.stderr
            );
            assert!(
                out.stderr.contains("application called MPI_Abort(")
                    && out.stderr.contains(", 5) - process"),
                "{}",
                out.stderr
            );
        } else {
            assert_eq!(out.code(), Some(5), "{t}: {}", out.stderr);
        }
        if t == "shm" {
            assert!(!out.stderr.contains("gaspar run"), "{}", out.stderr);
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{t}: error stop took {:?}",
            started.elapsed()
        );
    }
}
