//! ARMCI-MPI's extensions (armcix.h): groups split by color and duplicated, and handles
//! of mutex sets, any number of them, each on a group, with counts per process.

use std::ffi::c_int;

use crate::collective;
use crate::group::{self, Group};
use crate::group_comm;
use crate::mutex::MutexSet;
use crate::state::{state, State};

/// Each member's (color, key) as the members of `parent` gave them, in parent-rank order.
fn colors_and_keys(
    s: &State,
    call: &str,
    parent: &group::Members,
    color: c_int,
    key: c_int,
) -> Vec<(c_int, c_int)> {
    let mine: Vec<u8> = [color, key].iter().flat_map(|w| w.to_ne_bytes()).collect();
    collective::allgather(s, call, parent.team, &mine)
        .iter()
        .map(|w| {
            let int =
                |k: usize| c_int::from_ne_bytes(w[4 * k..4 * k + 4].try_into().expect("8 bytes"));
            (int(0), int(1))
        })
        .collect()
}

/// ARMCIX_Group_split: collective over `parent`, as MPI_Comm_split: the members giving
/// the same `color` form one new group, numbered by ascending `key` (ties by parent rank).
/// A negative color (MPI_UNDEFINED) joins no group: `new_group` gets rank -1, size 0.
///
/// # Safety
/// `parent` points to a live group made by ARMCI (or the world group); `new_group` points
/// to an `ARMCI_Group`.
#[no_mangle]
pub unsafe extern "C" fn ARMCIX_Group_split(
    parent: *mut Group,
    color: c_int,
    key: c_int,
    new_group: *mut Group,
) -> c_int {
    let call = "ARMCIX_Group_split";
    let s = state(call);
    // SAFETY: forwarded contract.
    let parent = unsafe { group::members(s, call, parent) };
    let me = parent.my_index(s, call);
    let all = colors_and_keys(s, call, &parent, color, key);
    // This member's place among those of its color, numbered by (key, parent rank).
    let place = all
        .iter()
        .enumerate()
        .filter(|(k, &(c, key_k))| c == color && (key_k, *k) < (key, me))
        .count() as u32;
    let color = u32::try_from(color).ok();
    let team = s.check(call, parent.team.split(&s.rt, color, place));
    let comm = group_comm::split(parent.comm, color, place);
    // SAFETY: forwarded contract (the caller's group pointer).
    unsafe {
        match team {
            Some(team) => group::write_member(s, call, new_group, team, comm),
            None => group::write_not_a_member(s, call, new_group),
        }
    }
    0
}

/// ARMCIX_Group_dup: collective over `parent`; a new group of the same members in the
/// same order, with collectives of its own.
///
/// # Safety
/// As ARMCIX_Group_split.
#[no_mangle]
pub unsafe extern "C" fn ARMCIX_Group_dup(parent: *mut Group, new_group: *mut Group) -> c_int {
    let call = "ARMCIX_Group_dup";
    let s = state(call);
    // SAFETY: forwarded contract.
    let members = unsafe { group::members(s, call, parent) };
    let me = members.my_index(s, call) as u32;
    let team = s.check(call, members.team.split(&s.rt, Some(0), me));
    let team = team.unwrap_or_else(|| s.fail(call, "a member was left out of its own group"));
    let comm = group_comm::split(members.comm, Some(0), me);
    // SAFETY: forwarded contract (the caller's group pointer).
    unsafe { group::write_member(s, call, new_group, team, comm) };
    0
}

/// ARMCIX_Create_mutexes_hdl: collective over `pgroup`; `count` mutexes on this rank
/// (counts may differ between members). The handle names them in the other
/// ARMCIX_*_hdl calls until ARMCIX_Destroy_mutexes_hdl.
///
/// # Safety
/// `pgroup` points to a live group made by ARMCI (or the world group).
#[no_mangle]
pub unsafe extern "C" fn ARMCIX_Create_mutexes_hdl(
    count: c_int,
    pgroup: *mut Group,
) -> *mut MutexSet {
    let call = "ARMCIX_Create_mutexes_hdl";
    let s = state(call);
    // SAFETY: forwarded contract.
    let members = unsafe { group::members(s, call, pgroup) };
    Box::into_raw(Box::new(MutexSet::create(s, call, &members, count)))
}

