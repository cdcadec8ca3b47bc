//! `send`, `get` and `sendget`: coindexed assignments, with vector subscripts and kind/type
//! conversion (the engine converts). Dense sides (scalars, whole arrays, contiguous
//! sections) go to the engine without building layouts; other regular sections in one call;
//! a side with a vector subscript goes element by element. A transfer to or from this image goes
//! through a temporary, so the local slice never aliases the coarray the engine writes.

use std::ffi::{c_int, c_void};

use gaspar::coarray::{Coarrays, Dim, Elem, Image, Section};

use crate::descriptor::{self, CafVector, Dense, Descriptor, Layout};
use crate::error::CafError;
use crate::runtime;
use crate::section::{self, elem, packed, remote_offset, Regular};
use crate::stat::StatArgs;
use crate::token::{self, Holds};

/// One side of a transfer on a coarray (or an allocatable component): token, byte offset of the first element, image,
/// layout and element type.
pub(crate) struct Remote<'a> {
    /// The allocation (a coarray's, or the component arena).
    pub(crate) token: &'a gaspar::coarray::Token,
    /// Byte offset of the first element in the image's part.
    pub(crate) offset: usize,
    /// The image.
    pub(crate) image: Image,
    /// The elements, relative to `offset`.
    pub(crate) layout: Layout,
    /// Their type.
    pub(crate) elem: Elem,
}

/// `x(...)[image] = src`: puts local `src` into the coarray section `dest`.
///
/// # Safety
/// gfortran's arguments: a registered token, descriptors it built, `dst_vector` null or one
/// entry per dimension of `dest`, `stat` null or writable.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_send(
    token: *mut c_void,
    offset: usize,
    image_index: c_int,
    dest: *mut Descriptor,
    dst_vector: *mut CafVector,
    src: *mut Descriptor,
    dst_kind: c_int,
    src_kind: c_int,
    _may_require_tmp: bool,
    stat: *mut c_int,
    _team: *mut c_void,
) {
    // SAFETY: gfortran's STAT= argument.
    let stat = unsafe { StatArgs::stat_only(stat) };
    runtime::statement("coindexed assignment", stat, |engine| {
        // SAFETY: gfortran's token and descriptors (this function's contract).
        let dense = unsafe {
            dense_transfer(
                engine,
                token,
                offset,
                image_index,
                dest,
                dst_vector,
                src,
                dst_kind,
                src_kind,
            )
        };
        if let Some(t) = dense {
            return t.put(engine);
        }
        // SAFETY: gfortran's token and descriptors (this function's contract).
        let remote = unsafe { remote(token, offset, image_index, dest, dst_vector, dst_kind)? };
        // SAFETY: gfortran's descriptor of the local source.
        let src_layout = unsafe { descriptor::read(src)? };
        let src_elem = elem(src_layout.type_code, src_kind)?;
        // SAFETY: `src` was read above, so it is a valid descriptor.
        let src_base = unsafe { (*src).base_addr };
        put_local(engine, &remote, src_base, &src_layout, src_elem)
    });
}

/// `dest = x(...)[image]`: gets the coarray section `src` into local `dest`.
///
/// # Safety
/// As [`_gfortran_caf_send`].
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_get(
    token: *mut c_void,
    offset: usize,
    image_index: c_int,
    src: *mut Descriptor,
    src_vector: *mut CafVector,
    dest: *mut Descriptor,
    src_kind: c_int,
    dst_kind: c_int,
    _may_require_tmp: bool,
    stat: *mut c_int,
) {
    // SAFETY: gfortran's STAT= argument.
    let stat = unsafe { StatArgs::stat_only(stat) };
    runtime::statement("coindexed reference", stat, |engine| {
        // SAFETY: gfortran's token and descriptors (this function's contract).
        let substring =
            unsafe { substring_source(engine, token, offset, src, dest, src_kind, dst_kind) };
        let src = substring
            .as_ref()
            .map_or(src, |cut| (cut as *const Descriptor).cast_mut());
        // SAFETY: gfortran's token and descriptors (this function's contract); `src` is
        // gfortran's or its copy above, with the same rank (0).
        let dense = unsafe {
            dense_transfer(
                engine,
                token,
                offset,
                image_index,
                src,
                src_vector,
                dest,
                src_kind,
                dst_kind,
            )
        };
        if let Some(t) = dense {
            return t.get(engine);
        }
        // SAFETY: gfortran's token and descriptors (this function's contract).
        let remote = unsafe { remote(token, offset, image_index, src, src_vector, src_kind)? };
        // SAFETY: gfortran's descriptor of the local destination.
        let dst_layout = unsafe { descriptor::read(dest)? };
        let dst_elem = elem(dst_layout.type_code, dst_kind)?;
        // SAFETY: `dest` was read above, so it is a valid descriptor.
        let dst_base = unsafe { (*dest).base_addr };
        get_local(engine, &remote, dst_base, &dst_layout, dst_elem)
    });
}

