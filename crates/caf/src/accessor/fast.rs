//! The fast path: a get or send whose target has a route ([`crate::routes`]) runs its
//! accessor right here against the routed address, as GCC's caf_shmem does against its
//! own mapping: no engine, no lock, no allocation (the coarray's descriptor is copied onto
//! the stack and pointed at the part; caf_shmem points the caller's own descriptor there
//! for the call, which two threads of one image could not share).

use std::ffi::{c_int, c_void};
use std::mem::MaybeUninit;

use super::owner;
use crate::descriptor::Descriptor;
use crate::token::{self, CafToken};

/// The coarray `token` names (`None` for null and for a callback token).
///
/// # Safety
/// `token` is null, a coarray token or a callback token (gfortran passes no other).
#[inline]
pub(crate) unsafe fn coarray<'a>(token: *mut c_void) -> Option<&'a CafToken> {
    // SAFETY: this function's contract: a non-null token starts with its kind.
    if token.is_null() || unsafe { token::kind(token) } != token::COARRAY_TOKEN {
        return None;
    }
    // SAFETY: a coarray token (checked above).
    unsafe { token::borrow(token) }.ok()
}

/// The address in this process of `image`'s part of `token`, when an accessor ran against
/// it before in the current team.
///
/// # Safety
/// As [`coarray`].
#[inline]
pub(crate) unsafe fn route(token: *mut c_void, image: c_int) -> Option<usize> {
    // SAFETY: this function's contract.
    unsafe { coarray(token) }?.accessor_routes.base(image)
}

/// A copy of a coarray's descriptor pointed at the part, on the stack: only the header and
/// the rank's dimensions are copied (the accessor reads no more), and the caller's
/// descriptor is never written (so threads of one image may access the same coarray).
#[repr(C, align(8))]
struct PointedCopy(MaybeUninit<[u8; owner::MAX_BYTES]>);

impl PointedCopy {
    /// The accessor's argument for the part at `base`: a copy of `desc` pointed at it, or
    /// `base` itself for a coarray without descriptor; `None` for a descriptor of no rank
    /// gfortran makes (the engine path reports it).
    ///
    /// # Safety
    /// `desc` is null or a descriptor followed by its rank's dimensions.
    #[inline(always)]
    unsafe fn at(&mut self, desc: *const c_void, base: usize) -> Option<*mut c_void> {
        if desc.is_null() {
            return Some(base as *mut c_void);
        }
        // SAFETY: a descriptor's header is readable (this function's contract).
        let rank = unsafe { (*desc.cast::<Descriptor>()).dtype.rank };
        let copy = self.0.as_mut_ptr().cast::<u64>();
        let from = desc.cast::<u64>();
        // SAFETY: the header and `rank` dimensions (all 8-byte fields, 8-byte aligned as
        // gfortran lays descriptors out) read into a buffer of MAX_BYTES, which holds the
        // largest rank's, aligned for a descriptor; the base address is then replaced.
        // The common ranks as copies of a fixed size, which compile to a few moves: a loop
        // of any length becomes a call to memcpy, which cost 5 ns of a one-element get of
        // 18-24 (gfortran 16, AMD EPYC).
        unsafe {
            match rank {
                1 => copy_words::<{ RANK_WORDS[1] }>(from, copy),
                0 => copy_words::<{ RANK_WORDS[0] }>(from, copy),
                2 => copy_words::<{ RANK_WORDS[2] }>(from, copy),
                _ => copy_any(from, copy, owner::bytes_of_rank(rank)? / 8),
            }
            (*copy.cast::<Descriptor>()).base_addr = base as *mut c_void;
        }
        Some(copy.cast())
    }
}

/// The 8-byte words of a descriptor of rank 0 to 3 (its header and dimensions).
const RANK_WORDS: [usize; 4] = [
    owner::HEADER_BYTES / 8,
    (owner::HEADER_BYTES + owner::DIM_BYTES) / 8,
    (owner::HEADER_BYTES + 2 * owner::DIM_BYTES) / 8,
    (owner::HEADER_BYTES + 3 * owner::DIM_BYTES) / 8,
];

/// A coarray's descriptor of rank 0 to 3 pointed at a part, on the stack: the lean
/// paths' copy ([`lean_get`], [`lean_send`]), a seventh of [`PointedCopy`]'s room,
/// so that their entry points keep a small frame.
#[repr(C, align(8))]
struct SmallCopy(MaybeUninit<[u64; RANK_WORDS[3]]>);

