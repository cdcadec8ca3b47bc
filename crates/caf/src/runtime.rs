//! The per-process engine state. Started lazily by whichever call comes first: static
//! coarrays are registered from constructors that run before `main` calls
//! `_gfortran_caf_init`. Every entry point reaches the engine through [`statement`], which
//! also turns an error into STAT=/ERRMSG= or a clean end of the job.
//!
//! The state belongs to the thread that started it (the image's thread: gfortran runs the
//! constructors and the main program there), which reaches it without a lock: a coindexed
//! scalar costs a few nanoseconds, and a lock would double that. A coarray statement from
//! any other thread is refused with a message (the Fortran standard knows no threads, and
//! OpenMP leaves coarrays in its threads unspecified); so is a statement started inside
//! another one. The accessor service threads (`accessor::service`) never reach this state:
//! they run accessors against memory found through `accessor::parts`.

use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

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
    /// The token slots of allocatable coarrays allocated, and not yet deallocated, with
    /// the team current then: END TEAM deallocates those of its team (gfortran 12-14
    /// leave that to the library; gfortran 15+ deallocate them before END TEAM).
    pub(crate) team_allocations: Vec<(TeamId, *mut *mut std::ffi::c_void)>,
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

    /// The component arena if it exists.
    pub(crate) fn components(&self) -> Option<&ComponentHeap> {
        self.components.as_ref()
    }
}

/// The state and the thread it belongs to.
struct Home {
    /// The owning thread's [`current_thread`]; 0 until a thread starts the engine.
    owner: AtomicUsize,
    /// True while a statement of the owner uses the state (a statement entered from
    /// inside another, e.g. from a panic, finds it true and leaves the state alone).
    in_use: Cell<bool>,
    /// The state, once started; `None` before the first call and after termination began.
    state: UnsafeCell<Option<State>>,
}

// SAFETY: `in_use` and `state` are touched only by the thread whose `current_thread()` is
// `owner` (checked by `claim` before every access), and `owner` is set once, from 0, by a
// compare-exchange. No two live threads share a thread pointer; a thread created after
// the owner ended may reuse its value, and then takes over a state no other thread can
// reach (glibc hands a dead thread's descriptor to a new one under its own lock, which
// orders the old thread's writes before the new one's reads).
unsafe impl Sync for Home {}

static HOME: Home = Home {
    owner: AtomicUsize::new(0),
    in_use: Cell::new(false),
    state: UnsafeCell::new(None),
};

/// This image's number in the initial team once the engine started (0 before): for the
/// message of a statement the state cannot serve.
static INITIAL_IMAGE: AtomicU32 = AtomicU32::new(0);

/// Why a statement cannot reach the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refused {
    /// The calling thread is not the one that started the engine.
    OtherThread,
    /// The owner is already inside a statement.
    Reentered,
}

impl Refused {
    fn message(self) -> &'static str {
        match self {
            Refused::OtherThread => {
                "coarray statements run on the image's own thread only (the thread that \
                 started the program), not on other threads"
            }
            Refused::Reentered => "a coarray statement started inside another one",
        }
    }
}

/// The calling thread's identity: its thread pointer, different for every live thread
/// (read from the register the ELF TLS ABI keeps it in: one instruction, where a call to
/// `pthread_self` costs as much as the rest of a coindexed scalar's checks).
#[inline(always)]
fn current_thread() -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        let tp: usize;
        // SAFETY: on x86-64 the first word of the thread control block, at %fs:0, holds
        // the thread pointer itself (the psABI's TLS variant II); reading it has no side
        // effect.
        unsafe {
            std::arch::asm!("mov {}, fs:0", out(reg) tp, options(nostack, readonly, preserves_flags));
        }
        tp
    }
    #[cfg(target_arch = "aarch64")]
    {
        let tp: usize;
        // SAFETY: TPIDR_EL0 holds the thread pointer, readable from user mode, no side effect.
        unsafe {
            std::arch::asm!("mrs {}, tpidr_el0", out(reg) tp, options(nomem, nostack, preserves_flags));
        }
        tp
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        // SAFETY: pthread_self has no preconditions and cannot fail.
        unsafe { libc::pthread_self() as usize }
    }
}

/// The state, when the calling thread owns it (claiming it on the first call of the
/// process) and is not already inside a statement.
#[inline(always)]
fn claim() -> Result<(), Refused> {
    let me = current_thread();
    let owner = HOME.owner.load(Ordering::Acquire);
    if owner != me
        && (owner != 0
            || HOME
                .owner
                .compare_exchange(0, me, Ordering::AcqRel, Ordering::Acquire)
                .is_err())
    {
        return Err(Refused::OtherThread);
    }
    if HOME.in_use.get() {
        return Err(Refused::Reentered);
    }
    Ok(())
}

/// Runs `f` on the state (started first if need be) from the owning thread.
#[inline(always)]
fn enter<R>(f: impl FnOnce(&mut Option<State>) -> R) -> Result<R, Refused> {
    claim()?;
    HOME.in_use.set(true);
    // SAFETY: `claim` checked that this thread owns the state and that no reference to it
    // is live (`in_use` was false; it stays true until `f` returns).
    let slot = unsafe { &mut *HOME.state.get() };
    if slot.is_none() {
        start(slot);
    }
    let result = f(slot);
    HOME.in_use.set(false);
    Ok(result)
}

