//! `gaspar calibrate`: measures the copy engine's method table on this processor again
//! and stores it where every rank of a later job reads it.

use std::fmt::Write;
use std::process::ExitCode;

use gaspar::copy_engine;

/// Measures, stores and prints the table.
pub(crate) fn run() -> ExitCode {
    let cpu = copy_engine::CpuKey::current();
    match copy_engine::calibrate() {
        Ok(calibration) => {
            let mut text = format!(
                "copy engine calibrated on {} in {:.2} s\n",
                cpu.model,
                calibration.took.as_secs_f64()
            );
            match &calibration.path {
                Some(path) => text += &format!("stored in {}\n", path.display()),
                None => {
                    text += "not stored: no cache directory ($XDG_CACHE_HOME and $HOME are unset)\n"
                }
            }
            // Writing into a String cannot fail.
            let _ = write!(text, "{}", calibration.table);
            crate::output::emit("calibrate", &text)
        }
        Err(e) => {
            eprintln!("gaspar calibrate: {e}");
            ExitCode::FAILURE
        }
    }
}
