//! Groups (ARMCI-MPI's semantics: a group is a list of world ranks; creating a child is
//! collective over the parent, and ranks outside the list get rank -1 and size 0), each
//! run by a gaspar team split from its parent's, group memory (each member's block in its
//! own heap, addresses exchanged in the group) and SMP domains (one node).

use std::ffi::{c_int, c_void};
use std::sync::Mutex;

use gaspar::world::Team;

use crate::group_comm::{self, Comm};
use gaspar::LocalAlloc;

use crate::collective;
use crate::state::{state, State};

/// ARMCI_Group as ARMCI-MPI lays it out. A group made here owns `grp_to_abs` (size
/// entries), `abs_to_grp` (one per world rank, -1 for non-members), its communicator
/// `comm` (MPI build, see `group_comm`) and its [`Team`] (in [`TEAMS`]); the world group
/// has no rank lists (ranks are their own ids, and its team is the world's).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Group {
    comm: Comm,
    noncoll_pgroup_comm: Comm,
    grp_to_abs: *mut c_int,
    abs_to_grp: *mut c_int,
    rank: c_int,
    size: c_int,
}

// SAFETY: a Group is plain data; its arrays and its team (which is Sync) are only read,
// and freed by ARMCI_Group_free (the program's contract, as with ARMCI-MPI, is not to use
// a group after freeing it).
unsafe impl Send for Group {}

/// The default group (ARMCI_Group_set_default), when it is not the world group.
static DEFAULT: Mutex<Option<Group>> = Mutex::new(None);

/// Live group allocations of this rank (ARMCI_Malloc_group on a group other than world).
static GROUP_BLOCKS: Mutex<Vec<LocalAlloc>> = Mutex::new(Vec::new());

/// The teams of the live groups made here, by the address of their `grp_to_abs`.
static TEAMS: Mutex<Vec<(usize, Box<Team>)>> = Mutex::new(Vec::new());

/// What a rank outside a group holds: no rank lists, no communicator, rank -1, size 0.
fn not_a_member() -> Group {
    Group {
        comm: group_comm::null(),
        noncoll_pgroup_comm: group_comm::null(),
        grp_to_abs: std::ptr::null_mut(),
        abs_to_grp: std::ptr::null_mut(),
        rank: -1,
        size: 0,
    }
}

fn world_group(s: &State) -> Group {
    Group {
        comm: s.world_comm,
        noncoll_pgroup_comm: s.world_comm,
        grp_to_abs: std::ptr::null_mut(),
        abs_to_grp: std::ptr::null_mut(),
        rank: s.rt.rank() as c_int,
        size: s.rt.procs() as c_int,
    }
}

/// The members of a group as world ranks, in group-rank order, and the team that runs
/// its collectives.
pub(crate) struct Members {
    pub(crate) ranks: Vec<u32>,
    /// Whether this is the world group (ranks are their own ids).
    pub(crate) world: bool,
    pub(crate) team: &'static Team,
    /// The group's communicator (null in the shared-memory build).
    pub(crate) comm: Comm,
}

impl Members {
    /// This rank's place in the group, or the end of the job when it is not a member.
    pub(crate) fn my_index(&self, s: &State, call: &str) -> usize {
        let me = s.rt.rank();
        self.ranks
            .iter()
            .position(|&r| r == me)
            .unwrap_or_else(|| s.fail(call, "this rank is not a member of the group"))
    }
}

/// Reads a group of the caller.
///
/// # Safety
/// `group` is null or points to an `ARMCI_Group` of the caller.
unsafe fn read(s: &State, call: &str, group: *const Group) -> Group {
    if group.is_null() {
        s.fail(call, "null group");
    }
    // SAFETY: a non-null group pointer points to an ARMCI_Group of the caller.
    unsafe { group.read() }
}

