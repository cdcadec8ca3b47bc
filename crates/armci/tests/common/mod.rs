//! Helpers of the ARMCI tests: jobs with a time limit, and skipping that CI refuses.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// No test job may run longer than this; a hang fails the test instead of the suite.
pub const JOB_TIMEOUT: Duration = Duration::from_secs(120);

/// Says why a test cannot run here ("skipped: <reason>" on stderr) before it returns
/// early. Where everything the tests need is installed (CI sets
/// `GASPAR_TEST_REQUIRE_ALL=1`), a test that cannot run fails instead.
// Every test binary includes this module; in the shared-memory build only c_programs skips.
#[allow(dead_code)]
pub fn skip(reason: &str) {
    if std::env::var("GASPAR_TEST_REQUIRE_ALL").as_deref() == Ok("1") {
        panic!("this test cannot run here ({reason}), and GASPAR_TEST_REQUIRE_ALL=1");
    }
    eprintln!("skipped: {reason}");
}

/// target/<profile>, found from this test executable (target/<profile>/deps/...).
// Not every test binary that includes this module builds programs.
#[allow(dead_code)]
pub fn target_dir() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// Runs `cmd` to its end with its output captured; a job still running after
/// [`JOB_TIMEOUT`] is killed and fails the test.
pub fn output_within_timeout(mut cmd: Command) -> Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(JOB_TIMEOUT) {
        Ok(out) => out.expect("wait"),
        Err(_) => {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
            panic!("{cmd:?} did not finish within {JOB_TIMEOUT:?}");
        }
    }
}
