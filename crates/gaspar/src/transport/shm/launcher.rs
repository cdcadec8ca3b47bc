//! `gaspar run`: creates a job's segments, starts its ranks, watches them, and on every
//! ending stops the survivors and removes the segments.
//!
//! Nothing is left behind: segments are anonymous memory files the ranks inherit (no name
//! exists anywhere), every rank gets SIGKILL if the launcher itself dies
//! (PR_SET_PDEATHSIG), and each rank runs in its own process group so that stopping it
//! stops what it started.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{killpg, SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use super::env;
use super::layout::{state, Layout, ABORTED_BY_LAUNCHER};
use super::segment::{self, Segment};
use crate::config;
use crate::error::{Error, Result};

/// What to launch.
#[derive(Debug, Clone)]
pub struct LaunchSpec {
    /// Number of ranks.
    pub procs: u32,
    /// Prefix every output line with `[rank] `.
    pub label: bool,
    /// The program and its arguments.
    pub program: OsString,
    /// Arguments passed to every rank.
    pub args: Vec<OsString>,
}

/// How a rank ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankEnd {
    /// Exited with this status.
    Exited(i32),
    /// Killed by this signal.
    Signaled(i32),
    /// Exited 0 after attaching to the job but without finalizing.
    NotFinalized,
    /// Could not be started; the status is 127 (not found) or 126 (not executable), as
    /// a shell reports it.
    NotStarted(i32),
}

/// Why a job did not succeed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The first rank that failed, and how.
    Rank {
        /// Rank number.
        rank: u32,
        /// Process id.
        pid: i32,
        /// How it ended.
        end: RankEnd,
    },
    /// The launcher was told to stop by this signal.
    Interrupted(i32),
}

impl Failure {
    /// The launcher's exit status for this failure.
    pub fn exit_code(&self) -> i32 {
        match *self {
            Failure::Rank { end, .. } => match end {
                RankEnd::Exited(code) => code,
                RankEnd::Signaled(sig) => 128 + sig,
                RankEnd::NotFinalized => 1,
                RankEnd::NotStarted(code) => code,
            },
            Failure::Interrupted(sig) => 128 + sig,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Failure::Rank {
                rank,
                end: RankEnd::NotStarted(_),
                ..
            } => {
                write!(f, "rank {rank} could not be started")
            }
            Failure::Rank { rank, pid, end } => {
                write!(f, "rank {rank} (pid {pid}) ")?;
                match end {
                    RankEnd::Exited(code) => write!(f, "exited with status {code}"),
                    RankEnd::Signaled(sig) => {
                        write!(f, "was killed by signal {sig} ({})", signal_name(sig))
                    }
                    RankEnd::NotFinalized => write!(f, "exited without finalizing gaspar"),
                    RankEnd::NotStarted(_) => unreachable!("handled above"),
                }
            }
            Failure::Interrupted(sig) => {
                write!(f, "launcher received signal {sig} ({})", signal_name(sig))
            }
        }
    }
}

fn signal_name(sig: i32) -> &'static str {
    Signal::try_from(sig)
        .map(|s| s.as_str())
        .unwrap_or("unknown")
}

struct Rank {
    child: Option<Child>,
    pid: Pid,
}

/// The job's segments and the descriptors the ranks inherit.
struct JobSegments {
    fds: Vec<std::os::fd::OwnedFd>,
    segments: Vec<Segment>,
}

impl JobSegments {
    fn create(job: &str, procs: u32, layout: &Layout) -> Result<JobSegments> {
        let mut made = JobSegments {
            fds: Vec::new(),
            segments: Vec::new(),
        };
        for rank in 0..procs {
            let (seg, fd) = Segment::create(job, rank, procs, layout)?;
            made.fds.push(fd);
            made.segments.push(seg);
        }
        Ok(made)
    }

    fn abort_all(&self) {
        for seg in &self.segments {
            let _ = seg.header().abort.0.compare_exchange(
                0,
                ABORTED_BY_LAUNCHER,
                Ordering::AcqRel,
                Ordering::Relaxed,
            );
        }
        self.wake_all();
    }

    /// Wakes every rank sleeping in a wait, so that it looks at the abort flag and at the
    /// states of the ranks it waits for.
    fn wake_all(&self) {
        for seg in &self.segments {
            seg.header().ring_every_bell();
        }
    }

    /// The rank that called abort, if one did (rather than the launcher).
    fn aborted_by(&self) -> Option<u32> {
        let word = self
            .segments
            .first()?
            .header()
            .abort
            .0
            .load(Ordering::Acquire);
        (word != 0 && word != ABORTED_BY_LAUNCHER).then(|| (word - 1) as u32)
    }

