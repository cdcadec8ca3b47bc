//! `gaspar info`: version, transports, the environment settings and the copy engine's
//! method table for this processor.

use std::process::ExitCode;

use gaspar::copy_engine;

/// Prints the report.
pub(crate) fn run() -> ExitCode {
    println!("gaspar {}", env!("CARGO_PKG_VERSION"));
    println!("transports: {}", gaspar::transports().join(" "));
    println!(
        "{:<22} {:<10} {:<10} description",
        "setting", "default", "value"
    );
    for s in gaspar::config::SETTINGS {
        println!(
            "{:<22} {:<10} {:<10} {}",
            s.name,
            s.default,
            s.raw(),
            s.description
        );
    }
    copy_table();
    ExitCode::SUCCESS
}

/// The copy engine's section: the processor, the cache file, and the table (each cell the
/// method used for that size and placement, and its measured speed-up over memcpy).
fn copy_table() {
    let status = copy_engine::status();
    println!();
    println!(
        "copy engine (shm puts and gets): processor {} (key {})",
        status.cpu.model, status.cpu.hash
    );
    if let Some(path) = &status.path {
        println!("table file: {}", path.display());
    }
    match &status.table {
        Ok(table) => {
            println!(
                "method per size and placement, with its measured speed-up over memcpy \
                 (placement: the destination's page offset relative to the source's: same, \
                 ahead/behind by up to 1023 bytes, apart by 1024-3072; +odd: not a multiple \
                 of 64 bytes apart):"
            );
            print!("{table}");
        }
        Err(why) => println!(
            "no table: {why}; copies use memcpy. `gaspar calibrate` measures one (`gaspar run` \
             does so before a job)"
        ),
    }
}
