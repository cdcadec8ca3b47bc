//! Reports written to standard output in one piece. A reader that went away before the
//! end (`gaspar info | head -1`, `grep -q`) ends the report quietly, as a closed pipe
//! ends `cat`: `println!` would panic on it.

use std::io::{ErrorKind, Write};
use std::process::ExitCode;

/// Writes `text` to stdout; `command` names the subcommand in the one-line error of a
/// failed write other than a closed pipe.
pub(crate) fn emit(command: &str, text: &str) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gaspar {command}: cannot write the report: {e}");
            ExitCode::FAILURE
        }
    }
}
