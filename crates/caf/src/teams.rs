//! Teams: FORM TEAM, CHANGE TEAM, END TEAM, SYNC TEAM, TEAM_NUMBER. gfortran keeps a
//! `type(team_type)` variable as one pointer-sized `caf_team_t`; this library stores there
//! the index (plus 1) of the engine's team in the list of teams this image formed, so
//! nothing gfortran hands back is ever dereferenced. Inside CHANGE TEAM the engine numbers
//! images, synchronizes and reduces within the team.

use std::ffi::{c_int, c_void};

use gaspar::coarray::TeamId;

use crate::error::CafError;
use crate::runtime::{self, State};
use crate::stat::StatArgs;
use crate::token;

/// No STAT= (gfortran 12 passes none to the team statements): an error ends the job.
fn no_stat() -> StatArgs {
    // SAFETY: null STAT= and ERRMSG=.
    unsafe { StatArgs::stat_only(std::ptr::null_mut()) }
}

/// The engine's team gfortran's team variable (at `team`) names.
///
/// # Safety
/// `team` is null or the address of a team variable, readable.
pub(crate) unsafe fn team_of(state: &State, team: *const *mut c_void) -> Result<TeamId, CafError> {
    if team.is_null() {
        return Err(CafError::Argument("no team variable".into()));
    }
    // SAFETY: readable (caller's contract); the value is an index, never dereferenced.
    let value = unsafe { *team } as usize;
    value
        .checked_sub(1)
        .and_then(|i| state.teams.get(i).copied())
        .ok_or_else(|| CafError::Argument("the team variable holds no formed team".into()))
}

/// What this library remembers by image number is stale once the current team changes.
pub(crate) fn forget_image_numbers(state: &mut State) {
    crate::routes::teams_changed();
    if let (_, Some(heap)) = state.existing_components() {
        heap.forget_remote_bases();
    }
}

/// `form team (number, team)`: the images passing the same number form a team; `new_index`
/// (0 when absent) is this image's index in it.
///
/// # Safety
/// `team` is the address of a team variable, writable.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_form_team(
    number: c_int,
    team: *mut *mut c_void,
    new_index: c_int,
) {
    runtime::control_statement_with_state("FORM TEAM", no_stat(), |state| {
        if team.is_null() {
            return Err(CafError::Argument("no team variable".into()));
        }
        let index = match new_index {
            0 => None,
            i => Some(token::image(i)?),
        };
        let id = state.engine.form_team(i64::from(number), index)?;
        state.teams.push(id);
        // SAFETY: writable (this function's contract).
        unsafe { *team = state.teams.len() as *mut c_void };
        Ok(())
    });
}

/// `change team (team)`.
///
/// # Safety
/// `team` is the address of a team variable FORM TEAM set, readable.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_change_team(team: *mut *mut c_void, _flags: c_int) {
    runtime::control_statement_with_state("CHANGE TEAM", no_stat(), |state| {
        // SAFETY: this function's contract.
        let id = unsafe { team_of(state, team)? };
        state.engine.change_team(id)?;
        forget_image_numbers(state);
        Ok(())
    });
}

/// `end team`: back to the team CHANGE TEAM left (gfortran passes no team).
#[no_mangle]
pub extern "C" fn _gfortran_caf_end_team(_team: *mut *mut c_void) {
    runtime::control_statement_with_state("END TEAM", no_stat(), |state| {
        crate::memory::deallocate_team_coarrays(state)?;
        state.engine.end_team()?;
        forget_image_numbers(state);
        Ok(())
    });
}

/// `sync team (team)`.
///
/// # Safety
/// As [`_gfortran_caf_change_team`].
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_sync_team(team: *mut *mut c_void, _flags: c_int) {
    runtime::control_statement_with_state("SYNC TEAM", no_stat(), |state| {
        // SAFETY: this function's contract.
        let id = unsafe { team_of(state, team)? };
        Ok(state.engine.sync_team(id)?)
    });
}

/// `team_number([team])`: the number the team was formed with, -1 for the initial team;
/// gfortran passes null for the current team.
///
/// # Safety
/// `team` is null or as in [`_gfortran_caf_change_team`].
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_team_number(team: *mut *mut c_void) -> c_int {
    runtime::statement_with_state("TEAM_NUMBER", no_stat(), |state| {
        let id = if team.is_null() {
            None
        } else {
            // SAFETY: this function's contract.
            Some(unsafe { team_of(state, team)? })
        };
        let number = state.engine.team_number(id)?;
        c_int::try_from(number)
            .map_err(|_| CafError::Argument(format!("team number {number} exceeds an integer")))
    })
    .unwrap_or(-1)
}