impl SmallCopy {
    /// The accessor's argument for the part at `base`: `base` itself for a coarray
    /// without descriptor, else a copy of `desc` pointed at it; `None` for a descriptor
    /// of another rank (the general path takes those).
    ///
    /// # Safety
    /// `desc` is null or a descriptor followed by its rank's dimensions.
    #[inline(always)]
    unsafe fn at(&mut self, desc: *const c_void, base: usize) -> Option<*mut c_void> {
        if desc.is_null() {
            return Some(base as *mut c_void);
        }
        let copy = self.0.as_mut_ptr().cast::<u64>();
        let from = desc.cast::<u64>();
        // SAFETY: a descriptor's header is readable, and then as many dimensions as its
        // rank (this function's contract); the buffer holds rank 3's, aligned for a
        // descriptor; the base address is then replaced.
        unsafe {
            match (*desc.cast::<Descriptor>()).dtype.rank {
                1 => copy_words::<{ RANK_WORDS[1] }>(from, copy),
                0 => copy_words::<{ RANK_WORDS[0] }>(from, copy),
                2 => copy_words::<{ RANK_WORDS[2] }>(from, copy),
                3 => copy_words::<{ RANK_WORDS[3] }>(from, copy),
                _ => return None,
            }
            (*copy.cast::<Descriptor>()).base_addr = base as *mut c_void;
        }
        Some(copy.cast())
    }
}

/// Copies `words` words from `from` to `to`, out of line: inlined, the compiler saw that
/// the fixed-size copies of the common ranks are this one at their sizes and made all of
/// them a call to memcpy.
///
/// # Safety
/// `words` words are readable at `from` and writable at `to`.
#[inline(never)]
unsafe fn copy_any(from: *const u64, to: *mut u64, words: usize) {
    // SAFETY: this function's contract.
    unsafe { std::ptr::copy_nonoverlapping(from, to, words) }
}

/// Copies `N` words from `from` to `to`.
///
/// # Safety
/// `N` words are readable at `from` and writable at `to`, both 8-byte aligned.
#[inline(always)]
unsafe fn copy_words<const N: usize>(from: *const u64, to: *mut u64) {
    // SAFETY: this function's contract.
    unsafe { to.cast::<[u64; N]>().write(from.cast::<[u64; N]>().read()) }
}

/// What a get needs besides the part: gfortran's arguments, as `get_from_remote` takes them.
pub(crate) struct Get {
    /// The coarray's descriptor (null for a coarray without one).
    pub(crate) src_desc: *const c_void,
    /// The source's character length, or null.
    pub(crate) src_charlen: *const usize,
    /// The image index of the coindex (the getter's `caller_image`).
    pub(crate) image: c_int,
    /// The address of the destination's data pointer (scalars).
    pub(crate) dst_data: *mut *mut c_void,
    /// The destination's character length, or null.
    pub(crate) dst_charlen: *mut usize,
    /// The destination's descriptor (arrays), or null.
    pub(crate) dst_desc: *mut Descriptor,
    /// Whether the destination may be reallocated.
    pub(crate) may_realloc: bool,
    /// The getter's index in the accessor table.
    pub(crate) getter: c_int,
    /// The data the compiler packed for the getter.
    pub(crate) add_data: *mut c_void,
}

/// Runs the getter against the part at `base`, as caf_shmem's `get_from_remote` does;
/// false when the getter is unknown or the coarray's descriptor has no valid rank (the
/// engine path reports both).
///
/// # Safety
/// `base` is a route of the coarray the arguments name; the arguments are as gfortran
/// 15/16 pass them.
#[inline(always)]
pub(crate) unsafe fn get(base: usize, a: &Get) -> bool {
    // SAFETY: `get_from_remote` names a getter.
    let Some(getter) = (unsafe { owner::getter(a.getter) }) else {
        return false;
    };
    let mut copy = PointedCopy(MaybeUninit::uninit());
    // SAFETY: the coarray's descriptor (this function's contract).
    let Some(src) = (unsafe { copy.at(a.src_desc, base) }) else {
        return false;
    };
    let coarray = (!a.src_desc.is_null())
        // SAFETY: a descriptor's header (this function's contract).
        .then(|| unsafe { (*a.src_desc.cast::<Descriptor>()).dtype });
    let run = |dst: *mut c_void| {
        let mut free_buffer: i32 = 0;
        let image = a.image;
        // SAFETY: the arguments a getter takes, as GCC's single.c passes them.
        owner::with_callback(a.add_data, None, |callback| unsafe {
            getter(
                a.add_data,
                &image,
                dst,
                &mut free_buffer,
                src,
                callback,
                0,
                a.dst_charlen,
                a.src_charlen,
            )
        });
        Ok(())
    };
    // SAFETY: the destination and lengths gfortran passed (this function's contract).
    let filled = unsafe {
        owner::into_destination(
            coarray,
            a.dst_data,
            a.dst_desc,
            a.may_realloc,
            a.dst_charlen,
            a.src_charlen,
            run,
        )
    };
    if let Err(e) = filled {
        crate::error::say(&format!("gaspar caf: coindexed read: {e}"));
        std::process::exit(1);
    }
    true
}

