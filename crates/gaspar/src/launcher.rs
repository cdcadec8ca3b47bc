//! `gaspar run`: creates a job's segments, starts its ranks, watches them, and on every
//! ending stops the survivors and removes the segments.
//!
//! Nothing is left behind: segments are anonymous memory files the ranks inherit (no name
//! exists anywhere); each rank runs in its own process group, which is ended with the rank
//! (so that what a rank started does not outlive it); every rank gets SIGKILL if the
//! launcher itself dies (PR_SET_PDEATHSIG), and a watchdog process ends the ranks' groups
//! then; at the end the segments are emptied, so that even a daemon a rank started, which
//! escaped its group with the descriptors, keeps no memory.
//!
//! The launcher owns processes: signals, output forwarding, process groups, the watchdog.
//! The segments and the environment variables a rank finds them through belong to the shm
//! transport, which this module uses; its own `unsafe` is the process plumbing only
//! (fork, pre-exec, `_exit`, descriptors inherited across them).

use std::ffi::OsString;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{killpg, SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{waitid, waitpid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::{ForkResult, Pid};

use crate::config;
use crate::error::{report, Error, Result};
use crate::transport::shm::env;
use crate::transport::shm::job::JobSegments;
use crate::transport::shm::segment;

/// Whether this process was started by neither `gaspar run` nor an MPI launcher (it runs
/// as a job of one rank): a program may then start a job of itself with [`run`], as
/// libcaf_gaspar does for a Fortran program started with `GFORTRAN_NUM_IMAGES`.
///
/// ```
/// // A test binary is started alone unless `gaspar run` or mpirun started it.
/// let alone = gaspar::launcher::started_alone();
/// assert_eq!(alone, std::env::var_os("GASPAR_JOB_ID").is_none()
///     && std::env::var_os("OMPI_COMM_WORLD_SIZE").is_none()
///     && std::env::var_os("PMI_SIZE").is_none()
///     && std::env::var_os("PMIX_RANK").is_none()
///     && std::env::var_os("MPI_LOCALNRANKS").is_none());
/// ```
pub fn started_alone() -> bool {
    crate::transport::started_alone()
}

/// What to launch.
///
/// ```no_run
/// use gaspar::launcher::{run, LaunchSpec};
/// let spec = LaunchSpec { procs: 4, label: true, program: "./ring".into(), args: vec![] };
/// match run(&spec)? {
///     None => println!("every rank finalized"),
///     Some(failure) => std::process::exit(failure.exit_code()),
/// }
/// # Ok::<(), gaspar::Error>(())
/// ```
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
///
/// ```
/// use gaspar::launcher::{Failure, RankEnd};
/// let crashed = Failure::Rank { rank: 1, pid: 4242, end: RankEnd::Signaled(11) };
/// assert_eq!(crashed.exit_code(), 128 + 11);
/// ```
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
///
/// ```
/// use gaspar::launcher::{Failure, RankEnd};
/// let stopped = Failure::Ended { rank: 0, end: RankEnd::Exited(3) }; // ERROR STOP 3
/// assert_eq!(stopped.exit_code(), 3);
/// ```
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
    /// Rank `rank` ended the whole job on purpose after saying why itself (a Fortran
    /// ERROR STOP): the job's status is the rank's, and the launcher has nothing to add.
    Ended {
        /// Rank number.
        rank: u32,
        /// How it ended.
        end: RankEnd,
    },
    /// The first rank that failed while the others went on without it (a coarray job's
    /// failed image, which the others see through STAT=); no other rank ended the job.
    WentOn {
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
    /// Whether the job's end was already told on stderr, so that the launcher's caller
    /// adds nothing: a rank that ended the job said why (ERROR STOP), and a program that
    /// could not be started was named with the reason when it failed to start.
    ///
    /// ```
    /// use gaspar::launcher::{Failure, RankEnd};
    /// assert!(Failure::Rank { rank: 0, pid: 0, end: RankEnd::NotStarted(127) }.is_told());
    /// assert!(!Failure::Rank { rank: 1, pid: 4242, end: RankEnd::Signaled(11) }.is_told());
    /// ```
    pub fn is_told(&self) -> bool {
        matches!(
            self,
            Failure::Ended { .. }
                | Failure::Rank {
                    end: RankEnd::NotStarted(_),
                    ..
                }
        )
    }

    /// The launcher's exit status for this failure. A job that went on without a failed
    /// rank succeeds when that rank ended without finalizing and with status 0 (a Fortran
    /// FAIL IMAGE, the program's own doing: the standard makes it a failed image the others
    /// handle, not an error termination); a rank that crashed still fails the job.
    ///
    /// ```
    /// use gaspar::launcher::{Failure, RankEnd};
    /// // FAIL IMAGE: the rank left without finalizing, status 0; the others went on.
    /// let failed = Failure::WentOn { rank: 2, pid: 4243, end: RankEnd::NotFinalized };
    /// assert_eq!(failed.exit_code(), 0);
    /// let crashed = Failure::WentOn { rank: 2, pid: 4243, end: RankEnd::Signaled(9) };
    /// assert_ne!(crashed.exit_code(), 0);
    /// assert_eq!(Failure::Interrupted(2).exit_code(), 130);
    /// ```
    pub fn exit_code(&self) -> i32 {
        match *self {
            Failure::Rank { end, .. } | Failure::Ended { end, .. } => end.exit_code(),
            Failure::WentOn { end, .. } => match end {
                RankEnd::NotFinalized => 0,
                other => other.exit_code(),
            },
            Failure::Interrupted(sig) => 128 + sig,
        }
    }
}

impl RankEnd {
    /// The exit status a shell would report for a process that ended so.
    fn exit_code(self) -> i32 {
        match self {
            RankEnd::Exited(code) => code,
            RankEnd::Signaled(sig) => 128 + sig,
            RankEnd::NotFinalized => 1,
            RankEnd::NotStarted(code) => code,
        }
    }
}

impl std::fmt::Display for RankEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            RankEnd::Exited(code) => write!(f, "exited with status {code}"),
            RankEnd::Signaled(sig) => {
                write!(f, "was killed by signal {sig} ({})", signal_name(sig))
            }
            RankEnd::NotFinalized => write!(f, "exited without finalizing gaspar"),
            RankEnd::NotStarted(code) => write!(f, "could not be started (status {code})"),
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
                write!(f, "rank {rank} could not be started; the job was stopped")
            }
            Failure::Rank { rank, pid, end } => {
                write!(f, "rank {rank} (pid {pid}) {end}; the job was stopped")
            }
            Failure::Ended { rank, end } => write!(f, "rank {rank} ended the job: it {end}"),
            Failure::WentOn {
                rank,
                pid,
                end: RankEnd::NotFinalized,
            } => write!(
                f,
                "rank {rank} (pid {pid}) failed: it left without finalizing (a failed image); \
                 the other ranks went on without it"
            ),
            Failure::WentOn { rank, pid, end } => write!(
                f,
                "rank {rank} (pid {pid}) failed: it {end}; the other ranks went on without it"
            ),
            Failure::Interrupted(sig) => {
                write!(
                    f,
                    "launcher received signal {sig} ({}); the job was stopped",
                    signal_name(sig)
                )
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
    pid: Pid,
    running: bool,
}

/// A process forked before the ranks start that ends their process groups and empties
/// the segments if the launcher dies without doing so itself (`kill -9`): PR_SET_PDEATHSIG
/// reaches the ranks but not the processes they started.
///
/// Each rank writes its pid (= its process group id) into the watchdog's pipe before it
/// execs; the launcher writes minus the pid once it has ended that group and reaped the rank
/// (the number may name another group later), and 0 when it has ended the job itself. End
/// of file without that 0 means the launcher is gone.
struct Watchdog {
    pid: Pid,
    tell: Option<OwnedFd>,
}

/// The launcher's "job over, nothing to do" word on the watchdog's pipe.
const JOB_OVER: i32 = 0;

impl Watchdog {
    fn start(procs: u32, segments: &JobSegments) -> Result<Watchdog> {
        let (listen, tell) =
            nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|e| Error::os("pipe2", e))?;
        // Allocated before the fork: the watchdog itself must not allocate.
        let groups = Vec::with_capacity(procs as usize);
        let memfds = segments.raw_fds();
        // SAFETY: the child only makes async-signal-safe system calls (close, setsid, read,
        // kill, ftruncate, _exit) and pushes into a vector within its capacity, so it is
        // sound even if the launcher's process has other threads.
        match unsafe { nix::unistd::fork() } {
            Ok(ForkResult::Child) => {
                drop(tell);
                watch(listen, groups, &memfds)
            }
            Ok(ForkResult::Parent { child }) => Ok(Watchdog {
                pid: child,
                tell: Some(tell),
            }),
            Err(e) => Err(Error::os("fork (launcher watchdog)", e)),
        }
    }

    /// The descriptor the ranks write their pids into (open until the watchdog is dropped).
    fn tell_fd(&self) -> Option<RawFd> {
        self.tell.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// The launcher ended rank `pid`'s process group and reaped the rank.
    fn forget(&self, pid: Pid) {
        if let Some(tell) = &self.tell {
            let _ = nix::unistd::write(tell, &(-pid.as_raw()).to_ne_bytes());
        }
    }

    /// The launcher ended every rank's process group itself: the watchdog leaves quietly.
    fn dismiss(self) {
        if let Some(tell) = &self.tell {
            let _ = nix::unistd::write(tell, &JOB_OVER.to_ne_bytes());
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        // End of file: the watchdog acts (unless dismissed) and exits.
        self.tell = None;
        let _ = waitpid(self.pid, None);
    }
}

/// The watchdog's life: collects the ranks' process groups until the launcher says the job
/// is over or disappears; in the second case ends the groups and empties the segments.
fn watch(listen: OwnedFd, mut groups: Vec<i32>, memfds: &[RawFd]) -> ! {
    // Its own session: a terminal's ^C or a kill of the launcher's process group does not
    // reach it (the signals the launcher reads are blocked here too, inherited).
    let _ = nix::unistd::setsid();
    let mut word = [0u8; 4];
    loop {
        match nix::unistd::read(listen.as_raw_fd(), &mut word) {
            Ok(4) => {
                let pid = i32::from_ne_bytes(word);
                if pid == JOB_OVER {
                    // SAFETY: _exit ends the process without running anything of ours.
                    unsafe { nix::libc::_exit(0) }
                }
                if pid < 0 {
                    if let Some(at) = groups.iter().position(|&g| g == -pid) {
                        groups.swap_remove(at);
                    }
                } else if groups.len() < groups.capacity() {
                    groups.push(pid);
                }
            }
            Err(Errno::EINTR) => {}
            // End of file (or an error): the launcher is gone.
            _ => break,
        }
    }
    for &group in &groups {
        let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
    }
    for &fd in memfds {
        // SAFETY: `fd` is one of the segment descriptors inherited from the launcher,
        // open in this process until it exits.
        let _ = nix::unistd::ftruncate(unsafe { BorrowedFd::borrow_raw(fd) }, 0);
    }
    // SAFETY: as above.
    unsafe { nix::libc::_exit(0) }
}

/// Whether this process ignores `signal` (its disposition is `SIG_IGN`).
fn ignored(signal: Signal) -> bool {
    let mut current = std::mem::MaybeUninit::<nix::libc::sigaction>::zeroed();
    // SAFETY: with a null new action, sigaction only writes the current one into
    // `current`, which is large enough for it.
    let rc = unsafe { nix::libc::sigaction(signal as i32, std::ptr::null(), current.as_mut_ptr()) };
    // SAFETY: zeroed, then written by sigaction when it succeeded.
    rc == 0 && unsafe { current.assume_init() }.sa_sigaction == nix::libc::SIG_IGN
}

/// The settings every rank reads as it starts on shm, checked before any rank starts: a
/// bad one is one line from the launcher, not an error from each rank.
fn check_rank_settings() -> Result<()> {
    crate::strided::Strided::settings()?;
    crate::transport::shm::env::same_placement()?;
    crate::transport::wait::set_spin_limit()?;
    Ok(())
}

/// Runs a job to its end. `Ok(None)` when every rank succeeded.
///
/// ```no_run
/// use gaspar::launcher::{run, LaunchSpec};
/// // `gaspar run -n 2 ./prog`: calibrates the copy engine if needed, starts two ranks and
/// // waits for them.
/// let spec = LaunchSpec { procs: 2, label: false, program: "./prog".into(), args: vec!["--size".into(), "64".into()] };
/// assert_eq!(run(&spec)?, None);
/// # Ok::<(), gaspar::Error>(())
/// ```
pub fn run(spec: &LaunchSpec) -> Result<Option<Failure>> {
    if spec.procs == 0 || u64::from(spec.procs) > crate::addr::MAX_RANKS {
        return Err(Error::invalid(
            "gaspar run",
            format!("-n must be between 1 and {}", crate::addr::MAX_RANKS),
        ));
    }
    let (starter_len, heap_len) = config::segment_sizes()?;
    let grace = Duration::from_millis(config::KILL_GRACE_MS.number()?);
    check_rank_settings()?;
    // The copy table is measured here, once, if this machine has none: never in the
    // ranks, which read it (a failure only leaves them with memcpy, and is said).
    match crate::transport::shm::calibrate::ensure_calibrated() {
        Ok((_, Some(measured))) => tracing::info!(
            "copy engine calibrated in {:.2} s",
            measured.took.as_secs_f64()
        ),
        Ok((_, None)) => {}
        Err(e) => tracing::warn!("copy engine not calibrated ({e}); ranks copy with memcpy"),
    }
    // Measured here for the ranks' waits, so that no rank starts a thread to measure it
    // (see `env::WAKE_UP_NS`); under a budget the user set, not needed.
    let wake_up = config::SPIN_LIMIT
        .is_auto()
        .then(crate::transport::wait::measured_sleep_and_wake_up);
    let job = segment::new_job_id()?;
    let segments = JobSegments::create(&job, spec.procs, starter_len, heap_len)?;

    // Signals arrive through a signalfd; they are blocked in this thread before any other
    // thread starts, and the children get a clean mask from std's spawn.
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGCHLD);
    for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // One the launcher was started ignoring (SIGHUP under `nohup`, SIGINT in a
        // background job of a script) stays ignored, as in any other program.
        if !ignored(s) {
            signals.add(s);
        }
    }
    let mut old_mask = SigSet::empty();
    nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&signals), Some(&mut old_mask))
        .map_err(|e| Error::os("pthread_sigmask", e))?;
    let result = Watchdog::start(spec.procs, &segments).and_then(|watchdog| {
        let ranks = RankStart { job: &job, wake_up };
        let failure = supervise(spec, &ranks, &segments, &watchdog, signals, grace)?;
        // Emptied before the watchdog is dismissed: no moment is left in which a kill of
        // the launcher would leave the memory to a daemon.
        segments.empty();
        watchdog.dismiss();
        Ok(failure)
    });
    let _ = nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&old_mask), None);
    drop(segments);
    result
}

