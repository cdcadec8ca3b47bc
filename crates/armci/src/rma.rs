//! Put, get and accumulate: contiguous, strided (S), I/O vector (V), their nonblocking
//! (Nb) forms, single values, and put-with-flag.

use std::ffi::{c_int, c_void};

use gaspar::strided::{AccKind, Descriptor};
use gaspar::{GlobalAddr, Handle as GasparHandle};

use crate::direct::{BadSegment, CArray};
use crate::state::{state, Handle, LocalBytes, Overlap, State};

const NULL: GasparHandle = GasparHandle::NULL;

fn acc_kind(s: &State, call: &str, datatype: c_int) -> AccKind {
    AccKind::from_armci(datatype)
        .unwrap_or_else(|| s.fail(call, format!("unknown accumulate datatype {datatype}")))
}

/// # Safety
/// `scale` points to one element of `kind`.
unsafe fn scale_bytes<'a>(
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
unsafe fn put_s(
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
unsafe fn get_s(
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

/// # Safety
/// ARMCI's contract for the strided arguments and `scale`.
#[allow(clippy::too_many_arguments)]
unsafe fn acc_s(
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
unsafe fn put_contiguous(
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
unsafe fn get_contiguous(
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

fn contiguous(s: &State, call: &str, bytes: c_int) -> (c_int, [c_int; 1]) {
    let n = s.len(call, bytes);
    (0, [c_int::try_from(n).unwrap_or(c_int::MAX)])
}

macro_rules! nb {
    ($hdl:expr, $h:expr) => {{
        let h = $h;
        if !$hdl.is_null() {
            // SAFETY: a non-null handle points to an armci_hdl_t of the caller.
            unsafe { (*$hdl).set(h) };
        }
        0
    }};
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

/// ARMCI_NbPut. # Safety: as ARMCI_Put; `hdl` is null or valid.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_NbPut(
    src: *mut c_void,
    dst: *mut c_void,
    bytes: c_int,
    proc: c_int,
    hdl: *mut Handle,
) -> c_int {
    // SAFETY: forwarded contract.
    nb!(hdl, unsafe {
        put_contiguous("ARMCI_NbPut", src, dst, bytes, proc)
    })
}

/// ARMCI_NbGet. # Safety: as ARMCI_Get; `hdl` is null or valid.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_NbGet(
    src: *mut c_void,
    dst: *mut c_void,
    bytes: c_int,
    proc: c_int,
    hdl: *mut Handle,
) -> c_int {
    // SAFETY: forwarded contract.
    nb!(hdl, unsafe {
        get_contiguous("ARMCI_NbGet", src, dst, bytes, proc)
    })
}

/// ARMCI_NbAcc. # Safety: as ARMCI_Acc; `hdl` is null or valid.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_NbAcc(
    datatype: c_int,
    scale: *mut c_void,
    src: *mut c_void,
    dst: *mut c_void,
    bytes: c_int,
    proc: c_int,
    hdl: *mut Handle,
) -> c_int {
    let (levels, count) = contiguous(state("ARMCI_NbAcc"), "ARMCI_NbAcc", bytes);
    if count[0] == 0 {
        return nb!(hdl, NULL);
    }
    // SAFETY: forwarded contract.
    nb!(hdl, unsafe {
        acc_s(
            "ARMCI_NbAcc",
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
    })
}

/// ARMCI_NbPutS. # Safety: as ARMCI_PutS; `hdl` is null or valid.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_NbPutS(
    src: *mut c_void,
    src_strides: *mut c_int,
    dst: *mut c_void,
    dst_strides: *mut c_int,
    count: *mut c_int,
    levels: c_int,
    proc: c_int,
    hdl: *mut Handle,
) -> c_int {
    // SAFETY: forwarded contract.
    nb!(hdl, unsafe {
        put_s(
            "ARMCI_NbPutS",
            src,
            src_strides,
            dst,
            dst_strides,
            count,
            levels,
            proc,
        )
    })
}

/// ARMCI_NbGetS. # Safety: as ARMCI_GetS; `hdl` is null or valid.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_NbGetS(
    src: *mut c_void,
    src_strides: *mut c_int,
    dst: *mut c_void,
    dst_strides: *mut c_int,
    count: *mut c_int,
    levels: c_int,
    proc: c_int,
    hdl: *mut Handle,
) -> c_int {
    // SAFETY: forwarded contract.
    nb!(hdl, unsafe {
        get_s(
            "ARMCI_NbGetS",
            src,
            src_strides,
            dst,
            dst_strides,
            count,
            levels,
            proc,
        )
    })
}

/// ARMCI_NbAccS. # Safety: as ARMCI_AccS; `hdl` is null or valid.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_NbAccS(
    datatype: c_int,
    scale: *mut c_void,
    src: *mut c_void,
    src_strides: *mut c_int,
    dst: *mut c_void,
    dst_strides: *mut c_int,
    count: *mut c_int,
    levels: c_int,
    proc: c_int,
    hdl: *mut Handle,
) -> c_int {
    // SAFETY: forwarded contract.
    nb!(hdl, unsafe {
        acc_s(
            "ARMCI_NbAccS",
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
    })
}

/// ARMCI_INIT_HANDLE: a handle that names no operation.
///
/// # Safety
/// `hdl` is null or points to an armci_hdl_t.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_INIT_HANDLE(hdl: *mut Handle) {
    nb!(hdl, NULL);
}

/// ARMCI_SET_AGGREGATE_HANDLE: gaspar completes operations in order, so aggregation needs
/// no marking; the handle stays usable.
#[no_mangle]
pub extern "C" fn ARMCI_SET_AGGREGATE_HANDLE(_hdl: *mut Handle) {}

/// ARMCI_UNSET_AGGREGATE_HANDLE: see ARMCI_SET_AGGREGATE_HANDLE.
#[no_mangle]
pub extern "C" fn ARMCI_UNSET_AGGREGATE_HANDLE(_hdl: *mut Handle) {}

/// ARMCI_Wait: completes the operation and every one before it.
///
/// # Safety
/// `hdl` is null or points to an armci_hdl_t.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Wait(hdl: *mut Handle) -> c_int {
    let s = state("ARMCI_Wait");
    if hdl.is_null() {
        s.fail("ARMCI_Wait", "null handle");
    }
    // SAFETY: non-null handle of the caller.
    let h = unsafe { (*hdl).get() };
    s.check("ARMCI_Wait", s.rt.complete(h));
    0
}

