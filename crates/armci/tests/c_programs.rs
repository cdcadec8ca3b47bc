//! C programs written against armci.h, compiled with cc, linked to libarmci.so and run
//! through `gaspar run` as users run them.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Once;

use common::*;

/// Builds libarmci.so and the gaspar launcher with this test's features (a test build
/// does not always refresh the cdylib in target/<profile>; a no-op when up to date).
fn ensure_built() {
    static BUILD: Once = Once::new();
    BUILD.call_once(|| {
        let dir = target_dir();
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "-p", "gaspar-armci", "-p", "gaspar"]);
        if cfg!(feature = "mpi") {
            cmd.args(["--features", "gaspar-armci/mpi"]);
        }
        if dir.ends_with("release") {
            cmd.arg("--release");
        }
        assert!(cmd.status().unwrap().success(), "cargo build failed");
    });
}

fn compile(name: &str) -> PathBuf {
    compile_with("cc", name, "")
}

/// Compiles tests/c/NAME.c with `compiler`; tests running at the same time use different
/// `variant`s so that none overwrites a program another is running.
fn compile_with(compiler: &str, name: &str, variant: &str) -> PathBuf {
    ensure_built();
    compile_against(&target_dir(), compiler, name, variant)
}

/// Compiles tests/c/NAME.c with `compiler` against the libarmci.so in `lib_dir`.
fn compile_against(lib_dir: &Path, compiler: &str, name: &str, variant: &str) -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = target_dir().join(format!("armci-test-{variant}{name}"));
    let status = Command::new(compiler)
        .arg("-O1")
        .arg("-Wall")
        .arg("-I")
        .arg(manifest.join("include"))
        .arg(manifest.join("tests/c").join(format!("{name}.c")))
        .arg("-L")
        .arg(lib_dir)
        .arg("-larmci")
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .arg("-o")
        .arg(&out)
        .status()
        .expect("cc");
    assert!(status.success(), "compiling {name}.c failed");
    out
}

/// `gaspar run -n procs program args`; a job that hangs fails the test.
fn run(procs: u32, program: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(target_dir().join("gaspar"));
    cmd.args(["run", "-n", &procs.to_string()])
        .arg(program)
        .args(args);
    output_within_timeout(cmd)
}

/// Runs tests/c/NAME.c under the launcher with each job size; every rank must print
/// "NAME ok rank R of N" (the programs check their own results and abort otherwise).
fn runs_everywhere(name: &str, sizes: &[u32]) {
    let program = compile(name);
    for &procs in sizes {
        let out = run(procs, &program, &[]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{name}, {procs} ranks: {}\n{}",
            stdout,
            String::from_utf8_lossy(&out.stderr)
        );
        for rank in 0..procs {
            assert!(
                stdout.contains(&format!("{name} ok rank {rank} of {procs}")),
                "{stdout}"
            );
        }
    }
}

#[test]
fn armci_programs_run_under_the_launcher() {
    runs_everywhere("armci_basic", &[1, 2, 4]);
}

