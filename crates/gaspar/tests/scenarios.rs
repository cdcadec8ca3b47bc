//! Multi-process behaviour of world, gmem and gma, through the launcher.

mod common;

use common::*;

fn scenario(transport: &str, procs: u32, name: &str) -> Outcome {
    let out = run_on(transport, procs, &[&example("scenarios"), &name]);
    out.assert_success();
    out
}

fn count(out: &Outcome, needle: &str) -> usize {
    out.stdout.lines().filter(|l| l.contains(needle)).count()
}

#[test]
fn mismatched_collective_allocations_are_reported_on_every_rank() {
    for t in transports() {
        let out = scenario(t, 4, "mismatched-alloc");
        assert_eq!(count(&out, "mismatch detected"), 4, "{}", out.stdout);
    }
}

#[test]
fn a_third_party_copy_chain_ordered_by_handles_arrives_intact() {
    for t in transports() {
        for procs in [3u32, 6] {
            let out = scenario(t, procs, "third-party-chain");
            assert_eq!(
                count(&out, &format!("chain of {} copies ok", procs - 2)),
                1,
                "{}",
                out.stdout
            );
        }
    }
}

#[test]
fn all_ranks_hammering_one_word_with_every_atomic() {
    for t in transports() {
        let out = scenario(t, 4, "atomics-stress");
        assert_eq!(
            count(&out, "atomics ok (80000, -80000, 80000, 0, 0, 10000)"),
            4,
            "{}",
            out.stdout
        );
    }
}

/// The same through MPI's own atomics: on one host the mpi transport's atomics are
/// otherwise processor atomics (`GASPAR_MPI_DIRECT=off` makes them MPI_Fetch_and_op and
/// MPI_Compare_and_swap). Open MPI only: under MPICH an MPI atomic waits for its target's
/// MPI progress, and this job took 38 s at 4 ranks on 2 cores.
#[test]
fn all_ranks_hammering_one_word_through_mpi_atomics() {
    for t in transports().into_iter().filter(|&t| t == "mpi") {
        let out = run_on_with_env(
            JOB_TIMEOUT,
            t,
            4,
            &[("GASPAR_MPI_DIRECT", "off")],
            &[&example("scenarios"), &"atomics-stress"],
        );
        out.assert_success();
        assert_eq!(
            count(&out, "atomics ok (80000, -80000, 80000, 0, 0, 10000)"),
            4,
            "{}",
            out.stdout
        );
    }
}

#[test]
fn registered_memory_is_reachable_and_checked() {
    // Open MPI's one-host component, osc/sm, has no dynamic windows: shm and MPICH.
    for t in transports().into_iter().filter(|&t| t != "mpi") {
        for procs in [2u32, 4] {
            let out = scenario(t, procs, "registered-memory");
            assert_eq!(
                count(&out, "registered memory ok"),
                procs as usize,
                "{}",
                out.stdout
            );
        }
    }
}

#[test]
fn reset_renumbers_the_ranks() {
    for t in transports() {
        let out = scenario(t, 4, "reset");
        for (new, old) in [(0, 3), (1, 2), (2, 1), (3, 0)] {
            assert!(
                out.stdout
                    .contains(&format!("rank {new} (was {old}): reset ok")),
                "{}",
                out.stdout
            );
        }
    }
}

#[test]
fn one_sided_operations_complete_while_the_target_computes() {
    for t in transports() {
        let out = scenario(t, 2, "busy-target");
        assert_eq!(
            count(&out, "on a busy target took"),
            1,
            "{t}: {}",
            out.stdout
        );
        // Registered memory too, where the transport has it: not Open MPI's osc/sm (the
        // `mpi` round's one-host component); under MPICH its dynamic window is the one
        // part of a one-host job that needs the target's progress thread.
        let registered = if t == "mpi" { "none" } else { "ok" };
        let line = format!("rank 0: registered memory on the busy target: {registered}");
        assert!(out.stdout.contains(&line), "{t}: {}", out.stdout);
    }
}

