//! Runs an accessor against memory of this process: the owner's side of every transfer
//! (called by the service thread for other images, and directly when the data is here or
//! mapped here). Descriptors cross processes as bytes ([`DescBuf`]); the owner puts its
//! own addresses into them before the accessor sees them.

use std::ffi::{c_int, c_void};
use std::mem::MaybeUninit;

use super::table::{self, AccessorFn};
use crate::descriptor::{self, DescDim, Descriptor, Dtype, TypeCode};
use crate::error::CafError;
use crate::token;

/// Bytes of a descriptor header (base_addr, offset, dtype, span) before its dimensions.
pub(crate) const HEADER_BYTES: usize = 40;
/// Bytes of one dimension (stride, lower bound, upper bound).
pub(crate) const DIM_BYTES: usize = 24;
/// Bytes of a descriptor of the highest rank.
pub(crate) const MAX_BYTES: usize = HEADER_BYTES + descriptor::MAX_RANK * DIM_BYTES;

/// A descriptor of any rank held by value (room for 15 dimensions), 8-byte aligned.
#[derive(Clone)]
#[repr(C, align(8))]
pub(crate) struct DescBuf([u8; MAX_BYTES]);

impl DescBuf {
    /// A descriptor of all zeros (rank 0 until an accessor fills it).
    pub(crate) fn zeroed() -> DescBuf {
        DescBuf([0; MAX_BYTES])
    }

    /// A descriptor from the bytes [`DescBuf::bytes`] gave.
    pub(crate) fn from_bytes(bytes: &[u8]) -> Result<DescBuf, CafError> {
        if bytes.len() < HEADER_BYTES || bytes.len() > MAX_BYTES {
            return Err(CafError::Descriptor(format!(
                "{} bytes do not make a descriptor",
                bytes.len()
            )));
        }
        let mut d = DescBuf::zeroed();
        d.0[..bytes.len()].copy_from_slice(bytes);
        Ok(d)
    }

    /// A copy of the descriptor gfortran built at `desc`.
    ///
    /// # Safety
    /// `desc` points to a descriptor followed by its rank's dimensions.
    pub(crate) unsafe fn copy_of(desc: *const c_void) -> Result<DescBuf, CafError> {
        // SAFETY: the header is readable (caller's contract).
        let rank = unsafe { (*desc.cast::<Descriptor>()).dtype.rank };
        let len = used_bytes(rank)?;
        // SAFETY: `len` bytes: the header and `rank` dimensions (caller's contract).
        let bytes = unsafe { std::slice::from_raw_parts(desc.cast::<u8>(), len) };
        DescBuf::from_bytes(bytes)
    }

    fn header(&self) -> &Descriptor {
        // SAFETY: the buffer is aligned and at least a header long; every bit pattern is a
        // valid Descriptor (integers and a raw pointer).
        unsafe { &*self.0.as_ptr().cast::<Descriptor>() }
    }

    fn header_mut(&mut self) -> &mut Descriptor {
        // SAFETY: as in `header`, uniquely borrowed.
        unsafe { &mut *self.0.as_mut_ptr().cast::<Descriptor>() }
    }

    /// The bytes in use: the header and the rank's dimensions.
    pub(crate) fn bytes(&self) -> &[u8] {
        let len = used_bytes(self.header().dtype.rank).unwrap_or(MAX_BYTES);
        &self.0[..len]
    }

    /// The data address.
    pub(crate) fn base(&self) -> *mut c_void {
        self.header().base_addr
    }

    /// Points the descriptor at `base`.
    pub(crate) fn set_base(&mut self, base: *mut c_void) {
        self.header_mut().base_addr = base;
    }