    fn state(&self, rank: u32) -> u64 {
        self.segments[rank as usize]
            .header()
            .state
            .load(Ordering::Acquire)
    }
}

/// Runs a job to its end. `Ok(None)` when every rank succeeded.
pub fn run(spec: &LaunchSpec) -> Result<Option<Failure>> {
    if spec.procs == 0 || u64::from(spec.procs) > crate::gmem::MAX_RANKS {
        return Err(Error::invalid(
            "gaspar run",
            format!("-n must be between 1 and {}", crate::gmem::MAX_RANKS),
        ));
    }
    let layout = Layout::new(config::STARTER_SIZE.bytes()?, config::HEAP_SIZE.bytes()?).ok_or(
        Error::LengthOverflow {
            what: "segment size",
        },
    )?;
    let grace = Duration::from_millis(config::KILL_GRACE_MS.number()?);
    let job = segment::new_job_id()?;
    let segments = JobSegments::create(&job, spec.procs, &layout)?;

    // Signals arrive through a signalfd; they are blocked in this thread before any other
    // thread starts, and the children get a clean mask from std's spawn.
    let mut signals = SigSet::empty();
    for s in [
        Signal::SIGCHLD,
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
    ] {
        signals.add(s);
    }
    let mut old_mask = SigSet::empty();
    nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&signals), Some(&mut old_mask))
        .map_err(|e| Error::os("pthread_sigmask", e))?;
    let result = supervise(spec, &job, &segments, signals, grace);
    let _ = nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&old_mask), None);
    drop(segments);
    result
}

fn spawn_rank(
    spec: &LaunchSpec,
    job: &str,
    rank: u32,
    fds: &[std::os::fd::RawFd],
) -> std::io::Result<Child> {
    let mut cmd = Command::new(&spec.program);
    let fd_list: Vec<String> = fds.iter().map(|fd| fd.to_string()).collect();
    cmd.args(&spec.args)
        .env(env::JOB, job)
        .env(env::RANK, rank.to_string())
        .env(env::PROCS, spec.procs.to_string())
        .env(env::SEGMENT_FDS, fd_list.join(","))
        .process_group(0);
    let fds = fds.to_vec();
    if spec.label {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    }
    let launcher = nix::unistd::getpid();
    // SAFETY: the closure runs in the forked child before exec and only makes
    // async-signal-safe system calls (sigprocmask, prctl, fcntl, getppid, _exit).
    unsafe {
        cmd.pre_exec(move || {
            // The launcher blocks the signals it reads from its signalfd; a rank starts
            // with none blocked.
            nix::sys::signal::sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None)?;
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
            // The segments, opened close-on-exec in the launcher, stay open in the rank.
            segment::keep_across_exec(&fds)?;
            // The launcher may have died between fork and prctl.
            if nix::unistd::getppid() != launcher {
                nix::libc::_exit(1);
            }
            Ok(())
        })
    };
    cmd.spawn()
}

/// Copies `from` to `to` line by line, each line prefixed with `[rank] `.
fn forward_labeled<W: Write>(rank: u32, from: impl Read, mut to: impl FnMut() -> W) {
    let mut reader = BufReader::new(from);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                if !line.ends_with(b"\n") {
                    line.push(b'\n');
                }
                let mut out = to();
                let _ = write!(out, "[{rank}] ");
                let _ = out.write_all(&line);
                let _ = out.flush();
            }
        }
    }
}

