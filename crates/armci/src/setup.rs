//! Start-up, shut-down, memory allocation and synchronization.

use std::ffi::{c_char, c_int, c_void, CStr};

use crate::state::{self, state};

/// The tags of libarmci's own exchanges of words over the world, which name them when
/// ranks are in different collective calls.
pub(crate) mod tag {
    use gaspar::gmem::ExchangeTag;

    const fn named(name: &str) -> ExchangeTag {
        match ExchangeTag::new(name) {
            Some(tag) => tag,
            None => panic!("not a valid exchange tag"),
        }
    }

    /// ARMCI_Init: the ranks' heap addresses.
    pub(crate) const INIT: ExchangeTag = named("Init");
    /// ARMCI_Malloc: the sizes the ranks ask for.
    pub(crate) const MALLOC: ExchangeTag = named("Malloc");
    /// ARMCI_Free: the blocks the ranks free.
    pub(crate) const FREE: ExchangeTag = named("Free");
}

/// ARMCI_Init: joins the gaspar job (run under `gaspar run`; alone, a 1-rank job).
#[no_mangle]
pub extern "C" fn ARMCI_Init() -> c_int {
    crate::panic::install();
    match state::initialize() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("gaspar armci: ARMCI_Init: {e}");
            -1
        }
    }
}

/// ARMCI_Init_args: as ARMCI_Init (gaspar takes nothing from the arguments).
#[no_mangle]
pub extern "C" fn ARMCI_Init_args(_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> c_int {
    ARMCI_Init()
}

/// ARMCI_Init_thread: as ARMCI_Init; every gaspar call is thread safe.
#[no_mangle]
pub extern "C" fn ARMCI_Init_thread(_requested: c_int) -> c_int {
    ARMCI_Init()
}

/// ARMCI_Initialized.
#[no_mangle]
pub extern "C" fn ARMCI_Initialized() -> c_int {
    c_int::from(state::is_initialized())
}

/// ARMCI_Finalize: completes everything and leaves the job.
#[no_mangle]
pub extern "C" fn ARMCI_Finalize() -> c_int {
    match state::finalize() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("gaspar armci: ARMCI_Finalize: {e}");
            -1
        }
    }
}

/// ARMCI_Cleanup: nothing outlives the job (the launcher removes every segment).
#[no_mangle]
pub extern "C" fn ARMCI_Cleanup() {}

/// ARMCI_Error: ends the job with the message.
///
/// # Safety
/// `msg` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Error(msg: *const c_char, code: c_int) {
    let text = if msg.is_null() {
        String::new()
    } else {
        // SAFETY: the caller passes a NUL-terminated string.
        unsafe { CStr::from_ptr(msg) }
            .to_string_lossy()
            .into_owned()
    };
    state("ARMCI_Error").fail("ARMCI_Error", format!("{text} (code {code})"))
}

/// ARMCI_Malloc: collective; each rank may ask for a different size (0 gives NULL).
/// `base_ptrs[p]` receives rank p's address of its block.
///
/// # Safety
/// `base_ptrs` has room for one pointer per rank.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Malloc(base_ptrs: *mut *mut c_void, size: libc::c_long) -> c_int {
    let call = "ARMCI_Malloc";
    let s = state(call);
    let group = crate::group::default_members(s, call);
    if group.world {
        // SAFETY: forwarded contract.
        unsafe { world_malloc(call, base_ptrs, size) }
    } else {
        // SAFETY: forwarded contract (one slot per member of the default group).
        unsafe { crate::group::malloc_in(s, call, &group, base_ptrs, size) }
    }
}

/// ARMCI_Malloc on the world group: one symmetric block of the largest size asked for.
///
/// # Safety
/// `base_ptrs` has one slot per rank.
pub(crate) unsafe fn world_malloc(
    call: &str,
    base_ptrs: *mut *mut c_void,
    size: libc::c_long,
) -> c_int {
    let s = state(call);
    let size =
        u64::try_from(size).unwrap_or_else(|_| s.fail(call, format!("negative size {size}")));
    if base_ptrs.is_null() {
        s.fail(call, "null base_ptrs");
    }
    let procs = s.rt.procs() as usize;
    let mut sizes = vec![0u64; procs];
    s.check(call, s.rt.exchange_u64(tag::MALLOC, size, &mut sizes));
    let largest = sizes.iter().copied().max().unwrap_or(0).max(1);
    let block = s.check(call, s.rt.alloc(largest));
    for (rank, &size) in sizes.iter().enumerate() {
        let address = if size == 0 {
            std::ptr::null_mut()
        } else {
            s.add_block(rank as u32, block.heap_offset(), size);
            s.address_of(&block, rank as u32)
        };
        // SAFETY: the caller provides one slot per rank (checked not null above), written
        // one by one: no Rust slice over the caller's array.
        unsafe { base_ptrs.add(rank).write_unaligned(address) };
    }
    s.blocks
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(block);
    0
}