    /// The descriptor for an accessor.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut c_void {
        self.0.as_mut_ptr().cast()
    }

    /// Bytes of one element.
    pub(crate) fn elem_len(&self) -> usize {
        self.header().dtype.elem_len
    }

    /// Element type, size and rank.
    pub(crate) fn dtype(&self) -> Dtype {
        self.header().dtype
    }

    /// The dimensions in use.
    pub(crate) fn rank(&self) -> usize {
        (self.header().dtype.rank.max(0) as usize).min(descriptor::MAX_RANK)
    }

    /// Word `k` (0 stride, 1 lower bound, 2 upper bound) of dimension `i`.
    fn dim_word(&self, i: usize, k: usize) -> i64 {
        let at = HEADER_BYTES + i * DIM_BYTES + 8 * k;
        let mut w = [0u8; 8];
        w.copy_from_slice(&self.0[at..at + 8]);
        i64::from_ne_bytes(w)
    }

    fn set_dim_word(&mut self, i: usize, k: usize, value: i64) {
        let at = HEADER_BYTES + i * DIM_BYTES + 8 * k;
        self.0[at..at + 8].copy_from_slice(&value.to_ne_bytes());
    }

    /// Elements of dimension `i`.
    fn extent(&self, i: usize) -> i64 {
        (self.dim_word(i, 2) - self.dim_word(i, 1) + 1).max(0)
    }

    /// Elements the bounds describe.
    pub(crate) fn count(&self) -> usize {
        (0..self.rank()).map(|i| self.extent(i) as usize).product()
    }

    /// Lays the descriptor out over contiguous data: unit strides in element order, the
    /// offset that goes with them and a span of one element.
    pub(crate) fn make_contiguous(&mut self) {
        let elem_len = self.elem_len();
        let mut stride = 1i64;
        let mut offset = 0i64;
        for i in 0..self.rank() {
            let extent = self.extent(i);
            self.set_dim_word(i, 0, stride);
            offset -= self.dim_word(i, 1) * stride;
            stride *= extent;
        }
        let header = self.header_mut();
        header.offset = offset as isize;
        header.span = elem_len as isize;
    }
}

/// Bytes of a descriptor of `rank`.
pub(crate) fn used_bytes(rank: i8) -> Result<usize, CafError> {
    bytes_of_rank(rank).ok_or_else(|| CafError::Descriptor(format!("rank {rank}")))
}

/// [`used_bytes`] for the fast paths: `None` for a rank outside 0..=15.
#[inline(always)]
pub(crate) fn bytes_of_rank(rank: i8) -> Option<usize> {
    usize::try_from(rank)
        .ok()
        .filter(|&r| r <= descriptor::MAX_RANK)
        .map(|r| HEADER_BYTES + r * DIM_BYTES)
}

/// Runs a getter here (`run`, given the destination argument it takes) into the caller's
/// destination: the data pointer for a scalar, the descriptor for an array that may be
/// reallocated, a copy of the descriptor describing the same memory when the getter can
/// fill it in place ([`in_place_destination`]), else as single.c and caf_shmem do: the
/// getter allocates, and its result is copied into the destination and freed.
///
/// # Safety
/// The destination and the character lengths are what gfortran 15/16 passed to
/// `get_from_remote`; `coarray` is the type of the coarray's descriptor, if it has one;
/// `run` runs the call's getter.
#[inline(always)]
pub(crate) unsafe fn into_destination(
    coarray: Option<Dtype>,
    dst_data: *mut *mut c_void,
    dst_desc: *mut Descriptor,
    may_realloc: bool,
    dst_charlen: *mut usize,
    src_charlen: *const usize,
    run: impl FnOnce(*mut c_void) -> Result<(), CafError>,
) -> Result<(), CafError> {
    if dst_desc.is_null() {
        return run(dst_data.cast());
    }
    if may_realloc {
        return run(dst_desc.cast());
    }
    let mut place = StackDescriptor::uninit();
    // SAFETY: this function's contract; `dst_desc` is not null (above).
    let dense =
        unsafe { in_place_destination(coarray, dst_desc, dst_charlen, src_charlen, &mut place) };
    if let Some(dense) = dense {
        // SAFETY: `in_place_destination` built a whole descriptor there.
        let data = unsafe { (*dense).base_addr };
        run(dense.cast())?;
        // SAFETY: as above; the getter leaves a descriptor there.
        return if unsafe { (*dense).base_addr } == data {
            Ok(())
        } else {
            Err(reshaped_destination())
        };
    }
    // SAFETY: the destination's descriptor, writable (this function's contract).
    let kept = unsafe { std::mem::replace(&mut (*dst_desc).base_addr, std::ptr::null_mut()) };
    let ran = run(dst_desc.cast());
    if !kept.is_null() {
        // SAFETY: the destination's descriptor, which the getter filled (or left null).
        unsafe { restore_destination(dst_desc, kept) };
    }
    ran
}

/// Room on the stack for a descriptor of up to [`Self::MAX_RANK`] dimensions, of which a
/// call writes the header and the rank's dimensions and reads no more (a few words, where
/// a whole [`DescBuf`] is 400 bytes to clear and copy).
#[repr(C, align(8))]
pub(crate) struct DescRoom<const WORDS: usize>(MaybeUninit<[u64; WORDS]>);

