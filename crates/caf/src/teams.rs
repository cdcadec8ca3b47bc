//! Teams: FORM TEAM, CHANGE TEAM, END TEAM, SYNC TEAM, TEAM_NUMBER. The engine has no
//! teams of images yet, so a program that forms one ends with one line saying so; until a
//! team is formed every image is in the initial team, whose TEAM_NUMBER() is -1.

use std::ffi::{c_int, c_void};

use crate::error::CafError;
use crate::runtime;
use crate::stat::StatArgs;

/// Ends the job: teams are not supported yet.
fn unsupported(statement: &str) {
    // SAFETY: no STAT= (gfortran 12 passes none to the team statements).
    let stat = unsafe { StatArgs::stat_only(std::ptr::null_mut()) };
    runtime::statement(statement, stat, |_| -> Result<(), CafError> {
        Err(CafError::Unsupported("teams of images".into()))
    });
}

/// `form team (number, team)`: not supported yet (ends the job with one line).
#[no_mangle]
pub extern "C" fn _gfortran_caf_form_team(_number: c_int, _team: *mut c_void, _index: c_int) {
    unsupported("FORM TEAM");
}

/// `change team (team)`: not supported yet (no team can have been formed).
#[no_mangle]
pub extern "C" fn _gfortran_caf_change_team(_team: *mut c_void, _flags: c_int) {
    unsupported("CHANGE TEAM");
}

/// `end team`: not supported yet (no team can have been changed to).
#[no_mangle]
pub extern "C" fn _gfortran_caf_end_team(_team: *mut c_void) {
    unsupported("END TEAM");
}

/// `sync team (team)`: not supported yet (no team can have been formed).
#[no_mangle]
pub extern "C" fn _gfortran_caf_sync_team(_team: *mut c_void, _flags: c_int) {
    unsupported("SYNC TEAM");
}

/// `team_number()`: -1, the initial team's number (the only team there can be).
#[no_mangle]
pub extern "C" fn _gfortran_caf_team_number(_team: *mut c_void) -> c_int {
    -1
}
