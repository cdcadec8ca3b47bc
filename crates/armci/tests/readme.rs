//! README.md's ARMCI commands, run exactly as written through `sh -c` in a directory laid
//! out as the repository root (`crates` and `target` link to the repository's) holding the
//! user's `prog.c`:
//!
//! ```sh
//! cargo build --release
//! cc -I crates/armci/include prog.c -L target/release -larmci -Wl,-rpath,$PWD/target/release -o prog
//! target/release/gaspar run -n 4 ./prog
//! ```

#[allow(dead_code)] // `skip` serves the mpi tests; this test skips nothing
mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use nix::fcntl::{Flock, FlockArg};

/// A user's ARMCI program: each rank puts its rank into its right neighbour's ARMCI
/// memory and checks what its left neighbour put into its own.
const PROG_C: &str = r#"#include <armci.h>
#include <message.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    ARMCI_Init_args(&argc, &argv);
    int me = armci_msg_me(), nproc = armci_msg_nproc();
    int **base = malloc(sizeof(int *) * nproc);
    ARMCI_Malloc((void **)base, sizeof(int));
    int right = (me + 1) % nproc, left = (me + nproc - 1) % nproc;
    ARMCI_Put(&me, base[right], sizeof(int), right);
    ARMCI_Barrier();
    if (*base[me] != left) {
        fprintf(stderr, "rank %d got %d, expected %d\n", me, *base[me], left);
        ARMCI_Error("wrong value", 1);
    }
    printf("prog ok rank %d of %d: got %d\n", me, nproc, *base[me]);
    ARMCI_Free(base[me]);
    free(base);
    ARMCI_Finalize();
    return 0;
}
"#;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

/// `sh -c SCRIPT` in `dir`, with a user's environment (not cargo's library path of this
/// test, which would take the debug build's libarmci over the program's run path).
fn shell(dir: &Path, script: &str) -> std::process::Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(script)
        .current_dir(dir)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("CARGO_TARGET_DIR");
    output_within_timeout(cmd)
}

fn assert_ran(script: &str, out: &std::process::Output) {
    assert!(
        out.status.success(),
        "`{script}` failed: {:?}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn armci_program_compiles_and_runs_as_the_readme_says() {
    let root = repo_root();
    std::fs::create_dir_all(root.join("target")).expect("create target/");
    // Shared with crates/gaspar/tests/readme.rs: no other README build changes
    // target/release while this test builds and runs from it.
    let lock = File::create(root.join("target/readme-commands.lock")).expect("the lock file");
    let _tree = Flock::lock(lock, FlockArg::LockExclusive).expect("lock target/");

    let build = Command::new("sh")
        .args(["-c", "cargo build --release"])
        .current_dir(&root)
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .expect("start sh");
    assert_ran("cargo build --release", &build);

    let dir = std::env::temp_dir().join(format!("gaspar-readme-armci-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["crates", "target"] {
        std::os::unix::fs::symlink(root.join(name), dir.join(name)).unwrap();
    }
    std::fs::write(dir.join("prog.c"), PROG_C).unwrap();

    let compile = "cc -I crates/armci/include prog.c -L target/release -larmci \
                   -Wl,-rpath,$PWD/target/release -o prog";
    assert_ran(compile, &shell(&dir, compile));

    let run = "target/release/gaspar run -n 4 ./prog";
    let out = shell(&dir, run);
    assert_ran(run, &out);
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    let expected: Vec<String> = (0..4)
        .map(|r| format!("prog ok rank {r} of 4: got {}", (r + 3) % 4))
        .collect();
    assert_eq!(lines, expected);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The README's Global Arrays commands, as written: libarmci's MPI build in its own target
/// directory, `crates/armci/examples/ga_array.c` linked with Debian's GA and libarmci in
/// place of ARMCI-MPI, run by plain mpirun.
#[test]
fn global_arrays_example_builds_and_runs_as_the_readme_says() {
    let have = |tool: &str| {
        Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !Path::new("/usr/include/ga.h").exists() || !have("mpicc") || !have("mpirun") {
        return skip(
            "Global Arrays or OpenMPI is not installed (apt-get install libglobalarrays-dev \
             libscalapack-openmpi-dev liblapack-dev libblas-dev openmpi-bin libopenmpi-dev)",
        );
    }
    let root = repo_root();
    std::fs::create_dir_all(root.join("target")).expect("create target/");
    let lock = File::create(root.join("target/readme-commands.lock")).expect("the lock file");
    let _tree = Flock::lock(lock, FlockArg::LockExclusive).expect("lock target/");
    let dir = std::env::temp_dir().join(format!("gaspar-readme-ga-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["crates", "target"] {
        std::os::unix::fs::symlink(root.join(name), dir.join(name)).unwrap();
    }
    let build =
        "cargo build --release -p gaspar-armci --features gaspar-armci/mpi --target-dir target/mpi";
    // No time limit: a release build from nothing takes minutes.
    let built = Command::new("sh")
        .args(["-c", build])
        .current_dir(&root)
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .expect("start sh");
    assert_ran(build, &built);
    let compile = "mpicc crates/armci/examples/ga_array.c -lga-openmpi -lscalapack-openmpi \
                   -llapack -lblas -lgfortran -lm -L target/mpi/release -larmci \
                   -Wl,-rpath,$PWD/target/mpi/release -o ga_array";
    assert_ran(compile, &shell(&dir, compile));
    let run = "mpirun -n 2 ./ga_array";
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    for command in [build, compile, run] {
        assert!(
            readme.contains(command),
            "README.md no longer says `{command}`"
        );
    }
    let mut cmd = Command::new("sh");
    cmd.args(["-c", run])
        .current_dir(&dir)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("OMPI_MCA_osc")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    let out = output_within_timeout(cmd);
    assert_ran(run, &out);
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    let expected: Vec<String> = (0..2)
        .map(|r| format!("ga_array ok rank {r} of 2: 64 x 64 elements checked"))
        .collect();
    assert_eq!(lines, expected);
    std::fs::remove_dir_all(&dir).unwrap();
}
