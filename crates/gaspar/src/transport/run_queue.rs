//! Whether every thread of this machine that wants a core has one: what lets a wait go on
//! polling past its budget without taking a core from anybody (see
//! [`Patience::keeps_polling`](super::wait::Patience::keeps_polling)).
//!
//! The kernel counts the threads that are runnable at this moment (running, or waiting in
//! a run queue) in the fourth field of `/proc/loadavg` ("runnable/total"); the thread that
//! reads it is one of them. While that count is at most the cores online, no thread
//! waits for a core. One read is a `pread` of a file kept open (0.85 us on the AMD EPYC
//! VM we measured), and the answer is kept for [`REASK`]: a thread that wants a core a
//! poller holds gets it within that, sooner than the scheduler's own time slice (about
//! 3 ms) would give it. (Asking once per wait budget, 30 us there, made a busy rank's
//! coarray gets 5.8-6.0 ns instead of 5.2 in three of five runs.)

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::OnceLock;
use std::time::Instant;

/// The open `/proc/loadavg` and the cores online it is compared with.
struct RunQueue {
    loadavg: File,
    cores: u64,
    /// When the count was last read, and what it was.
    last: std::sync::Mutex<Option<(Instant, Option<u64>)>>,
}

/// How long an answer is kept.
const REASK: std::time::Duration = std::time::Duration::from_millis(1);

/// Opened at the first question; `None` where `/proc/loadavg` or the count of cores cannot
/// be had (then no wait polls past its budget).
static RUN_QUEUE: OnceLock<Option<RunQueue>> = OnceLock::new();

/// Whether the machine's runnable threads are no more than its cores online, and no more
/// than `job_cores` (the cores the job may run on, where known: a job confined to a few
/// cores of a busy machine cannot tell whose threads wait, and counts them all as its
/// own) (read at most [`REASK`] ago; `false` when that cannot be read).
pub(crate) fn every_runnable_thread_has_a_core(job_cores: Option<usize>) -> bool {
    let Some(queue) = RUN_QUEUE.get_or_init(open) else {
        return false;
    };
    let cores = job_cores.map_or(queue.cores, |job| queue.cores.min(job as u64));
    let now = Instant::now();
    let mut last = queue.last.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((at, runnable)) = *last {
        if now.duration_since(at) < REASK {
            return runnable.is_some_and(|runnable| runnable <= cores);
        }
    }
    let mut text = [0u8; 128];
    let runnable = match queue.loadavg.read_at(&mut text, 0) {
        Ok(len) => runnable_threads(&text[..len]),
        Err(_) => None,
    };
    *last = Some((now, runnable));
    runnable.is_some_and(|runnable| runnable <= cores)
}

fn open() -> Option<RunQueue> {
    let loadavg = File::open("/proc/loadavg").ok()?;
    let cores = nix::unistd::sysconf(nix::unistd::SysconfVar::_NPROCESSORS_ONLN).ok()??;
    Some(RunQueue {
        loadavg,
        cores: u64::try_from(cores).ok()?,
        last: std::sync::Mutex::new(None),
    })
}

/// The runnable threads in the text of `/proc/loadavg`, e.g. 3 in
/// `0.54 3.96 4.36 3/79 10372`.
fn runnable_threads(loadavg: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(loadavg).ok()?;
    let field = text.split_ascii_whitespace().nth(3)?;
    field.split_once('/')?.0.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::runnable_threads;

    #[test]
    fn the_runnable_count_is_the_fourth_field_before_its_slash() {
        assert_eq!(runnable_threads(b"0.54 3.96 4.36 3/79 10372\n"), Some(3));
        assert_eq!(
            runnable_threads(b"12.00 11.50 9.99 130/2048 1\n"),
            Some(130)
        );
        assert_eq!(runnable_threads(b"0.54 3.96 4.36\n"), None);
        assert_eq!(runnable_threads(b"0.54 3.96 4.36 x/79 1\n"), None);
        assert_eq!(runnable_threads(b""), None);
    }
}