/// ARMCI_Free: collective; `ptr` is this rank's address from ARMCI_Malloc (NULL where it
/// asked for 0 bytes).
#[no_mangle]
pub extern "C" fn ARMCI_Free(ptr: *mut c_void) -> c_int {
    let s = state("ARMCI_Free");
    let call = "ARMCI_Free";
    let group = crate::group::default_members(s, call);
    if !group.world {
        return crate::group::free_in(s, call, &group, ptr);
    }
    let me = s.rt.rank();
    let mut blocks = s.blocks.lock().unwrap_or_else(|p| p.into_inner());
    let mine = if ptr.is_null() {
        None
    } else {
        blocks.iter().position(|b| s.address_of(b, me) == ptr)
    };
    if !ptr.is_null() && mine.is_none() {
        s.fail(call, format!("{ptr:p} is not a block from ARMCI_Malloc"));
    }
    // Ranks that passed NULL learn which block from the others.
    let mut offsets = vec![0u64; s.rt.procs() as usize];
    let offset = mine.map_or(u64::MAX, |i| blocks[i].heap_offset());
    s.check(call, s.rt.exchange_u64(tag::FREE, offset, &mut offsets));
    let Some(&target) = offsets.iter().find(|&&o| o != u64::MAX) else {
        return 0;
    };
    if offsets.iter().any(|&o| o != u64::MAX && o != target) {
        s.fail(call, "ranks are freeing different blocks");
    }
    let index = blocks
        .iter()
        .position(|b| b.heap_offset() == target)
        .unwrap_or_else(|| s.fail(call, "no such block"));
    let block = blocks.remove(index);
    for rank in 0..s.rt.procs() {
        s.remove_block(rank, block.heap_offset());
    }
    s.check(call, s.rt.free(block));
    0
}

/// ARMCI_Malloc_local: private memory (malloc).
#[no_mangle]
pub extern "C" fn ARMCI_Malloc_local(size: libc::c_long) -> *mut c_void {
    match usize::try_from(size) {
        // SAFETY: malloc with any size is sound; NULL is returned on failure.
        Ok(n) => unsafe { libc::malloc(n.max(1)) },
        Err(_) => std::ptr::null_mut(),
    }
}

/// ARMCI_Free_local.
///
/// # Safety
/// `ptr` is null or came from ARMCI_Malloc_local.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Free_local(ptr: *mut c_void) -> c_int {
    // SAFETY: the caller passes a pointer from ARMCI_Malloc_local (malloc) or null.
    unsafe { libc::free(ptr) };
    0
}

/// ARMCI_Barrier: completes every operation, then waits for every rank.
#[no_mangle]
pub extern "C" fn ARMCI_Barrier() {
    let s = state("ARMCI_Barrier");
    s.check("ARMCI_Barrier", s.rt.all_fence());
    s.check("ARMCI_Barrier", s.rt.barrier());
}

/// ARMCI_Fence: every operation to `proc` is complete there.
#[no_mangle]
pub extern "C" fn ARMCI_Fence(proc: c_int) {
    let s = state("ARMCI_Fence");
    let rank = s.rank_of("ARMCI_Fence", proc);
    s.check("ARMCI_Fence", s.rt.fence(rank));
}

/// ARMCI_AllFence.
#[no_mangle]
pub extern "C" fn ARMCI_AllFence() {
    let s = state("ARMCI_AllFence");
    s.check("ARMCI_AllFence", s.rt.all_fence());
}

/// ARMCI_Access_begin: on shared memory, direct loads and stores to one's own ARMCI
/// memory are always coherent, so there is no access epoch to open.
#[no_mangle]
pub extern "C" fn ARMCI_Access_begin(_ptr: *mut c_void) {
    state("ARMCI_Access_begin");
}

/// ARMCI_Access_end: see ARMCI_Access_begin.
#[no_mangle]
pub extern "C" fn ARMCI_Access_end(_ptr: *mut c_void) {
    state("ARMCI_Access_end");
}

/// ARMCI_Copy: a local copy.
///
/// # Safety
/// `src` and `dst` point to `size` bytes of this process.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Copy(src: *mut c_void, dst: *mut c_void, size: c_int) {
    let s = state("ARMCI_Copy");
    let n = s.len("ARMCI_Copy", size);
    if n > 0 && (src.is_null() || dst.is_null()) {
        s.fail("ARMCI_Copy", "null buffer");
    }
    // SAFETY: ARMCI's contract for both buffers; `copy` allows them to overlap.
    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, n as usize) };
}