impl<const WORDS: usize> DescRoom<WORDS> {
    /// The largest rank whose descriptor fits.
    pub(crate) const MAX_RANK: usize = (WORDS * 8 - HEADER_BYTES) / DIM_BYTES;

    pub(crate) fn uninit() -> DescRoom<WORDS> {
        DescRoom(MaybeUninit::uninit())
    }
}

/// Room for a descriptor of any rank.
pub(crate) type StackDescriptor = DescRoom<{ MAX_BYTES / 8 }>;

/// The caller's destination as a getter can fill it where it lies, built in `place`, or
/// `None` when the getter must allocate.
///
/// A getter fills a destination it finds allocated with the result's shape without
/// allocating, indexing it from lower bounds 1 as if it had allocated it; given none, it
/// allocates, and the caller copies (and for a 4 MiB section pays the allocation's page
/// faults at every read: 1.4 GB/s against 40 GB/s in place, AMD EPYC). So in place only
/// where the result's shape is the destination's for sure: a destination that may not be
/// reallocated (its shape is the one the caller computed for the section; the caller
/// checks that), dense, of the type and kind of an array coarray of an intrinsic type
/// other than character (whose bounds are the same on every image, so the section has
/// the same extents here and there), and no character lengths. The copy has the
/// destination's memory, element type and extents, with lower bounds 1 and unit strides.
///
/// # Safety
/// As [`into_destination`], `dst_desc` not null.
#[inline(always)]
pub(crate) unsafe fn in_place_destination<const WORDS: usize>(
    coarray: Option<Dtype>,
    dst_desc: *mut Descriptor,
    dst_charlen: *mut usize,
    src_charlen: *const usize,
    place: &mut DescRoom<WORDS>,
) -> Option<*mut Descriptor> {
    if !dst_charlen.is_null() || !src_charlen.is_null() {
        return None;
    }
    let coarray = coarray?;
    if !matches!(
        TypeCode::of(coarray.type_code),
        Some(TypeCode::Integer | TypeCode::Logical | TypeCode::Real | TypeCode::Complex)
    ) {
        return None;
    }
    // SAFETY: a descriptor gfortran built (caller's contract).
    let dst = unsafe { &*dst_desc };
    let rank = usize::try_from(dst.dtype.rank).ok()?;
    let same_kind =
        dst.dtype.type_code == coarray.type_code && dst.dtype.elem_len == coarray.elem_len;
    let unit_span = dst.span == dst.dtype.elem_len as isize;
    if !same_kind
        || !unit_span
        || dst.base_addr.is_null()
        || !(1..=descriptor::MAX_RANK.min(DescRoom::<WORDS>::MAX_RANK)).contains(&rank)
    {
        return None;
    }
    // SAFETY: gfortran lays out `rank` dimensions right after the header.
    let dims = unsafe { std::slice::from_raw_parts(dst.dim.as_ptr(), rank) };
    let mut stride = 1isize;
    for dim in dims {
        let extent = (dim.upper_bound - dim.lower_bound + 1).max(0);
        if extent == 0 || (extent > 1 && dim.stride != stride) {
            return None;
        }
        stride *= extent;
    }
    let out = place.0.as_mut_ptr().cast::<Descriptor>();
    // SAFETY: `place` holds the header and `rank` dimensions (checked above), aligned for
    // a descriptor; each field is written before anything reads it.
    unsafe {
        (*out).base_addr = dst.base_addr;
        (*out).dtype = dst.dtype;
        (*out).span = dst.span;
        let out_dims = (*out).dim.as_mut_ptr();
        let (mut stride, mut offset) = (1isize, 0isize);
        for (i, dim) in dims.iter().enumerate() {
            let extent = dim.upper_bound - dim.lower_bound + 1;
            out_dims.add(i).write(DescDim {
                stride,
                lower_bound: 1,
                upper_bound: extent,
            });
            offset -= stride;
            stride *= extent;
        }
        (*out).offset = offset;
    }
    Some(out)
}