/// The members of `group`, checked.
///
/// # Safety
/// `group` is null or points to a group that ARMCI made (or the world group) and that is
/// still alive.
pub(crate) unsafe fn members(s: &'static State, call: &str, group: *const Group) -> Members {
    // SAFETY: forwarded contract.
    unsafe { members_of(s, call, &read(s, call, group)) }
}

/// # Safety
/// `g` is a group that ARMCI made (its rank list has `size` entries) and that is still
/// alive, or a group without a rank list.
unsafe fn members_of(s: &'static State, call: &str, g: &Group) -> Members {
    let procs = s.rt.procs();
    if g.grp_to_abs.is_null() {
        if g.size != procs as c_int {
            s.fail(
                call,
                format!("not a group (size {} without a rank list)", g.size),
            );
        }
        return world_members(s);
    }
    let size = usize::try_from(g.size)
        .ok()
        .filter(|&n| n <= procs as usize)
        .unwrap_or_else(|| s.fail(call, format!("not a group (size {})", g.size)));
    // SAFETY: a group made by ARMCI_Group_create_child has `size` entries in grp_to_abs.
    let list = unsafe { std::slice::from_raw_parts(g.grp_to_abs, size) };
    let team: *const Team = TEAMS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .find(|(list, _)| *list == g.grp_to_abs as usize)
        .map(|(_, team)| &**team as *const Team)
        .unwrap_or_else(|| s.fail(call, "not a group (a rank list without a team)"));
    Members {
        ranks: list.iter().map(|&r| s.rank_of(call, r)).collect(),
        world: false,
        // SAFETY: the team is boxed in TEAMS until ARMCI_Group_free, and the group is not
        // used after that (the program's contract).
        team: unsafe { &*team },
        comm: g.comm,
    }
}

/// The world group's members.
pub(crate) fn world_members(s: &'static State) -> Members {
    Members {
        ranks: (0..s.rt.procs()).collect(),
        world: true,
        team: s.rt.team(),
        comm: s.world_comm,
    }
}

/// The default group's members.
pub(crate) fn default_members(s: &'static State, call: &str) -> Members {
    match *DEFAULT.lock().unwrap_or_else(|p| p.into_inner()) {
        // SAFETY: the default group is alive: ARMCI_Group_set_default's contract, and
        // ARMCI_Group_free makes the world the default again before freeing it.
        Some(g) => unsafe { members_of(s, call, &g) },
        // SAFETY: the world group has no rank list.
        None => unsafe { members_of(s, call, &world_group(s)) },
    }
}

/// # Safety
/// `out` is null or points to an `ARMCI_Group` of the caller.
unsafe fn write_out(s: &State, call: &str, out: *mut Group, g: Group) {
    if out.is_null() {
        s.fail(call, "null group");
    }
    // SAFETY: non-null pointer to the caller's ARMCI_Group.
    unsafe { out.write(g) };
}

/// ARMCI_Group_get_world.
///
/// # Safety
/// `out` is null or points to an `ARMCI_Group`.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Group_get_world(out: *mut Group) {
    let s = state("ARMCI_Group_get_world");
    // SAFETY: forwarded contract.
    unsafe { write_out(s, "ARMCI_Group_get_world", out, world_group(s)) };
}

/// ARMCI_Group_get_default: the group ARMCI_Malloc and ARMCI_Group_create use.
///
/// # Safety
/// `out` is null or points to an `ARMCI_Group`.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Group_get_default(out: *mut Group) {
    let s = state("ARMCI_Group_get_default");
    let g = DEFAULT
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .unwrap_or_else(|| world_group(s));
    // SAFETY: forwarded contract.
    unsafe { write_out(s, "ARMCI_Group_get_default", out, g) };
}