/// A get without character lengths in the current team (an element, `y = a(j)[i]`, or a
/// section, `b = a(:)[i]`) on the route of `image`: the getter runs against the part (its
/// address, or the coarray's descriptor of rank 0 to 3 pointed at it) and writes the
/// destination, as [`get`] does for these arguments, with nothing else on the way: small
/// descriptor copies and the accessor table read without its lock. The destination is
/// `*dst_data` for a scalar, else the caller's descriptor when it may be reallocated, else
/// filled in place (rank 1 to 3; [`owner::in_place_destination`]). False, before anything
/// ran, when the part has no route, the getter is unknown, a descriptor has another rank
/// or the destination must be filled through a temporary (the general path then runs the
/// call).
///
/// # Safety
/// As [`route`]; the other arguments are as gfortran 15/16 pass them to `get_from_remote`
/// with null character lengths.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) unsafe fn lean_get(
    token: *mut c_void,
    src_desc: *const c_void,
    image: c_int,
    dst_data: *mut *mut c_void,
    dst_desc: *mut Descriptor,
    may_realloc: bool,
    getter: c_int,
    add_data: *mut c_void,
) -> bool {
    // SAFETY: this function's contract.
    let Some(base) = (unsafe { route(token, image) }) else {
        return false;
    };
    // SAFETY: `get_from_remote` names a getter.
    let Some(getter) = (unsafe { owner::finished_getter(getter) }) else {
        return false;
    };
    let mut copy = SmallCopy(MaybeUninit::uninit());
    // SAFETY: the coarray's descriptor or null (this function's contract).
    let Some(src) = (unsafe { copy.at(src_desc, base) }) else {
        return false;
    };
    let mut room = owner::DescRoom::<{ RANK_WORDS[3] }>::uninit();
    let (dst, in_place) = if dst_desc.is_null() {
        (dst_data.cast::<c_void>(), None)
    } else if may_realloc {
        (dst_desc.cast::<c_void>(), None)
    } else {
        let coarray = (!src_desc.is_null())
            // SAFETY: a descriptor's header (this function's contract).
            .then(|| unsafe { (*src_desc.cast::<Descriptor>()).dtype });
        let null = std::ptr::null_mut();
        // SAFETY: the destination's descriptor (this function's contract), no lengths.
        let Some(dense) =
            (unsafe { owner::in_place_destination(coarray, dst_desc, null, null, &mut room) })
        else {
            return false;
        };
        // SAFETY: `in_place_destination` built a whole descriptor there.
        (dense.cast::<c_void>(), Some(unsafe { (*dense).base_addr }))
    };
    let mut free_buffer: i32 = 0;
    // SAFETY: the arguments a getter takes, as GCC's single.c passes them.
    owner::with_callback(add_data, None, |callback| unsafe {
        getter(
            add_data,
            &image,
            dst,
            &mut free_buffer,
            src,
            callback,
            0,
            std::ptr::null_mut(),
            std::ptr::null(),
        )
    });
    if let Some(data) = in_place {
        // SAFETY: the descriptor the getter filled, in `room`.
        if unsafe { (*dst.cast::<Descriptor>()).base_addr } != data {
            reshaped();
        }
    }
    true
}

/// A getter reallocated a destination it was given in place (which
/// `in_place_destination` rules out): said as the general path says it.
#[cold]
fn reshaped() -> ! {
    crate::error::say(&format!(
        "gaspar caf: coindexed read: {}",
        owner::reshaped_destination()
    ));
    std::process::exit(1)
}

