//! CO_BROADCAST, CO_SUM, CO_MIN, CO_MAX (integer, real, complex for the sum; character
//! too for min and max) and CO_REDUCE with the user's function. A dense argument goes to
//! the engine in place; any other is packed into one buffer and unpacked afterwards.

use std::ffi::{c_char, c_int, c_void};
use std::sync::OnceLock;

use gaspar::coarray::{Coarrays, Elem, Image};

use crate::descriptor::{self, Descriptor, Layout, TypeCode};
use crate::error::CafError;
use crate::reduce::{self, UserOperator};
use crate::runtime;
use crate::section::{self, elem, Regular};
use crate::stat::StatArgs;
use crate::token;

/// The argument of a collective: its layout and where its elements are.
struct Argument {
    layout: Layout,
    regular: Regular,
    base: *mut c_void,
}

impl Argument {
    /// Reads gfortran's descriptor of the local argument.
    ///
    /// # Safety
    /// `a` is a descriptor gfortran built over writable memory.
    unsafe fn read(a: *mut Descriptor) -> Result<Argument, CafError> {
        // SAFETY: caller's contract.
        let layout = unsafe { descriptor::read(a)? };
        let regular = Regular::of(&layout, None).expect("a descriptor alone is regular");
        // SAFETY: `a` was read above.
        let base = unsafe { (*a).base_addr };
        Ok(Argument {
            layout,
            regular,
            base,
        })
    }

    /// The elements packed one after the other, in array element order.
    fn pack(&self) -> Vec<u8> {
        // SAFETY: the argument's memory as its descriptor lays it out; Fortran does not
        // touch it during the call.
        let bytes = unsafe { section::local(self.base, &self.regular) };
        let len = self.layout.elem_len;
        let first = -self.regular.low;
        let mut out = Vec::with_capacity(len * self.layout.count());
        for o in self.layout.offsets() {
            let at = (first + o) as usize;
            out.extend_from_slice(&bytes[at..at + len]);
        }
        out
    }

    /// Writes packed elements back.
    fn unpack(&self, packed: &[u8]) {
        // SAFETY: as in `pack`, writable (the argument is INTENT(INOUT)).
        let bytes = unsafe { section::local_mut(self.base, &self.regular) };
        let len = self.layout.elem_len;
        let first = -self.regular.low;
        for (i, o) in self.layout.offsets().into_iter().enumerate() {
            let at = (first + o) as usize;
            bytes[at..at + len].copy_from_slice(&packed[i * len..(i + 1) * len]);
        }
    }

    /// The element type for an arithmetic collective.
    fn elem(&self, a_len: c_int) -> Result<Elem, CafError> {
        arithmetic_elem(self.layout.type_code, self.layout.elem_len, a_len)
    }
}

/// The element type of an argument of `elem_len`-byte elements for an arithmetic
/// collective; character kind from `a_len` (characters of the string).
fn arithmetic_elem(type_code: TypeCode, len: usize, a_len: c_int) -> Result<Elem, CafError> {
    let kind = match type_code {
        TypeCode::Complex => len / 2,
        TypeCode::Character if a_len > 0 => len / a_len as usize,
        TypeCode::Character => 1,
        _ => len,
    };
    elem(type_code, kind as c_int)
}

/// Runs `f` on the argument's elements packed one after the other, with their type code
/// and length: in place when they are dense (no copy, no allocation), else through a
/// packed copy written back afterwards.
///
/// # Safety
/// `a` is a descriptor gfortran built over writable memory.
unsafe fn on_elements(
    a: *mut Descriptor,
    f: impl FnOnce(&mut [u8], TypeCode, usize) -> Result<(), CafError>,
) -> Result<(), CafError> {
    // SAFETY: caller's contract.
    if let Some(d) = unsafe { descriptor::dense(a) } {
        // SAFETY: the argument's dense elements, writable (INTENT(INOUT)); Fortran does
        // not touch them during the call.
        let buf = unsafe { std::slice::from_raw_parts_mut(d.base.cast::<u8>(), d.bytes()) };
        return f(buf, d.type_code, d.elem_len);
    }
    // SAFETY: caller's contract.
    let arg = unsafe { Argument::read(a)? };
    let mut buf = arg.pack();
    f(&mut buf, arg.layout.type_code, arg.layout.elem_len)?;
    arg.unpack(&buf);
    Ok(())
}

/// RESULT_IMAGE=: 0 means absent (every image gets the result).
fn result_image_of(raw: c_int) -> Result<Option<Image>, CafError> {
    if raw == 0 {
        Ok(None)
    } else {
        token::image(raw).map(Some)
    }
}

/// One of the engine's co_sum, co_min, co_max: buffer, element type and length, result image.
type IntrinsicReduction =
    fn(&mut Coarrays, &mut [u8], Elem, usize, Option<Image>) -> Result<(), CafError>;

/// Runs one arithmetic collective on the packed argument.
fn arithmetic(
    name: &str,
    a: *mut Descriptor,
    raw_result: c_int,
    a_len: c_int,
    stat: StatArgs,
    run: IntrinsicReduction,
) {
    runtime::statement(name, stat, |engine| {
        let result_image = result_image_of(raw_result)?;
        // SAFETY: gfortran's descriptor of the argument (the entry points' contract).
        unsafe {
            on_elements(a, |buf, type_code, len| {
                let elem = arithmetic_elem(type_code, len, a_len)?;
                run(engine, buf, elem, len, result_image)
            })
        }
    });
}

/// The lowest address a process can map (`vm.mmap_min_addr`, at least one page): no
/// ERRMSG= variable lies below it.
fn lowest_mappable_address() -> usize {
    static LOWEST: OnceLock<usize> = OnceLock::new();
    *LOWEST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/vm/mmap_min_addr")
            .ok()
            .and_then(|text| text.trim().parse::<usize>().ok())
            .unwrap_or(0)
            .max(4096)
    })
}

