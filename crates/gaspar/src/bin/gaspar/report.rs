//! `gaspar bench --report DIR`: every benchmark of the project beside its peers, each run
//! by the command a user would type (`gaspar bench --json` for shm and the scaling rows,
//! `scripts/bench-*` for the others), summed up in DIR/report.md — a header naming the
//! machine, then one section per benchmark with its tables (ours, the peer, the ratio)
//! and PNG charts beside the file. Every run's own output is kept in DIR/raw/.

mod armci;
mod caf;
mod caf16;
mod charts;
mod coarray;
mod darray;
mod markdown;
mod mpi;
mod quota;
mod scripts;
mod shm;
mod system;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use markdown::Section;

/// The options of the report mode (part of `gaspar bench`'s).
#[derive(clap::Args)]
pub(crate) struct ReportArgs {
    /// Run every benchmark beside its peers (this one and scripts/bench-*, each with its
    /// own defaults; the other options above do not apply) and write DIR/report.md with
    /// PNG charts.
    #[arg(long = "report", value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
    /// With --report: only these benchmarks, in this order (default: all).
    #[arg(
        long,
        value_delimiter = ',',
        requires = "dir",
        value_name = "BENCHMARKS"
    )]
    only: Vec<Suite>,
    /// With --report: few repetitions everywhere (a few minutes instead of about half an
    /// hour; rough figures).
    #[arg(long, requires = "dir")]
    quick: bool,
    /// With --report: the TrueType font of the charts' text (default: DejaVu Sans or
    /// Liberation Sans from Debian's fonts-dejavu-core or fonts-liberation).
    #[arg(long, requires = "dir", value_name = "FILE.ttf")]
    font: Option<PathBuf>,
}

/// The benchmarks of the report.
#[derive(clap::ValueEnum, Clone, Copy, PartialEq, Eq, Debug)]
enum Suite {
    /// `gaspar bench`: put, get, atomics, barrier (2 ranks) vs memcpy and OpenMPI osc/sm.
    Shm,
    /// `gaspar bench --scaling-only`: barrier, ping-pong, allreduce by job size vs OpenMPI.
    Scaling,
    /// scripts/bench-mpi: the mpi transport vs raw MPI in the same job.
    Mpi,
    /// scripts/bench-armci: libarmci vs ARMCI-MPI.
    Armci,
    /// scripts/bench-coarray: the coarray layer vs its raw calls and OpenMPI.
    Coarray,
    /// scripts/bench-caf: libcaf_gaspar vs OpenCoarrays.
    Caf,
    /// scripts/bench-caf16: libcaf_gaspar vs caf_shmem (gfortran 16) and OpenCoarrays.
    Caf16,
    /// scripts/bench-darray: distributed arrays' variants vs the hand-optimized one.
    Darray,
    /// scripts/bench-quota: waits under a container's CPU quota vs OpenMPI (as root).
    Quota,
}

/// What every benchmark's section needs.
struct Context {
    /// The report's directory (report.md and the charts).
    dir: PathBuf,
    /// Where every run's own output goes.
    raw: PathBuf,
    quick: bool,
    /// The checkout whose scripts run, or why there is none.
    repo: Result<PathBuf, String>,
}

impl Context {
    fn repo(&self) -> Result<&Path, String> {
        self.repo.as_deref().map_err(Clone::clone)
    }

    /// Draws a chart into the report's `file` (if the font loaded) and adds it to `section`.
    fn chart(
        &self,
        section: &mut Section,
        file: &str,
        caption: &str,
        draw: impl FnOnce(&Path) -> Result<(), String>,
    ) {
        let drawn = charts::use_font(None).and_then(|_| draw(&self.dir.join(file)));
        section.chart(file, caption, drawn);
    }
}

impl Suite {
    fn title(self) -> &'static str {
        match self {
            Suite::Shm => "shm transport, 2 ranks: gaspar vs memcpy and OpenMPI osc/sm",
            Suite::Scaling => "Barrier, ping-pong and allreduce by job size (shm) vs OpenMPI",
            Suite::Mpi => "mpi transport vs raw MPI-3 RMA",
            Suite::Armci => "ARMCI: gaspar's libarmci vs ARMCI-MPI",
            Suite::Coarray => "Coarray layer (Rust API) vs its raw calls and OpenMPI",
            Suite::Caf => "Fortran coarrays: libcaf_gaspar vs OpenCoarrays",
            Suite::Caf16 => {
                "Fortran coarrays, gfortran 16: libcaf_gaspar vs caf_shmem and OpenCoarrays"
            }
            Suite::Darray => "Distributed arrays: the LAPPS benchmarks' variants",
            Suite::Quota => "Waiting under a one-core CPU quota: gaspar vs OpenMPI",
        }
    }

    fn run(self, context: &Context) -> Result<Section, String> {
        match self {
            Suite::Shm => shm::two_ranks(context),
            Suite::Scaling => shm::scaling(context),
            Suite::Mpi => mpi::section(context),
            Suite::Armci => armci::section(context),
            Suite::Coarray => coarray::section(context),
            Suite::Caf => caf::section(context),
            Suite::Caf16 => caf16::section(context),
            Suite::Darray => darray::section(context),
            Suite::Quota => quota::section(context),
        }
    }
}

pub(crate) fn run(args: &ReportArgs, dir: &Path) -> ExitCode {
    match write_report(args, dir) {
        Ok(report) => {
            println!("gaspar bench --report: wrote {}", report.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gaspar bench --report: {e}");
            ExitCode::FAILURE
        }
    }
}

fn write_report(args: &ReportArgs, dir: &Path) -> Result<PathBuf, String> {
    let raw = dir.join("raw");
    std::fs::create_dir_all(&raw).map_err(|e| format!("{}: {e}", raw.display()))?;
    if let Some(font) = &args.font {
        charts::use_font(Some(font))?;
    }
    let context = Context {
        dir: dir.to_path_buf(),
        raw,
        quick: args.quick,
        repo: scripts::repository(),
    };
    let load_at_start = system::load_average();
    let suites = if args.only.is_empty() {
        <Suite as clap::ValueEnum>::value_variants()
    } else {
        &args.only[..]
    };
    let mut body = String::new();
    for &suite in suites {
        eprintln!("gaspar bench --report: {} ...", suite.title());
        let started = Instant::now();
        let mut section = suite.run(&context).unwrap_or_else(|reason| {
            let mut skipped = Section::new(suite.title(), "");
            skipped.note(format!("skipped: {reason}"));
            skipped
        });
        section.note(format!(
            "({:.0} s; load average {} after it)",
            started.elapsed().as_secs_f64(),
            system::load_average()
        ));
        section.render(&mut body);
    }
    let report = format!(
        "# gaspar benchmark report\n\n{}\n\
         Ratios: for times, ours / the peer's (below 1: we are faster); for bandwidth, \
         ours / the peer's (above 1: we are faster), unless a table says otherwise. \
         Each figure is a median, as each benchmark's own output says (raw/).\n\n{body}",
        system::header(context.repo.as_deref().ok(), &load_at_start, args.quick),
    );
    let path = dir.join("report.md");
    std::fs::write(&path, report).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}
