//! Contiguous and strided put, get and accumulate (ARMCI_Put/Get/Acc and their S forms),
//! the helpers the nonblocking forms share, and local strided copies
//! (armci_read_strided, armci_write_strided).

use std::ffi::{c_int, c_void};

use gaspar::strided::{get_mapped, put_mapped, AccKind, Descriptor};
use gaspar::{GlobalAddr, Handle as GasparHandle};

use super::NULL;
use crate::direct::CArray;
use crate::state::{state, LocalBytes, Overlap, State};

pub(super) fn acc_kind(s: &State, call: &str, datatype: c_int) -> AccKind {
    AccKind::from_armci(datatype)
        .unwrap_or_else(|| s.fail(call, format!("unknown accumulate datatype {datatype}")))
}

/// # Safety
/// `scale` points to one element of `kind`.
pub(super) unsafe fn scale_bytes<'a>(
    s: &State,
    call: &str,
    kind: AccKind,
    scale: *const c_void,
) -> LocalBytes<'a> {
    // SAFETY: ARMCI's contract: `scale` points to one element of the accumulate type.
    unsafe { s.local(call, scale, kind.size() as u64) }
}

/// # Safety
/// ARMCI's contract for the strided arguments (see `State::descriptor`).
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn put_s(
    call: &str,
    src: *mut c_void,
    src_strides: *const c_int,
    dst: *mut c_void,
    dst_strides: *const c_int,
    count: *const c_int,
    levels: c_int,
    proc: c_int,
) -> GasparHandle {
    let s = state(call);
    let run = |desc: &Descriptor| {
        // SAFETY: forwarded contract.
        if unsafe { put_s_mapped(s, call, (src, dst), desc, proc) } {
            return NULL;
        }
        let ga = s.remote(call, dst, desc.dst_extent(), proc);
        // SAFETY: the source spans `src_extent` bytes (ARMCI's contract).
        let local = unsafe { s.local(call, src, desc.src_extent()) };
        s.check(call, s.rt.put_strided(&local, desc, ga, NULL))
    };
    // SAFETY: forwarded contract.
    unsafe { s.with_descriptor(call, (src_strides, dst_strides, count), levels, run) }
}

/// # Safety
/// ARMCI's contract for the strided arguments.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn get_s(
    call: &str,
    src: *mut c_void,
    src_strides: *const c_int,
    dst: *mut c_void,
    dst_strides: *const c_int,
    count: *const c_int,
    levels: c_int,
    proc: c_int,
) -> GasparHandle {
    let s = state(call);
    let run = |desc: &Descriptor| {
        // SAFETY: forwarded contract.
        if unsafe { get_s_mapped(s, call, (src, dst), desc, proc) } {
            return NULL;
        }
        let ga = s.remote(call, src, desc.src_extent(), proc);
        // SAFETY: the destination spans `dst_extent` writable bytes (ARMCI's contract).
        let mut local = unsafe { s.local_mut(call, dst, desc.dst_extent()) };
        let h = s.check(call, s.rt.get_strided(&mut local, desc, ga, NULL));
        if local.is_bounced() {
            // The data is in the bounce buffer on return (gaspar borrows it only for the
            // call): its rows are stored now, the gaps between them left alone.
            let (row, rows) = desc.chunks();
            local.write_back_pieces(row, rows.map(|(_, at)| at));
        }
        h
    };
    // SAFETY: forwarded contract.
    unsafe { s.with_descriptor(call, (src_strides, dst_strides, count), levels, run) }
}

/// A strided put moved with plain stores, when the target's heap is mapped here, every
/// transfer completes when issued (the shm transport), the buffered method is not forced
/// (`GASPAR_STRIDED_METHOD=buffered`) and the local buffer is private:
/// the remote range is checked against the target's live blocks here, as for every ARMCI
/// address, and gaspar's own location checks of the same range are skipped (they were a
/// third of a small PutS's instructions). `false`, with nothing moved, when the transfer
/// must take the transport's path.
///
/// # Safety
/// ARMCI's contract: `src` points to `desc.src_extent()` readable bytes.
unsafe fn put_s_mapped(
    s: &State,
    call: &str,
    (src, dst): (*mut c_void, *mut c_void),
    desc: &Descriptor,
    proc: c_int,
) -> bool {
    let len = desc.src_extent();
    let Some(there) = s.mapped_target(call, proc, (src, len), (dst, desc.dst_extent())) else {
        return false;
    };
    // SAFETY: `src` is not null and has `len` readable bytes (ARMCI's contract), private
    // to this process (`mapped_target` checked both).
    let local = unsafe { std::slice::from_raw_parts(src as *const u8, len as usize) };
    // SAFETY: the destination's extent lies in a live block of the target's heap, mapped
    // here at `there` (`mapped_target`); no Rust reference covers it (`local` is private).
    let moved = unsafe { put_mapped(desc, local, there as *mut u8) };
    s.check(call, moved);
    true
}

