//! A panic inside libcaf_gaspar must never unwind into the Fortran program that called it.
//! One hook, installed when the engine starts, turns any panic into a one-line message and
//! an end of the job, in every entry point at no cost on the calls' paths. The hook runs
//! before unwinding starts and does not return.

use std::panic::PanicHookInfo;
use std::sync::Once;

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
    crate::error::say(&format!(
        "gaspar caf: libcaf_gaspar internal error: {what}{at}"
    ));
    crate::runtime::end_job_after_panic()
}