/// Copies what a getter allocated back into the destination's own memory `kept` (the
/// destination may not be reallocated) and frees it, as caf_shmem does.
///
/// # Safety
/// `desc` is a descriptor a getter filled; `kept` holds as many elements.
#[cold]
unsafe fn restore_destination(desc: *mut Descriptor, kept: *mut c_void) {
    // SAFETY: this function's contract: the header and `rank` dimensions are readable.
    unsafe {
        let fresh = (*desc).base_addr;
        if !fresh.is_null() && fresh != kept {
            let rank = (*desc).dtype.rank.clamp(0, descriptor::MAX_RANK as i8) as usize;
            let dims = std::slice::from_raw_parts((*desc).dim.as_ptr(), rank);
            let bytes = dims
                .iter()
                .map(|d| (d.upper_bound - d.lower_bound + 1).max(0) as usize)
                .product::<usize>()
                * (*desc).span.max(0) as usize;
            std::ptr::copy_nonoverlapping(fresh.cast::<u8>(), kept.cast::<u8>(), bytes);
            libc::free(fresh);
        }
        (*desc).base_addr = kept;
    }
}

/// The error of a getter that reallocated a destination [`in_place_destination`] gave it
/// (a result of another shape than the destination's, which that function rules out).
#[cold]
pub(crate) fn reshaped_destination() -> CafError {
    CafError::Argument("a coindexed read's result has another shape than its destination".into())
}

/// The memory an accessor works on: a coarray's part here, and for an allocatable coarray
/// the descriptor to present it through.
pub(crate) struct Target {
    /// This process's address of the part.
    pub(crate) base: usize,
    /// The coarray's descriptor (bounds as on every image), when it has one (boxed: a
    /// descriptor has room for 15 dimensions, and most coarrays have none).
    pub(crate) desc: Option<Box<DescBuf>>,
}

impl Target {
    /// The argument a getter or receiver takes: the descriptor, pointed at the part, or
    /// the part's address.
    fn argument(&mut self) -> *mut c_void {
        match &mut self.desc {
            Some(desc) => {
                desc.set_base(self.base as *mut c_void);
                desc.as_mut_ptr()
            }
            None => self.base as *mut c_void,
        }
    }
}

/// The token an accessor receives for calls of its own: an accessor that needs data of
/// the image that made the access (a vector subscript computed there, packed in the
/// additional data as a descriptor of that image's memory) calls `get_from_remote` back
/// with this token. `memptr` is the additional data here; `origin` says where it came
/// from when the accessor runs in the owner's service thread: the caller's rank and its
/// address of the additional data (valid while the caller waits for the reply).
#[repr(C)]
pub(crate) struct CallbackToken {
    /// Always [`token::CALLBACK_TOKEN`]: tells this token from a coarray's.
    kind: u64,
    memptr: *mut c_void,
    desc: *mut c_void,
    owning_memory: bool,
    /// The caller's job rank and address of the additional data.
    pub(crate) origin: Option<(u32, u64)>,
}

impl CallbackToken {
    /// The additional data here.
    pub(crate) fn memptr(&self) -> *mut c_void {
        self.memptr
    }
}

/// Runs `f` with a callback token over `add_data`.
#[inline]
pub(crate) fn with_callback<T>(
    add_data: *mut c_void,
    origin: Option<(u32, u64)>,
    f: impl FnOnce(*mut c_void) -> T,
) -> T {
    let mut token = CallbackToken {
        kind: token::CALLBACK_TOKEN,
        memptr: add_data,
        desc: std::ptr::null_mut(),
        owning_memory: false,
        origin,
    };
    f((&mut token as *mut CallbackToken).cast::<c_void>())
}

/// The callback token behind `token` when it is one an accessor received (a nested call),
/// else `None`.
///
/// # Safety
/// `token` is null, a coarray token, or a callback token whose accessor is still running
/// (gfortran passes no other).
#[inline]
pub(crate) unsafe fn callback<'a>(token: *mut c_void) -> Option<&'a CallbackToken> {
    // SAFETY: this function's contract; both kinds of token start with their kind.
    let is_callback = !token.is_null() && unsafe { token::kind(token) } == token::CALLBACK_TOKEN;
    // SAFETY: a live callback token: the accessor that received it is running.
    is_callback.then(|| unsafe { &*token.cast::<CallbackToken>() })
}

/// A getter's type (GCC's single.c: `getter_t`).
pub(crate) type Getter = unsafe extern "C" fn(
    *mut c_void,
    *const c_int,
    *mut c_void,
    *mut i32,
    *mut c_void,
    *mut c_void,
    usize,
    *mut usize,
    *const usize,
);
/// A receiver's type (GCC's single.c: `receiver_t`).
pub(crate) type Receiver = unsafe extern "C" fn(
    *mut c_void,
    *const c_int,
    *mut c_void,
    *const c_void,
    *mut c_void,
    usize,
    *const usize,
    *const usize,
);
pub(crate) type Presence =
    unsafe extern "C" fn(*mut c_void, *const c_int, *mut i32, *mut c_void, *mut c_void, usize);