/// The get of [`put_s_mapped`]: plain loads from the target's mapped heap into a private
/// local buffer.
///
/// # Safety
/// ARMCI's contract: `dst` points to `desc.dst_extent()` writable bytes, not aliased
/// during the call.
unsafe fn get_s_mapped(
    s: &State,
    call: &str,
    (src, dst): (*mut c_void, *mut c_void),
    desc: &Descriptor,
    proc: c_int,
) -> bool {
    let len = desc.dst_extent();
    let Some(there) = s.mapped_target(call, proc, (dst, len), (src, desc.src_extent())) else {
        return false;
    };
    // SAFETY: `dst` is not null and has `len` writable bytes that nothing else aliases
    // during the call (ARMCI's contract), private to this process (`mapped_target`
    // checked both).
    let local = unsafe { std::slice::from_raw_parts_mut(dst as *mut u8, len as usize) };
    // SAFETY: the source's extent lies in a live block of the target's heap, mapped here
    // at `there` (`mapped_target`); no Rust reference covers it.
    let moved = unsafe { get_mapped(desc, there as *const u8, local) };
    s.check(call, moved);
    true
}

/// # Safety
/// ARMCI's contract for the strided arguments and `scale`.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn acc_s(
    call: &str,
    datatype: c_int,
    scale: *mut c_void,
    src: *mut c_void,
    src_strides: *const c_int,
    dst: *mut c_void,
    dst_strides: *const c_int,
    count: *const c_int,
    levels: c_int,
    proc: c_int,
) -> GasparHandle {
    let s = state(call);
    let kind = acc_kind(s, call, datatype);
    // SAFETY: forwarded contract.
    let scale = unsafe { scale_bytes(s, call, kind, scale) };
    let run = |desc: &Descriptor| {
        let ga = s.remote(call, dst, desc.dst_extent(), proc);
        // SAFETY: the source spans `src_extent` bytes.
        let local = unsafe { s.local(call, src, desc.src_extent()) };
        s.check(call, s.rt.acc_strided(kind, &scale, &local, desc, ga, NULL))
    };
    // SAFETY: forwarded contract.
    unsafe { s.with_descriptor(call, (src_strides, dst_strides, count), levels, run) }
}

/// Contiguous put: straight to the access layer, without strided planning.
///
/// # Safety
/// `src` points to `bytes` readable bytes.
pub(super) unsafe fn put_contiguous(
    call: &str,
    src: *mut c_void,
    dst: *mut c_void,
    bytes: c_int,
    proc: c_int,
) -> GasparHandle {
    let s = state(call);
    let n = s.len(call, bytes);
    if n == 0 {
        return NULL;
    }
    let remote = s.remote(call, dst, n, proc);
    let overlap = s.sharing(src, n);
    if overlap != Overlap::None {
        // SAFETY: forwarded contract.
        return unsafe { put_from_shared(s, call, src, remote, n, overlap) };
    }
    // SAFETY: forwarded contract; the source is private.
    let local = unsafe { s.lend(call, src, n, overlap) };
    s.check(call, s.rt.put(remote, &local, NULL))
}

/// `put_contiguous` from memory other processes may write (out of line: private buffers
/// are the common case). A source inside a heap moves from global address to global
/// address, anything else from a private copy: never a reference to it.
///
/// # Safety
/// `src` points to `n` readable bytes; `overlap` is theirs.
#[cold]
#[inline(never)]
unsafe fn put_from_shared(
    s: &State,
    call: &str,
    src: *mut c_void,
    remote: GlobalAddr,
    n: u64,
    overlap: Overlap,
) -> GasparHandle {
    if let Overlap::Inside { rank, offset } = overlap {
        let here = s.heap_address(call, rank, offset);
        return s.check(call, s.rt.copy(remote, here, n, NULL));
    }
    // SAFETY: forwarded contract.
    let local = unsafe { s.lend(call, src, n, overlap) };
    s.check(call, s.rt.put(remote, &local, NULL))
}

