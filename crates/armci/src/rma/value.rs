//! Single values (ARMCI_PutValue*, ARMCI_NbPutValue*, ARMCI_GetValue*) and put-with-flag
//! (ARMCI_Put_flag, ARMCI_PutS_flag).

use std::ffi::{c_int, c_void};

use gaspar::Handle as GasparHandle;

use super::contiguous::{put_s, ARMCI_Put};
use super::NULL;
use crate::state::{state, Handle};

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
