//! The three memory methods of the XcalableMP coarray paper (RS, RA, CA; chosen by
//! `GASPAR_COARRAY_MEMORY`) under the coarray tests' allocation and transfer checks, on 1
//! to 4 images on every transport, launched as a user launches them. Registered memory
//! on mpi (RA, CA, and CA's `register` under every method) needs dynamic windows:
//! OpenMPI's osc/ucx, which plain `mpirun --mca osc ucx` selects (`gaspar run --transport
//! mpi` picks osc/sm, which has none); RS under `gaspar run` is tests/coarray.rs' case.

mod common;

use std::process::Command;

use common::*;

const METHODS: [&str; 3] = ["rs", "ra", "ca"];
const SCENARIOS: [&str; 3] = ["alloc", "transfer", "memory"];

/// `coarray_engine SCENARIO` on `procs` images of `transport` under `method`.
fn job(transport: &str, procs: u32, method: &str, scenario: &str) -> Outcome {
    let mut cmd = if transport == "mpi" {
        let mut cmd = Command::new("mpirun");
        cmd.args([
            "--allow-run-as-root",
            "--oversubscribe",
            "--mca",
            "osc",
            "ucx",
        ])
        // UCX's posix shared-memory transport crashes unpacking a dynamic window's remote
        // key at 4 ranks (OpenMPI 4.1, UCX 1.13: "open(/proc/0/fd/..)"); cma moves the bytes.
        .args(["-x", "UCX_TLS", "-n", &procs.to_string()])
        .env("UCX_TLS", "self,cma,tcp")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        cmd
    } else {
        let mut cmd = Command::new(gaspar());
        cmd.args(["run", "--transport", transport, "-n", &procs.to_string()]);
        cmd
    };
    cmd.arg(program_for(
        transport,
        example("coarray_engine").as_os_str(),
    ))
    .arg(scenario)
    .env("GASPAR_COARRAY_MEMORY", method);
    run_command(cmd)
}

fn every_method_on_every_image(transport_filter: impl Fn(&str) -> bool) {
    for t in transports().into_iter().filter(|t| transport_filter(t)) {
        for method in METHODS {
            for procs in 1..=4u32 {
                for scenario in SCENARIOS {
                    let out = job(t, procs, method, scenario);
                    out.assert_success();
                    let ok = out
                        .stdout
                        .lines()
                        .filter(|l| l.ends_with(&format!(": {scenario} ok")))
                        .count();
                    assert_eq!(
                        ok, procs as usize,
                        "{t} {method} {scenario}, {procs} images: {}{}",
                        out.stdout, out.stderr
                    );
                }
            }
        }
    }
}

#[test]
fn every_memory_method_allocates_and_transfers_on_shm() {
    every_method_on_every_image(|t| t == "shm");
}

/// Exists in builds with the mpi transport (the suite's mpi round), where it must run.
#[cfg(feature = "mpi")]
#[test]
fn every_memory_method_allocates_and_transfers_on_mpi() {
    if !transports().contains(&"mpi") {
        skip("mpirun is missing");
        return;
    }
    every_method_on_every_image(|t| t == "mpi");
}

#[test]
fn an_unknown_memory_method_is_refused_with_the_variable_named() {
    let out = job("shm", 2, "heap", "alloc");
    assert!(!out.status.success(), "{}", out.stdout);
    assert!(
        out.stderr
            .contains("GASPAR_COARRAY_MEMORY=\"heap\" is not rs, ra or ca"),
        "{}",
        out.stderr
    );
}
