//! Each image's accessor service: threads that listen for the other images ([`peers`]:
//! a Unix socket for the same node, TCP for other nodes) and run the accessors they ask
//! for against this process's memory, while the image's own thread goes on with the
//! program. So an access through a pointer or allocatable component into the owner's
//! ordinary memory completes without the owner reaching an image control statement. A
//! caller keeps one connection per owner.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use gaspar::coarray::Coarrays;

use super::owner::{self, Call, DescBuf, Into, Sent, Target};
use super::parts;
use super::peers::{self, Channel};
use super::spin;
use super::wire::{self, Op, Reply, Request};
use crate::error::CafError;

thread_local! {
    /// This thread's connections to the other images' services, by job rank (per thread:
    /// a service thread calling back to a caller never waits for the image's own thread).
    static CONNECTIONS: RefCell<HashMap<u32, Box<dyn Channel>>> = RefCell::new(HashMap::new());
}

/// This image's listeners, bound and announced to the other images at start, until the
/// service's threads take them ([`run`]).
static IDLE: Mutex<Option<peers::Listeners>> = Mutex::new(None);

/// Whether a coarray whose accessors may have to run in its owner was registered before
/// the service could start.
static WANTED: AtomicBool = AtomicBool::new(false);

/// Binds this image's service and learns the others' (collective over every image: the
/// library calls it from `init` when the program registered accessors). The threads start
/// now only where an accessor may need them: when some image's memory is not mapped here
/// (the mpi transport across hosts, where every accessor runs in the owner) or a coarray
/// whose accessors may run in its owner was registered already (one of a derived type, or
/// one whose parts are not all mapped here: memory registered on its own,
/// `GASPAR_COARRAY_MEMORY=ra/ca`); otherwise when such a coarray is ([`wanted`]), on
/// every image alike, since registration is collective. A job of coarrays
/// of intrinsic types on one node never starts them: its accessors all run in the
/// caller, and its images stay single-threaded, which glibc's malloc rewards (a lock on
/// its arena for every block above the thread cache's 1032 bytes otherwise: gfortran 16's
/// temporary for a 4 KiB section put cost 15-20 % of its bandwidth, measured with the
/// cache widened by `GLIBC_TUNABLES=glibc.malloc.tcache_max=8192`).
pub(crate) fn start(engine: &Coarrays) -> Result<(), CafError> {
    let listeners = peers::exchange(engine)?;
    *lock_idle() = Some(listeners);
    if WANTED.load(Ordering::Acquire) || !every_image_mapped(engine) {
        run()?;
    }
    Ok(())
}

/// A coarray whose accessors may run in its owner (one of a derived type, or one not
/// mapped here) was registered: starts the service's threads, now or at [`start`].
pub(crate) fn wanted() -> Result<(), CafError> {
    WANTED.store(true, Ordering::Release);
    run()
}

fn lock_idle() -> std::sync::MutexGuard<'static, Option<peers::Listeners>> {
    IDLE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Whether every image's memory is mapped in this process (then an accessor of a coarray
/// of an intrinsic type always runs in the caller).
fn every_image_mapped(engine: &Coarrays) -> bool {
    let rt = engine.runtime();
    (0..rt.procs()).all(|rank| {
        rt.starter_ga(rank)
            .and_then(|ga| rt.mapped_address(ga, 1))
            .is_ok_and(|mapped| mapped.is_some())
    })
}

/// Starts the service's threads on the listeners [`start`] bound, once.
fn run() -> Result<(), CafError> {
    let Some(listeners) = lock_idle().take() else {
        return Ok(());
    };
    if let Some(unix) = listeners.unix {
        spawn("caf-accessors", move || serve(unix.incoming()))?;
    }
    let tcp = listeners.tcp;
    spawn("caf-accessors-tcp", move || {
        serve(tcp.incoming().map(|stream| {
            stream.inspect(|s| {
                let _ = s.set_nodelay(true);
            })
        }))
    })
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<(), CafError> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map(drop)
        .map_err(|e| CafError::Argument(format!("accessor service: {e}")))
}

/// Accepts connections, one thread each, for the life of the process.
fn serve<S: Read + Write + AsFd + Send + 'static>(
    incoming: impl Iterator<Item = std::io::Result<S>>,
) {
    for stream in incoming.flatten() {
        let _ = std::thread::Builder::new()
            .name("caf-accessor".into())
            .spawn(move || answer(stream));
    }
}

