//! Calibration of the copy engine: the method table is measured on the processor the job
//! runs on (about a second), cached per machine and processor, and read by every rank.
//!
//! Who measures: `gaspar run` (the launcher), once, before it starts the ranks, when the
//! cache has no valid table (`gaspar calibrate` measures again on request). Ranks only read
//! the cache: a rank that finds no valid table (a program started without the launcher,
//! or no cache directory) copies with memcpy and says so in the log, so that no job ever
//! has all its ranks measuring at once.

pub(crate) mod cache;
mod measure;

use std::fs::File;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use nix::fcntl::{Flock, FlockArg};

use self::cache::{Cached, CpuKey};
use crate::error::{Error, Result};
use crate::transport::shm::copy::table::{self, MethodTable};

/// This machine's calibration as the cache holds it.
///
/// ```
/// let status = gaspar::copy_engine::status();
/// match &status.table {
///     Ok(table) => print!("{table}"),
///     Err(why) => println!("copies use memcpy: {why}"),
/// }
/// ```
#[derive(Debug)]
pub struct Status {
    /// The processor this process runs on.
    pub cpu: CpuKey,
    /// The table file (`None`: no cache directory, `$XDG_CACHE_HOME` and `$HOME` unset).
    pub path: Option<PathBuf>,
    /// The table ranks copy with, or why there is none (then they use memcpy).
    pub table: std::result::Result<MethodTable, String>,
}

/// Reads this machine's table from the cache, measuring nothing.
///
/// ```
/// use gaspar::copy_engine::{status, CpuKey};
/// let status = status(); // reads the cache, measures nothing
/// assert_eq!(status.cpu, CpuKey::current());
/// ```
pub fn status() -> Status {
    let cpu = CpuKey::current();
    let Some(dir) = cache::cache_dir() else {
        return Status {
            cpu,
            path: None,
            table: Err("no cache directory ($XDG_CACHE_HOME and $HOME are unset)".into()),
        };
    };
    let path = cache::table_path(&dir);
    let table = match cache::read(&path, &cpu) {
        Cached::Valid(table) => Ok(*table),
        Cached::Missing => Err("not calibrated yet".into()),
        Cached::Stale => Err("the cached table was measured on another processor, \
                              microcode or machine"
            .into()),
        Cached::Unusable(why) => Err(format!("the cached table is unusable ({why})")),
    };
    Status {
        cpu,
        path: Some(path),
        table,
    }
}

/// A table just measured.
///
/// ```no_run
/// let calibration = gaspar::copy_engine::calibrate()?;
/// println!("measured in {:?}, stored in {:?}", calibration.took, calibration.path);
/// print!("{}", calibration.table);
/// # Ok::<(), gaspar::Error>(())
/// ```
#[derive(Debug)]
pub struct Calibration {
    /// The table.
    pub table: MethodTable,
    /// Where it was stored (`None`: no cache directory, so nowhere).
    pub path: Option<PathBuf>,
    /// How long the measurement took.
    pub took: Duration,
}

/// Measures the table now and stores it in the cache (`gaspar calibrate`). Calibrations
/// of several processes on one machine take turns.
///
/// ```no_run
/// // `gaspar calibrate`: about a second, then every later job's ranks read the table.
/// let calibration = gaspar::copy_engine::calibrate()?;
/// assert!(gaspar::copy_engine::status().table.is_ok() || calibration.path.is_none());
/// # Ok::<(), gaspar::Error>(())
/// ```
pub fn calibrate() -> Result<Calibration> {
    let cpu = CpuKey::current();
    let Some(dir) = cache::cache_dir() else {
        let (table, took) = timed_measurement()?;
        return Ok(Calibration {
            table,
            path: None,
            took,
        });
    };
    let _turn = take_turn(&dir)?;
    store(&dir, &cpu)
}

/// Makes sure the cache holds a valid table for this machine, measuring one if it does
/// not (the launcher, before it starts a job's ranks). Returns the table, and whether it
/// was measured just now.
pub(crate) fn ensure_calibrated() -> Result<(MethodTable, Option<Calibration>)> {
    let cpu = CpuKey::current();
    let Some(dir) = cache::cache_dir() else {
        return Err(Error::Environment(
            "no cache directory for the copy table ($XDG_CACHE_HOME and $HOME are unset)".into(),
        ));
    };
    if let Cached::Valid(table) = cache::read(&cache::table_path(&dir), &cpu) {
        return Ok((*table, None));
    }
    let _turn = take_turn(&dir)?;
    // Another process may have measured while this one waited for its turn.
    if let Cached::Valid(table) = cache::read(&cache::table_path(&dir), &cpu) {
        return Ok((*table, None));
    }
    let calibration = store(&dir, &cpu)?;
    Ok((calibration.table.clone(), Some(calibration)))
}

/// Installs the cached table as this process's copy table, or memcpy everywhere (and a
/// log line that says why) when the cache has none (a rank, at start-up).
pub(crate) fn install_cached() {
    match status().table {
        Ok(table) => table::install(table),
        Err(why) => tracing::info!(
            "copy engine: {why}; copying with memcpy (run `gaspar calibrate`, or start \
             the job with `gaspar run`, which calibrates once)"
        ),
    }
}

fn timed_measurement() -> Result<(MethodTable, Duration)> {
    let start = Instant::now();
    let table = measure::measure_table()?;
    Ok((table, start.elapsed()))
}

/// Measures and writes the table into `dir`.
fn store(dir: &std::path::Path, cpu: &CpuKey) -> Result<Calibration> {
    let (table, took) = timed_measurement()?;
    let path = cache::table_path(dir);
    cache::write(&path, cpu, &table).map_err(|e| Error::os("write the copy table", e))?;
    Ok(Calibration {
        table,
        path: Some(path),
        took,
    })
}

/// An exclusive lock on the cache directory's calibration lock file, held while the
/// value lives: one calibration at a time on a machine.
fn take_turn(dir: &std::path::Path) -> Result<Flock<File>> {
    std::fs::create_dir_all(dir).map_err(|e| Error::os("create the cache directory", e))?;
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("calibration.lock"))
        .map_err(|e| Error::os("open the calibration lock", e))?;
    Flock::lock(file, FlockArg::LockExclusive)
        .map_err(|(_, e)| Error::os("lock the calibration lock", e))
}
