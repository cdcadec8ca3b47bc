//! Waiting for a socket of the accessor service: poll first, then sleep.
//!
//! A request and its reply each cross a socket; when the reader sleeps in `recv`, each
//! crossing costs a wake-up of the reading thread, which dominated the round trip on the
//! machines we measured (a blocking round trip of 40-54 us against 3.7-4.5 us polling on
//! the AMD EPYC VM, `bench/probes/sock_pingpong.c`). So a reader first receives without
//! waiting, for as long as gaspar's own waits poll ([`gaspar::spin_limit`]: what one sleep
//! and wake-up costs here, or `GASPAR_SPIN_LIMIT`): the competitive rule, which spends at
//! most about twice the CPU time of the best choice made in hindsight. Between polls it
//! spins rather than yields its core, also when the job has more images than cores:
//! yielding (`sched_yield`) was slower at 2 images (pointer-component get 8.1 us against
//! 6.1, medians of five alternated runs) and no faster at 4 on 2 cores (8.3 against 7.0;
//! gfortran 16, `crates/caf/benches/accessor_paths.f90`, AMD EPYC 2 vCPUs).

use std::io::Read;
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::socket::{recv, MsgFlags};

/// How long a reader polls before it sleeps (none when the setting is unreadable: init
/// has reported that already).
fn budget() -> Duration {
    gaspar::spin_limit().unwrap_or(Duration::ZERO)
}

/// A reader of a socket that polls it for up to [`budget`] before it sleeps: each `read`
/// first receives without waiting (`MSG_DONTWAIT`) until data (or the end, or an error)
/// is there or the budget is spent, then waits in `recv`. Wrapped in a `BufReader`, a
/// frame's length and body come in one system call.
pub(crate) struct Polled<'a, S: AsFd>(pub(crate) &'a S);

impl<S: AsFd> Read for Polled<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let fd = self.0.as_fd().as_raw_fd();
        // The budget and the clock only once the socket was found empty: the second read
        // of a frame, and a reply that is already there, need neither.
        let mut deadline: Option<Instant> = None;
        let mut flags = MsgFlags::MSG_DONTWAIT;
        loop {
            match recv(fd, buf, flags) {
                Ok(n) => return Ok(n),
                Err(Errno::EINTR) => {}
                Err(Errno::EAGAIN) if flags.contains(MsgFlags::MSG_DONTWAIT) => {
                    let deadline = *deadline.get_or_insert_with(|| Instant::now() + budget());
                    if Instant::now() >= deadline {
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
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    use super::*;

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