/// Contiguous get, as `put_contiguous`.
///
/// # Safety
/// `dst` points to `bytes` writable bytes.
pub(super) unsafe fn get_contiguous(
    call: &str,
    src: *mut c_void,
    dst: *mut c_void,
    bytes: c_int,
    proc: c_int,
) -> GasparHandle {
    let s = state(call);
    let n = s.len(call, bytes);
    if n == 0 {
        return NULL;
    }
    let remote = s.remote(call, src, n, proc);
    let overlap = s.sharing(dst, n);
    if overlap != Overlap::None {
        // SAFETY: forwarded contract.
        return unsafe { get_into_shared(s, call, dst, remote, n, overlap) };
    }
    // SAFETY: forwarded contract; the destination is private.
    let mut local = unsafe { s.lend_mut(call, dst, n, overlap) };
    s.check(call, s.rt.get(&mut local, remote, NULL))
}

/// `get_contiguous` into memory other processes may write (out of line, as
/// `put_from_shared`). A destination inside a heap is written from global address to
/// global address, anything else through a bounce buffer: never a reference to it. The
/// copy completes here (a blocking get has its data on return; ARMCI lets a nonblocking
/// one complete before its wait).
///
/// # Safety
/// `dst` points to `n` writable bytes; `overlap` is theirs.
#[cold]
#[inline(never)]
unsafe fn get_into_shared(
    s: &State,
    call: &str,
    dst: *mut c_void,
    remote: GlobalAddr,
    n: u64,
    overlap: Overlap,
) -> GasparHandle {
    if let Overlap::Inside { rank, offset } = overlap {
        let here = s.heap_address(call, rank, offset);
        let h = s.check(call, s.rt.copy(here, remote, n, NULL));
        s.check(call, s.rt.complete(h));
        return NULL;
    }
    // SAFETY: forwarded contract.
    let mut local = unsafe { s.lend_mut(call, dst, n, overlap) };
    let h = s.check(call, s.rt.get(&mut local, remote, NULL));
    // `get` has the data in place on return: the bounce buffer can be stored now.
    local.write_back();
    h
}

pub(super) fn contiguous(s: &State, call: &str, bytes: c_int) -> (c_int, [c_int; 1]) {
    let n = s.len(call, bytes);
    (0, [c_int::try_from(n).unwrap_or(c_int::MAX)])
}

/// ARMCI_Put. # Safety: ARMCI's contract for the buffers.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Put(
    src: *mut c_void,
    dst: *mut c_void,
    bytes: c_int,
    proc: c_int,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { put_contiguous("ARMCI_Put", src, dst, bytes, proc) };
    0
}

/// ARMCI_Get. # Safety: ARMCI's contract for the buffers.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Get(
    src: *mut c_void,
    dst: *mut c_void,
    bytes: c_int,
    proc: c_int,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { get_contiguous("ARMCI_Get", src, dst, bytes, proc) };
    0
}

/// ARMCI_Acc. # Safety: ARMCI's contract for the buffers and scale.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Acc(
    datatype: c_int,
    scale: *mut c_void,
    src: *mut c_void,
    dst: *mut c_void,
    bytes: c_int,
    proc: c_int,
) -> c_int {
    let (levels, count) = contiguous(state("ARMCI_Acc"), "ARMCI_Acc", bytes);
    if count[0] == 0 {
        return 0;
    }
    // SAFETY: forwarded contract.
    unsafe {
        acc_s(
            "ARMCI_Acc",
            datatype,
            scale,
            src,
            std::ptr::null(),
            dst,
            std::ptr::null(),
            count.as_ptr(),
            levels,
            proc,
        )
    };
    0
}

/// ARMCI_PutS. # Safety: ARMCI's contract for the strided arguments.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_PutS(
    src: *mut c_void,
    src_strides: *mut c_int,
    dst: *mut c_void,
    dst_strides: *mut c_int,
    count: *mut c_int,
    levels: c_int,
    proc: c_int,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        put_s(
            "ARMCI_PutS",
            src,
            src_strides,
            dst,
            dst_strides,
            count,
            levels,
            proc,
        )
    };
    0
}