/// What every rank of a job is started with besides its program.
struct RankStart<'a> {
    /// The job's id.
    job: &'a str,
    /// One sleep and wake-up, measured by the launcher (`None`: the user set the budget).
    wake_up: Option<Duration>,
}

fn spawn_rank(
    spec: &LaunchSpec,
    start: &RankStart<'_>,
    rank: u32,
    fds: &[RawFd],
    watchdog: Option<RawFd>,
) -> std::io::Result<std::process::Child> {
    let mut cmd = Command::new(&spec.program);
    let fd_list: Vec<String> = fds.iter().map(|fd| fd.to_string()).collect();
    cmd.args(&spec.args)
        .env(env::JOB, start.job)
        .env(env::RANK, rank.to_string())
        .env(env::PROCS, spec.procs.to_string())
        .env(env::SEGMENT_FDS, fd_list.join(","))
        .process_group(0);
    let fds = fds.to_vec();
    if spec.label {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    }
    let launcher = nix::unistd::getpid();
    cmd.env(env::LAUNCHER_PID, launcher.to_string());
    if let Some(wake_up) = start.wake_up {
        cmd.env(env::WAKE_UP_NS, wake_up.as_nanos().to_string());
    }
    // SAFETY: the closure runs in the forked child before exec and only makes
    // async-signal-safe system calls (sigprocmask, prctl, fcntl, getpid, write, getppid,
    // _exit); `watchdog` is the launcher's open end of the watchdog's pipe, which the
    // launcher keeps open while it spawns ranks, so the child has it until exec.
    unsafe {
        cmd.pre_exec(move || {
            // The launcher blocks the signals it reads from its signalfd; a rank starts
            // with none blocked.
            nix::sys::signal::sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None)?;
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
            // The segments, opened close-on-exec in the launcher, stay open in the rank.
            segment::keep_across_exec(&fds)?;
            // The watchdog learns this rank's process group before the program runs. (Its
            // pipe is close-on-exec; if the watchdog is gone, the rank runs without it.)
            if let Some(watchdog) = watchdog {
                let group = nix::unistd::getpid().as_raw().to_ne_bytes();
                let _ = nix::unistd::write(BorrowedFd::borrow_raw(watchdog), &group);
            }
            // The launcher may have died between fork and prctl.
            if nix::unistd::getppid() != launcher {
                nix::libc::_exit(1);
            }
            Ok(())
        })
    };
    cmd.spawn()
}