/// The source of a scalar character get, cut to its real length where gfortran lost it.
/// gfortran 12-14 pass a coindexed substring (`t = s[j](3:5)`) as the parent string: its
/// whole length as the element length, with the substring's start as the offset, so the
/// element runs past the coarray's end. GCC's single.c copies min(destination, source)
/// characters there; this cuts the source to what the destination holds and what the
/// coarray has after the offset (exact for `s[j](k:)` and for a destination no longer than
/// the substring). A copy of gfortran's descriptor with that length, or `None` when the
/// source needs no cut (or is not such a character scalar).
///
/// # Safety
/// `token` is null or registered; `src` and `dest` are null or gfortran's descriptors.
unsafe fn substring_source(
    engine: &Coarrays,
    token: *mut c_void,
    offset: usize,
    src: *const Descriptor,
    dest: *const Descriptor,
    src_kind: c_int,
    dst_kind: c_int,
) -> Option<Descriptor> {
    if token.is_null() || src_kind != dst_kind {
        return None;
    }
    // SAFETY: null or gfortran's descriptors (this function's contract).
    let (src_len, dst_len) = unsafe {
        (
            descriptor::scalar_character_len(src)?,
            descriptor::scalar_character_len(dest)?,
        )
    };
    // SAFETY: a registered token (this function's contract).
    let coarray = unsafe { token::borrow(token).ok()? }.data()?;
    let left = engine.len(coarray).checked_sub(offset)?;
    let kind = usize::try_from(src_kind).ok().filter(|&k| k > 0)?;
    let len = src_len.min(dst_len).min(left) / kind * kind;
    // SAFETY: as above; `scalar_character_len` found it a scalar.
    (len > 0 && len < src_len).then(|| unsafe { descriptor::scalar_with_len(src, len) })
}

/// `x(...)[i] = y(...)[j]`: copies between two coarray sections, neither necessarily here.
///
/// # Safety
/// As [`_gfortran_caf_send`], for both sides.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_sendget(
    dst_token: *mut c_void,
    dst_offset: usize,
    dst_image_index: c_int,
    dest: *mut Descriptor,
    dst_vector: *mut CafVector,
    src_token: *mut c_void,
    src_offset: usize,
    src_image_index: c_int,
    src: *mut Descriptor,
    src_vector: *mut CafVector,
    dst_kind: c_int,
    src_kind: c_int,
    _may_require_tmp: bool,
    stat: *mut c_int,
) {
    // SAFETY: gfortran's STAT= argument.
    let stat = unsafe { StatArgs::stat_only(stat) };
    runtime::statement("coindexed assignment", stat, |engine| {
        // SAFETY: gfortran's tokens and descriptors (this function's contract).
        let dst = unsafe {
            remote(
                dst_token,
                dst_offset,
                dst_image_index,
                dest,
                dst_vector,
                dst_kind,
            )?
        };
        // SAFETY: as above.
        let src = unsafe {
            remote(
                src_token,
                src_offset,
                src_image_index,
                src,
                src_vector,
                src_kind,
            )?
        };
        copy_remote(engine, &dst, &src)
    });
}

/// The hot path of `send` and `get`: dense elements on both sides (scalars, whole arrays,
/// contiguous sections), as many on each, no vector subscript, another image. The
/// engine's sections are built on the stack; the engine converts kinds where they differ.
struct DenseTransfer<'a> {
    token: &'a gaspar::coarray::Token,
    offset: usize,
    image: Image,
    remote: Dense,
    remote_elem: Elem,
    local: Dense,
    local_elem: Elem,
}

