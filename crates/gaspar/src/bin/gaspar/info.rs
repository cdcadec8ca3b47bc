//! `gaspar info`: version, transports, the environment settings and the copy engine's
//! method table for this processor.

use std::fmt::Write;
use std::process::ExitCode;

use gaspar::copy_engine;

/// Prints the report.
pub(crate) fn run() -> ExitCode {
    let mut text = String::new();
    // Writing into a String cannot fail.
    let _ = report(&mut text);
    crate::output::emit("info", &text)
}

fn report(out: &mut String) -> std::fmt::Result {
    writeln!(out, "gaspar {}", env!("CARGO_PKG_VERSION"))?;
    writeln!(out, "transports: {}", gaspar::transports().join(" "))?;
    writeln!(
        out,
        "{:<22} {:<10} {:<10} description",
        "setting", "default", "value"
    )?;
    for s in gaspar::config::SETTINGS {
        writeln!(
            out,
            "{:<22} {:<10} {:<10} {}",
            s.name,
            s.default,
            s.raw(),
            s.description
        )?;
    }
    copy_table(out)
}

/// The copy engine's section: the processor, the cache file, and the table (each cell the
/// method used for that size and placement, and its measured speed-up over memcpy).
fn copy_table(out: &mut String) -> std::fmt::Result {
    let status = copy_engine::status();
    writeln!(out)?;
    writeln!(
        out,
        "copy engine (shm puts and gets): processor {} (key {})",
        status.cpu.model, status.cpu.hash
    )?;
    if let Some(path) = &status.path {
        writeln!(out, "table file: {}", path.display())?;
    }
    match &status.table {
        Ok(table) => {
            writeln!(
                out,
                "method per size and placement, with its measured speed-up over memcpy \
                 (placement: the destination's page offset relative to the source's: same, \
                 near: less than 64 bytes ahead, ahead/behind by up to 1023 bytes, apart by \
                 1024-3072; +odd: not a multiple of 64 bytes apart):"
            )?;
            write!(out, "{table}")
        }
        Err(why) => writeln!(
            out,
            "no table: {why}; copies use memcpy. `gaspar calibrate` measures one (`gaspar run` \
             does so before a job)"
        ),
    }
}
