//! Groups (the world group only, so far) and SMP domains (one node).

use std::ffi::{c_int, c_void};

use crate::state::{state, unsupported};

/// ARMCI_Group as ARMCI-MPI lays it out; the communicator fields stay null.
#[repr(C)]
pub struct Group {
    comm: *mut c_void,
    noncoll_pgroup_comm: *mut c_void,
    grp_to_abs: *mut c_int,
    abs_to_grp: *mut c_int,
    rank: c_int,
    size: c_int,
}

fn world(out: *mut Group, call: &str) {
    let s = state(call);
    if out.is_null() {
        s.fail(call, "null group");
    }
    // SAFETY: non-null pointer to the caller's ARMCI_Group.
    unsafe {
        out.write(Group {
            comm: std::ptr::null_mut(),
            noncoll_pgroup_comm: std::ptr::null_mut(),
            grp_to_abs: std::ptr::null_mut(),
            abs_to_grp: std::ptr::null_mut(),
            rank: s.rt.rank() as c_int,
            size: s.rt.procs() as c_int,
        })
    };
}

fn is_world(group: *const Group) -> bool {
    // SAFETY: a non-null group pointer points to an ARMCI_Group of the caller.
    !group.is_null() && unsafe { (*group).size } == state("ARMCI group").rt.procs() as c_int
}

/// ARMCI_Group_get_world.
#[no_mangle]
pub extern "C" fn ARMCI_Group_get_world(out: *mut Group) {
    world(out, "ARMCI_Group_get_world");
}

/// ARMCI_Group_get_default: the world group (the only one).
#[no_mangle]
pub extern "C" fn ARMCI_Group_get_default(out: *mut Group) {
    world(out, "ARMCI_Group_get_default");
}

/// ARMCI_Group_set_default: only the world group.
#[no_mangle]
pub extern "C" fn ARMCI_Group_set_default(group: *mut Group) {
    if !is_world(group) {
        state("ARMCI_Group_set_default").fail(
            "ARMCI_Group_set_default",
            "groups other than the world group are not supported by gaspar yet",
        );
    }
}

/// ARMCI_Group_rank.
///
/// # Safety
/// `group` and `rank` are valid pointers.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Group_rank(group: *mut Group, rank: *mut c_int) -> c_int {
    if group.is_null() || rank.is_null() {
        return unsupported("ARMCI_Group_rank", "a null argument");
    }
    // SAFETY: both non-null pointers of the caller.
    unsafe { *rank = (*group).rank };
    0
}

/// ARMCI_Group_size.
///
/// # Safety
/// `group` and `size` are valid pointers.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Group_size(group: *mut Group, size: *mut c_int) {
    if !group.is_null() && !size.is_null() {
        // SAFETY: both non-null pointers of the caller.
        unsafe { *size = (*group).size };
    }
}

/// ARMCI_Absolute_id: in the world group, a rank is its own id.
#[no_mangle]
pub extern "C" fn ARMCI_Absolute_id(group: *mut Group, group_rank: c_int) -> c_int {
    if !is_world(group) {
        return unsupported("ARMCI_Absolute_id", "groups other than the world group");
    }
    group_rank
}

/// ARMCI_Group_create: not supported yet (ends the job with a message).
#[no_mangle]
pub extern "C" fn ARMCI_Group_create(_size: c_int, _pids: *mut c_int, _out: *mut Group) {
    state("ARMCI_Group_create").fail(
        "ARMCI_Group_create",
        "groups other than the world group are not supported by gaspar yet",
    );
}

/// ARMCI_Group_create_child: not supported yet (ends the job with a message).
#[no_mangle]
pub extern "C" fn ARMCI_Group_create_child(
    _size: c_int,
    _pids: *mut c_int,
    _out: *mut Group,
    _parent: *mut Group,
) {
    state("ARMCI_Group_create_child").fail(
        "ARMCI_Group_create_child",
        "groups other than the world group are not supported by gaspar yet",
    );
}

/// ARMCI_Group_free: the world group needs no freeing.
#[no_mangle]
pub extern "C" fn ARMCI_Group_free(_group: *mut Group) {}

/// ARMCI_Malloc_group: the world group only.
///
/// # Safety
/// As ARMCI_Malloc.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Malloc_group(
    ptrs: *mut *mut c_void,
    bytes: libc::c_long,
    group: *mut Group,
) -> c_int {
    if !is_world(group) {
        return unsupported("ARMCI_Malloc_group", "groups other than the world group");
    }
    // SAFETY: forwarded contract.
    unsafe { crate::setup::ARMCI_Malloc(ptrs, bytes) }
}

/// ARMCI_Free_group: the world group only.
#[no_mangle]
pub extern "C" fn ARMCI_Free_group(ptr: *mut c_void, group: *mut Group) -> c_int {
    if !is_world(group) {
        return unsupported("ARMCI_Free_group", "groups other than the world group");
    }
    crate::setup::ARMCI_Free(ptr)
}

/// armci_domain_nprocs: every rank is on this node.
#[no_mangle]
pub extern "C" fn armci_domain_nprocs(_domain: c_int, _id: c_int) -> c_int {
    state("armci_domain_nprocs").rt.procs() as c_int
}

/// armci_domain_id: one node, id 0.
#[no_mangle]
pub extern "C" fn armci_domain_id(_domain: c_int, _proc: c_int) -> c_int {
    0
}

/// armci_domain_glob_proc_id: on one node, local and global ranks agree.
#[no_mangle]
pub extern "C" fn armci_domain_glob_proc_id(_domain: c_int, _id: c_int, local: c_int) -> c_int {
    local
}

/// armci_domain_my_id.
#[no_mangle]
pub extern "C" fn armci_domain_my_id(_domain: c_int) -> c_int {
    0
}

/// armci_domain_count.
#[no_mangle]
pub extern "C" fn armci_domain_count(_domain: c_int) -> c_int {
    1
}

/// armci_domain_same_id.
#[no_mangle]
pub extern "C" fn armci_domain_same_id(_domain: c_int, _proc: c_int) -> c_int {
    1
}

/// ARMCI_Same_node.
#[no_mangle]
pub extern "C" fn ARMCI_Same_node(_proc: c_int) -> c_int {
    1
}

/// ARMCI_Uses_shm: gaspar's default transport is shared memory.
#[no_mangle]
pub extern "C" fn ARMCI_Uses_shm() -> c_int {
    1
}

/// ARMCI_Uses_shm_grp.
#[no_mangle]
pub extern "C" fn ARMCI_Uses_shm_grp(_group: *mut Group) -> c_int {
    1
}

/// ARMCI_Set_shm_limit: the heap size is set by GASPAR_HEAP_SIZE before the job starts.
#[no_mangle]
pub extern "C" fn ARMCI_Set_shm_limit(_limit: libc::c_ulong) {
    eprintln!(
        "gaspar armci: ARMCI_Set_shm_limit: set GASPAR_HEAP_SIZE before the job starts instead"
    );
}
