//! Contiguous and strided put, get and accumulate (ARMCI_Put/Get/Acc and their S forms),
//! the helpers the nonblocking forms share, and local strided copies
//! (armci_read_strided, armci_write_strided).

use std::ffi::{c_int, c_void};

use gaspar::strided::{get_mapped, put_mapped, AccKind, Descriptor, Side};
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
    if scale.is_null() {
        s.fail(call, "null scale");
    }
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
        let overlap = s.sharing(src, desc.src_extent());
        if overlap != Overlap::None {
            // SAFETY: forwarded contract.
            let (packed, dense) = unsafe { pack_shared(s, call, src, desc, overlap) };
            return s.check(call, s.rt.put_strided(&packed, &dense, ga, NULL));
        }
        // SAFETY: the source spans `src_extent` bytes (ARMCI's contract), private.
        let local = unsafe { s.lend(call, src, desc.src_extent(), overlap) };
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
        let overlap = s.sharing(dst, desc.dst_extent());
        if overlap != Overlap::None {
            // SAFETY: forwarded contract.
            return unsafe { get_into_shared_strided(s, call, dst, desc, ga, overlap) };
        }
        // SAFETY: the destination spans `dst_extent` writable bytes (ARMCI's contract),
        // private.
        let mut local = unsafe { s.lend_mut(call, dst, desc.dst_extent(), overlap) };
        s.check(call, s.rt.get_strided(&mut local, desc, ga, NULL))
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
        let overlap = s.sharing(src, desc.src_extent());
        if overlap != Overlap::None {
            // SAFETY: forwarded contract.
            let (packed, dense) = unsafe { pack_shared(s, call, src, desc, overlap) };
            return s.check(
                call,
                s.rt.acc_strided(kind, &scale, &packed, &dense, ga, NULL),
            );
        }
        // SAFETY: the source spans `src_extent` bytes, private.
        let local = unsafe { s.lend(call, src, desc.src_extent(), overlap) };
        s.check(call, s.rt.acc_strided(kind, &scale, &local, desc, ga, NULL))
    };
    // SAFETY: forwarded contract.
    unsafe { s.with_descriptor(call, (src_strides, dst_strides, count), levels, run) }
}

/// `desc` with its `side` dense: each level's stride the bytes of the levels below it, as
/// in a buffer holding only the chunks, in order.
fn dense_on(s: &State, call: &str, desc: &Descriptor, side: Side) -> Descriptor {
    let count = desc.count();
    let mut dense = Vec::with_capacity(desc.levels());
    let mut below = count[0];
    for &n in &count[1..] {
        dense.push(below);
        // The product of the counts is the transfer's total, which fits a u64.
        below *= n;
    }
    let (src, dst) = match side {
        Side::Src => (&dense[..], desc.strides(Side::Dst)),
        Side::Dst => (desc.strides(Side::Src), &dense[..]),
    };
    Descriptor::new(count, src, dst).unwrap_or_else(|e| s.fail(call, e.to_string()))
}

/// The chunks of a strided source in memory other processes may write (a heap mapped
/// here), copied into a private buffer in order, and the descriptor with that source
/// dense: only the bytes moved are read, never the gaps between them (a stride of
/// gigabytes between two rows read the whole span). A source that leaves the heap it
/// starts in ends the job.
///
/// # Safety
/// `src` has the chunks of `desc`'s source side readable (ARMCI's contract).
#[cold]
#[inline(never)]
unsafe fn pack_shared(
    s: &State,
    call: &str,
    src: *const c_void,
    desc: &Descriptor,
    overlap: Overlap,
) -> (Vec<u8>, Descriptor) {
    leaves_no_heap(s, call, src, desc.src_extent(), overlap);
    let (len, chunks) = desc.chunks();
    let mut packed = staging(s, call, desc.total());
    for (at, _) in chunks {
        let end = packed.len() + len as usize;
        // SAFETY: the chunk's `len` bytes at `src + at` lie in the heap `src` lies in
        // (`leaves_no_heap`: the whole extent does) and are readable (ARMCI's contract);
        // they go into the spare capacity of `packed` (total() bytes in all), through raw
        // pointers: no reference covers memory other processes may write.
        unsafe {
            std::ptr::copy_nonoverlapping(
                src.cast::<u8>().add(at as usize),
                packed.as_mut_ptr().add(packed.len()),
                len as usize,
            );
            packed.set_len(end);
        }
    }
    (packed, dense_on(s, call, desc, Side::Src))
}