/// ARMCI_Group_set_default: makes `group` the default (the group must stay alive while
/// it is the default, as in ARMCI-MPI).
///
/// # Safety
/// `group` is null or points to a live group made by ARMCI, which stays alive while it is
/// the default.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Group_set_default(group: *mut Group) {
    let call = "ARMCI_Group_set_default";
    let s = state(call);
    // SAFETY: forwarded contract.
    let (g, m) = unsafe {
        let g = read(s, call, group);
        (g, members_of(s, call, &g))
    };
    m.my_index(s, call);
    *DEFAULT.lock().unwrap_or_else(|p| p.into_inner()) = (!m.world).then_some(g);
}

/// Writes one field of `group` to `out` (ARMCI_Group_rank / _size).
///
/// # Safety
/// `out` is null or points to an int of the caller.
unsafe fn query(call: &str, group: *const Group, out: *mut c_int, field: fn(&Group) -> c_int) {
    let s = state(call);
    // SAFETY: forwarded contract.
    let g = unsafe { read(s, call, group) };
    if out.is_null() {
        s.fail(call, "null output argument");
    }
    // SAFETY: non-null pointer of the caller.
    unsafe { *out = field(&g) };
}

/// ARMCI_Group_rank.
///
/// # Safety
/// `group` and `rank` are valid pointers.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Group_rank(group: *mut Group, rank: *mut c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { query("ARMCI_Group_rank", group, rank, |g| g.rank) };
    0
}

/// ARMCI_Group_size.
///
/// # Safety
/// `group` and `size` are valid pointers.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Group_size(group: *mut Group, size: *mut c_int) {
    // SAFETY: forwarded contract.
    unsafe { query("ARMCI_Group_size", group, size, |g| g.size) };
}

/// ARMCI_Absolute_id: the world rank of group rank `group_rank`.
///
/// # Safety
/// `group` is null or points to a live group made by ARMCI.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Absolute_id(group: *mut Group, group_rank: c_int) -> c_int {
    let call = "ARMCI_Absolute_id";
    let s = state(call);
    // SAFETY: forwarded contract.
    let m = unsafe { members(s, call, group) };
    match usize::try_from(group_rank)
        .ok()
        .and_then(|i| m.ranks.get(i))
    {
        Some(&r) => r as c_int,
        None => s.fail(
            call,
            format!(
                "group rank {group_rank} is out of range: the group has {} ranks",
                m.ranks.len()
            ),
        ),
    }
}

/// ARMCI_Group_create: a child of the default group.
///
/// # Safety
/// `pid_list` has `grp_size` entries; `group_out` is valid.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Group_create(
    grp_size: c_int,
    pid_list: *mut c_int,
    group_out: *mut Group,
) {
    let s = state("ARMCI_Group_create");
    let parent = DEFAULT
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .unwrap_or_else(|| world_group(s));
    // SAFETY: forwarded contract; `parent` is a live group.
    unsafe { create_child("ARMCI_Group_create", grp_size, pid_list, group_out, &parent) }
}

/// ARMCI_Group_create_child: collective over `group_parent`; `pid_list` holds ranks of
/// the parent. As on ARMCI-MPI (MPI_Comm_create), ranks may pass the lists of different
/// disjoint groups in one call; members check among themselves that they were given the
/// same list.
///
/// # Safety
/// `pid_list` has `grp_size` entries; the group pointers are valid.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Group_create_child(
    grp_size: c_int,
    pid_list: *mut c_int,
    group_out: *mut Group,
    group_parent: *mut Group,
) {
    let call = "ARMCI_Group_create_child";
    let s = state(call);
    // SAFETY: forwarded contract.
    unsafe {
        let parent = read(s, call, group_parent);
        create_child(call, grp_size, pid_list, group_out, &parent)
    }
}