/// Remote atomics are processor atomics where every rank maps the owner's memory (shm;
/// mpi on one host): none of the owner's own processor fetch-adds on the word, nor of
/// the other ranks' remote ones, is lost. With MPI's atomics (`GASPAR_MPI_DIRECT=off`)
/// Open MPI 4.1 lost 611 of 200 000 here.
#[test]
fn remote_atomics_are_atomic_with_the_owners_processor_atomics() {
    for t in transports() {
        for procs in [2u32, 3] {
            let out = scenario(t, procs, "owner-atomics");
            out.assert_success();
            let line = format!(
                "rank 0: owner and remote atomics: total {} ok",
                procs * 100_000
            );
            assert!(
                out.stdout.contains(&line),
                "{t}, {procs} ranks: {}",
                out.stdout
            );
        }
    }
}

#[test]
fn strided_and_vector_transfers_between_ranks() {
    for t in transports() {
        for procs in [2u32, 3] {
            let out = scenario(t, procs, "strided-remote");
            assert_eq!(
                count(&out, "strided and vector transfers ok"),
                procs as usize,
                "{t}: {}",
                out.stdout
            );
        }
    }
}

/// With GASPAR_SHM_PLACEMENT=anywhere the shm segments are mapped where the kernel picks:
/// transfers work as before, and no other rank's memory is said to be at home.
#[test]
fn transfers_work_with_segments_mapped_anywhere() {
    if !transports().contains(&"shm") {
        return;
    }
    let out = run_on_with_env(
        JOB_TIMEOUT,
        "shm",
        2,
        &[("GASPAR_SHM_PLACEMENT", "anywhere")],
        &[&example("scenarios"), &"strided-remote"],
    );
    out.assert_success();
    assert_eq!(
        count(&out, "strided and vector transfers ok"),
        2,
        "{}",
        out.stdout
    );
}

/// Registered memory on the mpi transport needs a one-sided component with dynamic
/// windows: OpenMPI's osc/ucx (osc/sm, which `gaspar run --transport mpi` picks, has none),
/// or MPICH.
#[cfg(feature = "mpi")]
#[test]
fn registered_memory_on_mpi_with_dynamic_windows() {
    if transports().contains(&"mpich") {
        let out = scenario("mpich", 2, "registered-memory");
        assert_eq!(count(&out, "registered memory ok"), 2, "{}", out.stdout);
    }
    if !transports().contains(&"mpi") {
        return;
    }
    for procs in ["2", "4"] {
        let mut cmd = std::process::Command::new("mpirun");
        cmd.args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-n",
            procs,
            "--mca",
            "osc",
            "ucx",
        ])
        .arg(example("scenarios"))
        .arg("registered-memory")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        let out = run_command(cmd);
        out.assert_success();
        assert_eq!(
            count(&out, "registered memory ok"),
            procs.parse::<usize>().unwrap(),
            "{}",
            out.stdout
        );
    }
}

/// The mpi transport reads a strided get either with a derived datatype or as one span
/// sieved locally (`GASPAR_MPI_SIEVE`); both ways, forced, give the same bytes. Through
/// MPI calls (`GASPAR_MPI_DIRECT=off`): on one host strided transfers are otherwise
/// copies through the shared window.
#[test]
fn strided_gets_sieved_or_typed_match_a_reference() {
    for t in transports().into_iter().filter(|t| *t != "shm") {
        for way in ["always", "never"] {
            let env = [("GASPAR_MPI_SIEVE", way), ("GASPAR_MPI_DIRECT", "off")];
            let cases: [(u32, &[&str], &str); 2] = [
                (
                    2,
                    &["strided-random", "100", "3"],
                    "100 random strided cases ok",
                ),
                (3, &["face-get", "3"], "face get ok in 3 rounds"),
            ];
            for (procs, args, needle) in cases {
                let program = example("scenarios");
                let mut job: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&program];
                job.extend(args.iter().map(|a| a as &dyn AsRef<std::ffi::OsStr>));
                let out = run_on_with_env(JOB_TIMEOUT, t, procs, &env, &job);
                out.assert_success();
                assert_eq!(
                    count(&out, needle),
                    procs as usize,
                    "{t} {way}: {}",
                    out.stdout
                );
            }
        }
    }
}

