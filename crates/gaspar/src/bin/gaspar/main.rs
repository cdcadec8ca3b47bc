//! The `gaspar` command: launcher, demo, benchmark and configuration report.

mod bench;
#[cfg(feature = "mpi")]
mod bench_raw;
mod caf;
mod calibrate;
mod demo;
mod info;
mod mpi_launch;
mod output;
mod report;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use gaspar::launcher::{self, LaunchSpec};

#[derive(Parser)]
#[command(name = "gaspar", version, about = "gaspar: a PGAS runtime")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run PROG as an N-rank job on this machine.
    Run {
        /// Number of ranks.
        #[arg(short = 'n', long = "procs", value_name = "N")]
        procs: u32,
        /// Prefix every output line with its rank, as `[rank] `.
        #[arg(long)]
        label: bool,
        /// Transport: `shm` (this machine, the default) or `mpi` (starts the job with the
        /// launcher of the MPI library gaspar was built against, Open MPI's mpirun or
        /// MPICH's mpiexec; needs a gaspar built with `--features mpi`).
        #[arg(long, default_value = "shm", value_parser = ["shm", "mpi"])]
        transport: String,
        /// The program, then its arguments.
        #[arg(
            required = true,
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "PROG [ARGS]"
        )]
        command: Vec<OsString>,
    },
    /// Run the built-in demo (ring, atomic counter, allgather) with N ranks.
    Demo {
        /// Number of ranks.
        #[arg(short = 'n', long = "procs", default_value_t = 4)]
        procs: u32,
    },
    /// Measure gaspar beside memcpy and OpenMPI's MPI-3 RMA (2 ranks); with `--report DIR`,
    /// run every benchmark beside its peers into a Markdown report with charts.
    Bench(bench::BenchArgs),
    /// Compile and link a coarray Fortran program against libcaf_gaspar (gfortran
    /// `-fcoarray=lib`), as OpenCoarrays' `caf` does; run it with `gaspar run -n N ./a.out`.
    Caf(caf::CafArgs),
    /// Print the configuration table (environment settings and their values) and the
    /// copy engine's method table for this processor.
    Info,
    /// Measure the copy engine's method table on this processor again (about a second)
    /// and store it for later jobs.
    Calibrate,
    /// One rank of `gaspar demo` (started by the launcher).
    #[command(hide = true)]
    DemoRank,
    /// One rank of `gaspar bench` (started by the launcher).
    #[command(hide = true)]
    BenchRank(bench::RankArgs),
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_new(gaspar::config::LOG.raw())
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    use std::io::IsTerminal;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colours for a terminal only: not escape codes in a log file or a pipe.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

/// Writes `line` and a newline to stderr in one `write()` (`eprintln!` writes each piece
/// of its format separately, so that lines of several processes would mix).
fn report(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr()
        .lock()
        .write_all(format!("{line}\n").as_bytes());
}

/// Runs a job and turns its outcome into the launcher's exit code and report line.
pub(crate) fn launch(spec: &LaunchSpec) -> ExitCode {
    match launcher::run(spec) {
        Ok(None) => ExitCode::SUCCESS,
        Ok(Some(failure)) => {
            // An ERROR STOP, or a program that could not start, has been told already.
            if !failure.is_told() {
                report(&format!("gaspar run: {failure}"));
            }
            ExitCode::from(failure.exit_code().clamp(0, 255) as u8)
        }
        Err(e) => {
            report(&format!("gaspar run: {e}"));
            ExitCode::FAILURE
        }
    }
}

/// `gaspar run --transport mpi`: the job is started by the launcher of the MPI library
/// this gaspar was built against ([`mpi_launch`]). Rank failures, exit status and cleanup
/// are the launcher's.
fn mpirun(procs: u32, label: bool, program: OsString, args: Vec<OsString>) -> ExitCode {
    let library = mpi_launch::Library::linked();
    let mut cmd = library.command(procs, label);
    match cmd.arg(&program).args(&args).status() {
        Ok(status) => ExitCode::from(status.code().unwrap_or(1).clamp(0, 255) as u8),
        Err(e) => {
            eprintln!(
                "gaspar run: cannot start {} ({e}); install {} or use --transport shm",
                library.launcher(),
                library.package()
            );
            ExitCode::from(127)
        }
    }
}

/// The running `gaspar` binary, to start itself as the ranks of a job.
pub(crate) fn this_program() -> Result<OsString, String> {
    std::env::current_exe()
        .map(OsString::from)
        .map_err(|e| format!("cannot find the gaspar binary: {e}"))
}

fn main() -> ExitCode {
    init_logging();
    let cli = Cli::parse();
    match cli.command {
        Command::Run {
            procs,
            label,
            transport,
            mut command,
        } => {
            let program = command.remove(0);
            if transport == "mpi" {
                if !cfg!(feature = "mpi") {
                    report(
                        "gaspar run: --transport mpi needs a gaspar built with the mpi \
                         transport (cargo build --release --features mpi)",
                    );
                    return ExitCode::from(2);
                }
                return mpirun(procs, label, program, command);
            }
            launch(&LaunchSpec {
                procs,
                label,
                program,
                args: command,
            })
        }
        Command::Demo { procs } => demo::launch(procs),
        Command::DemoRank => demo::rank(),
        Command::Bench(args) => bench::run(args),
        Command::Caf(args) => caf::run(args),
        Command::BenchRank(args) => bench::rank(args),
        Command::Info => info::run(),
        Command::Calibrate => calibrate::run(),
    }
}