/// The mutex set behind a handle.
///
/// # Safety
/// `hdl` is null or a handle from ARMCIX_Create_mutexes_hdl, not yet destroyed.
unsafe fn set<'a>(s: &State, call: &str, hdl: *mut MutexSet) -> &'a MutexSet {
    if hdl.is_null() {
        s.fail(call, "null mutex handle");
    }
    // SAFETY: a live handle points to the boxed set (caller's contract).
    unsafe { &*hdl }
}

/// ARMCIX_Destroy_mutexes_hdl: collective over the handle's group.
///
/// # Safety
/// `hdl` is a live handle from ARMCIX_Create_mutexes_hdl, not used after this.
#[no_mangle]
pub unsafe extern "C" fn ARMCIX_Destroy_mutexes_hdl(hdl: *mut MutexSet) -> c_int {
    let call = "ARMCIX_Destroy_mutexes_hdl";
    let s = state(call);
    // SAFETY: checked not null; the handle came from Box::into_raw in
    // ARMCIX_Create_mutexes_hdl and is not used again (caller's contract).
    let set = unsafe {
        set(s, call, hdl);
        Box::from_raw(hdl)
    };
    set.destroy(s, call);
    0
}

/// ARMCIX_Lock_hdl: waits for mutex `mutex` on world rank `proc` (a member of the
/// handle's group).
///
/// # Safety
/// `hdl` is a live handle from ARMCIX_Create_mutexes_hdl.
#[no_mangle]
pub unsafe extern "C" fn ARMCIX_Lock_hdl(hdl: *mut MutexSet, mutex: c_int, proc: c_int) {
    let call = "ARMCIX_Lock_hdl";
    let s = state(call);
    // SAFETY: forwarded contract.
    unsafe { set(s, call, hdl) }.lock(s, call, mutex, proc);
}

/// ARMCIX_Trylock_hdl: takes mutex `mutex` on world rank `proc` if it is free: 0 when
/// taken, 1 when another rank holds it.
///
/// # Safety
/// `hdl` is a live handle from ARMCIX_Create_mutexes_hdl.
#[no_mangle]
pub unsafe extern "C" fn ARMCIX_Trylock_hdl(
    hdl: *mut MutexSet,
    mutex: c_int,
    proc: c_int,
) -> c_int {
    let call = "ARMCIX_Trylock_hdl";
    let s = state(call);
    // SAFETY: forwarded contract.
    let taken = unsafe { set(s, call, hdl) }.try_lock(s, call, mutex, proc);
    c_int::from(!taken)
}

/// ARMCIX_Unlock_hdl: releases mutex `mutex` on world rank `proc`, held by this rank.
///
/// # Safety
/// `hdl` is a live handle from ARMCIX_Create_mutexes_hdl.
#[no_mangle]
pub unsafe extern "C" fn ARMCIX_Unlock_hdl(hdl: *mut MutexSet, mutex: c_int, proc: c_int) {
    let call = "ARMCIX_Unlock_hdl";
    let s = state(call);
    // SAFETY: forwarded contract.
    unsafe { set(s, call, hdl) }.unlock(s, call, mutex, proc);
}

/// ARMCIX_Progress: ARMCI-MPI pokes MPI's progress engine here. gaspar's operations
/// progress inside the calls that start, wait for or complete them, so there is nothing
/// to do beyond checking that ARMCI is initialized.
#[no_mangle]
pub extern "C" fn ARMCIX_Progress() {
    state("ARMCIX_Progress");
}