/// ARMCI_Test: 0 when the operation is complete, 1 when not yet.
///
/// # Safety
/// `hdl` is null or points to an armci_hdl_t.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Test(hdl: *mut Handle) -> c_int {
    let s = state("ARMCI_Test");
    if hdl.is_null() {
        s.fail("ARMCI_Test", "null handle");
    }
    // SAFETY: non-null handle of the caller.
    let h = unsafe { (*hdl).get() };
    c_int::from(!s.check("ARMCI_Test", s.rt.inquire(h)))
}

/// ARMCI_WaitProc: completes every operation to `proc`.
#[no_mangle]
pub extern "C" fn ARMCI_WaitProc(proc: c_int) -> c_int {
    let s = state("ARMCI_WaitProc");
    let rank = s.rank_of("ARMCI_WaitProc", proc);
    s.check("ARMCI_WaitProc", s.rt.fence(rank));
    0
}

/// ARMCI_WaitAll.
#[no_mangle]
pub extern "C" fn ARMCI_WaitAll() -> c_int {
    let s = state("ARMCI_WaitAll");
    s.check("ARMCI_WaitAll", s.rt.all_fence());
    0
}

/// ARMCI's I/O vector descriptor.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Giov {
    src_ptr_array: *mut *mut c_void,
    dst_ptr_array: *mut *mut c_void,
    bytes: c_int,
    ptr_array_len: c_int,
}

#[derive(Clone, Copy, PartialEq)]
enum Direction {
    Put,
    Get,
    Acc(AccKind),
}

