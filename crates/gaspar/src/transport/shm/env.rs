//! Environment of a rank started by `gaspar run`: the variables the launcher sets, and
//! attaching to the job they describe.

use std::sync::atomic::Ordering;

use nix::unistd::Pid;

use super::cross_memory::allow_cross_memory_attach;
use super::layout::Layout;
use super::segment::{self, Mapping};
use super::ShmTransport;
use crate::config;
use crate::error::{Error, Result};

/// Job id (names the segments).
pub(crate) const JOB: &str = "GASPAR_JOB_ID";
/// This rank.
pub(crate) const RANK: &str = "GASPAR_RANK";
/// Number of ranks.
pub(crate) const PROCS: &str = "GASPAR_PROCS";
/// The inherited descriptors of every rank's segment, in rank order.
pub(crate) const SEGMENT_FDS: &str = "GASPAR_SEGMENT_FDS";
/// The launcher's pid: its descendants (the job's ranks) may use cross-memory attach
/// on this rank.
pub(crate) const LAUNCHER_PID: &str = "GASPAR_LAUNCHER_PID";
/// What one futex sleep and wake-up between two threads took, in nanoseconds, as the
/// launcher measured it for the budget of its ranks' waits (`GASPAR_SPIN_LIMIT=auto`): a
/// rank that measured it itself would start a second thread for it, and glibc's malloc
/// then locks its arena on every call above its thread cache for the rest of the process
/// (a 4 KiB temporary of a gfortran 16 section put: 70 ns a statement against 53).
pub(crate) const WAKE_UP_NS: &str = "GASPAR_WAKE_UP_NS";

/// `GASPAR_SHM_PLACEMENT`: true for `same` (every segment at the job's planned address),
/// false for `anywhere`.
pub(crate) fn same_placement() -> Result<bool> {
    Ok(config::SHM_PLACEMENT.choice(&["same", "anywhere"])? == "same")
}

fn env_number(name: &str) -> Result<u32> {
    std::env::var(name)
        .map_err(|_| Error::Environment(format!("{name} is not set")))?
        .parse()
        .map_err(|_| Error::Environment(format!("{name} is not a number")))
}

impl ShmTransport {
    /// Attaches to the job described by the environment (`gaspar run`), or makes a private
    /// 1-rank job when there is none.
    pub fn attach_from_env() -> Result<ShmTransport> {
        super::calibrate::install_cached();
        let Ok(job) = std::env::var(JOB) else {
            let (starter_len, heap_len) = config::segment_sizes()?;
            let layout = Layout::new(1, starter_len, heap_len).ok_or(Error::LengthOverflow {
                what: "segment size",
            })?;
            let mapping = Mapping::anonymous(&layout)?;
            return Self::start(0, 1, layout, vec![mapping]);
        };
        let rank = env_number(RANK)?;
        let procs = env_number(PROCS)?;
        if procs == 0 || rank >= procs {
            return Err(Error::Environment(format!("rank {rank} of {procs} ranks")));
        }
        let launcher = env_number(LAUNCHER_PID)?;
        let fds = segment::fd_list(
            &std::env::var(SEGMENT_FDS)
                .map_err(|_| Error::Environment(format!("{} is not set", SEGMENT_FDS)))?,
            procs,
        )?;
        // The descriptors are taken once: an init after finalize in the same process must
        // not take them again (their numbers may name other files by then).
        static TAKEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        let taken_before = || {
            Error::Environment(
                "this process already used its job's segments; a rank can init only once".into(),
            )
        };
        if TAKEN.load(Ordering::Acquire) {
            return Err(taken_before());
        }
        // Every descriptor is checked to be a segment of this job before any is taken: a
        // refused one stays open, as it was.
        let checked = fds
            .iter()
            .enumerate()
            .map(|(r, &fd)| segment::check_inherited(fd, &job, r as u32))
            .collect::<Result<Vec<_>>>()?;
        if TAKEN.swap(true, Ordering::AcqRel) {
            return Err(taken_before());
        }
        // Every segment at the job's planned address when it is free (see
        // `segment::planned_address`), with the length its header gives.
        let placed = same_placement()?;
        let mappings = checked
            .into_iter()
            .enumerate()
            .map(|(r, fd)| {
                let at = placed
                    .then(|| segment::planned_address(&job, r as u32, fd.len()))
                    .flatten();
                Mapping::inherited(fd, at)
            })
            .collect::<Result<Vec<_>>>()?;
        let layout = mappings[rank as usize]
            .header()
            .layout()
            .ok_or_else(|| Error::Environment("own segment has no valid header".into()))?;
        for (r, m) in mappings.iter().enumerate() {
            let h = m.header();
            if h.layout() != Some(layout)
                || h.procs.load(Ordering::Relaxed) != u64::from(procs)
                || h.rank.load(Ordering::Relaxed) != r as u64
                || m.len() < layout.total()
            {
                return Err(Error::Environment(format!(
                    "segment of rank {r} does not match this job"
                )));
            }
        }
        tracing::debug!(job, "attaching");
        allow_cross_memory_attach(Pid::from_raw(launcher as i32));
        Self::start(rank, procs, layout, mappings)
    }
}