/// ARMCI_GetS. # Safety: ARMCI's contract for the strided arguments.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_GetS(
    src: *mut c_void,
    src_strides: *mut c_int,
    dst: *mut c_void,
    dst_strides: *mut c_int,
    count: *mut c_int,
    levels: c_int,
    proc: c_int,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        get_s(
            "ARMCI_GetS",
            src,
            src_strides,
            dst,
            dst_strides,
            count,
            levels,
            proc,
        )
    };
    0
}

/// ARMCI_AccS. # Safety: ARMCI's contract for the strided arguments and scale.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_AccS(
    datatype: c_int,
    scale: *mut c_void,
    src: *mut c_void,
    src_strides: *mut c_int,
    dst: *mut c_void,
    dst_strides: *mut c_int,
    count: *mut c_int,
    levels: c_int,
    proc: c_int,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        acc_s(
            "ARMCI_AccS",
            datatype,
            scale,
            src,
            src_strides,
            dst,
            dst_strides,
            count,
            levels,
            proc,
        )
    };
    0
}

/// Local strided copy between `ptr` (strided) and `buf` (packed).
///
/// # Safety
/// ARMCI's contract for the strided arguments and both buffers.
unsafe fn local_strided(
    call: &str,
    ptr: *mut c_void,
    levels: c_int,
    strides: *const c_int,
    count: *const c_int,
    buf: *mut c_void,
    pack: bool,
) {
    let s = state(call);
    let n = usize::try_from(levels).unwrap_or(0);
    let packed: Vec<c_int> = if n == 0 {
        Vec::new()
    } else {
        // SAFETY: `count` has `levels + 1` entries.
        let Some(c) = (unsafe { CArray::new(count, n + 1) }) else {
            s.fail(call, "null count array");
        };
        // Strides of the packed side: each level spans the one below.
        c.iter()
            .take(n)
            .scan(1i64, |acc, v| {
                *acc *= i64::from(v);
                Some(c_int::try_from(*acc).unwrap_or(c_int::MAX))
            })
            .collect()
    };
    let (src_strides, dst_strides) = if pack {
        (strides, packed.as_ptr())
    } else {
        (packed.as_ptr(), strides)
    };
    let (src, dst) = if pack { (ptr, buf) } else { (buf, ptr) };
    let run = |desc: &Descriptor| {
        // SAFETY: the extents come from the descriptor (caller's contract for both
        // buffers).
        let (from, mut to) = unsafe {
            (
                s.local(call, src, desc.src_extent()),
                s.local_mut(call, dst, desc.dst_extent()),
            )
        };
        let (len, chunks) = desc.chunks();
        for (a, b) in chunks {
            to[b as usize..(b + len) as usize]
                .copy_from_slice(&from[a as usize..(a + len) as usize]);
        }
        let (len, chunks) = desc.chunks();
        to.write_back_pieces(len, chunks.map(|(_, b)| b));
    };
    // SAFETY: forwarded contract.
    unsafe { s.with_descriptor(call, (src_strides, dst_strides, count), levels, run) }
}

/// armci_read_strided: packs the strided data at `ptr` into `buf`.
///
/// # Safety
/// ARMCI's contract for the strided arguments and both buffers.
#[no_mangle]
pub unsafe extern "C" fn armci_read_strided(
    ptr: *mut c_void,
    levels: c_int,
    strides: *mut c_int,
    count: *mut c_int,
    buf: *mut libc::c_char,
) {
    // SAFETY: forwarded contract.
    unsafe {
        local_strided(
            "armci_read_strided",
            ptr,
            levels,
            strides,
            count,
            buf as *mut c_void,
            true,
        )
    }
}

/// armci_write_strided: unpacks `buf` into the strided layout at `ptr`.
///
/// # Safety
/// ARMCI's contract for the strided arguments and both buffers.
#[no_mangle]
pub unsafe extern "C" fn armci_write_strided(
    ptr: *mut c_void,
    levels: c_int,
    strides: *mut c_int,
    count: *mut c_int,
    buf: *mut libc::c_char,
) {
    // SAFETY: forwarded contract.
    unsafe {
        local_strided(
            "armci_write_strided",
            ptr,
            levels,
            strides,
            count,
            buf as *mut c_void,
            false,
        )
    }
}