/// Runs an I/O-vector operation, in order, one transport call per set: puts and gets
/// move each segment straight between the caller's memory and the target's (on MPI, one
/// message of hindexed datatypes); accumulates pack the set, then add it segment by
/// segment under the target's accumulate lock.
///
/// # Safety
/// `iov` has `iov_len` valid descriptors whose pointer arrays have `ptr_array_len` entries;
/// each local segment is readable (put, acc) or writable and not overlapping another (get).
unsafe fn vector(
    call: &str,
    direction: Direction,
    scale: *mut c_void,
    iov: *const Giov,
    iov_len: c_int,
    proc: c_int,
) -> GasparHandle {
    let s = state(call);
    let n = s.len(call, iov_len) as usize;
    // SAFETY: `iov` has `iov_len` entries (caller's contract).
    let Some(sets) = (unsafe { CArray::new(iov, n) }) else {
        s.fail(call, "null iov");
    };
    let heap = s.heap_start(call, proc);
    let offset_of = s.heap_offsets(call, proc);
    let mut last = NULL;
    for (i, set) in sets.iter().enumerate() {
        let bytes = s.len(call, set.bytes);
        let count = s.len(call, set.ptr_array_len) as usize;
        if count == 0 || bytes == 0 {
            continue;
        }
        // SAFETY: both arrays have `ptr_array_len` entries (caller's contract).
        let arrays = unsafe {
            (
                CArray::new(set.src_ptr_array.cast_const(), count),
                CArray::new(set.dst_ptr_array.cast_const(), count),
            )
        };
        let (Some(srcs), Some(dsts)) = arrays else {
            s.fail(call, format!("set {i}: null pointer array"));
        };
        let remotes = match direction {
            Direction::Get => srcs,
            _ => dsts,
        };
        if let (Some(heap), Direction::Put | Direction::Get) =
            (s.mapped_heap(call, proc), direction)
        {
            // Every remote segment is checked against the live blocks before any moves.
            for p in remotes.iter() {
                offset_of(p, bytes);
            }
            // Plain loads and stores must not overtake an earlier transfer to the rank.
            s.check(call, s.rt.fence(s.rank_of(call, proc)));
            // SAFETY: `put`/`get` check every remote segment against the mapped heap and
            // every local pointer for null; the local segments are readable / writable
            // (caller's contract).
            let moved = unsafe {
                match direction {
                    Direction::Get => heap.get(srcs, dsts, bytes as usize),
                    _ => heap.put(srcs, dsts, bytes as usize),
                }
            };
            if let Err(BadSegment(k)) = moved {
                let (remote, local) = match direction {
                    Direction::Get => (srcs.get(k), dsts.get(k)),
                    _ => (dsts.get(k), srcs.get(k)),
                };
                s.fail(
                    call,
                    format!(
                        "segment {k}: remote {remote:p} + {bytes} bytes is not in \
                         ARMCI_Malloc memory of rank {proc}, or local {local:p} is null"
                    ),
                );
            }
            continue;
        }
        let remote: Vec<u64> = remotes.iter().map(|p| offset_of(p, bytes)).collect();
        // SAFETY: forwarded contract for this set.
        last = unsafe {
            transfer_set(
                s,
                call,
                direction,
                scale,
                (srcs, dsts),
                heap,
                &remote,
                bytes,
            )
        };
    }
    last
}