/// Getter `index`, for a call that needs a getter.
///
/// # Safety
/// The compiler registered accessor `index` as a getter (the call names it as one).
#[inline]
pub(crate) unsafe fn getter(index: c_int) -> Option<Getter> {
    // SAFETY: this function's contract.
    table::accessor(index).map(|f| unsafe { std::mem::transmute::<AccessorFn, Getter>(f) })
}

/// Getter `index` of the finished table, without taking its lock ([`table::finished_accessor`]).
///
/// # Safety
/// As [`getter`].
#[inline(always)]
pub(crate) unsafe fn finished_getter(index: c_int) -> Option<Getter> {
    // SAFETY: this function's contract.
    table::finished_accessor(index).map(|f| unsafe { std::mem::transmute::<AccessorFn, Getter>(f) })
}

/// Receiver `index`, for a call that needs a receiver.
///
/// # Safety
/// The compiler registered accessor `index` as a receiver (the call names it as one).
#[inline]
pub(crate) unsafe fn receiver(index: c_int) -> Option<Receiver> {
    // SAFETY: this function's contract.
    table::accessor(index).map(|f| unsafe { std::mem::transmute::<AccessorFn, Receiver>(f) })
}

/// Receiver `index` of the finished table, without taking its lock ([`table::finished_accessor`]).
///
/// # Safety
/// As [`receiver`].
#[inline(always)]
pub(crate) unsafe fn finished_receiver(index: c_int) -> Option<Receiver> {
    // SAFETY: this function's contract.
    table::finished_accessor(index)
        .map(|f| unsafe { std::mem::transmute::<AccessorFn, Receiver>(f) })
}

/// Presence test `index`, for a call that needs one.
///
/// # Safety
/// The compiler registered accessor `index` as a presence test (the call names it as one).
#[inline]
pub(crate) unsafe fn presence(index: c_int) -> Option<Presence> {
    // SAFETY: this function's contract.
    table::accessor(index).map(|f| unsafe { std::mem::transmute::<AccessorFn, Presence>(f) })
}

fn lookup(index: c_int) -> Result<AccessorFn, CafError> {
    table::accessor(index)
        .ok_or_else(|| CafError::Argument(format!("no accessor has index {index}")))
}

fn opt_ptr(value: &mut Option<usize>) -> *mut usize {
    value
        .as_mut()
        .map_or(std::ptr::null_mut(), |v| v as *mut usize)
}

/// One accessor call's arguments besides the target.
pub(crate) struct Call<'a> {
    /// The accessor's index in the table.
    pub(crate) index: c_int,
    /// The data the compiler packed for it (indices, bounds).
    pub(crate) add_data: &'a mut [u8],
    /// The image index the access was made with (the accessor's `caller_image`).
    pub(crate) image: c_int,
    /// Character length of the destination, when the data is character.
    pub(crate) dst_charlen: Option<usize>,
    /// Character length of the source, when the data is character.
    pub(crate) src_charlen: Option<usize>,
    /// Where the additional data came from, when the accessor runs for another image.
    pub(crate) origin: Option<(u32, u64)>,
}

impl Call<'_> {
    fn add_data_ptr(&mut self) -> *mut c_void {
        if self.add_data.is_empty() {
            std::ptr::null_mut()
        } else {
            self.add_data.as_mut_ptr().cast()
        }
    }
}

/// Where a getter puts what it read.
pub(crate) enum Into {
    /// A scalar of this many bytes (for character: of one character, times the
    /// destination's length after the getter).
    Scalar(usize),
    /// An array: the destination's descriptor (the getter allocates the data).
    Array(Box<DescBuf>),
}

/// What a getter read, copied out of this process's memory.
pub(crate) struct Fetched {
    /// The elements, contiguous.
    pub(crate) data: Vec<u8>,
    /// For an array, the descriptor the getter filled (bounds of `data`); boxed, so that a
    /// scalar's result stays small where it is moved.
    pub(crate) desc: Option<Box<DescBuf>>,
    /// The destination's character length after the call.
    pub(crate) dst_charlen: Option<usize>,
}

