//! Calling the user's CO_REDUCE operation: a Fortran function of two scalars of the
//! argument's type returning one, passed by reference (or by value with the VALUE
//! attribute), character results through gfortran's hidden result arguments.

use std::ffi::{c_int, c_void};

use gaspar::coarray::{Elem, ElemType};

use crate::abi::reduce_flag;
use crate::error::CafError;

/// How one call of the user's function is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Convention {
    /// `character(len) function f(a, b)`: `f(result, len, a, b)` plus the two argument
    /// lengths when `hidden_len`.
    Character { hidden_len: bool },
    /// A scalar of `width` bytes of a numeric or logical type.
    Scalar { ty: ScalarType, by_value: bool },
}

/// Scalar types the user's function may return by value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ScalarType {
    I8,
    I16,
    I32,
    I64,
    I128,
    F32,
    F64,
    C32,
    C64,
}

/// `complex(4)` as the C ABI passes `_Complex float` (two floats in one SSE eightbyte).
#[repr(C)]
#[derive(Clone, Copy)]
struct Complex32 {
    re: f32,
    im: f32,
}

/// `complex(8)` as the C ABI passes `_Complex double` (two SSE eightbytes).
#[repr(C)]
#[derive(Clone, Copy)]
struct Complex64 {
    re: f64,
    im: f64,
}

/// The user's function with what is needed to call it.
pub(crate) struct UserOperator {
    function: *const c_void,
    convention: Convention,
    elem_len: usize,
}

impl UserOperator {
    /// Checks that `function` can be called for elements of `elem` (`elem_len` bytes)
    /// with gfortran's `opr_flags`.
    ///
    /// # Safety
    /// `function` is the Fortran function gfortran passed to `co_reduce` for this argument.
    pub(crate) unsafe fn new(
        function: *const c_void,
        flags: c_int,
        elem: Elem,
        elem_len: usize,
    ) -> Result<UserOperator, CafError> {
        if function.is_null() {
            return Err(CafError::Argument("null co_reduce operation".into()));
        }
        if flags & reduce_flag::ARG_DESC != 0 {
            return Err(CafError::Unsupported(
                "co_reduce operations with array descriptor arguments".into(),
            ));
        }
        let by_value = flags & reduce_flag::ARG_VALUE != 0;
        let scalar = |ty| Ok(Convention::Scalar { ty, by_value });
        let convention = match (elem.ty, elem_len) {
            (ElemType::Character, _) => Ok(Convention::Character {
                hidden_len: flags & reduce_flag::HIDDENLEN != 0,
            }),
            (ElemType::Integer | ElemType::Logical, 1) => scalar(ScalarType::I8),
            (ElemType::Integer | ElemType::Logical, 2) => scalar(ScalarType::I16),
            (ElemType::Integer | ElemType::Logical, 4) => scalar(ScalarType::I32),
            (ElemType::Integer | ElemType::Logical, 8) => scalar(ScalarType::I64),
            (ElemType::Integer | ElemType::Logical, 16) => scalar(ScalarType::I128),
            (ElemType::Real, 4) => scalar(ScalarType::F32),
            (ElemType::Real, 8) => scalar(ScalarType::F64),
            (ElemType::Complex, 8) => scalar(ScalarType::C32),
            (ElemType::Complex, 16) => scalar(ScalarType::C64),
            (ty, len) => Err(CafError::Unsupported(format!(
                "co_reduce on {ty:?} elements of {len} bytes"
            ))),
        }?;
        Ok(UserOperator {
            function,
            convention,
            elem_len,
        })
    }
}

/// `acc = operation(acc, other)` for one element.
pub(crate) fn apply(op: &UserOperator, acc: &mut [u8], other: &[u8]) {
    assert!(acc.len() == op.elem_len && other.len() == op.elem_len);
    match op.convention {
        Convention::Character { hidden_len } => {
            let mut result = vec![b' '; op.elem_len];
            let len = op.elem_len;
            // SAFETY: `function` is a Fortran character function of this length (checked
            // in `new` from gfortran's arguments); gfortran's convention passes the result
            // buffer and its length first, then the arguments, then (HIDDENLEN) their
            // lengths as size_t.
            unsafe {
                if hidden_len {
                    let f: unsafe extern "C" fn(
                        *mut u8,
                        usize,
                        *const u8,
                        *const u8,
                        usize,
                        usize,
                    ) = std::mem::transmute(op.function);
                    f(
                        result.as_mut_ptr(),
                        len,
                        acc.as_ptr(),
                        other.as_ptr(),
                        len,
                        len,
                    );
                } else {
                    let f: unsafe extern "C" fn(*mut u8, usize, *const u8, *const u8) =
                        std::mem::transmute(op.function);
                    f(result.as_mut_ptr(), len, acc.as_ptr(), other.as_ptr());
                }
            }
            acc.copy_from_slice(&result);
        }
        Convention::Scalar { ty, by_value } => match ty {
            ScalarType::I8 => call::<i8>(op.function, by_value, acc, other),
            ScalarType::I16 => call::<i16>(op.function, by_value, acc, other),
            ScalarType::I32 => call::<i32>(op.function, by_value, acc, other),
            ScalarType::I64 => call::<i64>(op.function, by_value, acc, other),
            ScalarType::I128 => call::<i128>(op.function, by_value, acc, other),
            ScalarType::F32 => call::<f32>(op.function, by_value, acc, other),
            ScalarType::F64 => call::<f64>(op.function, by_value, acc, other),
            ScalarType::C32 => call::<Complex32>(op.function, by_value, acc, other),
            ScalarType::C64 => call::<Complex64>(op.function, by_value, acc, other),
        },
    }
}

/// Calls a scalar function returning `T`, its arguments by reference or by value.
fn call<T: Copy>(function: *const c_void, by_value: bool, acc: &mut [u8], other: &[u8]) {
    assert!(acc.len() == std::mem::size_of::<T>() && other.len() == acc.len());
    // SAFETY: both slices hold one `T` (checked above; unaligned reads); `function` is
    // the user's Fortran function of type `T` (checked in `UserOperator::new` against the
    // argument's type and kind), returning `T` as the C ABI returns it.
    let result: T = unsafe {
        let a = acc.as_ptr().cast::<T>().read_unaligned();
        let b = other.as_ptr().cast::<T>().read_unaligned();
        if by_value {
            let f: unsafe extern "C" fn(T, T) -> T = std::mem::transmute(function);
            f(a, b)
        } else {
            let f: unsafe extern "C" fn(*const T, *const T) -> T = std::mem::transmute(function);
            f(&a, &b)
        }
    };
    // SAFETY: `acc` holds one `T` (checked above).
    unsafe { acc.as_mut_ptr().cast::<T>().write_unaligned(result) };
}
