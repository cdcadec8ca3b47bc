//! The team, image-query and SYNC calls in GCC 16's form. GCC 16 changed these signatures
//! (`this_image(caf_team_t)`, `num_images(caf_team_t, int32_t *)`, `form_team` with
//! STAT=/ERRMSG=, the team passed by value, `get_team`; SYNC's ERRMSG= as the text's
//! address where gfortran 12 to 15 pass the address of a pointer to it), under the same
//! names gfortran 12 to 15 call with their own arguments. (The accessor transfers' GCC 16
//! forms, which read a coindex's TEAM=, are in `crate::accessor`.) Which form a program needs is known when it is
//! linked, never from argument values at run time: the library exports GCC 16's forms
//! under `_gaspar_caf16_*` names, and `gaspar caf`, seeing gfortran 16 or later, links a
//! few lines of assembly ahead of the library that send the `_gfortran_caf_*` names there
//! (the executable's definitions take precedence over the library's).
//!
//! A team value is what this library stores in gfortran's team variable: the index (plus
//! 1) of the engine's team in the list of teams this image formed or asked for.

use std::ffi::{c_char, c_int, c_void};

use gaspar::coarray::{TeamId, TeamLevel};

use crate::error::CafError;
use crate::runtime::{self, State};
use crate::stat::StatArgs;
use crate::sync;
use crate::teams::{forget_image_numbers, team_of};
use crate::token;

/// The engine's team a team value (passed by value) names; `None` for a null team.
fn team_by_value(state: &State, team: *mut c_void) -> Result<Option<TeamId>, CafError> {
    if team.is_null() {
        return Ok(None);
    }
    // SAFETY: `&team` is a readable team variable holding the value.
    unsafe { team_of(state, &team).map(Some) }
}

/// The team value for `id`, remembering the team when it is new to this image.
fn value_of(state: &mut State, id: TeamId) -> *mut c_void {
    let index = match state.teams.iter().position(|&t| t == id) {
        Some(i) => i,
        None => {
            state.teams.push(id);
            state.teams.len() - 1
        }
    };
    (index + 1) as *mut c_void
}

/// Checks that `team` (when given) is the current team: the only one these queries answer.
fn current_only(state: &State, team: Option<TeamId>, what: &str) -> Result<(), CafError> {
    match team {
        Some(id) if id != state.engine.get_team(TeamLevel::Current) => Err(CafError::Unsupported(
            format!("{what} of a team other than the current one"),
        )),
        _ => Ok(()),
    }
}

fn no_stat() -> StatArgs {
    // SAFETY: null STAT= and ERRMSG=.
    unsafe { StatArgs::stat_only(std::ptr::null_mut()) }
}

/// GCC 16's `this_image(team)`: this image's index in `team` (null: the current team).
#[no_mangle]
pub extern "C" fn _gaspar_caf16_this_image(team: *mut c_void) -> c_int {
    runtime::statement_with_state("THIS_IMAGE", no_stat(), |state| {
        let team = team_by_value(state, team)?;
        current_only(state, team, "THIS_IMAGE")?;
        Ok(state.engine.this_image() as c_int)
    })
    .unwrap_or(0)
}

/// GCC 16's `num_images(team, team_number)`: images in the current team (a given team or
/// team number must name it).
///
/// # Safety
/// `team_number` is null or readable.
#[no_mangle]
pub unsafe extern "C" fn _gaspar_caf16_num_images(
    team: *mut c_void,
    team_number: *const i32,
) -> c_int {
    runtime::statement_with_state("NUM_IMAGES", no_stat(), |state| {
        let team = team_by_value(state, team)?;
        current_only(state, team, "NUM_IMAGES")?;
        if !team_number.is_null() {
            // SAFETY: readable (this function's contract).
            let number = i64::from(unsafe { *team_number });
            if number != state.engine.team_number(None)? {
                return Err(CafError::Unsupported(
                    "NUM_IMAGES of a team number other than the current team's".into(),
                ));
            }
        }
        Ok(state.engine.num_images() as c_int)
    })
    .unwrap_or(0)
}

/// GCC 16's `form team (number, team [, new_index=] [, stat=] [, errmsg=])`.
///
/// # Safety
/// `team` is writable; `new_index` null or readable; STAT=/ERRMSG= null or writable.
#[no_mangle]
pub unsafe extern "C" fn _gaspar_caf16_form_team(
    number: c_int,
    team: *mut *mut c_void,
    new_index: *const c_int,
    stat: *mut c_int,
    errmsg: *mut c_char,
    errmsg_len: usize,
) {
    // SAFETY: this function's contract.
    let stat = unsafe { StatArgs::new(stat, errmsg, errmsg_len) };
    runtime::control_statement_with_state("FORM TEAM", stat, |state| {
        if team.is_null() {
            return Err(CafError::Argument("no team variable".into()));
        }
        let index = if new_index.is_null() {
            None
        } else {
            // SAFETY: readable (this function's contract).
            Some(token::image(unsafe { *new_index })?)
        };
        let id = state.engine.form_team(i64::from(number), index)?;
        state.teams.push(id);
        // SAFETY: writable (this function's contract).
        unsafe { *team = state.teams.len() as *mut c_void };
        Ok(())
    });
}