#[test]
fn random_strided_and_vector_transfers_between_ranks_match_a_reference() {
    for t in transports() {
        for (procs, seed) in [(2u32, "1"), (3, "2")] {
            let out = run_on(
                t,
                procs,
                &[&example("scenarios"), &"strided-random", &"150", &seed],
            );
            out.assert_success();
            assert_eq!(
                count(&out, "150 random strided cases ok"),
                procs as usize,
                "{}",
                out.stdout
            );
        }
    }
}

#[test]
fn under_a_program_initialized_mpi_below_thread_multiple_other_threads_are_refused() {
    for t in transports().into_iter().filter(|&t| t != "shm") {
        let out = scenario(t, 2, "mpi-single-thread");
        assert_eq!(
            count(&out, "other threads refused"),
            2,
            "{t}: {}",
            out.stdout
        );
    }
}

#[test]
fn a_get_sees_the_earlier_put_and_strided_puts_land_in_issue_order() {
    for t in transports() {
        for procs in [1u32, 2, 3] {
            let out = scenario(t, procs, "ordering");
            assert_eq!(
                count(&out, "ordering ok in 2000 rounds"),
                procs as usize,
                "{t}: {}",
                out.stdout
            );
        }
    }
}

/// Concurrent accumulates from every rank to every rank (contiguous, strided and vector;
/// int, long, double and complex double; scale one and others) lose no update: on shm,
/// and on mpi when every rank runs on one host, a read-update-write under the target's
/// lock; on mpi through MPI calls (across hosts, or `GASPAR_MPI_DIRECT=off` as here too)
/// one MPI_Accumulate each.
#[test]
fn concurrent_accumulates_from_every_rank_lose_no_update() {
    for t in transports() {
        let through_mpi: &[(&str, &str)] = &[("GASPAR_MPI_DIRECT", "off")];
        let settings: &[&[(&str, &str)]] = if t == "shm" {
            &[&[]]
        } else {
            &[&[], through_mpi]
        };
        for env in settings {
            for procs in [2u32, 3] {
                let out = run_on_with_env(
                    JOB_TIMEOUT,
                    t,
                    procs,
                    env,
                    &[&example("scenarios"), &"accumulate"],
                );
                out.assert_success();
                assert_eq!(
                    count(&out, "accumulates ok in 200 rounds"),
                    procs as usize,
                    "{t} {env:?}: {}",
                    out.stdout
                );
            }
        }
    }
}

#[test]
fn heap_blocks_are_aligned_on_every_transport() {
    for t in transports() {
        let out = scenario(t, 2, "heap-alignment");
        assert_eq!(count(&out, "heap blocks aligned"), 2, "{t}: {}", out.stdout);
    }
}

/// Under an MPI that carries out a put or an accumulate only when the program completes
/// it at the target (as lazy as the standard allows: tests/mpi/deferred_puts.c, preloaded
/// into the ranks through the MPI profiling interface, with OpenMPI and with MPICH), a
/// get still sees
/// the same rank's earlier put, the later of two puts wins, an atomic sees an earlier put,
/// overlapping strided puts land in issue order, and an accumulate lands between the puts
/// around it and is seen by the get after it: gaspar completes the pending puts and
/// accumulates to a target before its next operation there (before an accumulate: the
/// puts).
#[cfg(feature = "mpi")]
#[test]
fn ordering_holds_under_an_mpi_that_defers_puts_until_they_are_completed() {
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mpi/deferred_puts.c");
    for t in transports().into_iter().filter(|&t| t != "shm") {
        let scenarios = std::path::PathBuf::from(program_for(t, example("scenarios").as_os_str()));
        let shim = scenarios.with_file_name("libgaspar_test_deferred_puts.so");
        let compiler = if t == "mpich" { "mpicc.mpich" } else { "mpicc" };
        let compiled = std::process::Command::new(compiler)
            .args(["-shared", "-fPIC", "-O1", "-Wall", "-o"])
            .arg(&shim)
            .arg(&source)
            .status();
        if !compiled.is_ok_and(|s| s.success()) {
            return skip(&format!(
                "{compiler} cannot build the deferred-puts MPI shim"
            ));
        }
        let preload = format!("LD_PRELOAD={}", shim.display());
        let mut cmd = if t == "mpich" {
            let mut cmd = std::process::Command::new("mpiexec.mpich");
            cmd.args(["-n", "2", "-genv", "LD_PRELOAD"]).arg(&shim);
            cmd
        } else {
            let mut cmd = std::process::Command::new("mpirun");
            cmd.args(["-n", "2", "-x", &preload]);
            cmd
        };
        cmd.arg(&scenarios)
            .args(["ordering", "300"])
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        let out = run_command(cmd);
        out.assert_success();
        assert_eq!(
            count(&out, "ordering ok in 300 rounds"),
            2,
            "{t}: {}",
            out.stdout
        );
    }
}