/// A strided get into memory other processes may write: into a private buffer of the
/// chunks alone, then each chunk stored in place, the gaps between them left alone.
///
/// # Safety
/// `dst` has the chunks of `desc`'s destination side writable (ARMCI's contract).
#[cold]
#[inline(never)]
unsafe fn get_into_shared_strided(
    s: &State,
    call: &str,
    dst: *mut c_void,
    desc: &Descriptor,
    remote: GlobalAddr,
    overlap: Overlap,
) -> GasparHandle {
    leaves_no_heap(s, call, dst, desc.dst_extent(), overlap);
    let mut packed = staging(s, call, desc.total());
    packed.resize(desc.total() as usize, 0);
    let h = s.check(
        call,
        s.rt.get_strided(
            &mut packed,
            &dense_on(s, call, desc, Side::Dst),
            remote,
            NULL,
        ),
    );
    // The data is in `packed` on return (gaspar borrows it only for the call).
    let (len, chunks) = desc.chunks();
    for (k, (_, at)) in chunks.enumerate() {
        // SAFETY: chunk k is `len` bytes at `k * len` in `packed` (total() bytes) and
        // `len` writable bytes at `dst + at` inside the heap `dst` lies in
        // (`leaves_no_heap`; ARMCI's contract), written through raw pointers.
        unsafe {
            std::ptr::copy_nonoverlapping(
                packed.as_ptr().add(k * len as usize),
                dst.cast::<u8>().add(at as usize),
                len as usize,
            )
        };
    }
    h
}

/// An empty buffer with room for `len` bytes, or the job ended with a message when the
/// memory is not there (a transfer as large as the heap, staged).
fn staging(s: &State, call: &str, len: u64) -> Vec<u8> {
    let mut buffer = Vec::new();
    if buffer.try_reserve_exact(len as usize).is_err() {
        s.fail(
            call,
            format!("cannot allocate {len} bytes to stage a local buffer in ARMCI memory"),
        );
    }
    buffer
}

/// Ends the job when a strided local buffer starts in a heap but its extent does not lie
/// inside it (`Overlap::Partial`): its rows past the heap's end are not ARMCI memory.
fn leaves_no_heap(s: &State, call: &str, ptr: *const c_void, extent: u64, overlap: Overlap) {
    if overlap == Overlap::Partial {
        s.fail(
            call,
            format!(
                "local buffer {ptr:p} spans {extent} bytes, which run out of the ARMCI \
                 memory it starts in"
            ),
        );
    }
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
        s.rank_of(call, proc);
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
        s.rank_of(call, proc);
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

/// The checks of a zero-byte accumulate, which moves nothing but must still name a known
/// datatype, a scale and a rank of the job (as a zero-byte put must name a rank).
///
/// # Safety
/// `scale` is null or points to one element of `datatype`.
pub(super) unsafe fn check_empty_acc(
    call: &str,
    datatype: c_int,
    scale: *const c_void,
    proc: c_int,
) {
    let s = state(call);
    let kind = acc_kind(s, call, datatype);
    // SAFETY: forwarded contract.
    unsafe { scale_bytes(s, call, kind, scale) };
    s.rank_of(call, proc);
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
        // SAFETY: forwarded contract.
        unsafe { check_empty_acc("ARMCI_Acc", datatype, scale, proc) };
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
        for (at, extent) in [(src, desc.src_extent()), (dst, desc.dst_extent())] {
            if at.is_null() {
                s.fail(call, "null local buffer");
            }
            leaves_no_heap(s, call, at, extent, s.sharing(at, extent));
        }
        // Chunk by chunk through raw pointers: only the bytes moved are touched (a strided
        // side in ARMCI memory was copied out and back whole, gaps included), and no
        // reference covers memory other processes may write.
        let (len, chunks) = desc.chunks();
        for (a, b) in chunks {
            // SAFETY: the chunks of both sides are readable / writable (ARMCI's contract
            // for both buffers, neither null); `copy` allows them to overlap.
            unsafe {
                std::ptr::copy(
                    src.cast::<u8>().add(a as usize),
                    dst.cast::<u8>().add(b as usize),
                    len as usize,
                )
            };
        }
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