/// Collective over the members of `parent`: the child's team, split from the parent's
/// (members numbered as in `pid_list`), and its rank list.
///
/// # Safety
/// `pid_list` has `grp_size` entries; `out` is valid; `parent` is a live group.
unsafe fn create_child(
    call: &str,
    grp_size: c_int,
    pid_list: *const c_int,
    out: *mut Group,
    parent: &Group,
) {
    let s = state(call);
    // SAFETY: forwarded contract.
    let parent = unsafe { members_of(s, call, parent) };
    let n = usize::try_from(grp_size)
        .unwrap_or_else(|_| s.fail(call, format!("negative group size {grp_size}")));
    if n > 0 && pid_list.is_null() {
        s.fail(call, "null pid_list");
    }
    let pids = if n == 0 {
        &[][..]
    } else {
        // SAFETY: `pid_list` has `grp_size` entries (caller's contract).
        unsafe { std::slice::from_raw_parts(pid_list, n) }
    };
    let procs = s.rt.procs() as usize;
    let mut abs_to_grp = vec![-1 as c_int; procs].into_boxed_slice();
    let mut grp_to_abs = Vec::with_capacity(n);
    for (k, &pid) in pids.iter().enumerate() {
        let Some(&abs) = usize::try_from(pid).ok().and_then(|p| parent.ranks.get(p)) else {
            s.fail(
                call,
                format!(
                    "pid_list[{k}] = {pid} is not a rank of the parent group of {} ranks",
                    parent.ranks.len()
                ),
            );
        };
        if abs_to_grp[abs as usize] >= 0 {
            s.fail(call, format!("rank {pid} appears twice in pid_list"));
        }
        abs_to_grp[abs as usize] = k as c_int;
        grp_to_abs.push(abs as c_int);
    }
    let me = s.rt.rank() as usize;
    let rank = abs_to_grp[me];
    // As MPI_Comm_create on ARMCI-MPI, members of disjoint groups may create them in the
    // same call, each passing its own group's list: a group is named by its lowest rank.
    let lowest = grp_to_abs.iter().copied().min().unwrap_or(0) as u32;
    let (color, key) = ((rank >= 0).then_some(lowest), rank.max(0) as u32);
    let team = s.check(call, parent.team.split(&s.rt, color, key));
    let comm = group_comm::split(parent.comm, color, key);
    let Some(team) = team else {
        // SAFETY: forwarded contract (the caller's group pointer).
        unsafe { write_out(s, call, out, not_a_member()) };
        return;
    };
    // Every member must have been given the same list: compare them all.
    let list: Vec<u8> = bytemuck::cast_slice(&grp_to_abs).to_vec();
    let lists = collective::allgather(s, call, &team, &list);
    if let Some(k) = lists.iter().position(|l| *l != list) {
        s.fail(
            call,
            format!(
                "rank {} was given another member list for this group",
                team.world_ranks()[k]
            ),
        );
    }
    // SAFETY: forwarded contract (the caller's group pointer).
    unsafe { write_member(s, call, out, team, comm) };
}

/// Writes to `out` the group of `team`'s members (this rank among them), which owns the
/// team from now on.
///
/// # Safety
/// `out` is null or points to an `ARMCI_Group` of the caller.
pub(crate) unsafe fn write_member(s: &State, call: &str, out: *mut Group, team: Team, comm: Comm) {
    let procs = s.rt.procs() as usize;
    let mut abs_to_grp = vec![-1 as c_int; procs].into_boxed_slice();
    let grp_to_abs: Box<[c_int]> = team.world_ranks().iter().map(|&r| r as c_int).collect();
    for (k, &abs) in grp_to_abs.iter().enumerate() {
        abs_to_grp[abs as usize] = k as c_int;
    }
    let (rank, size) = (team.rank() as c_int, team.size() as c_int);
    let grp_to_abs = Box::into_raw(grp_to_abs) as *mut c_int;
    TEAMS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((grp_to_abs as usize, Box::new(team)));
    // SAFETY: forwarded contract (the caller's group pointer).
    unsafe {
        write_out(
            s,
            call,
            out,
            Group {
                comm,
                noncoll_pgroup_comm: comm,
                grp_to_abs,
                abs_to_grp: Box::into_raw(abs_to_grp) as *mut c_int,
                rank,
                size,
            },
        )
    };
}