/// A rank's piped stdout or stderr, forwarded line by line with the `[rank] ` prefix by
/// the launcher's own loop (not a thread per pipe: the job ends when its ranks end, even if
/// a process they started keeps the pipe open).
/// Reads of 16 KiB one pipe gets per turn of the launcher's loop.
const PUMP_CHUNKS: usize = 8;

/// What one [`Forward::pump`] left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pumped {
    /// Nothing more to read now.
    Drained,
    /// More may be waiting: the turn's reads were used up.
    More,
    /// The pipe, or the launcher's output, is closed.
    Closed,
}

struct Forward {
    rank: u32,
    to_stderr: bool,
    pipe: OwnedFd,
    pending: Vec<u8>,
}

impl Forward {
    fn new(rank: u32, to_stderr: bool, pipe: OwnedFd) -> Result<Forward> {
        fcntl(pipe.as_raw_fd(), FcntlArg::F_SETFL(OFlag::O_NONBLOCK))
            .map_err(|e| Error::os("fcntl(O_NONBLOCK) on an output pipe", e))?;
        Ok(Forward {
            rank,
            to_stderr,
            pipe,
            pending: Vec::new(),
        })
    }

    /// Forwards the complete lines that can be read without waiting, up to
    /// [`PUMP_CHUNKS`] reads, so that a rank writing without pause cannot keep the
    /// launcher from its signals and its other ranks (the pipe stays readable, and the
    /// next poll comes back to it). Once the pipe is closed, a last line without newline
    /// is forwarded; once the launcher's own output is closed (a reader that went away, as
    /// `| head` does), the pipe is dropped, and the rank's next write fails as it would
    /// have without `--label`.
    fn pump(&mut self) -> Pumped {
        let mut chunk = [0u8; 16 * 1024];
        for _ in 0..PUMP_CHUNKS {
            match nix::unistd::read(self.pipe.as_raw_fd(), &mut chunk) {
                Ok(n) if n > 0 => {
                    self.pending.extend_from_slice(&chunk[..n]);
                    while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                        let line: Vec<u8> = self.pending.drain(..=end).collect();
                        if !self.emit(&line) {
                            return Pumped::Closed;
                        }
                    }
                }
                Err(Errno::EINTR) => {}
                Err(Errno::EAGAIN) => return Pumped::Drained,
                Ok(_) | Err(_) => {
                    self.emit_partial_line();
                    return Pumped::Closed;
                }
            }
        }
        Pumped::More
    }

    /// Forwards what is left when the job ends, without waiting for the pipe to close.
    fn finish(mut self) {
        while self.pump() == Pumped::More {}
        self.emit_partial_line();
    }

    fn emit_partial_line(&mut self) {
        if !self.pending.is_empty() {
            let mut line = std::mem::take(&mut self.pending);
            line.push(b'\n');
            // The end of the forwarding either way.
            let _ = self.emit(&line);
        }
    }

    /// Writes `[rank] line` in one write, so that lines of different ranks never mix;
    /// `false` when the launcher's output is closed.
    fn emit(&self, line: &[u8]) -> bool {
        let mut labeled = format!("[{}] ", self.rank).into_bytes();
        labeled.extend_from_slice(line);
        let written = if self.to_stderr {
            std::io::stderr().lock().write_all(&labeled)
        } else {
            let mut out = std::io::stdout().lock();
            out.write_all(&labeled).and_then(|()| out.flush())
        };
        !matches!(written, Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

fn supervise(
    spec: &LaunchSpec,
    start: &RankStart<'_>,
    segments: &JobSegments,
    watchdog: &Watchdog,
    signals: SigSet,
    grace: Duration,
) -> Result<Option<Failure>> {
    let signal_fd = SignalFd::with_flags(&signals, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
        .map_err(|e| Error::os("signalfd", e))?;
    let mut ranks: Vec<Rank> = Vec::with_capacity(spec.procs as usize);
    let mut forwards: Vec<Forward> = Vec::new();
    let mut failure: Option<Failure> = None;
    let mut went_on: Option<Failure> = None;
    let mut ends: Vec<Option<(Pid, RankEnd)>> = vec![None; spec.procs as usize];
    let mut kill_at: Option<Instant> = None;
    let mut live = 0usize;
    let fds = segments.raw_fds();

    let signal_all = |ranks: &[Rank], sig: Signal| {
        for r in ranks.iter().filter(|r| r.running) {
            let _ = killpg(r.pid, sig);
        }
    };
    // Ranks that attached to the job see the abort flag in their next wait and leave with
    // an error (in Fortran, a failed-image status); other programs get SIGTERM. Whatever
    // is left when the grace period ends gets SIGKILL.
    let stop = |ranks: &[Rank]| {
        segments.abort_all();
        for (rank, r) in ranks.iter().enumerate() {
            if r.running && !segments.attached(rank as u32) {
                let _ = killpg(r.pid, Signal::SIGTERM);
            }
        }
    };

    for rank in 0..spec.procs {
        match spawn_rank(spec, start, rank, &fds, watchdog.tell_fd()) {
            Ok(mut child) => {
                let pid = Pid::from_raw(child.id() as i32);
                ranks.push(Rank { pid, running: true });
                live += 1;
                if let Some(out) = child.stdout.take() {
                    forwards.push(Forward::new(rank, false, out.into())?);
                }
                if let Some(err) = child.stderr.take() {
                    forwards.push(Forward::new(rank, true, err.into())?);
                }
                // The rank is reaped below by its pid; std's handle is not needed.
                drop(child);
            }
            Err(e) => {
                let program = std::path::Path::new(&spec.program);
                let why = if program.is_dir() {
                    "it is a directory".to_string()
                } else {
                    e.to_string()
                };
                // The job's one line: nothing else is printed for it (`Failure::is_told`).
                if rank == 0 {
                    report(&format!("gaspar run: cannot start {program:?}: {why}"));
                } else {
                    report(&format!(
                        "gaspar run: cannot start {program:?} as rank {rank}: {why}; \
                         the job was stopped"
                    ));
                }
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
        let mut polled = vec![PollFd::new(signal_fd.as_fd(), PollFlags::POLLIN)];
        polled.extend(
            forwards
                .iter()
                .map(|f| PollFd::new(f.pipe.as_fd(), PollFlags::POLLIN)),
        );
        match poll(&mut polled, timeout) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(Error::os("poll", e)),
        }
        let ready: Vec<bool> = polled[1..]
            .iter()
            .map(|p| p.revents().is_some_and(|r| !r.is_empty()))
            .collect();
        drop(polled);
        let mut index = 0;
        forwards.retain_mut(|f| {
            let open = !ready[index] || f.pump() != Pumped::Closed;
            index += 1;
            open
        });
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
        // Reap every rank that ended, after ending its process group: while the rank is
        // an unreaped zombie, its pid cannot name another process group.
        loop {
            let peek = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
            let (pid, end) = match waitid(Id::All, peek) {
                Ok(WaitStatus::Exited(pid, code)) => (pid, RankEnd::Exited(code)),
                Ok(WaitStatus::Signaled(pid, sig, _)) => (pid, RankEnd::Signaled(sig as i32)),
                _ => break,
            };
            let index = ranks.iter().position(|r| r.pid == pid && r.running);
            if index.is_some() {
                let _ = killpg(pid, Signal::SIGKILL);
            }
            let _ = waitpid(pid, None);
            // (Not a rank: the watchdog, which only ends early if it was killed.)
            let Some(index) = index else {
                continue;
            };
            watchdog.forget(pid);
            let rank = index as u32;
            ranks[index].running = false;
            live -= 1;
            let end = match end {
                RankEnd::Exited(0) if segments.attached(rank) => RankEnd::NotFinalized,
                other => other,
            };
            ends[index] = Some((pid, end));
            let failed = end != RankEnd::Exited(0);
            // A rank that asked for it (a coarray job's failed image) is reported to the
            // others, which go on; any other failure, or any failure once the job is being
            // ended, stops the job.
            let reported = failed && segments.reports_failure(rank) && !segments.aborted();
            tracing::debug!(rank, ?end, reported, "rank ended");
            let pid_number = pid.as_raw();
            if reported && went_on.is_none() {
                went_on = Some(Failure::WentOn {
                    rank,
                    pid: pid_number,
                    end,
                });
            }
            if failed && !reported && failure.is_none() {
                failure = Some(Failure::Rank {
                    rank,
                    pid: pid_number,
                    end,
                });
            }
            if failed && !reported && kill_at.is_none() {
                stop(&ranks);
                kill_at = Some(Instant::now() + grace);
            }
            // After `stop`: ranks waiting for a failed rank see the abort first.
            segments.record_exit(rank);
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
    // The ranks are gone: forward what they wrote, not what outlives them.
    for forward in forwards {
        forward.finish();
    }
    // Ranks that saw the abort flag may have exited before the rank that called abort
    // was reaped: the job failed because of the one that aborted.
    if let Some((rank, on_purpose)) = segments.aborted_by() {
        if let Some(Some((pid, end))) = ends.get(rank as usize) {
            if !matches!(failure, Some(Failure::Interrupted(_))) {
                let (pid, end) = (pid.as_raw(), *end);
                failure = Some(if on_purpose {
                    Failure::Ended { rank, end }
                } else {
                    Failure::Rank { rank, pid, end }
                });
            }
        }
    }
    Ok(failure.or(went_on))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_ended_on_purpose_exits_with_the_rank_status() {
        let ended = Failure::Ended {
            rank: 2,
            end: RankEnd::Exited(7),
        };
        assert_eq!(ended.exit_code(), 7);
        assert_eq!(
            ended.to_string(),
            "rank 2 ended the job: it exited with status 7"
        );
    }

    #[test]
    fn a_job_that_went_on_fails_only_after_a_crash() {
        let failed_image = Failure::WentOn {
            rank: 1,
            pid: 42,
            end: RankEnd::NotFinalized,
        };
        assert_eq!(failed_image.exit_code(), 0);
        assert_eq!(
            failed_image.to_string(),
            "rank 1 (pid 42) failed: it left without finalizing (a failed image); the other \
             ranks went on without it"
        );
        let crashed = Failure::WentOn {
            rank: 1,
            pid: 42,
            end: RankEnd::Signaled(6),
        };
        assert_eq!(crashed.exit_code(), 134);
        assert_eq!(
            crashed.to_string(),
            "rank 1 (pid 42) failed: it was killed by signal 6 (SIGABRT); the other ranks went \
             on without it"
        );
    }

    #[test]
    fn a_stopped_job_says_so() {
        let stopped = Failure::Rank {
            rank: 0,
            pid: 7,
            end: RankEnd::Exited(3),
        };
        assert_eq!(stopped.exit_code(), 3);
        assert_eq!(
            stopped.to_string(),
            "rank 0 (pid 7) exited with status 3; the job was stopped"
        );
    }
}