/// Strided shapes changing from call to call (libarmci keeps the recent ones): values and
/// gaps checked. On shm libarmci moves them with plain loads and stores into the mapped
/// heaps; with the buffered method forced they go through gaspar's strided layer and the
/// transport instead, which is checked too. Last, an I/O vector across two blocks.
#[test]
fn strided_shapes_that_change_from_call_to_call() {
    runs_everywhere("armci_strided_shapes", &[1, 2, 3]);
    let program = compile("armci_strided_shapes");
    let mut cmd = Command::new(target_dir().join("gaspar"));
    cmd.args(["run", "-n", "2"])
        .arg(&program)
        .env("GASPAR_STRIDED_METHOD", "buffered");
    let out = output_within_timeout(cmd);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("armci_strided_shapes ok rank 1 of 2"),
        "buffered: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Local buffers in ARMCI_Malloc memory, which other processes may write: contiguous,
/// strided and vector puts and gets, accumulates, local strided packing, a message,
/// broadcast and reduction, values checked (strided gets and unpacking must leave the gaps
/// between rows alone).
#[test]
fn local_buffers_in_armci_memory_move_the_right_values() {
    runs_everywhere("armci_heap_local", &[2, 4]);
}

/// ARMCI_Rmw from 4 ranks at once, fetch-and-add and swap of int and long: every old
/// value comes back exactly once (the program checks sums and sums of squares).
#[test]
fn rmw_from_four_ranks_at_once_is_atomic() {
    runs_everywhere("armci_rmw", &[4]);
}

/// Mutex counts are per process: rank 0 alone creates mutexes, every rank locks them
/// (then the last rank alone); the counters they guard lose no update.
#[test]
fn mutexes_created_on_one_rank_only_guard_every_ranks_updates() {
    runs_everywhere("armci_mutex_counts", &[1, 2, 4]);
}

/// The profiling interface: a program calling PARMCI_Init/Malloc/Put/Get/Barrier/Free/
/// Finalize links and moves the right data.
#[test]
fn parmci_names_do_what_their_armci_names_do() {
    runs_everywhere("armci_parmci", &[1, 2, 4]);
}

/// A program that defines its own ARMCI_Put and ARMCI_Barrier (counting, then calling
/// PARMCI_Put / PARMCI_Barrier) intercepts exactly its own calls, and the data moves.
#[test]
fn a_program_intercepts_armci_calls_through_parmci() {
    runs_everywhere("armci_intercept", &[1, 2, 4]);
}

/// armcix.h: groups split by color and key and duplicated, mutex handles on a split
/// group with mutexes on one member only, taken by trylock loops and locks.
#[test]
fn armcix_groups_and_mutex_handles_work_as_in_armci_mpi() {
    runs_everywhere("armcix_groups_mutexes", &[1, 2, 3, 4]);
}

/// Disjoint groups created in one ARMCI_Group_create call, each rank passing its own
/// group's list (as Global Arrays does).
#[test]
fn disjoint_groups_are_created_in_one_call() {
    runs_everywhere("armci_disjoint_groups", &[1, 2, 3, 4]);
}

#[test]
fn armci_groups_work_as_in_armci_mpi() {
    runs_everywhere("armci_groups", &[1, 2, 3, 5]);
}

#[test]
fn bad_input_ends_the_job_with_a_message_naming_the_call() {
    let program = compile("armci_bad_input");
    for (case, message) in [
        ("address", "ARMCI_Put: address"),
        ("past-end", "ARMCI_PutS: address"),
        ("gets-past-end", "ARMCI_GetS: address"),
        ("gets-null-local", "ARMCI_GetS: null local buffer"),
        (
            "gets-local-past-heap",
            "run out of the ARMCI memory it starts in",
        ),
        (
            "puts-local-past-heap",
            "run out of the ARMCI memory it starts in",
        ),
        ("acc-null-scale", "ARMCI_Acc: null scale"),
        ("zero-bytes-rank", "ARMCI_Get: rank -1 is out of range"),
        (
            "acc-zero-datatype",
            "ARMCI_Acc: unknown accumulate datatype 12345",
        ),
        ("putv-zero-rank", "ARMCI_PutV: rank 2 is out of range"),
        ("negative-stride", "ARMCI_PutS: negative"),
        ("rank", "ARMCI_Put: rank 7 is out of range"),
        ("overlap", "write some bytes twice"),
        ("vector-past-end", "ARMCI_PutV: address"),
        ("vector-null", "ARMCI_GetV: segment 1: remote"),
        ("null-count", "ARMCI_PutS: null count array"),
        (
            "null-pointer-array",
            "ARMCI_PutV: set 0: null pointer array",
        ),
        ("null-iov", "ARMCI_GetV: null iov"),
        ("null-pack-count", "armci_read_strided: null count array"),
        ("malloc-vs-barrier", "mismatched collective"),
        ("malloc-vs-barrier", "called exchange \"Malloc\""),
        ("freed", "ARMCI_Put: address"),
        ("freed", "no live block is there"),
        ("never-allocated", "no live block is there"),
        ("past-block", "runs past the end of the block of 1024 bytes"),
        (
            "past-own-size",
            "runs past the end of the block of 64 bytes",
        ),
        (
            "group-pid",
            "ARMCI_Group_create: pid_list[1] = 99 is not a rank",
        ),
        (
            "group-duplicate",
            "ARMCI_Group_create: rank 0 appears twice",
        ),
        (
            "mutex-elsewhere",
            "ARMCI_Lock: mutex 0 does not exist on rank 1 (0 were created there)",
        ),
    ] {
        let out = run(2, &program, &[case]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{case}: {stderr}");
        assert!(stderr.contains(message), "{case}: {stderr}");
        assert!(!stdout.contains("not reached"), "{case}: {stdout}");
    }
}

/// The programs under an MPI launcher exactly as a user types it (`mpirun -n 2 PROG`:
/// OpenMPI with its defaults, whose osc/rdma crashes on a 64-bit compare-and-swap unless
/// gaspar steers it away, also when the program called MPI_Init before ARMCI_Init), or
/// `mpiexec.mpich -n 2 PROG`: an ARMCI-MPI program with MPI calls of its own, then the
/// basic and group programs (no MPI calls; gaspar initializes MPI itself). `compile`
/// builds a program with the C compiler given, against the right libarmci.
#[cfg(feature = "mpi")]
fn run_under_a_launcher(launcher: &str, mpicc: &str, compile: impl Fn(&str, &str) -> PathBuf) {
    for (name, compiler) in [
        ("armci_with_mpi", mpicc),
        ("armci_mpi_header", mpicc),
        ("armci_group_comm", mpicc),
        ("armci_basic", "cc"),
        ("armci_strided_shapes", "cc"),
        ("armci_groups", "cc"),
        ("armci_heap_local", "cc"),
        ("armci_rmw", "cc"),
        ("armci_mutex_counts", "cc"),
        ("armci_parmci", "cc"),
        ("armci_intercept", "cc"),
        ("armcix_groups_mutexes", "cc"),
        ("armci_disjoint_groups", "cc"),
    ] {
        let program = compile(compiler, name);
        let mut cmd = Command::new(launcher);
        // As from a user's shell: cargo's LD_LIBRARY_PATH (target/<profile>) would take
        // the OpenMPI build of libarmci over the program's run path.
        cmd.args(["-n", "2"])
            .arg(&program)
            .env_remove("LD_LIBRARY_PATH")
            .env_remove("OMPI_MCA_osc")
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        let out = output_within_timeout(cmd);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{launcher} {name}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for rank in 0..2 {
            assert!(
                stdout.contains(&format!("{name} ok rank {rank} of 2")),
                "{launcher} {name}: {stdout}"
            );
        }
    }
}

#[cfg(feature = "mpi")]
#[test]
fn armci_mpi_programs_run_unchanged_under_plain_mpirun() {
    if Command::new("mpicc").arg("--version").output().is_err() {
        return skip("mpicc is not installed (apt-get install libopenmpi-dev)");
    }
    run_under_a_launcher("mpirun", "mpicc", |compiler, name| {
        compile_with(compiler, name, "mpirun-")
    });
}

/// The same under MPICH: the programs are built against a libarmci built with MPICH,
/// in `GASPAR_TEST_MPICH_ARMCI` (scripts/test builds it).
#[cfg(feature = "mpi")]
#[test]
fn armci_mpi_programs_run_unchanged_under_mpiexec_mpich() {
    let Some(lib_dir) = std::env::var_os("GASPAR_TEST_MPICH_ARMCI") else {
        return skip(
            "GASPAR_TEST_MPICH_ARMCI does not name a libarmci built with MPICH (scripts/test \
             builds one when MPICH is installed)",
        );
    };
    run_under_a_launcher("mpiexec.mpich", "mpicc.mpich", |compiler, name| {
        compile_against(Path::new(&lib_dir), compiler, name, "mpich-")
    });
}

/// A program that initialized MPI itself on a one-sided component gaspar cannot work
/// with (OpenMPI's osc/rdma, chosen by the user) stops with one line saying what to pass.
#[cfg(feature = "mpi")]
#[test]
fn an_mpi_program_on_osc_rdma_stops_at_armci_init_with_what_to_pass() {
    if Command::new("mpicc").arg("--version").output().is_err() {
        return skip("mpicc is not installed (apt-get install libopenmpi-dev)");
    }
    let program = compile_with("mpicc", "armci_with_mpi", "rdma-");
    let mut cmd = Command::new("mpirun");
    cmd.args(["-n", "2", "--mca", "osc", "rdma"])
        .arg(&program)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    let out = output_within_timeout(cmd);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("gaspar armci: ARMCI_Init: ")
                && l.contains("osc/rdma")
                && l.contains("pass `--mca osc sm`")),
        "{stderr}"
    );
}