/// The dense transfer between a coarray side and a local side, `None` when the general
/// path must take it (which also names any error: nothing here builds one). A scalar
/// (`x[i] = v`, `v = x[i]`) is read from its rank-0 descriptors as plain values.
///
/// # Safety
/// As [`remote`]; `local` a descriptor gfortran built.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn dense_transfer<'a>(
    engine: &Coarrays,
    token: *mut c_void,
    offset: usize,
    image_index: c_int,
    remote: *const Descriptor,
    vector: *const CafVector,
    local: *const Descriptor,
    remote_kind: c_int,
    local_kind: c_int,
) -> Option<DenseTransfer<'a>> {
    if !vector.is_null() || token.is_null() {
        return None;
    }
    // SAFETY: gfortran's descriptors (caller's contract).
    let (remote, local) = unsafe { (descriptor::dense(remote)?, descriptor::dense(local)?) };
    let image = Image::try_from(image_index).ok().filter(|&i| i >= 1)?;
    if remote.count != local.count || image == engine.this_image() {
        return None;
    }
    // SAFETY: a non-null token gfortran registered (caller's contract).
    let token = unsafe { token::borrow(token).ok()? }.data()?;
    Some(DenseTransfer {
        token,
        offset,
        image,
        remote_elem: section::elem_of(remote.type_code, remote_kind)?,
        remote,
        local_elem: section::elem_of(local.type_code, local_kind)?,
        local,
    })
}

/// Dense elements as one engine dimension.
fn dense_dim(d: &Dense) -> [Dim; 1] {
    [Dim {
        extent: d.count,
        stride: d.elem_len as isize,
    }]
}

impl DenseTransfer<'_> {
    /// `remote = local`.
    #[inline(always)]
    fn put(&self, engine: &mut Coarrays) -> Result<(), CafError> {
        let (to, from) = (dense_dim(&self.remote), dense_dim(&self.local));
        // SAFETY: the local descriptor's dense elements, readable; Fortran does not touch
        // them during the call, and they are not the coarray's memory on the other image.
        let bytes =
            unsafe { std::slice::from_raw_parts(self.local.base.cast::<u8>(), self.local.bytes()) };
        engine.put(
            self.token,
            self.offset,
            self.image,
            &dense_section(&self.remote, &to),
            self.remote_elem,
            bytes,
            &dense_section(&self.local, &from),
            self.local_elem,
        )?;
        Ok(())
    }

    /// `local = remote`.
    #[inline(always)]
    fn get(&self, engine: &mut Coarrays) -> Result<(), CafError> {
        let (from, to) = (dense_dim(&self.remote), dense_dim(&self.local));
        // SAFETY: the local descriptor's dense elements, writable and not referenced
        // otherwise during the call.
        let out = unsafe {
            std::slice::from_raw_parts_mut(self.local.base.cast::<u8>(), self.local.bytes())
        };
        engine.get(
            self.token,
            self.offset,
            self.image,
            &dense_section(&self.remote, &from),
            self.remote_elem,
            out,
            &dense_section(&self.local, &to),
            self.local_elem,
        )?;
        Ok(())
    }
}

/// The engine's section of dense elements over `dims` (from [`dense_dim`]); one element
/// is a scalar section, which the engine checks without walking dimensions.
fn dense_section<'d>(d: &Dense, dims: &'d [Dim; 1]) -> Section<'d> {
    Section {
        elem_len: d.elem_len,
        start: 0,
        dims: if d.count == 1 { &[] } else { dims },
    }
}

/// Reads one coarray side of a transfer.
///
/// # Safety
/// `token` registered, `desc` and `vector` as gfortran builds them.
unsafe fn remote<'a>(
    token: *mut c_void,
    offset: usize,
    image_index: c_int,
    desc: *const Descriptor,
    vector: *const CafVector,
    kind: c_int,
) -> Result<Remote<'a>, CafError> {
    // SAFETY: caller's contract.
    let token = unsafe { token::borrow(token)? }.memory_of(Holds::Data)?;
    // SAFETY: caller's contract.
    let layout = unsafe { descriptor::read_with_vector(desc, vector)? };
    let elem = elem(layout.type_code, kind)?;
    Ok(Remote {
        token,
        offset,
        image: token::image(image_index)?,
        layout,
        elem,
    })
}

/// The number of source elements must match the destination's, unless the source is a
/// scalar (assigned to every element).
fn broadcast(dst: &Layout, src: &Layout) -> Result<Option<usize>, CafError> {
    let (n, m) = (dst.count(), src.count());
    if src.dims.is_empty() {
        return Ok(Some(n));
    }
    if n != m {
        return Err(CafError::Descriptor(format!(
            "{m} source elements for {n} destination elements"
        )));
    }
    Ok(None)
}