/// What a send needs besides the part: gfortran's arguments, as `send_to_remote` takes them.
pub(crate) struct Send {
    /// The coarray's descriptor (null for a coarray without one).
    pub(crate) dst_desc: *const c_void,
    /// The destination's character length, or null.
    pub(crate) dst_charlen: *const usize,
    /// The image index of the coindex (the receiver's `caller_image`).
    pub(crate) image: c_int,
    /// The source: its descriptor (arrays) or its data (scalars).
    pub(crate) src: *const c_void,
    /// The source's character length, or null.
    pub(crate) src_charlen: *const usize,
    /// The receiver's index in the accessor table.
    pub(crate) receiver: c_int,
    /// The data the compiler packed for the receiver.
    pub(crate) add_data: *mut c_void,
}

/// Runs the receiver against the part at `base`, as caf_shmem's `send_to_remote` does;
/// false when the receiver is unknown or the coarray's descriptor has no valid rank (the
/// engine path reports both).
///
/// # Safety
/// As [`get`], for `send_to_remote`'s arguments.
#[inline(always)]
pub(crate) unsafe fn send(base: usize, a: &Send) -> bool {
    // SAFETY: `send_to_remote` names a receiver.
    let Some(receiver) = (unsafe { owner::receiver(a.receiver) }) else {
        return false;
    };
    let mut copy = PointedCopy(MaybeUninit::uninit());
    // SAFETY: the coarray's descriptor (this function's contract).
    let Some(dst) = (unsafe { copy.at(a.dst_desc, base) }) else {
        return false;
    };
    let image = a.image;
    // SAFETY: the arguments a receiver takes, as GCC's single.c passes them.
    owner::with_callback(a.add_data, None, |callback| unsafe {
        receiver(
            a.add_data,
            &image,
            dst,
            a.src,
            callback,
            0,
            a.dst_charlen,
            a.src_charlen,
        )
    });
    true
}