fn supervise(
    spec: &LaunchSpec,
    job: &str,
    segments: &JobSegments,
    signals: SigSet,
    grace: Duration,
) -> Result<Option<Failure>> {
    let signal_fd = SignalFd::with_flags(&signals, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
        .map_err(|e| Error::os("signalfd", e))?;
    let mut ranks: Vec<Rank> = Vec::with_capacity(spec.procs as usize);
    let mut forwarders = Vec::new();
    let mut failure: Option<Failure> = None;
    let mut ends: Vec<Option<(Pid, RankEnd)>> = vec![None; spec.procs as usize];
    let mut kill_at: Option<Instant> = None;
    let mut live = 0usize;
    let fds = segment::raw(&segments.fds);

    let signal_all = |ranks: &[Rank], sig: Signal| {
        for r in ranks.iter().filter(|r| r.child.is_some()) {
            let _ = killpg(r.pid, sig);
        }
    };
    // Ranks that attached to the job see the abort flag in their next wait and leave with
    // an error (in Fortran, a failed-image status); other programs get SIGTERM. Whatever
    // is left when the grace period ends gets SIGKILL.
    let stop = |ranks: &[Rank]| {
        segments.abort_all();
        for (rank, r) in ranks.iter().enumerate() {
            if r.child.is_some() && segments.state(rank as u32) != state::ATTACHED {
                let _ = killpg(r.pid, Signal::SIGTERM);
            }
        }
    };

    for rank in 0..spec.procs {
        match spawn_rank(spec, job, rank, &fds) {
            Ok(mut child) => {
                if spec.label {
                    if let Some(out) = child.stdout.take() {
                        forwarders.push(std::thread::spawn(move || {
                            forward_labeled(rank, out, || std::io::stdout().lock())
                        }));
                    }
                    if let Some(err) = child.stderr.take() {
                        forwarders.push(std::thread::spawn(move || {
                            forward_labeled(rank, err, || std::io::stderr().lock())
                        }));
                    }
                }
                ranks.push(Rank {
                    pid: Pid::from_raw(child.id() as i32),
                    child: Some(child),
                });
                live += 1;
            }
            Err(e) => {
                eprintln!(
                    "gaspar run: cannot start {}: {e}",
                    spec.program.to_string_lossy()
                );
                segments.abort_all();
                signal_all(&ranks, Signal::SIGKILL);
                failure = Some(Failure::Rank {
                    rank,
                    pid: 0,
                    end: RankEnd::NotStarted(if e.kind() == std::io::ErrorKind::NotFound {
                        127
                    } else {
                        126
                    }),
                });
                kill_at = Some(Instant::now());
                break;
            }
        }
    }

    while live > 0 {
        let timeout = match kill_at {
            None => PollTimeout::NONE,
            Some(at) => {
                let left = at.saturating_duration_since(Instant::now());
                PollTimeout::try_from(left.as_millis().min(60_000) as i32 + 1)
                    .unwrap_or(PollTimeout::NONE)
            }
        };
        let mut fds = [PollFd::new(
            std::os::fd::AsFd::as_fd(&signal_fd),
            PollFlags::POLLIN,
        )];
        match poll(&mut fds, timeout) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(Error::os("poll", e)),
        }
        while let Ok(Some(info)) = signal_fd.read_signal() {
            let sig = info.ssi_signo as i32;
            if sig != Signal::SIGCHLD as i32 && failure.is_none() {
                failure = Some(Failure::Interrupted(sig));
                // Asked to stop: every rank gets SIGTERM at once.
                segments.abort_all();
                signal_all(&ranks, Signal::SIGTERM);
                kill_at = Some(Instant::now() + grace);
            }
        }
        // Reap every rank that ended.
        loop {
            let status = match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) | Err(_) => break,
                Ok(s) => s,
            };
            let (pid, end) = match status {
                WaitStatus::Exited(pid, code) => (pid, RankEnd::Exited(code)),
                WaitStatus::Signaled(pid, sig, _) => (pid, RankEnd::Signaled(sig as i32)),
                _ => continue,
            };
            let Some(index) = ranks.iter().position(|r| r.pid == pid && r.child.is_some()) else {
                continue;
            };
            let rank = index as u32;
            // Already reaped by waitpid: drop std's handle without waiting again.
            ranks[index].child = None;
            live -= 1;
            let end = match end {
                RankEnd::Exited(0) if segments.state(rank) == state::ATTACHED => {
                    RankEnd::NotFinalized
                }
                other => other,
            };
            ends[index] = Some((pid, end));
            let failed = end != RankEnd::Exited(0);
            tracing::debug!(rank, ?end, "rank ended");
            if failed && failure.is_none() {
                failure = Some(Failure::Rank {
                    rank,
                    pid: pid.as_raw(),
                    end,
                });
                stop(&ranks);
                kill_at = Some(Instant::now() + grace);
            }
            // After `stop`: ranks waiting for a failed rank see the abort first.
            segments.segments[index].header().record_exit();
            segments.wake_all();
        }
        if let Some(at) = kill_at {
            if live > 0 && Instant::now() >= at {
                signal_all(&ranks, Signal::SIGKILL);
                // Wait for the kills to be reaped; no further escalation exists.
                kill_at = Some(Instant::now() + Duration::from_secs(3600));
            }
        }
    }
    for f in forwarders {
        let _ = f.join();
    }
    // Ranks that saw the abort flag may have exited before the rank that called abort
    // was reaped: the job failed because of the one that aborted.
    if let Some(rank) = segments.aborted_by() {
        if let Some(Some((pid, end))) = ends.get(rank as usize) {
            if !matches!(failure, Some(Failure::Interrupted(_))) {
                failure = Some(Failure::Rank {
                    rank,
                    pid: pid.as_raw(),
                    end: *end,
                });
            }
        }
    }
    Ok(failure)
}
