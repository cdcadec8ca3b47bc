//! A panic inside libarmci never unwinds into the C caller: the hook `ARMCI_Init` installs
//! ends the job with one line and a failing status, before any unwinding.

use std::ffi::c_int;
use std::process::Command;

use armci as _; // links libarmci's entry points into this test

extern "C" {
    fn ARMCI_Init() -> c_int;
}

const CHILD: &str = "GASPAR_ARMCI_PANIC_CHILD";

#[test]
fn a_panic_after_armci_init_ends_the_job_with_one_line() {
    if std::env::var_os(CHILD).is_some() {
        // SAFETY: ARMCI_Init takes no arguments; this process is a 1-rank job.
        assert_eq!(unsafe { ARMCI_Init() }, 0);
        // The hook is process-wide: a panic here takes the same path as one inside an
        // entry point.
        panic!("deliberate panic");
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_panic_after_armci_init_ends_the_job_with_one_line",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("deliberate panic"))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].starts_with(
            "gaspar: rank 0 aborted the job: libarmci internal error: deliberate panic at "
        ),
        "{stderr}"
    );
    // The default hook (which prints "panicked at" and a backtrace note) did not run.
    assert!(!stderr.contains("panicked at"), "{stderr}");
}