/// GCC 16's `change team (team)`.
///
/// # Safety
/// STAT=/ERRMSG= null or writable.
#[no_mangle]
pub unsafe extern "C" fn _gaspar_caf16_change_team(
    team: *mut c_void,
    stat: *mut c_int,
    errmsg: *mut c_char,
    errmsg_len: usize,
) {
    // SAFETY: this function's contract.
    let stat = unsafe { StatArgs::new(stat, errmsg, errmsg_len) };
    runtime::control_statement_with_state("CHANGE TEAM", stat, |state| {
        let id = team_by_value(state, team)?
            .ok_or_else(|| CafError::Argument("no team variable".into()))?;
        state.engine.change_team(id)?;
        forget_image_numbers(state);
        Ok(())
    });
}

/// GCC 16's `end team`.
///
/// # Safety
/// STAT=/ERRMSG= null or writable.
#[no_mangle]
pub unsafe extern "C" fn _gaspar_caf16_end_team(
    stat: *mut c_int,
    errmsg: *mut c_char,
    errmsg_len: usize,
) {
    // SAFETY: this function's contract.
    let stat = unsafe { StatArgs::new(stat, errmsg, errmsg_len) };
    runtime::control_statement_with_state("END TEAM", stat, |state| {
        crate::memory::deallocate_team_coarrays(state)?;
        state.engine.end_team()?;
        forget_image_numbers(state);
        Ok(())
    });
}

/// GCC 16's `sync team (team)`.
///
/// # Safety
/// STAT=/ERRMSG= null or writable.
#[no_mangle]
pub unsafe extern "C" fn _gaspar_caf16_sync_team(
    team: *mut c_void,
    stat: *mut c_int,
    errmsg: *mut c_char,
    errmsg_len: usize,
) {
    // SAFETY: this function's contract.
    let stat = unsafe { StatArgs::new(stat, errmsg, errmsg_len) };
    runtime::control_statement_with_state("SYNC TEAM", stat, |state| {
        let id = team_by_value(state, team)?
            .ok_or_else(|| CafError::Argument("no team variable".into()))?;
        Ok(state.engine.sync_team(id)?)
    });
}

/// GCC 16's `team_number([team])`: -1 for the initial team.
#[no_mangle]
pub extern "C" fn _gaspar_caf16_team_number(team: *mut c_void) -> c_int {
    runtime::statement_with_state("TEAM_NUMBER", no_stat(), |state| {
        let id = team_by_value(state, team)?;
        let number = state.engine.team_number(id)?;
        c_int::try_from(number)
            .map_err(|_| CafError::Argument(format!("team number {number} exceeds an integer")))
    })
    .unwrap_or(-1)
}

/// GCC 16's `get_team([level])`: the initial, parent or current (null level) team.
///
/// # Safety
/// `level` is null or readable.
#[no_mangle]
pub unsafe extern "C" fn _gaspar_caf16_get_team(level: *const i32) -> *mut c_void {
    runtime::statement_with_state("GET_TEAM", no_stat(), |state| {
        let level = if level.is_null() {
            TeamLevel::Current
        } else {
            // SAFETY: readable (this function's contract).
            match unsafe { *level } {
                0 => TeamLevel::Initial,
                1 => TeamLevel::Parent,
                _ => TeamLevel::Current,
            }
        };
        let id = state.engine.get_team(level);
        Ok(value_of(state, id))
    })
    .unwrap_or(std::ptr::null_mut())
}

/// GCC 16's `sync all`: ERRMSG= is the text's address.
///
/// # Safety
/// STAT= null or writable; ERRMSG= null or `errmsg_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn _gaspar_caf16_sync_all(
    stat: *mut c_int,
    errmsg: *mut c_char,
    errmsg_len: usize,
) {
    // SAFETY: this function's contract.
    sync::sync_all(unsafe { StatArgs::new(stat, errmsg, errmsg_len) });
}

/// GCC 16's `sync memory`.
///
/// # Safety
/// As [`_gaspar_caf16_sync_all`].
#[no_mangle]
pub unsafe extern "C" fn _gaspar_caf16_sync_memory(
    stat: *mut c_int,
    errmsg: *mut c_char,
    errmsg_len: usize,
) {
    // SAFETY: this function's contract.
    sync::sync_memory(unsafe { StatArgs::new(stat, errmsg, errmsg_len) });
}

/// GCC 16's `sync images(list)`; `count` -1 means `sync images(*)`.
///
/// # Safety
/// `images` holds `count` integers when `count` > 0; STAT=/ERRMSG= as in
/// [`_gaspar_caf16_sync_all`].
#[no_mangle]
pub unsafe extern "C" fn _gaspar_caf16_sync_images(
    count: c_int,
    images: *const c_int,
    stat: *mut c_int,
    errmsg: *mut c_char,
    errmsg_len: usize,
) {
    // SAFETY: this function's contract.
    unsafe { sync::sync_images(count, images, StatArgs::new(stat, errmsg, errmsg_len)) };
}
