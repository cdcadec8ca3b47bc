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
    cores(out)?;
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

/// The cores a wait counts on (it spins only while the job's ranks awake fit them): the
/// affinity mask's, fewer under a control group's CPU quota.
fn cores(out: &mut String) -> std::fmt::Result {
    let mask = gaspar::cores::in_affinity_mask();
    match gaspar::cores::cpu_quota() {
        Some(quota) => writeln!(
            out,
            "cores for waits: {} (affinity mask: {mask}; CPU quota of {:.2} core(s) on control group {})",
            gaspar::cores::usable(),
            quota.cores_f64(),
            quota.group.display()
        ),
        None => writeln!(
            out,
            "cores for waits: {mask} (affinity mask: {mask}; no CPU quota)"
        ),
    }
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
                 near: 1-63 bytes ahead, ahead: 64-1023 ahead, behind: 1-1023 behind, apart: \
                 1024-3072 either way; +odd: not a multiple of 64 bytes apart; strided: the \
                 chunks of strided patterns up to 128 KiB, measured as many chunks from a 1 MiB \
                 footprint, used unless the first chunk is near):"
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
