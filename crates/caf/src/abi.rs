//! The numbers of gfortran 12's coarray ABI (Debian 12): registration and deregistration
//! types, descriptor type codes, atomic operation codes, `co_reduce` flags. GCC 15 changes
//! the transfer calls; this module is the one place that names the ABI version.

use std::ffi::{c_char, c_int};

/// The gfortran release whose `-fcoarray=lib` calls this library implements.
pub(crate) const GFORTRAN_ABI: &str = "gfortran 12 to 16";

/// gfortran 12 passes ERRMSG= of SYNC ALL, SYNC MEMORY and SYNC IMAGES as the address of
/// a pointer to the text (`char **`, gfc_trans_sync applies `&` once more than the other
/// statements do), every other statement the text's address.
///
/// # Safety
/// `errmsg` is null or, as gfortran 12 passes it to the SYNC calls, a readable pointer to
/// the text.
pub(crate) unsafe fn sync_errmsg(errmsg: *mut c_char) -> *mut c_char {
    if errmsg.is_null() {
        return errmsg;
    }
    // SAFETY: gfortran 12's SYNC calls pass the address of a `char *` (caller's contract).
    unsafe { *errmsg.cast::<*mut c_char>() }
}

/// `caf_register_t`: what `_gfortran_caf_register` registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RegisterType {
    /// A coarray with the SAVE attribute (registered from a constructor).
    CoarrayStatic,
    /// `allocate(a[*])`.
    CoarrayAlloc,
    /// A static array of `lock_type`.
    LockStatic,
    /// An allocatable array of `lock_type`.
    LockAlloc,
    /// The lock behind one `critical` construct.
    Critical,
    /// A static array of `event_type`.
    EventStatic,
    /// An allocatable array of `event_type`.
    EventAlloc,
    /// A token for an allocatable component, memory later.
    AllocRegisterOnly,
    /// Memory for a token registered by `AllocRegisterOnly`.
    AllocAllocateOnly,
    /// GCC 16: a new token for memory of an existing coarray (an associate name, a coarray
    /// dummy), the token passed in naming it.
    MapExisting,
}

impl RegisterType {
    /// The enum from gfortran's integer, `None` for a value gfortran 12 never passes.
    pub(crate) fn from_raw(raw: c_int) -> Option<RegisterType> {
        Some(match raw {
            0 => RegisterType::CoarrayStatic,
            1 => RegisterType::CoarrayAlloc,
            2 => RegisterType::LockStatic,
            3 => RegisterType::LockAlloc,
            4 => RegisterType::Critical,
            5 => RegisterType::EventStatic,
            6 => RegisterType::EventAlloc,
            7 => RegisterType::AllocRegisterOnly,
            8 => RegisterType::AllocAllocateOnly,
            9 => RegisterType::MapExisting,
            _ => return None,
        })
    }
}

/// `caf_deregister_t`: 1 frees the memory and keeps the token (component deallocate).
pub(crate) const DEREGISTER_DEALLOCATE_ONLY: c_int = 1;

/// Descriptor `dtype.type` codes (`bt` in libgfortran.h).
pub(crate) mod type_code {
    /// INTEGER.
    pub(crate) const INTEGER: i8 = 1;
    /// LOGICAL.
    pub(crate) const LOGICAL: i8 = 2;
    /// REAL.
    pub(crate) const REAL: i8 = 3;
    /// COMPLEX.
    pub(crate) const COMPLEX: i8 = 4;
    /// Derived type.
    pub(crate) const DERIVED: i8 = 5;
    /// CHARACTER.
    pub(crate) const CHARACTER: i8 = 6;
    /// CLASS (polymorphic): moved as bytes like a derived type.
    pub(crate) const CLASS: i8 = 7;
}

/// `atomic_op`'s operation codes (GFC_CAF_ATOMIC_*).
pub(crate) mod atomic_code {
    /// ADD.
    pub(crate) const ADD: i32 = 1;
    /// AND.
    pub(crate) const AND: i32 = 2;
    /// OR.
    pub(crate) const OR: i32 = 3;
    /// XOR.
    pub(crate) const XOR: i32 = 4;
}

/// `co_reduce`'s `opr_flags` (GFC_CAF_*): how the user's operation takes its arguments
/// (by reference unless ARG_VALUE).
pub(crate) mod reduce_flag {
    /// Character arguments with hidden lengths appended.
    pub(crate) const HIDDENLEN: i32 = 2;
    /// Arguments with the VALUE attribute.
    pub(crate) const ARG_VALUE: i32 = 4;
    /// Arguments passed as descriptors.
    pub(crate) const ARG_DESC: i32 = 8;
}
