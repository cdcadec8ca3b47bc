//! README.md's Fortran commands, run exactly as written through `sh -c` in a directory laid
//! out as the repository root (`crates` and `target` link to the repository's), so that
//! the program the user builds lands there and not in the repository:
//!
//! ```sh
//! cargo build --release
//! target/release/gaspar caf -O2 crates/caf/examples/heat.f90 -o heat
//! target/release/gaspar run -n 4 ./heat
//! GFORTRAN_NUM_IMAGES=4 ./heat
//! ```

mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

use nix::fcntl::{Flock, FlockArg};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

/// `sh -c SCRIPT` in `dir` with a user's environment (not cargo's library path of this
/// test, which would take the debug build's library over the program's run path).
fn shell(dir: &Path, script: &str) -> common::Outcome {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(script)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("CARGO_TARGET_DIR");
    common::run_in(dir, cmd)
}

#[test]
fn fortran_heat_example_builds_and_runs_as_the_readme_says() {
    if !common::gfortran_installed() {
        common::skip("gfortran is not installed");
        return;
    }
    let root = repo_root();
    std::fs::create_dir_all(root.join("target")).expect("create target/");
    // Shared with the other crates' README tests: no other README build changes
    // target/release while this test builds and runs from it.
    let lock = File::create(root.join("target/readme-commands.lock")).expect("the lock file");
    let _tree = Flock::lock(lock, FlockArg::LockExclusive).expect("lock target/");

    let build = Command::new("sh")
        .args(["-c", "cargo build --release"])
        .current_dir(&root)
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .expect("start sh");
    assert!(
        build.status.success(),
        "cargo build --release failed:\n{}",
        String::from_utf8_lossy(&build.stderr)
    );

    let dir = std::env::temp_dir().join(format!("gaspar-readme-caf-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["crates", "target"] {
        std::os::unix::fs::symlink(root.join(name), dir.join(name)).unwrap();
    }

    let compile = "target/release/gaspar caf -O2 crates/caf/examples/heat.f90 -o heat";
    let out = shell(&dir, compile);
    assert_eq!(out.code, Some(0), "`{compile}`: {}", out.summary());

    // With the launcher, and started as caf_shmem users start their programs.
    for run in [
        "target/release/gaspar run -n 4 ./heat",
        "GFORTRAN_NUM_IMAGES=4 ./heat",
    ] {
        let out = shell(&dir, run);
        assert_eq!(out.code, Some(0), "`{run}`: {}", out.summary());
        assert!(
            out.stdout
                .contains("heat: 60x90 plate, 400 sweeps on 4 images"),
            "`{run}`: {}",
            out.summary()
        );
        assert!(out.stdout.contains("heat ok"), "`{run}`: {}", out.summary());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
