//! README.md's ARMCI commands, run exactly as written through `sh -c` in a directory laid
//! out as the repository root (`crates` and `target` link to the repository's):
//!
//! ```sh
//! cargo build --release
//! cc -I crates/armci/include crates/armci/examples/ring.c -L target/release -larmci -Wl,-rpath,$PWD/target/release -o target/ring
//! target/release/gaspar run -n 4 target/ring
//! ```

#[allow(dead_code)] // `skip` serves the mpi tests; this test skips nothing
mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use nix::fcntl::{Flock, FlockArg};

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
    let compile = "cc -I crates/armci/include crates/armci/examples/ring.c -L target/release \
                   -larmci -Wl,-rpath,$PWD/target/release -o target/ring";
    let run = "target/release/gaspar run -n 4 target/ring";
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    for command in [compile, run] {
        assert!(
            readme.contains(command),
            "README.md no longer says `{command}`"
        );
    }
    assert_ran(compile, &shell(&dir, compile));
    let out = shell(&dir, run);
    assert_ran(run, &out);
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    let expected: Vec<String> = (0..4)
        .map(|r| format!("ring ok rank {r} of 4: got {}", (r + 3) % 4))
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