/// Runs getter `call.index` against `target` into a fresh destination and copies the
/// result out.
///
/// # Safety
/// `target` is memory of this process holding the coarray part the accessor expects.
pub(crate) unsafe fn get(
    call: &mut Call<'_>,
    target: &mut Target,
    into: Into,
) -> Result<Fetched, CafError> {
    // SAFETY: an accessor the compiler registered as a getter for this call.
    let getter = unsafe { std::mem::transmute::<AccessorFn, Getter>(lookup(call.index)?) };
    let mut free_buffer: i32 = 0;
    let image = call.image;
    let add_data = call.add_data_ptr();
    let src = target.argument();
    let src_charlen = call.src_charlen;
    match into {
        Into::Scalar(bytes) => {
            let mut buffer: *mut c_void = std::ptr::null_mut();
            let origin = call.origin;
            // SAFETY: the arguments a getter takes, as GCC's single.c passes them.
            with_callback(add_data, origin, |token| unsafe {
                getter(
                    add_data,
                    &image,
                    (&mut buffer as *mut *mut c_void).cast(),
                    &mut free_buffer,
                    src,
                    token,
                    0,
                    opt_ptr(&mut call.dst_charlen),
                    src_charlen.as_ref().map_or(std::ptr::null(), |v| v),
                )
            });
            // For character data gfortran passes the bytes of one character.
            let bytes = bytes * call.dst_charlen.unwrap_or(1);
            let data = if buffer.is_null() {
                vec![0; bytes]
            } else {
                // SAFETY: the getter points `buffer` at `bytes` readable bytes.
                unsafe { std::slice::from_raw_parts(buffer.cast::<u8>(), bytes) }.to_vec()
            };
            if free_buffer != 0 && !buffer.is_null() {
                // SAFETY: the getter allocated the buffer with malloc and said so.
                unsafe { libc::free(buffer) };
            }
            Ok(Fetched {
                data,
                desc: None,
                dst_charlen: call.dst_charlen,
            })
        }
        Into::Array(desc) => {
            let mut desc = desc;
            desc.set_base(std::ptr::null_mut());
            let origin = call.origin;
            // SAFETY: as above; the getter allocates the destination's data.
            with_callback(add_data, origin, |token| unsafe {
                getter(
                    add_data,
                    &image,
                    desc.as_mut_ptr(),
                    &mut free_buffer,
                    src,
                    token,
                    0,
                    opt_ptr(&mut call.dst_charlen),
                    src_charlen.as_ref().map_or(std::ptr::null(), |v| v),
                )
            });
            let base = desc.base();
            let bytes = desc.elem_len() * desc.count();
            let data = if base.is_null() || bytes == 0 {
                Vec::new()
            } else {
                // SAFETY: the getter allocated `count` contiguous elements at `base`.
                unsafe { std::slice::from_raw_parts(base.cast::<u8>(), bytes) }.to_vec()
            };
            if free_buffer != 0 && !base.is_null() {
                // SAFETY: allocated by the getter with malloc, as it says.
                unsafe { libc::free(base) };
            }
            desc.set_base(std::ptr::null_mut());
            Ok(Fetched {
                data,
                desc: Some(desc),
                dst_charlen: call.dst_charlen,
            })
        }
    }
}

/// What a receiver stores: a scalar's bytes, or contiguous elements and their descriptor.
pub(crate) struct Sent {
    /// The elements, contiguous.
    pub(crate) data: Vec<u8>,
    /// For an array, its descriptor (made contiguous; boxed, as [`Fetched`]'s).
    pub(crate) desc: Option<Box<DescBuf>>,
}

/// Runs receiver `call.index`: stores `sent` into `target`.
///
/// # Safety
/// As [`get`].
pub(crate) unsafe fn send(
    call: &mut Call<'_>,
    target: &mut Target,
    sent: &mut Sent,
) -> Result<(), CafError> {
    // SAFETY: an accessor the compiler registered as a receiver for this call.
    let receiver = unsafe { std::mem::transmute::<AccessorFn, Receiver>(lookup(call.index)?) };
    let data_ptr = sent.data.as_mut_ptr().cast::<c_void>();
    let src: *const c_void = match &mut sent.desc {
        Some(desc) => {
            desc.set_base(data_ptr);
            desc.as_mut_ptr()
        }
        None => data_ptr,
    };
    let image = call.image;
    let add_data = call.add_data_ptr();
    let dst = target.argument();
    let origin = call.origin;
    // SAFETY: the arguments a receiver takes, as GCC's single.c passes them.
    with_callback(add_data, origin, |token| unsafe {
        receiver(
            add_data,
            &image,
            dst,
            src,
            token,
            0,
            call.dst_charlen.as_ref().map_or(std::ptr::null(), |v| v),
            call.src_charlen.as_ref().map_or(std::ptr::null(), |v| v),
        )
    });
    Ok(())
}

