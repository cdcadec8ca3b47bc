//! The per-process engine state. Started lazily by whichever call comes first: static
//! coarrays are registered from constructors that run before `main` calls
//! `_gfortran_caf_init`. Every entry point reaches the engine through [`statement`], which
//! also turns an error into STAT=/ERRMSG= or a clean end of the job.

use std::sync::{Mutex, MutexGuard};

use gaspar::coarray::{Coarrays, TeamId};

use crate::component::ComponentHeap;
use crate::error::CafError;
use crate::stat::{Outcome, StatArgs};

/// The library's per-process state.
pub(crate) struct State {
    /// The coarray engine.
    pub(crate) engine: Coarrays,
    /// The allocatable components' arena, created by the first collective registration
    /// (every image makes it, in the same order).
    components: Option<ComponentHeap>,
    /// The teams this image formed; gfortran's team variable holds an index into it plus 1.
    pub(crate) teams: Vec<TeamId>,
}

impl State {
    /// The engine and the component arena, creating the arena on first use.
    pub(crate) fn with_components(
        &mut self,
    ) -> Result<(&mut Coarrays, &mut ComponentHeap), CafError> {
        if self.components.is_none() {
            self.components = Some(ComponentHeap::create(&mut self.engine)?);
        }
        let heap = self.components.as_mut().expect("created above");
        Ok((&mut self.engine, heap))
    }

    /// The engine and the component arena if it exists (a reference chain reaches the
    /// arena only through a component, which created it).
    pub(crate) fn existing_components(&mut self) -> (&mut Coarrays, Option<&mut ComponentHeap>) {
        (&mut self.engine, self.components.as_mut())
    }
}

/// The state, once started; `None` before the first call and after termination began.
static ENGINE: Mutex<Option<State>> = Mutex::new(None);

/// Locks the engine state, starting the engine on first use. A failed start ends the
/// process with one line: there is no job to end cleanly yet.
fn engine() -> MutexGuard<'static, Option<State>> {
    let mut guard = ENGINE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if guard.is_none() {
        crate::panic::install();
        match Coarrays::init() {
            Ok(engine) => {
                *guard = Some(State {
                    engine,
                    components: None,
                    teams: Vec::new(),
                })
            }
            Err(e) => {
                crate::error::say(&format!(
                    "gaspar caf: cannot start the coarray runtime: {e}"
                ));
                std::process::exit(1);
            }
        }
    }
    guard
}

/// Runs one coarray statement on the engine. On success sets STAT= to 0 and returns the
/// value; on an error sets STAT=/ERRMSG= and returns `None`, or, without STAT=, prints one
/// line naming the image and `name` and ends the whole job with status 1. When another
/// image already ended the job (whatever the error says: an image that ended the job has
/// also left it), this process just exits with status 1, without a message.
pub(crate) fn statement<T>(
    name: &str,
    stat: StatArgs,
    f: impl FnOnce(&mut Coarrays) -> Result<T, CafError>,
) -> Option<T> {
    statement_with_state(name, stat, |state| f(&mut state.engine))
}

/// As [`statement`], for statements that need more than the engine (components).
pub(crate) fn statement_with_state<T>(
    name: &str,
    stat: StatArgs,
    f: impl FnOnce(&mut State) -> Result<T, CafError>,
) -> Option<T> {
    let mut guard = engine();
    let Some(state) = guard.as_mut() else {
        unreachable!("engine() always leaves an engine in place")
    };
    match f(state) {
        Ok(value) => {
            stat.success();
            Some(value)
        }
        Err(error) if error.is_job_aborted() || state.engine.job_aborted() => std::process::exit(1),
        Err(error) => match stat.failure(state.engine.this_image(), name, &error) {
            Outcome::Reported => None,
            Outcome::Fatal(line) => {
                let state = guard.take().expect("engine present above");
                state
                    .engine
                    .error_stop_saying(1, &format!("gaspar caf: {line}"))
            }
        },
    }
}

/// Runs a query that cannot fail (this_image, num_images).
pub(crate) fn query<T>(f: impl FnOnce(&Coarrays) -> T) -> T {
    let guard = engine();
    let state = guard
        .as_ref()
        .expect("engine() always leaves an engine in place");
    f(&state.engine)
}

/// Hands the engine to a termination call (stop, error stop, fail image), which consumes it.
pub(crate) fn take_for_termination() -> Coarrays {
    engine()
        .take()
        .expect("engine() always leaves an engine in place")
        .engine
}

/// Ends the job from a panic: error stop through the engine when this thread can reach it
/// (not while it is in use by the panicking call); otherwise exit with status 1 and let the
/// launcher end the other images.
pub(crate) fn end_job_after_panic() -> ! {
    if let Ok(mut guard) = ENGINE.try_lock() {
        if let Some(state) = guard.take() {
            drop(guard);
            state.engine.error_stop(1);
        }
    }
    std::process::exit(1)
}
