//! Waiting for a socket of the accessor service: spin first, then sleep.
//!
//! A request and its reply each cross a socket; when the reader sleeps in `read`, each
//! crossing costs a wake-up of the reading thread, which dominated the round trip on the
//! machines we measured (a blocking round trip of 42-54 us against 7-9 us spinning, AMD
//! EPYC VM). So a reader first polls its socket without sleeping, for as long as a
//! sleeping round trip costs on this machine (measured once per process): the classic
//! competitive rule, which spends at most about twice the CPU time of the best choice made
//! in hindsight.

use std::io::{Read, Write};
use std::os::fd::BorrowedFd;
use std::os::unix::net::UnixStream;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

/// Round trips timed to measure the cost of sleeping (the upper quartile is kept: a few
/// round trips find the other thread still awake and come back early).
const SAMPLES: usize = 32;
/// Bounds of the measured budget: below the lower one a spin is not worth a poll, and the
/// upper one limits the CPU time a measurement taken while the machine was overloaded
/// could make every wait burn.
const SHORTEST: Duration = Duration::from_micros(5);
const LONGEST: Duration = Duration::from_millis(1);

static BUDGET: OnceLock<Duration> = OnceLock::new();

/// How long a reader polls before it sleeps: the typical round trip between two threads
/// of this process that sleep in `read` (bounded by [`SHORTEST`] and [`LONGEST`]).
pub(crate) fn budget() -> Duration {
    *BUDGET.get_or_init(|| {
        sleeping_round_trip()
            .unwrap_or(SHORTEST)
            .clamp(SHORTEST, LONGEST)
    })
}

/// The upper quartile of the times of a one-byte round trip over a socket pair to a thread that sleeps in
/// `read` (so does the timing thread), or `None` when the pair or thread cannot be had.
fn sleeping_round_trip() -> Option<Duration> {
    let (mut here, mut there) = UnixStream::pair().ok()?;
    let echo = std::thread::Builder::new()
        .name("caf-spin-measure".into())
        .spawn(move || {
            let mut byte = [0u8];
            while there.read_exact(&mut byte).is_ok() && there.write_all(&byte).is_ok() {}
        })
        .ok()?;
    let mut times = Vec::with_capacity(SAMPLES);
    let mut byte = [0u8];
    for _ in 0..SAMPLES {
        let start = Instant::now();
        if here.write_all(&byte).is_err() || here.read_exact(&mut byte).is_err() {
            break;
        }
        times.push(start.elapsed());
    }
    drop(here);
    let _ = echo.join();
    times.sort();
    times.get(times.len() * 3 / 4).copied()
}

/// Polls `fd` for input without sleeping for up to [`budget`]; true when input (or a
/// hang-up or error, which the following read reports) arrived within it.
pub(crate) fn readable_soon(fd: BorrowedFd<'_>) -> bool {
    let budget = budget();
    let start = Instant::now();
    loop {
        let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::ZERO) {
            Ok(0) | Err(nix::errno::Errno::EINTR) => {}
            _ => return true,
        }
        if start.elapsed() >= budget {
            return false;
        }
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_measured_within_its_bounds() {
        let budget = budget();
        eprintln!("accessor spin budget on this machine: {budget:?}");
        assert!((SHORTEST..=LONGEST).contains(&budget), "{budget:?}");
        assert!(sleeping_round_trip().is_some());
    }

    #[test]
    fn readable_soon_sees_input_and_gives_up_without_it() {
        use std::os::fd::AsFd;
        let (mut a, b) = UnixStream::pair().unwrap();
        let start = Instant::now();
        assert!(!readable_soon(b.as_fd()));
        assert!(start.elapsed() >= budget());
        a.write_all(b"x").unwrap();
        assert!(readable_soon(b.as_fd()));
        drop(a);
        let mut rest = Vec::new();
        let mut b = b;
        b.read_to_end(&mut rest).unwrap();
        // After the writer hung up, the poll reports it at once.
        assert!(readable_soon(b.as_fd()));
    }
}