/// Moves one set of an I/O vector through the transport (the target's heap is not mapped
/// here, or the set is an accumulate): `remote` are the heap offsets of the segments on
/// the target, each checked; a handle to wait for, or NULL when complete.
///
/// # Safety
/// As [`vector`], for the set's pointer arrays `srcs` and `dsts`.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
unsafe fn transfer_set(
    s: &State,
    call: &str,
    direction: Direction,
    scale: *mut c_void,
    (srcs, dsts): (CArray<*mut c_void>, CArray<*mut c_void>),
    heap: GlobalAddr,
    remote: &[u64],
    bytes: u64,
) -> GasparHandle {
    match direction {
        Direction::Get => {
            let mut lent: Vec<_> = dsts
                .iter()
                // SAFETY: each destination segment has `bytes` writable bytes and
                // overlaps no other (caller's contract, as for memcpy).
                .map(|p| unsafe { s.local_mut(call, p, bytes) })
                .collect();
            let mut local: Vec<&mut [u8]> = lent.iter_mut().map(|l| &mut **l).collect();
            let h = s.check(call, s.rt.get_segments(&mut local, heap, remote, NULL));
            // The data is in place on return (gaspar borrows the buffers only for the
            // call): bounce buffers are stored now.
            lent.into_iter().for_each(|l| l.write_back());
            h
        }
        Direction::Put => {
            let lent: Vec<_> = srcs
                .iter()
                // SAFETY: each source segment has `bytes` readable bytes.
                .map(|p| unsafe { s.local(call, p, bytes) })
                .collect();
            let local: Vec<&[u8]> = lent.iter().map(|l| &**l).collect();
            s.check(call, s.rt.put_segments(&local, heap, remote, NULL))
        }
        Direction::Acc(kind) => {
            let mut packed = Vec::with_capacity(srcs.len() * bytes as usize);
            for src in srcs.iter() {
                // SAFETY: each source segment has `bytes` readable bytes.
                packed.extend_from_slice(&unsafe { s.local(call, src, bytes) });
            }
            let local_offsets: Vec<u64> = (0..srcs.len() as u64).map(|k| k * bytes).collect();
            // SAFETY: `scale` points to one element (caller's contract).
            let scale = unsafe { scale_bytes(s, call, kind, scale) };
            s.check(
                call,
                s.rt.acc_vector(
                    kind,
                    &scale,
                    &packed,
                    &local_offsets,
                    heap,
                    remote,
                    bytes,
                    NULL,
                ),
            )
        }
    }
}

/// ARMCI_PutV. # Safety: ARMCI's contract for the vector.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_PutV(iov: *mut Giov, iov_len: c_int, proc: c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        vector(
            "ARMCI_PutV",
            Direction::Put,
            std::ptr::null_mut(),
            iov,
            iov_len,
            proc,
        )
    };
    0
}

/// ARMCI_GetV. # Safety: ARMCI's contract for the vector.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_GetV(iov: *mut Giov, iov_len: c_int, proc: c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        vector(
            "ARMCI_GetV",
            Direction::Get,
            std::ptr::null_mut(),
            iov,
            iov_len,
            proc,
        )
    };
    0
}

/// ARMCI_AccV. # Safety: ARMCI's contract for the vector and scale.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_AccV(
    datatype: c_int,
    scale: *mut c_void,
    iov: *mut Giov,
    iov_len: c_int,
    proc: c_int,
) -> c_int {
    let kind = acc_kind(state("ARMCI_AccV"), "ARMCI_AccV", datatype);
    // SAFETY: forwarded contract.
    unsafe {
        vector(
            "ARMCI_AccV",
            Direction::Acc(kind),
            scale,
            iov,
            iov_len,
            proc,
        )
    };
    0
}

/// ARMCI_NbPutV. # Safety: as ARMCI_PutV; `hdl` is null or valid.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_NbPutV(
    iov: *mut Giov,
    iov_len: c_int,
    proc: c_int,
    hdl: *mut Handle,
) -> c_int {
    // SAFETY: forwarded contract.
    nb!(hdl, unsafe {
        vector(
            "ARMCI_NbPutV",
            Direction::Put,
            std::ptr::null_mut(),
            iov,
            iov_len,
            proc,
        )
    })
}

/// ARMCI_NbGetV. # Safety: as ARMCI_GetV; `hdl` is null or valid.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_NbGetV(
    iov: *mut Giov,
    iov_len: c_int,
    proc: c_int,
    hdl: *mut Handle,
) -> c_int {
    // SAFETY: forwarded contract.
    nb!(hdl, unsafe {
        vector(
            "ARMCI_NbGetV",
            Direction::Get,
            std::ptr::null_mut(),
            iov,
            iov_len,
            proc,
        )
    })
}

/// ARMCI_NbAccV. # Safety: as ARMCI_AccV; `hdl` is null or valid.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_NbAccV(
    datatype: c_int,
    scale: *mut c_void,
    iov: *mut Giov,
    iov_len: c_int,
    proc: c_int,
    hdl: *mut Handle,
) -> c_int {
    let kind = acc_kind(state("ARMCI_NbAccV"), "ARMCI_NbAccV", datatype);
    // SAFETY: forwarded contract.
    nb!(hdl, unsafe {
        vector(
            "ARMCI_NbAccV",
            Direction::Acc(kind),
            scale,
            iov,
            iov_len,
            proc,
        )
    })
}

