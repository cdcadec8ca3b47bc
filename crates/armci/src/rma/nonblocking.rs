//! The nonblocking forms (Nb) of contiguous, strided and vector transfers, and their
//! handles: ARMCI_INIT_HANDLE, ARMCI_Wait, ARMCI_Test, ARMCI_WaitProc, ARMCI_WaitAll.

use std::ffi::{c_int, c_void};

use super::contiguous::{
    acc_kind, acc_s, check_empty_acc, contiguous, get_contiguous, get_s, put_contiguous, put_s,
};
use super::vector::{vector, Direction, Giov};
use super::NULL;
use crate::state::{state, Handle};

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
        // SAFETY: forwarded contract.
        unsafe { check_empty_acc("ARMCI_NbAcc", datatype, scale, proc) };
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