/// A send without character lengths in the current team (an element, `a(j)[i] = y`, or a
/// section from any source, `a(:)[i] = b`) on the route of `image`: the receiver runs
/// against the part (its address, or the coarray's descriptor of rank 0 to 3 pointed at
/// it) and reads `src` (the source's data, or its descriptor for an array), as [`send`]
/// does for these arguments. False when the part has no route, the receiver is unknown or
/// the descriptor has another rank.
///
/// # Safety
/// As [`route`]; `dst_desc`, `src`, `receiver` and `add_data` are as gfortran 15/16 pass
/// them to `send_to_remote` (`src` its source descriptor, else its source data).
#[inline(always)]
pub(crate) unsafe fn lean_send(
    token: *mut c_void,
    dst_desc: *const c_void,
    image: c_int,
    src: *const c_void,
    receiver: c_int,
    add_data: *mut c_void,
) -> bool {
    // SAFETY: this function's contract.
    let Some(base) = (unsafe { route(token, image) }) else {
        return false;
    };
    // SAFETY: `send_to_remote` names a receiver.
    let Some(receiver) = (unsafe { owner::finished_receiver(receiver) }) else {
        return false;
    };
    let mut copy = SmallCopy(MaybeUninit::uninit());
    // SAFETY: the coarray's descriptor or null (this function's contract).
    let Some(dst) = (unsafe { copy.at(dst_desc, base) }) else {
        return false;
    };
    // SAFETY: the arguments a receiver takes, as GCC's single.c passes them for a scalar.
    owner::with_callback(add_data, None, |callback| unsafe {
        receiver(
            add_data,
            &image,
            dst,
            src,
            callback,
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    });
    true
}

/// What a copy between two images' parts (`x[i] = y[j]`) needs besides the parts:
/// gfortran's arguments, as `transfer_between_remotes` takes them, without character
/// lengths (the fast path leaves character data to the engine path).
pub(crate) struct Between {
    /// The source coarray's descriptor (null for a coarray without one).
    pub(crate) src_desc: *const c_void,
    /// The image index of the source's coindex (the getter's `caller_image`).
    pub(crate) src_image: c_int,
    /// The getter's index in the accessor table.
    pub(crate) getter: c_int,
    /// The data the compiler packed for the getter.
    pub(crate) src_add_data: *mut c_void,
    /// The destination coarray's descriptor (null for a coarray without one).
    pub(crate) dst_desc: *const c_void,
    /// The image index of the destination's coindex (the receiver's `caller_image`).
    pub(crate) dst_image: c_int,
    /// The receiver's index in the accessor table.
    pub(crate) receiver: c_int,
    /// The data the compiler packed for the receiver.
    pub(crate) dst_add_data: *mut c_void,
    /// Whether the getter hands over one element (by pointer) rather than an array (in a
    /// descriptor it fills).
    pub(crate) scalar: bool,
}

/// Runs the getter against the source part at `src_base` and the receiver against the
/// destination part at `dst_base`, the value passing between them as caf_shmem's
/// `transfer_between_remotes` passes it (a pointer the getter sets for one element, a
/// descriptor it fills for an array, freed after when it says so); false, with nothing
/// run, when an accessor is unknown or a descriptor has no valid rank (the engine path
/// reports both).
///
/// # Safety
/// `src_base` and `dst_base` are routes of the coarrays the arguments name; the arguments
/// are as gfortran 15/16 pass them.
#[inline(always)]
pub(crate) unsafe fn between(src_base: usize, dst_base: usize, a: &Between) -> bool {
    // SAFETY: `transfer_between_remotes` names a getter and a receiver.
    let (Some(getter), Some(receiver)) =
        (unsafe { (owner::getter(a.getter), owner::receiver(a.receiver)) })
    else {
        return false;
    };
    let mut src_copy = PointedCopy(MaybeUninit::uninit());
    let mut dst_copy = PointedCopy(MaybeUninit::uninit());
    // SAFETY: the coarrays' descriptors (this function's contract).
    let (Some(src), Some(dst)) = (unsafe {
        (
            src_copy.at(a.src_desc, src_base),
            dst_copy.at(a.dst_desc, dst_base),
        )
    }) else {
        return false;
    };
    let mut element: *mut c_void = std::ptr::null_mut();
    // Only an array's transfer needs a descriptor (zeroing one costs a few ns).
    let mut array = None;
    let transfer = if a.scalar {
        (&mut element as *mut *mut c_void).cast::<c_void>()
    } else {
        array.insert(owner::DescBuf::zeroed()).as_mut_ptr()
    };
    let mut free_buffer: i32 = 0;
    let src_image = a.src_image;
    // SAFETY: the arguments a getter takes, as GCC's caf_shmem passes them.
    owner::with_callback(a.src_add_data, None, |callback| unsafe {
        getter(
            a.src_add_data,
            &src_image,
            transfer,
            &mut free_buffer,
            src,
            callback,
            0,
            std::ptr::null_mut(),
            std::ptr::null(),
        )
    });
    let (value, allocated) = match array.as_mut() {
        Some(array) => (array.as_mut_ptr().cast_const(), array.base()),
        None => (element.cast_const(), element),
    };
    let dst_image = a.dst_image;
    // SAFETY: the arguments a receiver takes, as GCC's caf_shmem passes them: the element
    // or the filled descriptor the getter produced.
    owner::with_callback(a.dst_add_data, None, |callback| unsafe {
        receiver(
            a.dst_add_data,
            &dst_image,
            dst,
            value,
            callback,
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    });
    if free_buffer != 0 && !allocated.is_null() {
        // SAFETY: the getter allocated it with malloc and said so.
        unsafe { libc::free(allocated) };
    }
    true
}

/// Runs presence test `index` against the part at `base` of a coarray without descriptor
/// (as caf_shmem's `is_present_on_remote` does: GCC 16 passes such a coarray by the address
/// of its address, `by_reference`); `None` when the test is unknown (the engine path
/// reports it).
///
/// # Safety
/// `base` is a route of the coarray the call names; `add_data` is what gfortran passed.
#[inline(always)]
pub(crate) unsafe fn present(
    base: usize,
    image: c_int,
    index: c_int,
    add_data: *mut c_void,
    by_reference: bool,
) -> Option<i32> {
    // SAFETY: `is_present_on_remote` names a presence test.
    let test = unsafe { owner::presence(index) }?;
    let mut base = base as *mut c_void;
    let arg = if by_reference {
        (&mut base as *mut *mut c_void).cast()
    } else {
        base
    };
    let mut result: i32 = 0;
    // SAFETY: the arguments a presence test takes, as GCC's single.c passes them.
    owner::with_callback(add_data, None, |callback| unsafe {
        test(add_data, &image, &mut result, arg, callback, 0)
    });
    Some(result)
}
