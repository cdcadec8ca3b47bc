//! The profiling interface: `PARMCI_X` for each `ARMCI_X` of ARMCI-MPI's armci.h (and
//! `parmci_msg_barrier`, `parmci_msg_group_barrier`), the
//! same operation under its profiling name. A tool (or program) that defines its own
//! `ARMCI_Put` takes precedence over libarmci's for every caller that links to it, and
//! reaches the real operation through `PARMCI_Put`. The library is linked with
//! `-Bsymbolic-functions` (build.rs), so `PARMCI_X` reaches libarmci's `ARMCI_X`, never
//! an interceptor of the same name, as with ARMCI-MPI's weak aliases.
//!
//! `PARMCI_Init_thread_comm` takes an MPI communicator: it is declared and defined in the
//! MPI build only (see armci.h).

use std::ffi::{c_char, c_int, c_long, c_void};

use crate::group::Group;
use crate::rma::Giov;
use crate::state::Handle;
use crate::{group, msg, rma, setup, sync};

/// Defines each `PARMCI_X` as a call of its `ARMCI_X`.
macro_rules! profiling_names {
    ($($parmci:ident = $module:ident :: $armci:ident ($($arg:ident: $ty:ty),*) $(-> $ret:ty)?;)*) => {$(
        #[doc = concat!("`", stringify!($parmci), "`: `", stringify!($armci), "` under its profiling name.")]
        ///
        /// # Safety
        #[doc = concat!("As `", stringify!($armci), "`.")]
        #[no_mangle]
        pub unsafe extern "C" fn $parmci($($arg: $ty),*) $(-> $ret)? {
            let operation: unsafe extern "C" fn($($ty),*) $(-> $ret)? = $module::$armci;
            // SAFETY: the caller keeps the contract of the ARMCI call.
            unsafe { operation($($arg),*) }
        }
    )*};
}