/// Writes to `out` what a rank outside a new group holds.
///
/// # Safety
/// `out` is null or points to an `ARMCI_Group` of the caller.
pub(crate) unsafe fn write_not_a_member(s: &State, call: &str, out: *mut Group) {
    // SAFETY: forwarded contract.
    unsafe { write_out(s, call, out, not_a_member()) };
}

/// ARMCI_Group_free: releases a group made by ARMCI_Group_create(_child), and its team.
///
/// # Safety
/// `group` is null or points to a group made by ARMCI, not used again after this.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Group_free(group: *mut Group) {
    let call = "ARMCI_Group_free";
    let s = state(call);
    // SAFETY: forwarded contract.
    let g = unsafe { read(s, call, group) };
    if g.grp_to_abs.is_null() {
        return;
    }
    // Freeing the default group makes the world the default again (its arrays go now).
    let mut default = DEFAULT.lock().unwrap_or_else(|p| p.into_inner());
    if default.is_some_and(|d| d.grp_to_abs == g.grp_to_abs) {
        *default = None;
    }
    drop(default);
    let procs = s.rt.procs() as usize;
    TEAMS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|(list, _)| *list != g.grp_to_abs as usize);
    group_comm::free(g.comm);
    // SAFETY: both arrays came from Box::into_raw in `write_member`, with these lengths
    // (size entries and one per world rank); the group is not used after this (the
    // program's contract), and its pointers are cleared below.
    unsafe {
        drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
            g.grp_to_abs,
            g.size as usize,
        )));
        drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
            g.abs_to_grp,
            procs,
        )));
    }
    // SAFETY: forwarded contract (the caller's group pointer).
    unsafe {
        write_out(
            s,
            call,
            group,
            Group {
                noncoll_pgroup_comm: group_comm::null(),
                ..not_a_member()
            },
        )
    };
}

/// ARMCI_Malloc_group: collective over `group`; `ptr_arr[i]` receives group rank i's
/// block (NULL where that rank asked for 0 bytes). On the world group this is
/// ARMCI_Malloc; on others each member allocates in its own heap and the addresses are
/// exchanged in the group.
///
/// # Safety
/// `ptr_arr` has one entry per group member.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Malloc_group(
    ptr_arr: *mut *mut c_void,
    bytes: libc::c_long,
    group: *mut Group,
) -> c_int {
    let call = "ARMCI_Malloc_group";
    let s = state(call);
    // SAFETY: forwarded contract.
    let m = unsafe { members(s, call, group) };
    if m.world {
        // SAFETY: forwarded contract.
        return unsafe { crate::setup::world_malloc(call, ptr_arr, bytes) };
    }
    // SAFETY: forwarded contract.
    unsafe { malloc_in(s, call, &m, ptr_arr, bytes) }
}

/// ARMCI_Malloc_group's body for a group other than the world.
///
/// # Safety
/// `ptr_arr` has one entry per member.
pub(crate) unsafe fn malloc_in(
    s: &State,
    call: &str,
    m: &Members,
    ptr_arr: *mut *mut c_void,
    bytes: libc::c_long,
) -> c_int {
    m.my_index(s, call);
    let bytes =
        u64::try_from(bytes).unwrap_or_else(|_| s.fail(call, format!("negative size {bytes}")));
    if ptr_arr.is_null() {
        s.fail(call, "null ptr_arr");
    }
    let address = if bytes == 0 {
        0u64
    } else {
        let block = s.check(call, s.rt.alloc_local(bytes));
        let address = s.own_heap_address(block.heap_offset()) as u64;
        GROUP_BLOCKS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(block);
        address
    };
    let mine: Vec<u8> = [address, bytes]
        .iter()
        .flat_map(|w| w.to_ne_bytes())
        .collect();
    let all = collective::allgather(s, call, m.team, &mine);
    // SAFETY: the caller provides one slot per member.
    let out = unsafe { std::slice::from_raw_parts_mut(ptr_arr, m.ranks.len()) };
    for ((slot, words), &rank) in out.iter_mut().zip(&all).zip(&m.ranks) {
        let word =
            |k: usize| u64::from_ne_bytes(words[8 * k..8 * k + 8].try_into().expect("16 bytes"));
        let (address, len) = (word(0), word(1));
        if address != 0 {
            s.add_block(rank, s.heap_offset_of(rank, address as usize), len);
        }
        *slot = address as usize as *mut c_void;
    }
    0
}