/// Answers one caller's requests until it hangs up; a connection that does not open with
/// this service's key is closed unanswered. After each reply the thread polls for the next
/// request a while before it sleeps ([`spin`]): accessor calls come in loops.
fn answer(mut stream: impl Read + Write + AsFd) {
    if !peers::admitted(&mut stream) {
        return;
    }
    loop {
        let received = wire::receive_request(&mut BufReader::new(spin::Polled(&stream)));
        let Ok(Some(request)) = received else {
            return;
        };
        let reply = handle(request).unwrap_or_else(|e| Reply::Failed(e.to_string()));
        if wire::send_reply(&mut stream, &reply).is_err() {
            return;
        }
    }
}

/// Runs one request against this process's memory.
fn handle(mut request: Request) -> Result<Reply, CafError> {
    let (base, origin) = if request.part.ga_bits == 0 {
        // A call back from an accessor running for this image elsewhere: the additional
        // data at this address stays valid while this image waits for that accessor.
        (request.part.offset as usize, None)
    } else {
        let part = parts::local(request.part.ga_bits).ok_or_else(|| {
            CafError::Argument("the coarray is not allocated on the image that owns it".into())
        })?;
        (part + request.part.offset as usize, Some(request.origin))
    };
    let mut target = Target {
        base,
        desc: request
            .coarray_desc
            .as_deref()
            .map(|b| DescBuf::from_bytes(b).map(Box::new))
            .transpose()?,
    };
    let mut call = Call {
        index: request.index,
        add_data: &mut request.add_data,
        image: request.image,
        dst_charlen: request.dst_charlen.map(|v| v as usize),
        src_charlen: request.src_charlen.map(|v| v as usize),
        origin,
    };
    match request.op {
        Op::Get {
            scalar_bytes,
            dst_desc,
        } => {
            let into = match dst_desc {
                Some(bytes) => Into::Array(Box::new(DescBuf::from_bytes(&bytes)?)),
                None => Into::Scalar(scalar_bytes as usize),
            };
            // SAFETY: `base` is this image's part of the coarray the request names
            // (registered in `parts`), the memory the accessor was generated for.
            let fetched = unsafe { owner::get(&mut call, &mut target, into)? };
            Ok(Reply::Fetched {
                data: fetched.data,
                desc: fetched.desc.map(|d| d.bytes().to_vec()),
                dst_charlen: fetched.dst_charlen.map(|v| v as u64),
            })
        }
        Op::Send { data, src_desc } => {
            let mut sent = Sent {
                data,
                desc: src_desc
                    .as_deref()
                    .map(|bytes| DescBuf::from_bytes(bytes).map(Box::new))
                    .transpose()?,
            };
            // SAFETY: as above.
            unsafe { owner::send(&mut call, &mut target, &mut sent)? };
            Ok(Reply::Sent)
        }
        // SAFETY: as above.
        Op::Present { by_reference } => Ok(Reply::Present(unsafe {
            owner::present(&mut call, &mut target, by_reference)?
        })),
    }
}

/// Asks rank `rank`'s service to run `request` and returns its reply (an owner's failure
/// as an error); polls for the reply a while before it sleeps ([`spin`]).
pub(crate) fn call(rank: u32, request: &Request) -> Result<Reply, CafError> {
    CONNECTIONS.with(|connections| {
        let mut connections = connections.borrow_mut();
        if let std::collections::hash_map::Entry::Vacant(slot) = connections.entry(rank) {
            slot.insert(peers::connect(rank)?);
        }
        let stream = connections.get_mut(&rank).expect("inserted above");
        let exchange = wire::send_request(stream, request).and_then(|()| {
            // One frame at most is in flight on a connection (a reply answers each
            // request), so the buffer never holds bytes of the next one when dropped.
            wire::receive_reply(&mut BufReader::new(spin::Polled(stream)))
        });
        match exchange {
            Ok(reply) => match reply? {
                Reply::Failed(why) => Err(CafError::Argument(format!("on rank {rank}: {why}"))),
                reply => Ok(reply),
            },
            Err(e) => {
                connections.remove(&rank);
                Err(CafError::Argument(format!(
                    "the accessor service of rank {rank} did not answer: {e}"
                )))
            }
        }
    })
}