/// Runs presence test `call.index` on `target`: 1 when the component is allocated. A
/// coarray without descriptor is passed by the address of its address (`by_reference`,
/// GCC 16) or by its address (gfortran 15).
///
/// # Safety
/// As [`get`].
pub(crate) unsafe fn present(
    call: &mut Call<'_>,
    target: &mut Target,
    by_reference: bool,
) -> Result<i32, CafError> {
    // SAFETY: an accessor the compiler registered as a presence test for this call.
    let test = unsafe { std::mem::transmute::<AccessorFn, Presence>(lookup(call.index)?) };
    let mut base = target.base as *mut c_void;
    let arg: *mut c_void = match &mut target.desc {
        Some(desc) => {
            desc.set_base(base);
            desc.as_mut_ptr()
        }
        None if by_reference => (&mut base as *mut *mut c_void).cast(),
        None => base,
    };
    let mut result: i32 = 0;
    let image = call.image;
    let add_data = call.add_data_ptr();
    let origin = call.origin;
    // SAFETY: the arguments a presence test takes, as GCC's single.c passes them.
    with_callback(add_data, origin, |token| unsafe {
        test(add_data, &image, &mut result, arg, token, 0)
    });
    Ok(result)
}

/// Runs getter `call.index` against `target` into the caller's own destination `dst` (a
/// descriptor, or the address of a data pointer), as GCC's single.c does: the destination
/// is this process's. Returns whether the getter allocated the data it left in `dst`.
///
/// # Safety
/// As [`get`]; `dst` and the character lengths are what gfortran passed for this call.
pub(crate) unsafe fn get_in_place(
    call: &mut Call<'_>,
    target: &mut Target,
    dst: *mut c_void,
    dst_charlen: *mut usize,
    src_charlen: *const usize,
) -> Result<bool, CafError> {
    // SAFETY: an accessor the compiler registered as a getter for this call.
    let getter = unsafe { std::mem::transmute::<AccessorFn, Getter>(lookup(call.index)?) };
    let mut free_buffer: i32 = 0;
    let image = call.image;
    let add_data = call.add_data_ptr();
    let src = target.argument();
    let origin = call.origin;
    // SAFETY: the arguments a getter takes, as GCC's single.c passes them.
    with_callback(add_data, origin, |token| unsafe {
        getter(
            add_data,
            &image,
            dst,
            &mut free_buffer,
            src,
            token,
            0,
            dst_charlen,
            src_charlen,
        )
    });
    Ok(free_buffer != 0)
}