/// ARMCI_Free_group: collective over `group`; `ptr` is this rank's block (or NULL).
///
/// # Safety
/// `group` is null or points to a live group made by ARMCI.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Free_group(ptr: *mut c_void, group: *mut Group) -> c_int {
    let call = "ARMCI_Free_group";
    let s = state(call);
    // SAFETY: forwarded contract.
    let m = unsafe { members(s, call, group) };
    if m.world {
        return crate::setup::ARMCI_Free(ptr);
    }
    free_in(s, call, &m, ptr)
}

/// ARMCI_Free_group's body for a group other than the world.
pub(crate) fn free_in(s: &State, call: &str, m: &Members, ptr: *mut c_void) -> c_int {
    m.my_index(s, call);
    // Every member is done with the blocks before any goes, and learns which go.
    let mine = (ptr as usize as u64).to_ne_bytes();
    for (words, &rank) in collective::allgather(s, call, m.team, &mine)
        .iter()
        .zip(&m.ranks)
    {
        let address = u64::from_ne_bytes(words.as_slice().try_into().expect("8 bytes"));
        if address != 0 {
            s.remove_block(rank, s.heap_offset_of(rank, address as usize));
        }
    }
    if !ptr.is_null() {
        let mut blocks = GROUP_BLOCKS.lock().unwrap_or_else(|p| p.into_inner());
        let Some(k) = blocks
            .iter()
            .position(|b| s.own_heap_address(b.heap_offset()) == ptr as usize)
        else {
            s.fail(
                call,
                format!("{ptr:p} is not a block from ARMCI_Malloc_group"),
            );
        };
        let block = blocks.remove(k);
        s.check(call, s.rt.free_local(block));
    }
    0
}

/// ARMCI_Malloc_memdev: as ARMCI_Malloc; gaspar has one kind of memory, so the device
/// name is ignored (ARMCI-MPI's SICM hint).
///
/// # Safety
/// As ARMCI_Malloc.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Malloc_memdev(
    ptr_arr: *mut *mut c_void,
    bytes: libc::c_long,
    _device: *const libc::c_char,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { crate::setup::ARMCI_Malloc(ptr_arr, bytes) }
}

/// ARMCI_Malloc_group_memdev: as ARMCI_Malloc_group (the device name is ignored).
///
/// # Safety
/// As ARMCI_Malloc_group.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Malloc_group_memdev(
    ptr_arr: *mut *mut c_void,
    bytes: libc::c_long,
    group: *mut Group,
    _device: *const libc::c_char,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { ARMCI_Malloc_group(ptr_arr, bytes, group) }
}

/// ARMCI_Free_memdev: as ARMCI_Free.
#[no_mangle]
pub extern "C" fn ARMCI_Free_memdev(ptr: *mut c_void) -> c_int {
    crate::setup::ARMCI_Free(ptr)
}

/// ARMCI_Uses_shm_grp.
#[no_mangle]
pub extern "C" fn ARMCI_Uses_shm_grp(_group: *mut Group) -> c_int {
    1
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

/// ARMCI_Set_shm_limit: the heap size is set by GASPAR_HEAP_SIZE before the job starts.
#[no_mangle]
pub extern "C" fn ARMCI_Set_shm_limit(_limit: libc::c_ulong) {
    eprintln!(
        "gaspar armci: ARMCI_Set_shm_limit: set GASPAR_HEAP_SIZE before the job starts instead"
    );
}
