//! I/O-vector transfers (ARMCI_PutV, ARMCI_GetV, ARMCI_AccV): each set of segments
//! moved in one transport call.

use std::ffi::{c_int, c_void};

use gaspar::strided::AccKind;
use gaspar::{GlobalAddr, Handle as GasparHandle};

use super::contiguous::{acc_kind, scale_bytes};
use super::NULL;
use crate::direct::{BadSegment, CArray};
use crate::state::{state, Overlap, State};

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
pub(super) enum Direction {
    Put,
    Get,
    Acc(AccKind),
}

impl Direction {
    /// Which of a set's pointer arrays names the target's memory: the sources of a get,
    /// the destinations otherwise.
    fn remote_side<T>(self, srcs: T, dsts: T) -> T {
        if self == Direction::Get {
            srcs
        } else {
            dsts
        }
    }
}

/// Runs an I/O-vector operation, in order, one transport call per set: puts and gets
/// move each segment straight between the caller's memory and the target's (on MPI, one
/// message of hindexed datatypes); accumulates pack the set, then add it segment by
/// segment under the target's accumulate lock.
///
/// # Safety
/// `iov` has `iov_len` valid descriptors whose pointer arrays have `ptr_array_len` entries;
/// each local segment is readable (put, acc) or writable and not overlapping another (get).
pub(super) unsafe fn vector(
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
        if let (Some(heap), Direction::Put | Direction::Get) =
            (s.mapped_heap(call, proc), direction)
        {
            // The moves read the pointer arrays again, and must find there the segments
            // checked: arrays that another process, or this set's own stores, may write
            // are read once into private copies.
            let shared = |a: CArray<*mut c_void>| {
                let (at, len) = a.bytes();
                s.sharing(at, len) != Overlap::None
            };
            let copies;
            let (srcs, dsts) = if shared(srcs) || shared(dsts) {
                copies = (
                    srcs.iter().collect::<Vec<_>>(),
                    dsts.iter().collect::<Vec<_>>(),
                );
                // SAFETY: the copies live until the end of this set's moves.
                unsafe { (private_view(&copies.0), private_view(&copies.1)) }
            } else {
                (srcs, dsts)
            };
            let remotes = direction.remote_side(srcs, dsts);
            // Every remote segment is checked against the live blocks before any moves.
            let span = s.check_remote_segments(call, proc, remotes, bytes);
            // The moves check each segment again against the window they must lie in:
            // the live block that held them all, so that a pointer array the set's own
            // stores changed (it aliases a destination) cannot send a move elsewhere;
            // segments checked one by one are moved from a private copy of the array.
            let remote_copy;
            let (heap, srcs, dsts) = match span {
                Some((start, len)) => (heap.within(start, len), srcs, dsts),
                None => {
                    remote_copy = remotes.iter().collect::<Vec<_>>();
                    // SAFETY: the copy lives until the end of this set's moves.
                    let remotes = unsafe { private_view(&remote_copy) };
                    match direction {
                        Direction::Get => (heap, remotes, dsts),
                        _ => (heap, srcs, remotes),
                    }
                }
            };
            // Plain loads and stores must not overtake an earlier transfer to the rank.
            s.check(call, s.rt.fence(s.rank_of(call, proc)));
            // SAFETY: `put`/`get` check every remote segment against the mapped window
            // and every local pointer for null; the local segments are readable /
            // writable (caller's contract).
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
        let remotes = direction.remote_side(srcs, dsts);
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

/// A view of a private copy of a pointer array.
///
/// # Safety
/// `copy` outlives every use of the view.
unsafe fn private_view(copy: &[*mut c_void]) -> CArray<*mut c_void> {
    // SAFETY: `copy.len()` readable elements for as long as `copy` lives (the caller's
    // contract); a Vec's pointer is never null.
    unsafe { CArray::new(copy.as_ptr(), copy.len()) }.expect("a slice's pointer is not null")
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
