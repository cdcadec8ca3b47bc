//! The typed API (`Runtime`, `SymmetricArray`) across ranks, through the launcher, on
//! every transport (see `common::transports`); the rank program is
//! `examples/typed_scenarios.rs`.

mod common;

use common::*;

fn scenario(transport: &str, procs: u32, name: &str) -> Outcome {
    run_on(transport, procs, &[&example("typed_scenarios"), &name])
}

fn count(out: &Outcome, needle: &str) -> usize {
    out.stdout.lines().filter(|l| l.contains(needle)).count()
}

/// Data put with a signal is there when the receiver sees the signal: 50 rounds of
/// 32 KiB around a ring with set signals, then one added signal from every rank.
#[test]
fn put_with_signal_delivers_the_data_before_the_signal() {
    for t in transports() {
        for procs in [2u32, 3, 4] {
            let out = scenario(t, procs, "put-signal");
            out.assert_success();
            assert_eq!(
                count(&out, "50 signalled rounds from rank"),
                procs as usize,
                "{t}: {}",
                out.stdout
            );
            assert_eq!(
                count(&out, "8 MiB signalled from rank"),
                procs as usize,
                "{t}: {}",
                out.stdout
            );
            assert_eq!(
                count(&out, &format!("rank 0: {procs} added signals ok")),
                1,
                "{t}: {}",
                out.stdout
            );
        }
    }
}

#[test]
fn typed_arrays_move_elements_and_refuse_misuse() {
    for t in transports() {
        for procs in [1u32, 3] {
            let out = scenario(t, procs, "typed-array");
            out.assert_success();
            assert_eq!(
                count(&out, "typed array ok"),
                procs as usize,
                "{t}: {}",
                out.stdout
            );
        }
    }
}

/// The same through the mpi transport's MPI calls (`GASPAR_MPI_DIRECT=off`): on one host
/// contiguous puts and gets are otherwise copies through the shared window, and the typed
/// arrays' heap paths have a branch of each kind.
#[cfg(feature = "mpi")]
#[test]
fn typed_arrays_move_elements_through_mpi_calls_too() {
    if !mpirun_installed() {
        skip("mpirun is not installed");
        return;
    }
    for procs in [1u32, 3] {
        let out = run_on_with_env(
            JOB_TIMEOUT,
            "mpi",
            procs,
            &[("GASPAR_MPI_DIRECT", "off")],
            &[&example("typed_scenarios"), &"typed-array"],
        );
        out.assert_success();
        assert_eq!(
            count(&out, "typed array ok"),
            procs as usize,
            "{}",
            out.stdout
        );
    }
}

/// An array dropped without `free` ends the job at the rank's next collective call, with
/// a message naming it.
#[test]
fn a_dropped_array_ends_the_job_naming_the_leak() {
    for t in transports() {
        let out = scenario(t, 2, "leak");
        assert!(!out.status.success(), "{t}: {}", out.stdout);
        assert!(
            out.stderr.contains("rank 0: dropped without free: SymmetricArray<u64> of 10 elements (80 bytes at heap offset"),
            "{t}: {}",
            out.stderr
        );
    }
}

/// An error returned with `?` drops the arrays on its way out: the job reports the error,
/// not the leak.
#[test]
fn an_early_error_is_reported_rather_than_the_leak_it_causes() {
    for t in transports() {
        let out = scenario(t, 2, "leak-behind-error");
        assert!(!out.status.success(), "{t}: {}", out.stdout);
        assert!(
            out.stderr.contains("the error to report"),
            "{t}: {}",
            out.stderr
        );
        assert!(
            !out.stderr.contains("dropped without free"),
            "{t}: {}",
            out.stderr
        );
    }
}
