//! Whether every thread of this machine that wants a core has one: what lets a wait go on
//! polling past its budget without taking a core from anybody (see
//! [`Patience::keeps_polling`](super::wait::Patience::keeps_polling)).
//!
//! The kernel counts the threads that are runnable at this moment (running, or waiting in
//! a run queue) in the fourth field of `/proc/loadavg` ("runnable/total"); the thread that
//! reads it is one of them. While that count is at most the cores online, no thread
//! waits for a core. A thread is taken to want a core only when two reads in a row see
//! more runnable threads than cores: threads that wake for a few microseconds and sleep
//! again (MPI progress threads, timers) are seen now and then by a single read and want no
//! core for long. (Deciding on one read, 2 MPICH ranks on 2 cores, rank 0 putting to rank
//! 1 with MPI_Put + MPI_Win_flush while rank 1 waited in a barrier, which it must keep
//! driving MPI's progress in: 3.4-3.8 us per put, 2.1-2.7 deciding on two; AMD EPYC VM,
//! `examples/op_loop.rs raw-put`, four alternated runs each.) One read is a `pread` of a
//! file kept open (0.85 us on the AMD EPYC VM we measured), and the answer is kept for
//! [`REASK`]: a thread that wants a core a poller holds gets it within two of those (the
//! second read confirms the first), sooner than the scheduler's own time slice (about 3
//! ms) would give it. (Asking once per wait budget, 30 us there, made a busy rank's
//! coarray gets 5.8-6.0 ns instead of 5.2 in three of five runs.)

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::OnceLock;
use std::time::Instant;

/// The open `/proc/loadavg` and the cores online it is compared with.
struct RunQueue {
    loadavg: File,
    cores: u64,
    /// When the count was last read, and what the last two reads said.
    last: std::sync::Mutex<Option<(Instant, Reads)>>,
}

/// How long an answer is kept.
const REASK: std::time::Duration = std::time::Duration::from_millis(1);

/// Opened at the first question; `None` where `/proc/loadavg` or the count of cores cannot
/// be had (then no wait polls past its budget).
static RUN_QUEUE: OnceLock<Option<RunQueue>> = OnceLock::new();

/// Whether the machine's runnable threads are no more than its cores online, and no more
/// than `job_cores` (the cores the job may run on, where known: a job confined to a few
/// cores of a busy machine cannot tell whose threads wait, and counts them all as its
/// own), by the last two reads (the latest at most [`REASK`] ago; `false` when the count
/// cannot be read).
pub(crate) fn every_runnable_thread_has_a_core(job_cores: Option<usize>) -> bool {
    let Some(queue) = RUN_QUEUE.get_or_init(open) else {
        return false;
    };
    let cores = job_cores.map_or(queue.cores, |job| queue.cores.min(job as u64));
    let now = Instant::now();
    let mut last = queue.last.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((at, reads)) = *last {
        if now.duration_since(at) < REASK {
            return reads.every_thread_has_a_core(cores);
        }
    }
    let mut text = [0u8; 128];
    let runnable = match queue.loadavg.read_at(&mut text, 0) {
        Ok(len) => runnable_threads(&text[..len]),
        Err(_) => None,
    };
    let reads = Reads {
        previous: last.and_then(|(_, reads)| reads.latest),
        latest: runnable,
    };
    *last = Some((now, reads));
    reads.every_thread_has_a_core(cores)
}

/// The runnable threads counted by the last two reads (`None`: unread or unreadable).
#[derive(Debug, Clone, Copy)]
struct Reads {
    previous: Option<u64>,
    latest: Option<u64>,
}

impl Reads {
    /// No thread wants a core unless both reads saw more runnable threads than `cores`;
    /// an unreadable count says that one may.
    fn every_thread_has_a_core(self, cores: u64) -> bool {
        match self.latest {
            None => false,
            Some(latest) => latest <= cores || self.previous.is_some_and(|prev| prev <= cores),
        }
    }
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
    use super::{runnable_threads, Reads};

    #[test]
    fn a_thread_wants_a_core_when_two_reads_in_a_row_see_more_threads_than_cores() {
        let reads = |previous, latest| Reads { previous, latest };
        assert!(reads(None, Some(2)).every_thread_has_a_core(2));
        assert!(reads(Some(2), Some(3)).every_thread_has_a_core(2));
        assert!(reads(Some(3), Some(2)).every_thread_has_a_core(2));
        assert!(!reads(Some(3), Some(3)).every_thread_has_a_core(2));
        assert!(!reads(Some(5), Some(4)).every_thread_has_a_core(2));
        // The first read decides alone, and an unreadable one says a thread may want a core.
        assert!(!reads(None, Some(3)).every_thread_has_a_core(2));
        assert!(!reads(Some(1), None).every_thread_has_a_core(2));
        assert!(!reads(None, None).every_thread_has_a_core(2));
    }

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
