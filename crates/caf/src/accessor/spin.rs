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
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::net::UnixStream;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::socket::{recv, MsgFlags};

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

/// A reader of a socket that polls it for up to [`budget`] before it sleeps: each `read`
/// first receives without waiting (`MSG_DONTWAIT`) until data (or the end, or an error)
/// is there or the budget is spent, then waits in `recv`. Wrapped in a `BufReader`, a
/// frame's length and body come in one system call.
pub(crate) struct Polled<'a, S: AsFd>(pub(crate) &'a S);

impl<S: AsFd> Read for Polled<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let fd = self.0.as_fd().as_raw_fd();
        let budget = budget();
        let start = Instant::now();
        let mut flags = MsgFlags::MSG_DONTWAIT;
        loop {
            match recv(fd, buf, flags) {
                Ok(n) => return Ok(n),
                Err(Errno::EINTR) => {}
                Err(Errno::EAGAIN) if flags.contains(MsgFlags::MSG_DONTWAIT) => {
                    if start.elapsed() >= budget {
                        flags = MsgFlags::empty();
                    } else {
                        std::hint::spin_loop();
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
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
    fn a_polled_read_gets_what_is_there_waits_for_what_is_not_and_sees_the_end() {
        let (mut a, b) = UnixStream::pair().unwrap();
        a.write_all(b"ready").unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(Polled(&b).read(&mut buf).unwrap(), 5);
        assert_eq!(&buf[..5], b"ready");
        // Data that comes after the budget (the sleep only makes it late): the read goes
        // on to wait in recv and returns it.
        let writer = std::thread::spawn(move || {
            let mut byte = [0u8];
            a.read_exact(&mut byte).unwrap();
            std::thread::sleep(budget() * 3);
            a.write_all(b"late").unwrap();
            a
        });
        let mut b = b;
        b.write_all(b"?").unwrap();
        assert_eq!(Polled(&b).read(&mut buf).unwrap(), 4);
        assert_eq!(&buf[..4], b"late");
        drop(writer.join().unwrap());
        assert_eq!(
            Polled(&b).read(&mut buf).unwrap(),
            0,
            "the end of the stream"
        );
    }
}