/// Starts the engine. A failed start ends the process with one line: there is no job to
/// end cleanly yet.
#[cold]
#[inline(never)]
fn start(slot: &mut Option<State>) {
    crate::panic::install();
    crate::self_launch::run_images_if_asked();
    match Coarrays::init() {
        Ok(engine) => {
            INITIAL_IMAGE.store(engine.this_image(), Ordering::Relaxed);
            // On shm a put is a copy into the target's mapped memory.
            crate::words::set_puts_complete_when_issued(engine.runtime().transport_name() == "shm");
            crate::lock::set_holder(engine.runtime().rank());
            *slot = Some(State {
                engine,
                components: None,
                teams: Vec::new(),
                team_allocations: Vec::new(),
            });
        }
        Err(e) => {
            crate::error::say(&format!(
                "gaspar caf: cannot start the coarray runtime: {e}"
            ));
            std::process::exit(1);
        }
    }
}

/// Runs one coarray statement on the engine. On success sets STAT= to 0 and returns the
/// value; on an error sets STAT=/ERRMSG= and returns `None`, or, without STAT=, prints one
/// line naming the image and `name` and ends the whole job with status 1. When another
/// image already ended the job (whatever the error says: an image that ended the job has
/// also left it), this process just exits with status 1, without a message.
#[inline(always)]
pub(crate) fn statement<T>(
    name: &str,
    stat: StatArgs,
    f: impl FnOnce(&mut Coarrays) -> Result<T, CafError>,
) -> Option<T> {
    statement_with_state(name, stat, |state| f(&mut state.engine))
}

/// As [`statement`], for an image control statement: other images may have changed what
/// their parts point to by the time it completes ([`crate::routes::segment_began`]).
pub(crate) fn control_statement<T>(
    name: &str,
    stat: StatArgs,
    f: impl FnOnce(&mut Coarrays) -> Result<T, CafError>,
) -> Option<T> {
    control_statement_with_state(name, stat, |state| f(&mut state.engine))
}

/// As [`control_statement`], for statements that need more than the engine.
pub(crate) fn control_statement_with_state<T>(
    name: &str,
    stat: StatArgs,
    f: impl FnOnce(&mut State) -> Result<T, CafError>,
) -> Option<T> {
    statement_with_state(name, stat, |state| {
        let done = f(state);
        crate::routes::segment_began();
        done
    })
}

/// As [`statement`], for statements that need more than the engine (components).
#[inline(always)]
pub(crate) fn statement_with_state<T>(
    name: &str,
    stat: StatArgs,
    f: impl FnOnce(&mut State) -> Result<T, CafError>,
) -> Option<T> {
    let done = enter(|slot| match slot {
        Some(state) => f(state),
        None => unreachable!("enter() always leaves an engine in place"),
    });
    match done {
        Ok(Ok(value)) => {
            stat.success();
            Some(value)
        }
        Ok(Err(error)) => failed(name, stat, error),
        Err(refused) => refused_statement(name, stat, refused),
    }
}

/// The error path of [`statement`].
#[cold]
#[inline(never)]
fn failed<T>(name: &str, stat: StatArgs, error: CafError) -> Option<T> {
    let fatal = enter(|slot| {
        let state = slot
            .as_mut()
            .expect("enter() always leaves an engine in place");
        if error.is_job_aborted() || state.engine.job_aborted() {
            std::process::exit(1);
        }
        match stat.failure(state.engine.this_image(), name, &error) {
            Outcome::Reported => None,
            Outcome::Fatal(line) => Some((slot.take().expect("present above"), line)),
        }
    })
    .expect("the statement that failed held the state");
    if let Some((state, line)) = fatal {
        state
            .engine
            .error_stop_saying(1, &format!("gaspar caf: {line}"))
    }
    None
}

/// A statement that could not reach the state: STAT= gets the error when present;
/// without it the process ends with one line (the launcher ends the other images).
#[cold]
#[inline(never)]
fn refused_statement<T>(name: &str, stat: StatArgs, refused: Refused) -> Option<T> {
    let image = INITIAL_IMAGE.load(Ordering::Relaxed);
    let code = gaspar::coarray::stat::OTHER_ERROR;
    match stat.failure_code(image, name, code, refused.message()) {
        Outcome::Reported => None,
        Outcome::Fatal(line) => end_process(&line),
    }
}

/// Ends this process with status 1 after one line.
fn end_process(line: &str) -> ! {
    crate::error::say(&format!("gaspar caf: {line}"));
    std::process::exit(1)
}

/// Runs a query that cannot fail (this_image, num_images).
pub(crate) fn query<T>(f: impl FnOnce(&Coarrays) -> T) -> T {
    let image = INITIAL_IMAGE.load(Ordering::Relaxed);
    enter(|slot| f(&slot.as_ref().expect("enter() starts the engine").engine))
        .unwrap_or_else(|refused| end_process(&format!("image {image}: {}", refused.message())))
}

/// Hands the engine to a termination call (stop, error stop, fail image), which consumes it.
pub(crate) fn take_for_termination() -> Coarrays {
    let image = INITIAL_IMAGE.load(Ordering::Relaxed);
    enter(|slot| slot.take().expect("enter() starts the engine").engine)
        .unwrap_or_else(|refused| end_process(&format!("image {image}: {}", refused.message())))
}

/// Ends the job from a panic: error stop through the engine when this thread can reach it
/// (its owner, not inside the panicking statement); otherwise exit with status 1 and let
/// the launcher end the other images.
pub(crate) fn end_job_after_panic() -> ! {
    if claim().is_ok() {
        // SAFETY: `claim` checked that this thread owns the state and that no reference
        // to it is live.
        if let Some(state) = unsafe { &mut *HOME.state.get() }.take() {
            state.engine.error_stop(1);
        }
    }
    std::process::exit(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_what_went_wrong() {
        assert!(Refused::OtherThread.message().contains("own thread"));
        assert!(Refused::Reentered.message().contains("inside another"));
    }
}