/// Runs receiver `call.index`: stores the caller's `src` (a descriptor or the data) into
/// `target`.
///
/// # Safety
/// As [`get_in_place`].
pub(crate) unsafe fn send_in_place(
    call: &mut Call<'_>,
    target: &mut Target,
    src: *const c_void,
    dst_charlen: *const usize,
    src_charlen: *const usize,
) -> Result<(), CafError> {
    // SAFETY: an accessor the compiler registered as a receiver for this call.
    let receiver = unsafe { std::mem::transmute::<AccessorFn, Receiver>(lookup(call.index)?) };
    let image = call.image;
    let add_data = call.add_data_ptr();
    let dst = target.argument();
    let origin = call.origin;
    // SAFETY: the arguments a receiver takes, as GCC's single.c passes them.
    with_callback(add_data, origin, |token| unsafe {
        receiver(
            add_data,
            &image,
            dst,
            src,
            token,
            0,
            dst_charlen,
            src_charlen,
        )
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rank-2 descriptor of 4-byte elements, bounds (lower, upper) per dimension.
    fn rank2(bounds: [(i64, i64); 2], strides: [i64; 2]) -> DescBuf {
        let mut d = DescBuf::zeroed();
        {
            let h = d.header_mut();
            h.dtype.elem_len = 4;
            h.dtype.rank = 2;
            h.dtype.type_code = 1;
        }
        for (i, ((lower, upper), stride)) in bounds.iter().zip(strides).enumerate() {
            let at = HEADER_BYTES + i * DIM_BYTES;
            d.0[at..at + 8].copy_from_slice(&stride.to_ne_bytes());
            d.0[at + 8..at + 16].copy_from_slice(&lower.to_ne_bytes());
            d.0[at + 16..at + 24].copy_from_slice(&upper.to_ne_bytes());
        }
        d
    }

    /// The copy `in_place_destination` makes of `d` for a getter into an integer(4)
    /// coarray, if any.
    fn in_place(d: &mut DescBuf) -> Option<DescBuf> {
        let coarray = Dtype {
            elem_len: 4,
            version: 0,
            rank: 1,
            type_code: 1,
            attribute: 0,
        };
        let mut place = StackDescriptor::uninit();
        let desc = d.as_mut_ptr().cast::<Descriptor>();
        let null = std::ptr::null_mut();
        // SAFETY: a whole descriptor of rank 2, no character lengths.
        let out = unsafe { in_place_destination(Some(coarray), desc, null, null, &mut place) }?;
        // SAFETY: `in_place_destination` wrote a descriptor of rank 2 there.
        Some(unsafe { DescBuf::copy_of(out.cast()) }.unwrap())
    }

    #[test]
    fn a_dense_destination_is_filled_in_place_from_lower_bounds_one_and_no_other_is() {
        let mut dense = rank2([(0, 2), (-1, 0)], [1, 3]);
        dense.header_mut().span = 4;
        dense.set_base(0x1000 as *mut c_void);
        let rebased = in_place(&mut dense).expect("a dense destination is filled in place");
        let word = |d: &DescBuf, at: usize| i64::from_ne_bytes(d.0[at..at + 8].try_into().unwrap());
        // bounds (1, 3) and (1, 2), strides 1 and 3, and the offset of element (1, 1) at 0
        assert_eq!(word(&rebased, HEADER_BYTES + 8), 1);
        assert_eq!(word(&rebased, HEADER_BYTES + 16), 3);
        assert_eq!(word(&rebased, HEADER_BYTES + DIM_BYTES), 3);
        assert_eq!(word(&rebased, HEADER_BYTES + DIM_BYTES + 8), 1);
        assert_eq!(word(&rebased, HEADER_BYTES + DIM_BYTES + 16), 2);
        assert_eq!(rebased.header().offset, -4);
        assert_eq!(rebased.count(), dense.count());
        assert_eq!(rebased.base(), dense.base());
        assert_eq!(rebased.elem_len(), 4);
        let mut strided = rank2([(1, 3), (1, 2)], [2, 6]);
        strided.header_mut().span = 4;
        strided.set_base(0x1000 as *mut c_void);
        assert!(in_place(&mut strided).is_none());
        let mut wide_span = rank2([(1, 3), (1, 2)], [1, 3]);
        wide_span.header_mut().span = 8;
        wide_span.set_base(0x1000 as *mut c_void);
        assert!(in_place(&mut wide_span).is_none());
        let mut empty = rank2([(1, 0), (1, 2)], [1, 1]);
        empty.header_mut().span = 4;
        empty.set_base(0x1000 as *mut c_void);
        assert!(in_place(&mut empty).is_none());
        let mut unallocated = rank2([(1, 3), (1, 2)], [1, 3]);
        unallocated.header_mut().span = 4;
        assert!(in_place(&mut unallocated).is_none());
        let mut other_kind = rank2([(1, 3), (1, 2)], [1, 3]);
        other_kind.header_mut().span = 4;
        other_kind.header_mut().dtype.type_code = 3;
        other_kind.set_base(0x1000 as *mut c_void);
        assert!(in_place(&mut other_kind).is_none());
    }

    #[test]
    fn a_descriptor_made_contiguous_has_unit_strides_in_element_order() {
        let mut d = rank2([(2, 4), (0, 1)], [7, 100]);
        assert_eq!(d.count(), 6);
        assert_eq!(d.bytes().len(), HEADER_BYTES + 2 * DIM_BYTES);
        d.make_contiguous();
        let word = |at: usize| i64::from_ne_bytes(d.0[at..at + 8].try_into().unwrap());
        assert_eq!(word(HEADER_BYTES), 1);
        assert_eq!(word(HEADER_BYTES + DIM_BYTES), 3);
        // element (2, 0) at offset 0: offset + 2 * 1 + 0 * 3 == 0
        assert_eq!(d.header().offset, -2);
        assert_eq!(d.header().span, 4);
        let copy = DescBuf::from_bytes(d.bytes()).unwrap();
        assert_eq!(copy.bytes(), d.bytes());
        assert!(DescBuf::from_bytes(&[0; 8]).is_err());
    }
}
