//! The per-process engine state. Started lazily by whichever call comes first: static
//! coarrays are registered from constructors that run before `main` calls
//! `_gfortran_caf_init`. Every entry point reaches the engine through [`statement`], which
//! also turns an error into STAT=/ERRMSG= or a clean end of the job.

use std::sync::{Mutex, MutexGuard};

use gaspar::coarray::Coarrays;

use crate::error::CafError;
use crate::stat::{Outcome, StatArgs};

/// The engine, once started; `None` before the first call and after a normal stop began.
static ENGINE: Mutex<Option<Coarrays>> = Mutex::new(None);

/// Locks the engine state, starting the engine on first use. A failed start ends the
/// process with one line: there is no job to end cleanly yet.
fn engine() -> MutexGuard<'static, Option<Coarrays>> {
    let mut guard = ENGINE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if guard.is_none() {
        crate::panic::install();
        match Coarrays::init() {
            Ok(engine) => *guard = Some(engine),
            Err(e) => {
                eprintln!("gaspar caf: cannot start the coarray runtime: {e}");
                std::process::exit(1);
            }
        }
    }
    guard
}

/// Runs one coarray statement on the engine. On success sets STAT= to 0 and returns the
/// value; on an error sets STAT=/ERRMSG= and returns `None`, or, without STAT=, prints one
/// line naming the image and `name` and ends the whole job with status 1. When another
/// image already ended the job, this process just exits with status 1.
pub(crate) fn statement<T>(
    name: &str,
    stat: StatArgs,
    f: impl FnOnce(&mut Coarrays) -> Result<T, CafError>,
) -> Option<T> {
    let mut guard = engine();
    let Some(engine) = guard.as_mut() else {
        unreachable!("engine() always leaves an engine in place")
    };
    match f(engine) {
        Ok(value) => {
            stat.success();
            Some(value)
        }
        Err(error) if error.is_job_aborted() => std::process::exit(1),
        Err(error) => match stat.failure(engine.this_image(), name, &error) {
            Outcome::Reported => None,
            Outcome::Fatal(line) => {
                eprintln!("gaspar caf: {line}");
                let engine = guard.take().expect("engine present above");
                engine.error_stop(1)
            }
        },
    }
}

/// Runs a query that cannot fail (this_image, num_images).
pub(crate) fn query<T>(f: impl FnOnce(&Coarrays) -> T) -> T {
    let guard = engine();
    f(guard
        .as_ref()
        .expect("engine() always leaves an engine in place"))
}

/// Hands the engine to a termination call (stop, error stop, fail image), which consumes it.
pub(crate) fn take_for_termination() -> Coarrays {
    engine()
        .take()
        .expect("engine() always leaves an engine in place")
}

/// Ends the job from a panic: error stop through the engine when this thread can reach it
/// (not while it is in use by the panicking call); otherwise exit with status 1 and let the
/// launcher end the other images.
pub(crate) fn end_job_after_panic() -> ! {
    if let Ok(mut guard) = ENGINE.try_lock() {
        if let Some(engine) = guard.take() {
            drop(guard);
            engine.error_stop(1);
        }
    }
    std::process::exit(1)
}
