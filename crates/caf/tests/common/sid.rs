//! The Debian sid chroot of scripts/sid-chroot (gfortran 13 to 16, gcc-16-source): made
//! on first use, commands run inside it with the repository at its own path.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{ensure_built, gaspar, run_in, skip, Outcome};

/// The script that makes the chroot and runs commands in it.
pub fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/sid-chroot")
}

/// Makes (or finds) the chroot and returns its directory; `Err` says why it cannot be had
/// here (not root, no debootstrap, no network).
pub fn ready() -> Result<PathBuf, String> {
    if !nix::unistd::Uid::effective().is_root() {
        return Err("the sid chroot of scripts/sid-chroot needs root".into());
    }
    let out = Command::new(script())
        .arg("create")
        .output()
        .map_err(|e| format!("cannot run scripts/sid-chroot: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "scripts/sid-chroot create failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let path = Command::new(script())
        .arg("path")
        .output()
        .map_err(|e| format!("cannot run scripts/sid-chroot: {e}"))?;
    Ok(PathBuf::from(
        String::from_utf8_lossy(&path.stdout).trim().to_owned(),
    ))
}

/// The chroot made ([`ready`]) and this build's gaspar and libcaf_gaspar built: gaspar's
/// path for command lines run inside the chroot, or `None` after saying "skipped" and why.
pub fn ready_with_gaspar() -> Option<String> {
    if let Err(reason) = ready() {
        skip(&reason);
        return None;
    }
    ensure_built();
    Some(gaspar().to_string_lossy().into_owned())
}

/// `sh -c SCRIPT` inside the chroot, in `dir` (a directory of the repository).
pub fn run(dir: &Path, script_text: &str) -> Outcome {
    let mut cmd = Command::new(script());
    cmd.args(["run", "--", "sh", "-c", script_text]);
    run_in(dir, cmd)
}

/// `FC=COMPILER gaspar caf SOURCE -o NAME` inside the chroot, in `dir`: `Err` says how the
/// build failed.
pub fn gaspar_caf(dir: &Path, compiler: &str, source: &Path, name: &str) -> Result<(), String> {
    gaspar_caf_with(&gaspar(), dir, compiler, source, name)
}

/// [`gaspar_caf`] with the given `gaspar` binary (one built against another MPI), which
/// links the libcaf_gaspar.so beside it.
pub fn gaspar_caf_with(
    gaspar: &Path,
    dir: &Path,
    compiler: &str,
    source: &Path,
    name: &str,
) -> Result<(), String> {
    let build = run(
        dir,
        &format!(
            "FC={compiler} {} caf {} -o {name}",
            gaspar.to_string_lossy(),
            source.to_string_lossy()
        ),
    );
    match build.code {
        Some(0) => Ok(()),
        _ => Err(build.summary()),
    }
}