/// Rank 0 makes another call than the rest: every rank names a call other than its own
/// (in a 5-rank job the shm barrier's agreement reaches ranks 2-4 only through others),
/// and the job goes on.
#[test]
fn a_rank_in_another_collective_call_is_named_on_every_rank() {
    for t in transports() {
        for procs in [2, 5] {
            let out = scenario(t, procs, "collective-messages");
            let mut lines = vec![
                "rank 0: mismatched collective: rank 0 called alloc(64) while rank 1 called barrier"
                    .to_string(),
                "rank 0: mismatched collective: rank 0 called free(the block at heap offset 0x0) \
                 while rank 1 called barrier"
                    .to_string(),
            ];
            for rank in 1..procs {
                lines.push(format!(
                    "rank {rank}: mismatched collective: rank {rank} called barrier while rank 0 \
                     called alloc(64)"
                ));
                lines.push(format!(
                    "rank {rank}: mismatched collective: rank {rank} called barrier while rank 0 \
                     called free(the block at heap offset 0x0)"
                ));
            }
            lines.extend((0..procs).map(|rank| format!("rank {rank}: collective messages ok")));
            for line in lines {
                assert_eq!(
                    count(&out, &line),
                    1,
                    "{t}, {procs} ranks: {line}\n{}",
                    out.stdout
                );
            }
        }
    }
}

#[test]
fn transfers_to_another_ranks_heap_stay_inside_the_allocation() {
    for t in transports() {
        let out = scenario(t, 3, "remote-heap-bounds");
        assert_eq!(
            count(&out, "remote heap bounds ok"),
            3,
            "{t}: {}",
            out.stdout
        );
    }
}

#[test]
fn collectives_from_two_threads_of_each_rank_are_serialized() {
    for t in transports() {
        let out = scenario(t, 3, "waits-threaded-collectives");
        assert_eq!(
            count(&out, "600 barriers from two threads"),
            3,
            "{t}: {}",
            out.stdout
        );
    }
}

#[test]
fn two_threads_of_each_rank_put_get_and_add_while_one_calls_barriers() {
    for t in transports() {
        let out = scenario(t, 3, "waits-threaded-rma");
        assert_eq!(
            count(&out, "two threads, counter 4000"),
            3,
            "{t}: {}",
            out.stdout
        );
    }
}

/// `wait_until` on words of this rank's heap, set by another rank with a put and with
/// atomics after rank 0 has gone to sleep (scripts/test runs it in release mode too, where
/// a hoisted poll would hang).
#[test]
fn wait_until_wakes_on_a_put_and_on_atomics_from_another_rank() {
    for t in transports() {
        let out = scenario(t, 2, "waits-until");
        assert_eq!(
            count(&out, "rank 0: woken with 42, -3, 7, -1"),
            1,
            "{t}: {}",
            out.stdout
        );
    }
}

/// A polling loop over a blocking get sees another rank's later put (scripts/test runs it
/// in release mode, where the compiler could hoist a plain load out of the loop).
#[test]
fn a_polling_get_loop_sees_another_ranks_put() {
    for t in transports() {
        let out = scenario(t, 2, "polling-get");
        assert_eq!(
            count(&out, "rank 0: the polling loop saw 42"),
            1,
            "{t}: {}",
            out.stdout
        );
    }
}

#[test]
fn transfers_to_another_ranks_local_blocks_stay_inside_the_block() {
    for t in transports() {
        let out = scenario(t, 2, "remote-local-bounds");
        assert_eq!(
            count(&out, "remote local bounds ok"),
            2,
            "{t}: {}",
            out.stdout
        );
    }
    if cfg!(feature = "mpi") && mpirun_installed() {
        let out = plain_mpirun(2, &example("scenarios"), &["remote-local-bounds"]);
        out.assert_success();
        assert_eq!(
            count(&out, "remote local bounds ok"),
            2,
            "plain mpirun: {}",
            out.stdout
        );
    }
}