/// Puts local memory (first element at `base`) into a remote side.
pub(crate) fn put_local(
    engine: &mut Coarrays,
    dst: &Remote<'_>,
    base: *const c_void,
    src_layout: &Layout,
    src_elem: Elem,
) -> Result<(), CafError> {
    let spread = broadcast(&dst.layout, src_layout)?;
    if dst.layout.count() == 0 {
        return Ok(());
    }
    let src = Regular::of(src_layout, spread).expect("a descriptor alone is regular");
    // SAFETY: `base` is the first element of the local descriptor gfortran passed, laid
    // out as its layout says; Fortran does not touch it during the call.
    let bytes = unsafe { section::local(base, &src) };
    let own_copy;
    let bytes = if dst.image == engine.this_image() {
        own_copy = bytes.to_vec();
        &own_copy[..]
    } else {
        bytes
    };
    match Regular::of(&dst.layout, None) {
        Some(d) => engine.put(
            dst.token,
            remote_offset(dst.offset, d.low)?,
            dst.image,
            &d.section(),
            dst.elem,
            bytes,
            &src.section(),
            src_elem,
        )?,
        None => {
            let packed_src = pack(bytes, &src, src_layout, spread)?;
            put_each(engine, dst, &packed_src, src_layout.elem_len, src_elem)?;
        }
    }
    Ok(())
}

/// Gets a remote side into local memory (first element at `base`).
pub(crate) fn get_local(
    engine: &mut Coarrays,
    src: &Remote<'_>,
    base: *mut c_void,
    dst_layout: &Layout,
    dst_elem: Elem,
) -> Result<(), CafError> {
    broadcast(dst_layout, &src.layout)?;
    if dst_layout.count() == 0 {
        return Ok(());
    }
    let dst = Regular::of(dst_layout, None).expect("a descriptor alone is regular");
    // SAFETY: `base` is the first element of the local destination descriptor gfortran
    // passed, writable, and Fortran does not touch it during the call.
    let out = unsafe { section::local_mut(base, &dst) };
    let mut own_copy;
    let out = if src.image == engine.this_image() {
        own_copy = out.to_vec();
        &mut own_copy[..]
    } else {
        out
    };
    match Regular::of(&src.layout, None) {
        Some(s) => engine.get(
            src.token,
            remote_offset(src.offset, s.low)?,
            src.image,
            &s.section(),
            src.elem,
            out,
            &dst.section(),
            dst_elem,
        )?,
        None => {
            let scalar = Regular::of(&Layout::scalar(dst.elem_len, dst_layout.type_code), None)
                .expect("scalars are regular");
            let from = Regular::of(
                &Layout::scalar(src.layout.elem_len, src.layout.type_code),
                None,
            )
            .expect("scalars are regular");
            let first = -dst.low;
            for (s, d) in src.layout.offsets().into_iter().zip(dst_layout.offsets()) {
                let at = (first + d) as usize;
                engine.get(
                    src.token,
                    remote_offset(src.offset, s)?,
                    src.image,
                    &from.section(),
                    src.elem,
                    &mut out[at..at + dst.elem_len],
                    &scalar.section(),
                    dst_elem,
                )?;
            }
        }
    }
    if src.image == engine.this_image() {
        // SAFETY: as above; the engine is done with the copy.
        unsafe { section::local_mut(base, &dst) }.copy_from_slice(out);
    }
    Ok(())
}

/// Third-party copy: one engine call for regular sections, else through a packed
/// temporary (gathered without conversion, scattered with it).
pub(crate) fn copy_remote(
    engine: &mut Coarrays,
    dst: &Remote<'_>,
    src: &Remote<'_>,
) -> Result<(), CafError> {
    let spread = broadcast(&dst.layout, &src.layout)?;
    if dst.layout.count() == 0 {
        return Ok(());
    }
    if let (Some(d), Some(s)) = (
        Regular::of(&dst.layout, None),
        Regular::of(&src.layout, spread),
    ) {
        engine.copy(
            dst.token,
            remote_offset(dst.offset, d.low)?,
            dst.image,
            &d.section(),
            dst.elem,
            src.token,
            remote_offset(src.offset, s.low)?,
            src.image,
            &s.section(),
            src.elem,
        )?;
        return Ok(());
    }
    let gathered = gather(engine, src)?;
    let len = src.layout.elem_len;
    let gathered = match spread {
        Some(n) => gathered.repeat(n),
        None => gathered,
    };
    put_each(engine, dst, &gathered, len, src.elem)
}