profiling_names! {
    PARMCI_Init = setup::ARMCI_Init() -> c_int;
    PARMCI_Init_args = setup::ARMCI_Init_args(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int;
    PARMCI_Init_thread = setup::ARMCI_Init_thread(armci_requested: c_int) -> c_int;
    PARMCI_Initialized = setup::ARMCI_Initialized() -> c_int;
    PARMCI_Finalize = setup::ARMCI_Finalize() -> c_int;
    PARMCI_Malloc = setup::ARMCI_Malloc(base_ptrs: *mut *mut c_void, size: c_long) -> c_int;
    PARMCI_Free = setup::ARMCI_Free(ptr: *mut c_void) -> c_int;
    PARMCI_Malloc_local = setup::ARMCI_Malloc_local(size: c_long) -> *mut c_void;
    PARMCI_Free_local = setup::ARMCI_Free_local(ptr: *mut c_void) -> c_int;
    PARMCI_Barrier = setup::ARMCI_Barrier();
    PARMCI_Fence = setup::ARMCI_Fence(proc: c_int);
    PARMCI_AllFence = setup::ARMCI_AllFence();
    PARMCI_Access_begin = setup::ARMCI_Access_begin(ptr: *mut c_void);
    PARMCI_Access_end = setup::ARMCI_Access_end(ptr: *mut c_void);
    PARMCI_Get = rma::ARMCI_Get(src: *mut c_void, dst: *mut c_void, size: c_int, target: c_int) -> c_int;
    PARMCI_Put = rma::ARMCI_Put(src: *mut c_void, dst: *mut c_void, size: c_int, target: c_int) -> c_int;
    PARMCI_Acc = rma::ARMCI_Acc(datatype: c_int, scale: *mut c_void, src: *mut c_void, dst: *mut c_void, bytes: c_int, proc: c_int) -> c_int;
    PARMCI_PutS = rma::ARMCI_PutS(src_ptr: *mut c_void, src_stride_ar: *mut c_int, dst_ptr: *mut c_void, dst_stride_ar: *mut c_int, count: *mut c_int, stride_levels: c_int, proc: c_int) -> c_int;
    PARMCI_GetS = rma::ARMCI_GetS(src_ptr: *mut c_void, src_stride_ar: *mut c_int, dst_ptr: *mut c_void, dst_stride_ar: *mut c_int, count: *mut c_int, stride_levels: c_int, proc: c_int) -> c_int;
    PARMCI_AccS = rma::ARMCI_AccS(datatype: c_int, scale: *mut c_void, src_ptr: *mut c_void, src_stride_ar: *mut c_int, dst_ptr: *mut c_void, dst_stride_ar: *mut c_int, count: *mut c_int, stride_levels: c_int, proc: c_int) -> c_int;
    PARMCI_Put_flag = rma::ARMCI_Put_flag(src: *mut c_void, dst: *mut c_void, size: c_int, flag: *mut c_int, value: c_int, proc: c_int) -> c_int;
    PARMCI_PutS_flag = rma::ARMCI_PutS_flag(src_ptr: *mut c_void, src_stride_ar: *mut c_int, dst_ptr: *mut c_void, dst_stride_ar: *mut c_int, count: *mut c_int, stride_levels: c_int, flag: *mut c_int, value: c_int, proc: c_int) -> c_int;
    PARMCI_PutV = rma::ARMCI_PutV(iov: *mut Giov, iov_len: c_int, proc: c_int) -> c_int;
    PARMCI_GetV = rma::ARMCI_GetV(iov: *mut Giov, iov_len: c_int, proc: c_int) -> c_int;
    PARMCI_AccV = rma::ARMCI_AccV(datatype: c_int, scale: *mut c_void, iov: *mut Giov, iov_len: c_int, proc: c_int) -> c_int;
    PARMCI_Wait = rma::ARMCI_Wait(hdl: *mut Handle) -> c_int;
    PARMCI_Test = rma::ARMCI_Test(hdl: *mut Handle) -> c_int;
    PARMCI_WaitProc = rma::ARMCI_WaitProc(proc: c_int) -> c_int;
    PARMCI_WaitAll = rma::ARMCI_WaitAll() -> c_int;
    PARMCI_NbPut = rma::ARMCI_NbPut(src: *mut c_void, dst: *mut c_void, bytes: c_int, proc: c_int, hdl: *mut Handle) -> c_int;
    PARMCI_NbGet = rma::ARMCI_NbGet(src: *mut c_void, dst: *mut c_void, bytes: c_int, proc: c_int, hdl: *mut Handle) -> c_int;
    PARMCI_NbAcc = rma::ARMCI_NbAcc(datatype: c_int, scale: *mut c_void, src: *mut c_void, dst: *mut c_void, bytes: c_int, proc: c_int, hdl: *mut Handle) -> c_int;
    PARMCI_NbPutS = rma::ARMCI_NbPutS(src_ptr: *mut c_void, src_stride_ar: *mut c_int, dst_ptr: *mut c_void, dst_stride_ar: *mut c_int, count: *mut c_int, stride_levels: c_int, proc: c_int, hdl: *mut Handle) -> c_int;
    PARMCI_NbGetS = rma::ARMCI_NbGetS(src_ptr: *mut c_void, src_stride_ar: *mut c_int, dst_ptr: *mut c_void, dst_stride_ar: *mut c_int, count: *mut c_int, stride_levels: c_int, proc: c_int, hdl: *mut Handle) -> c_int;
    PARMCI_NbAccS = rma::ARMCI_NbAccS(datatype: c_int, scale: *mut c_void, src_ptr: *mut c_void, src_stride_ar: *mut c_int, dst_ptr: *mut c_void, dst_stride_ar: *mut c_int, count: *mut c_int, stride_levels: c_int, proc: c_int, hdl: *mut Handle) -> c_int;
    PARMCI_NbPutV = rma::ARMCI_NbPutV(iov: *mut Giov, iov_len: c_int, proc: c_int, handle: *mut Handle) -> c_int;
    PARMCI_NbGetV = rma::ARMCI_NbGetV(iov: *mut Giov, iov_len: c_int, proc: c_int, handle: *mut Handle) -> c_int;
    PARMCI_NbAccV = rma::ARMCI_NbAccV(datatype: c_int, scale: *mut c_void, iov: *mut Giov, iov_len: c_int, proc: c_int, handle: *mut Handle) -> c_int;
    PARMCI_PutValueInt = rma::ARMCI_PutValueInt(src: c_int, dst: *mut c_void, proc: c_int) -> c_int;
    PARMCI_PutValueLong = rma::ARMCI_PutValueLong(src: c_long, dst: *mut c_void, proc: c_int) -> c_int;
    PARMCI_PutValueFloat = rma::ARMCI_PutValueFloat(src: f32, dst: *mut c_void, proc: c_int) -> c_int;
    PARMCI_PutValueDouble = rma::ARMCI_PutValueDouble(src: f64, dst: *mut c_void, proc: c_int) -> c_int;
    PARMCI_NbPutValueInt = rma::ARMCI_NbPutValueInt(src: c_int, dst: *mut c_void, proc: c_int, hdl: *mut Handle) -> c_int;
    PARMCI_NbPutValueLong = rma::ARMCI_NbPutValueLong(src: c_long, dst: *mut c_void, proc: c_int, hdl: *mut Handle) -> c_int;
    PARMCI_NbPutValueFloat = rma::ARMCI_NbPutValueFloat(src: f32, dst: *mut c_void, proc: c_int, hdl: *mut Handle) -> c_int;
    PARMCI_NbPutValueDouble = rma::ARMCI_NbPutValueDouble(src: f64, dst: *mut c_void, proc: c_int, hdl: *mut Handle) -> c_int;
    PARMCI_GetValueInt = rma::ARMCI_GetValueInt(src: *mut c_void, proc: c_int) -> c_int;
    PARMCI_GetValueLong = rma::ARMCI_GetValueLong(src: *mut c_void, proc: c_int) -> c_long;
    PARMCI_GetValueFloat = rma::ARMCI_GetValueFloat(src: *mut c_void, proc: c_int) -> f32;
    PARMCI_GetValueDouble = rma::ARMCI_GetValueDouble(src: *mut c_void, proc: c_int) -> f64;
    PARMCI_Create_mutexes = sync::ARMCI_Create_mutexes(count: c_int) -> c_int;
    PARMCI_Destroy_mutexes = sync::ARMCI_Destroy_mutexes() -> c_int;
    PARMCI_Lock = sync::ARMCI_Lock(mutex: c_int, proc: c_int);
    PARMCI_Unlock = sync::ARMCI_Unlock(mutex: c_int, proc: c_int);
    PARMCI_Rmw = sync::ARMCI_Rmw(op: c_int, ploc: *mut c_void, prem: *mut c_void, value: c_int, proc: c_int) -> c_int;
    PARMCI_Malloc_memdev = group::ARMCI_Malloc_memdev(ptr_arr: *mut *mut c_void, bytes: c_long, device: *const c_char) -> c_int;
    PARMCI_Malloc_group_memdev = group::ARMCI_Malloc_group_memdev(ptr_arr: *mut *mut c_void, bytes: c_long, group: *mut Group, device: *const c_char) -> c_int;
    PARMCI_Free_memdev = group::ARMCI_Free_memdev(ptr: *mut c_void) -> c_int;
    parmci_msg_barrier = msg::armci_msg_barrier();
    parmci_msg_group_barrier = msg::armci_msg_group_barrier(group: *mut Group);
}