/// The STAT=/ERRMSG= arguments and the character length of a CO_* call, undoing a
/// gfortran bug: gfortran 12 to 16 pass ERRMSG= *by value* when it is a fixed-length
/// local variable (`character(len=60) :: msg`: its bytes are copied onto the stack, as
/// their disassembled calls show), so the register meant for its address holds the next
/// integer argument instead — the character length `a_len` for co_min/co_max/co_reduce,
/// ERRMSG='s length for co_broadcast/co_sum — and the later arguments move on by one. Such
/// a value lies below any address a process can map, so it is never taken for one: the
/// character length is taken from it, and the message is dropped (the variable the
/// library sees is a copy; STAT= is still set). A dummy or allocatable ERRMSG= is passed
/// by address as libcaf.h says.
///
/// # Safety
/// The arguments of a CO_* entry point as gfortran passed them.
unsafe fn collective_args(
    stat: *mut c_int,
    errmsg: *mut c_char,
    a_len: c_int,
    errmsg_len: usize,
) -> (StatArgs, c_int) {
    let address = errmsg as usize;
    if address != 0 && address < lowest_mappable_address() {
        // SAFETY: STAT= is as gfortran passed it (the caller's contract); no ERRMSG=.
        return (unsafe { StatArgs::stat_only(stat) }, address as c_int);
    }
    // SAFETY: the caller's contract.
    (unsafe { StatArgs::new(stat, errmsg, errmsg_len) }, a_len)
}

/// `call co_broadcast(a, source_image)`.
///
/// # Safety
/// `a` a descriptor gfortran built; STAT=/ERRMSG= null or writable.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_co_broadcast(
    a: *mut Descriptor,
    source_image: c_int,
    stat: *mut c_int,
    errmsg: *mut c_char,
    errmsg_len: usize,
) {
    // SAFETY: this function's contract.
    let (stat, _) = unsafe { collective_args(stat, errmsg, 0, errmsg_len) };
    runtime::statement("CO_BROADCAST", stat, |engine| {
        let source = token::image(source_image)?;
        // SAFETY: this function's contract.
        unsafe { on_elements(a, |buf, _, _| Ok(engine.co_broadcast(buf, source)?)) }
    });
}

/// `call co_sum(a, result_image)`.
///
/// # Safety
/// As [`_gfortran_caf_co_broadcast`].
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_co_sum(
    a: *mut Descriptor,
    result_image: c_int,
    stat: *mut c_int,
    errmsg: *mut c_char,
    errmsg_len: usize,
) {
    // SAFETY: this function's contract.
    let (stat, _) = unsafe { collective_args(stat, errmsg, 0, errmsg_len) };
    arithmetic("CO_SUM", a, result_image, 0, stat, |e, b, t, l, r| {
        Ok(e.co_sum(b, t, l, r)?)
    });
}

/// `call co_min(a, result_image)`; `a_len` is the length of a character argument.
///
/// # Safety
/// As [`_gfortran_caf_co_broadcast`].
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_co_min(
    a: *mut Descriptor,
    result_image: c_int,
    stat: *mut c_int,
    errmsg: *mut c_char,
    a_len: c_int,
    errmsg_len: usize,
) {
    // SAFETY: this function's contract.
    let (stat, a_len) = unsafe { collective_args(stat, errmsg, a_len, errmsg_len) };
    arithmetic("CO_MIN", a, result_image, a_len, stat, |e, b, t, l, r| {
        Ok(e.co_min(b, t, l, r)?)
    });
}

/// `call co_max(a, result_image)`; `a_len` is the length of a character argument.
///
/// # Safety
/// As [`_gfortran_caf_co_broadcast`].
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_co_max(
    a: *mut Descriptor,
    result_image: c_int,
    stat: *mut c_int,
    errmsg: *mut c_char,
    a_len: c_int,
    errmsg_len: usize,
) {
    // SAFETY: this function's contract.
    let (stat, a_len) = unsafe { collective_args(stat, errmsg, a_len, errmsg_len) };
    arithmetic("CO_MAX", a, result_image, a_len, stat, |e, b, t, l, r| {
        Ok(e.co_max(b, t, l, r)?)
    });
}

/// `call co_reduce(a, operation, result_image)`: `opr` is the user's function, called as
/// `opr_flags` says (by reference or by value, character lengths appended).
///
/// # Safety
/// As [`_gfortran_caf_co_broadcast`]; `opr` is the Fortran function gfortran passes, of
/// the argument's type.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_co_reduce(
    a: *mut Descriptor,
    opr: *const c_void,
    opr_flags: c_int,
    result_image: c_int,
    stat: *mut c_int,
    errmsg: *mut c_char,
    a_len: c_int,
    errmsg_len: usize,
) {
    // SAFETY: this function's contract.
    let (stat, a_len) = unsafe { collective_args(stat, errmsg, a_len, errmsg_len) };
    runtime::statement("CO_REDUCE", stat, |engine| {
        // SAFETY: this function's contract.
        let arg = unsafe { Argument::read(a)? };
        let elem = arg.elem(a_len)?;
        // SAFETY: `opr` is gfortran's operator for elements of this type.
        let operator = unsafe { UserOperator::new(opr, opr_flags, elem, arg.layout.elem_len)? };
        let mut buf = arg.pack();
        let len = arg.layout.elem_len;
        let mut combine = |acc: &mut [u8], other: &[u8]| reduce::apply(&operator, acc, other);
        engine.co_reduce(&mut buf, len, &mut combine, result_image_of(result_image)?)?;
        arg.unpack(&buf);
        Ok(())
    });
}