fn put_value(call: &str, bytes: &[u8], dst: *mut c_void, proc: c_int) -> GasparHandle {
    let s = state(call);
    let ga = s.remote(call, dst, bytes.len() as u64, proc);
    let h = s.check(call, s.rt.put(ga, bytes, NULL));
    s.check(call, s.rt.complete(h));
    h
}

fn get_value<T: bytemuck::Pod>(call: &str, src: *mut c_void, proc: c_int) -> T {
    let s = state(call);
    let ga = s.remote(call, src, std::mem::size_of::<T>() as u64, proc);
    let mut value = T::zeroed();
    s.check(call, s.rt.get(bytemuck::bytes_of_mut(&mut value), ga, NULL));
    value
}

macro_rules! values {
    ($($put:ident, $nbput:ident, $get:ident, $t:ty;)*) => {$(
        /// Puts one value (ARMCI_PutValue*).
        #[no_mangle]
        pub extern "C" fn $put(src: $t, dst: *mut c_void, proc: c_int) -> c_int {
            put_value(stringify!($put), bytemuck::bytes_of(&src), dst, proc);
            0
        }
        /// Puts one value, nonblocking (ARMCI_NbPutValue*).
        ///
        /// # Safety
        /// `hdl` is null or points to an armci_hdl_t.
        #[no_mangle]
        pub unsafe extern "C" fn $nbput(src: $t, dst: *mut c_void, proc: c_int, hdl: *mut Handle) -> c_int {
            nb!(hdl, put_value(stringify!($nbput), bytemuck::bytes_of(&src), dst, proc))
        }
        /// Gets one value (ARMCI_GetValue*).
        #[no_mangle]
        pub extern "C" fn $get(src: *mut c_void, proc: c_int) -> $t {
            get_value::<$t>(stringify!($get), src, proc)
        }
    )*};
}

values! {
    ARMCI_PutValueInt, ARMCI_NbPutValueInt, ARMCI_GetValueInt, c_int;
    ARMCI_PutValueLong, ARMCI_NbPutValueLong, ARMCI_GetValueLong, libc::c_long;
    ARMCI_PutValueFloat, ARMCI_NbPutValueFloat, ARMCI_GetValueFloat, f32;
    ARMCI_PutValueDouble, ARMCI_NbPutValueDouble, ARMCI_GetValueDouble, f64;
}

/// ARMCI_Put_flag: the data, then (once it is complete) `value` into the flag on `proc`.
///
/// # Safety
/// ARMCI's contract for the buffers; `flag` is an int in `proc`'s ARMCI memory.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_Put_flag(
    src: *mut c_void,
    dst: *mut c_void,
    bytes: c_int,
    flag: *mut c_int,
    value: c_int,
    proc: c_int,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { ARMCI_Put(src, dst, bytes, proc) };
    crate::setup::ARMCI_Fence(proc);
    put_value(
        "ARMCI_Put_flag",
        bytemuck::bytes_of(&value),
        flag as *mut c_void,
        proc,
    );
    0
}

/// ARMCI_PutS_flag: as ARMCI_Put_flag for a strided put.
///
/// # Safety
/// ARMCI's contract for the strided arguments; `flag` is in `proc`'s ARMCI memory.
#[no_mangle]
pub unsafe extern "C" fn ARMCI_PutS_flag(
    src: *mut c_void,
    src_strides: *mut c_int,
    dst: *mut c_void,
    dst_strides: *mut c_int,
    count: *mut c_int,
    levels: c_int,
    flag: *mut c_int,
    value: c_int,
    proc: c_int,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        put_s(
            "ARMCI_PutS_flag",
            src,
            src_strides,
            dst,
            dst_strides,
            count,
            levels,
            proc,
        )
    };
    crate::setup::ARMCI_Fence(proc);
    put_value(
        "ARMCI_PutS_flag",
        bytemuck::bytes_of(&value),
        flag as *mut c_void,
        proc,
    );
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