/// A remote side's elements packed in array element order, unconverted.
fn gather(engine: &mut Coarrays, src: &Remote<'_>) -> Result<Vec<u8>, CafError> {
    let len = src.layout.elem_len;
    let count = src.layout.count();
    let mut out = vec![0u8; len * count];
    if let Some(s) = Regular::of(&src.layout, None) {
        let to = packed(len, count);
        engine.get(
            src.token,
            remote_offset(src.offset, s.low)?,
            src.image,
            &s.section(),
            src.elem,
            &mut out,
            &to.section(),
            src.elem,
        )?;
        return Ok(out);
    }
    let one = packed(len, 1);
    for (i, o) in src.layout.offsets().into_iter().enumerate() {
        engine.get(
            src.token,
            remote_offset(src.offset, o)?,
            src.image,
            &one.section(),
            src.elem,
            &mut out[i * len..(i + 1) * len],
            &one.section(),
            src.elem,
        )?;
    }
    Ok(out)
}

/// Puts packed elements (`src_len` bytes each, type `src_elem`) to every element of a
/// remote side, one call per element.
fn put_each(
    engine: &mut Coarrays,
    dst: &Remote<'_>,
    packed_src: &[u8],
    src_len: usize,
    src_elem: Elem,
) -> Result<(), CafError> {
    let to = packed(dst.layout.elem_len, 1);
    let from = packed(src_len, 1);
    for (i, o) in dst.layout.offsets().into_iter().enumerate() {
        engine.put(
            dst.token,
            remote_offset(dst.offset, o)?,
            dst.image,
            &to.section(),
            dst.elem,
            &packed_src[i * src_len..(i + 1) * src_len],
            &from.section(),
            src_elem,
        )?;
    }
    Ok(())
}

/// Local elements packed in array element order (a scalar repeated `spread` times).
fn pack(
    bytes: &[u8],
    regular: &Regular,
    layout: &Layout,
    spread: Option<usize>,
) -> Result<Vec<u8>, CafError> {
    let len = layout.elem_len;
    let first = -regular.low;
    let mut out = Vec::with_capacity(len * layout.count().max(spread.unwrap_or(1)));
    for o in layout.offsets() {
        let at = usize::try_from(first + o)
            .map_err(|_| CafError::Descriptor("element before its section".into()))?;
        out.extend_from_slice(&bytes[at..at + len]);
    }
    Ok(match spread {
        Some(n) => out.repeat(n),
        None => out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::descriptor::{Positions, TypeCode};

    fn ints(dims: Vec<Positions>) -> Layout {
        Layout {
            elem_len: 4,
            type_code: TypeCode::Integer,
            dims,
        }
    }

    #[test]
    fn a_scalar_source_spreads_over_the_destination() {
        let dst = ints(vec![Positions::Regular {
            extent: 5,
            stride: 4,
        }]);
        let scalar = Layout::scalar(4, TypeCode::Integer);
        assert_eq!(broadcast(&dst, &scalar).unwrap(), Some(5));
        assert_eq!(broadcast(&dst, &dst).unwrap(), None);
        let three = ints(vec![Positions::List(vec![0, 8, 4])]);
        assert!(broadcast(&dst, &three).is_err());
    }

    #[test]
    fn pack_walks_a_reversed_section_in_element_order() {
        // Three integers at byte strides of -4, the first element at the highest address.
        let layout = ints(vec![Positions::Regular {
            extent: 3,
            stride: -4,
        }]);
        let regular = Regular::of(&layout, None).unwrap();
        let bytes: Vec<u8> = [7u32, 8, 9].iter().flat_map(|v| v.to_le_bytes()).collect();
        let packed = pack(&bytes, &regular, &layout, None).unwrap();
        let values: Vec<u32> = packed
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(values, vec![9, 8, 7]);
    }

    #[test]
    fn pack_repeats_a_scalar() {
        let scalar = Layout::scalar(4, TypeCode::Integer);
        let regular = Regular::of(&scalar, Some(3)).unwrap();
        let packed = pack(&5u32.to_le_bytes(), &regular, &scalar, Some(3)).unwrap();
        assert_eq!(packed.len(), 12);
        assert_eq!(&packed[8..], &5u32.to_le_bytes());
    }
}
