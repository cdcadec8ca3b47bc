//! `gaspar calibrate`: measures the copy engine's method table on this processor again
//! and stores it where every rank of a later job reads it.

use std::process::ExitCode;

use gaspar::copy_engine;

/// Measures, stores and prints the table.
pub(crate) fn run() -> ExitCode {
    let cpu = copy_engine::CpuKey::current();
    match copy_engine::calibrate() {
        Ok(calibration) => {
            println!(
                "copy engine calibrated on {} in {:.2} s",
                cpu.model,
                calibration.took.as_secs_f64()
            );
            match &calibration.path {
                Some(path) => println!("stored in {}", path.display()),
                None => {
                    println!("not stored: no cache directory ($XDG_CACHE_HOME and $HOME are unset)")
                }
            }
            print!("{}", calibration.table);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gaspar calibrate: {e}");
            ExitCode::FAILURE
        }
    }
}