/// A rank killed while another waits for it (holding the mutex it waits for, or owing it
/// a message): the waiting rank sees the job's abort flag and ends with the one-line
/// message naming its call, instead of being killed by the launcher after the grace.
#[test]
fn a_rank_waiting_for_a_killed_rank_ends_with_a_message() {
    let program = compile("armci_holder_dies");
    for (case, call) in [("mutex", "ARMCI_Lock"), ("message", "armci_msg_rcv")] {
        let out = run(2, &program, &[case]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stdout.contains("rank 0 waits"), "{case}: {stdout}");
        assert!(
            stderr.contains(&format!(
                "rank 0 aborted the job: {call}: the job was aborted"
            )),
            "{case}: {stderr}"
        );
        assert!(stderr.contains("rank 1 (pid"), "{case}: {stderr}");
        assert_eq!(out.status.code(), Some(137), "{case}: {stderr}");
    }
}

/// The shared-memory build and a program that calls MPI_Init itself, under `gaspar run
/// -n 2`: each process is a one-rank MPI job while ARMCI sees 2 ranks. ARMCI_Init stops
/// it with a line saying how to start the program (under `mpirun`, gaspar's start-up
/// already says the build lacks the `mpi` feature).
#[cfg(not(feature = "mpi"))]
#[test]
fn an_mpi_program_on_the_shared_memory_build_stops_at_armci_init() {
    if Command::new("mpicc").arg("--version").output().is_err() {
        return skip("mpicc is not installed (apt-get install libopenmpi-dev)");
    }
    let program = compile_with("mpicc", "armci_with_mpi", "shm-");
    let mut cmd = Command::new(target_dir().join("gaspar"));
    cmd.args(["run", "-n", "2"])
        .arg(&program)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    let out = output_within_timeout(cmd);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.lines().any(|l| l.contains(
            "ARMCI_Init: this program initialized MPI itself (an MPI world of 1), but this \
             libarmci is the shared-memory build, running 2 ranks"
        ) && l
            .ends_with("start the program with mpirun or `gaspar run --transport mpi`")),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("armci_with_mpi ok"));
}