/// `GASPAR_HEAP_SIZE=auto` (the default): 4 GiB where a reservation costs nothing (shm;
/// OpenMPI's osc/sm on one node, within half of /dev/shm), 256 MiB on osc/ucx and MPICH. The heap
/// users see is that less the 64 KiB list of local allocations at its top.
#[test]
fn the_default_heap_is_large_where_reserving_it_is_free() {
    let seen = |out: &Outcome| -> Vec<u64> {
        out.assert_success();
        out.stdout
            .lines()
            .filter_map(|l| l.split(" heap ").nth(1)?.trim().parse().ok())
            .collect()
    };
    const LIST: u64 = 64 << 10;
    let out = run_on("shm", 2, &[&example("scenarios"), &"heap-size"]);
    assert_eq!(seen(&out), [(4 << 30) - LIST; 2], "{}", out.stdout);
    if transports().contains(&"mpich") {
        let out = run_on("mpich", 2, &[&example("scenarios"), &"heap-size"]);
        assert_eq!(seen(&out), [(256 << 20) - LIST; 2], "MPICH: {}", out.stdout);
    }
    if !(cfg!(feature = "mpi") && mpirun_installed()) {
        return;
    }
    let stat = std::process::Command::new("stat")
        .args(["-f", "-c", "%b %S", "/dev/shm"])
        .output()
        .expect("stat runs");
    let words: Vec<u64> = String::from_utf8_lossy(&stat.stdout)
        .split_whitespace()
        .map(|w| w.parse().expect("a number"))
        .collect();
    let share = words[0] * words[1] / 2 / 2;
    let expected = (1u64 << share.ilog2()).clamp(256 << 20, 4 << 30) - LIST;
    let out = plain_mpirun(2, &example("scenarios"), &["heap-size"]);
    assert_eq!(seen(&out), [expected; 2], "plain mpirun: {}", out.stdout);
    let mut ucx = std::process::Command::new("mpirun");
    ucx.args([
        "--allow-run-as-root",
        "--mca",
        "osc",
        "ucx",
        "-x",
        "UCX_TLS",
        "-n",
        "2",
    ])
    .arg(example("scenarios"))
    .arg("heap-size")
    .env("UCX_TLS", "self,cma,tcp");
    let out = run_command(ucx);
    assert_eq!(
        seen(&out),
        [(256 << 20) - LIST; 2],
        "osc/ucx: {}",
        out.stdout
    );
}

/// A rank `gaspar run` starts never has a second thread (the launcher measures the
/// sleep and wake-up the waits' budget needs, which takes two threads): in a process that
/// ever had one, glibc's malloc locks its arena on every call above its thread cache (a
/// gfortran 16 section put of 4 KiB, whose temporary is such a block, took 70 ns against
/// caf_shmem's 53 while the rank measured it itself).
#[test]
fn ranks_started_by_gaspar_run_never_start_a_thread() {
    let out = scenario("shm", 2, "single-threaded");
    for rank in 0..2 {
        let line = out
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("rank {rank}: ")))
            .unwrap_or_else(|| panic!("rank {rank} said nothing:\n{}", out.stdout));
        assert!(line.contains("single-threaded true"), "{line}");
        assert!(
            !line.contains("spin limit 0 ns"),
            "no budget measured: {line}"
        );
    }
    // A program started without the launcher is a job of one rank: it measures the
    // budget only when asked (or when a wait needs it), not at start.
    let alone = std::process::Command::new(example("scenarios"))
        .arg("single-threaded")
        .output()
        .expect("run the scenarios example");
    let stdout = String::from_utf8_lossy(&alone.stdout);
    assert!(
        alone.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&alone.stderr)
    );
    assert!(stdout.contains("rank 0: single-threaded true"), "{stdout}");
    assert!(
        !stdout.contains("spin limit 0 ns"),
        "no budget measured: {stdout}"
    );
}
