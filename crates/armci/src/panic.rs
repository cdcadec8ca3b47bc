//! A panic inside libarmci must never unwind into the C program that called it (undefined
//! behaviour before Rust 1.81, a bare abort without a message since). One hook, installed
//! by `ARMCI_Init`, turns any panic into the one-line message and a clean end of the job —
//! in every entry point, present and future, at no cost on the calls' paths (a
//! `catch_unwind` around each of the ~130 entry points would cost a landing pad each and
//! could be forgotten in a new one).
//!
//! The hook runs before unwinding starts and does not return: it ends the job through the
//! runtime's abort (every rank stops, nothing is left behind), or, before the runtime
//! exists, exits with status 1 after the same one line.

use std::panic::PanicHookInfo;
use std::sync::Once;

use crate::state;

/// Installs the hook (once per process).
pub(crate) fn install() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| std::panic::set_hook(Box::new(end_job)));
}

fn end_job(info: &PanicHookInfo<'_>) {
    let what = info
        .payload()
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| info.payload().downcast_ref::<String>().map(String::as_str))
        .unwrap_or("panic");
    let at = info
        .location()
        .map(|l| format!(" at {}:{}", l.file(), l.line()))
        .unwrap_or_default();
    let message = format!("libarmci internal error: {what}{at}");
    if state::is_initialized() {
        state::state("panic").rt.abort(&message);
    }
    eprintln!("gaspar armci: {message}");
    std::process::exit(1);
}