/// Global Arrays relinked: Debian's libga-openmpi.a (libglobalarrays-dev) with libarmci
/// (MPI build) in place of ARMCI-MPI, under plain `mpirun` at 2 and 4 ranks: GA_Initialize
/// duplicates the world group's communicator, creates disjoint groups, and NGA_Acc,
/// NGA_Get and GA_Ddot give the right values.
#[cfg(feature = "mpi")]
#[test]
fn global_arrays_runs_on_libarmci() {
    if !Path::new("/usr/include/ga.h").exists() {
        return skip(
            "Global Arrays is not installed (apt-get install libglobalarrays-dev \
             libscalapack-openmpi-dev liblapack-dev libblas-dev)",
        );
    }
    ensure_built();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib_dir = target_dir();
    let program = lib_dir.join("armci-test-ga_relink");
    let status = Command::new("mpicc")
        .arg("-O1")
        .arg(manifest.join("tests/c/ga_relink.c"))
        .args([
            "-lga-openmpi",
            "-lscalapack-openmpi",
            "-llapack",
            "-lblas",
            "-lgfortran",
        ])
        .arg("-L")
        .arg(&lib_dir)
        .arg("-larmci")
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .arg("-lm")
        .arg("-o")
        .arg(&program)
        .status()
        .expect("mpicc");
    assert!(status.success(), "linking ga_relink.c failed");
    for procs in [2, 4] {
        let mut cmd = Command::new("mpirun");
        cmd.args(["--oversubscribe", "-n", &procs.to_string()])
            .arg(&program)
            .env_remove("LD_LIBRARY_PATH")
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        let out = output_within_timeout(cmd);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{procs} ranks: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for rank in 0..procs {
            assert!(
                stdout.contains(&format!("ga_relink ok rank {rank} of {procs}")),
                "{stdout}"
            );
        }
    }
}
