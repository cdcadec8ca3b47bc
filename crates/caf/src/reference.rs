//! gfortran's reference chains (`caf_reference_t`): how `b[k]%vals(2:3)` names remote
//! memory when a derived-type coarray has allocatable components. A chain is resolved
//! against the remote image: components add their offsets, an allocatable component's
//! descriptor (or data pointer) is read from the remote image and leads into its part of
//! the component arena, and one array reference selects the elements.

use std::ffi::{c_int, c_void};

use gaspar::coarray::{Coarrays, Elem, ElemType, Image, Token};

use crate::component::ComponentHeap;
use crate::descriptor::{self, DescDim, Layout, Positions, TypeCode, MAX_RANK};
use crate::error::CafError;
use crate::section::packed;
use crate::token::{CafToken, Holds};
use crate::transfer::Remote;

/// `caf_reference_t`.
#[repr(C)]
pub(crate) struct CafReference {
    /// The next reference, or null.
    pub(crate) next: *const CafReference,
    /// 0 component, 1 array (with a descriptor), 2 static array.
    pub(crate) ref_type: c_int,
    /// Bytes of the item referenced (array refs: of one element).
    pub(crate) item_size: usize,
    /// The reference itself.
    pub(crate) u: ReferenceUnion,
}

/// The two kinds of reference.
#[repr(C)]
pub(crate) union ReferenceUnion {
    /// A component.
    pub(crate) c: ComponentRef,
    /// An array reference.
    pub(crate) a: std::mem::ManuallyDrop<ArrayRef>,
}

/// A component reference.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct ComponentRef {
    /// Byte offset of the component in its derived type.
    pub(crate) offset: isize,
    /// Byte offset of the component's token; 0 for a plain component.
    pub(crate) caf_token_offset: isize,
}

/// An array reference: one mode per dimension, ended by `MODE_NONE`.
#[repr(C)]
pub(crate) struct ArrayRef {
    /// `CAF_ARR_REF_*` per dimension.
    pub(crate) mode: [u8; MAX_RANK],
    /// Type of a static array.
    pub(crate) static_array_type: c_int,
    /// Subscripts per dimension.
    pub(crate) dim: [ArrayDimRef; MAX_RANK],
}

/// One dimension's subscript.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) union ArrayDimRef {
    /// A range, a single subscript or an open range.
    pub(crate) s: RangeRef,
    /// A vector subscript.
    pub(crate) v: VectorRef,
}

/// `start:end:stride` (declared indices).
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct RangeRef {
    /// First index.
    pub(crate) start: isize,
    /// Last index.
    pub(crate) end: isize,
    /// Step.
    pub(crate) stride: isize,
}

/// A vector subscript.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct VectorRef {
    /// The indices.
    pub(crate) vector: *const c_void,
    /// How many.
    pub(crate) nvec: usize,
    /// Their integer kind.
    pub(crate) kind: c_int,
}

const REF_COMPONENT: c_int = 0;
const REF_ARRAY: c_int = 1;
const REF_STATIC_ARRAY: c_int = 2;
const MODE_NONE: u8 = 0;
const MODE_VECTOR: u8 = 1;
const MODE_FULL: u8 = 2;
const MODE_RANGE: u8 = 3;
const MODE_SINGLE: u8 = 4;
const MODE_OPEN_END: u8 = 5;
const MODE_OPEN_START: u8 = 6;

/// Where a chain leads on the remote image.
pub(crate) enum Target {
    /// The elements the chain selects.
    Found {
        /// In the coarray (false) or the component arena (true).
        in_arena: bool,
        /// Byte offset of the first element.
        offset: usize,
        /// The selected elements relative to `offset`.
        layout: Layout,
        /// Extents of the array reference's dimensions that are not single subscripts
        /// (the shape of the result).
        shape: Vec<usize>,
    },
    /// An allocatable component on the way is not allocated.
    Unallocated,
}

/// Resolves `refs` on `image`, starting at offset 0 of `coarray`'s part.
///
/// # Safety
/// `refs` is a chain gfortran built (non-null, each `next` null or valid); the coarray's
/// registered descriptor, when not null, is live.
pub(crate) unsafe fn resolve(
    engine: &mut Coarrays,
    mut heap: Option<&mut ComponentHeap>,
    coarray: &CafToken,
    image: Image,
    refs: *const CafReference,
    type_code: TypeCode,
) -> Result<Target, CafError> {
    let token = coarray.memory_of(Holds::Data)?;
    if refs.is_null() {
        return Err(CafError::Descriptor("empty reference chain".into()));
    }
    let mut in_arena = false;
    let mut offset: isize = 0;
    let mut dims: Vec<Positions> = Vec::new();
    let mut shape = Vec::new();
    let mut elem_len = 0usize;
    // SAFETY: the registered descriptor is live (this function's contract).
    let mut array_desc = unsafe { registered_dims(coarray.desc) };
    let mut r = refs;
    while !r.is_null() {
        // SAFETY: a reference gfortran built (this function's contract).
        let reference = unsafe { &*r };
        // SAFETY: `next` is null or the next reference of the chain.
        let next = unsafe { reference.next.as_ref() };
        elem_len = reference.item_size;
        match reference.ref_type {
            REF_COMPONENT => {
                // SAFETY: `ref_type` 0 means gfortran wrote the component member.
                let c = unsafe { reference.u.c };
                offset += c.offset;
                let next_is_array = next.is_some_and(|n| n.ref_type == REF_ARRAY);
                if c.caf_token_offset != 0 || next_is_array {
                    if !dims.is_empty() {
                        return Err(CafError::Unsupported(
                            "a reference through an allocatable component of an array element"
                                .into(),
                        ));
                    }
                    let arena = heap.as_deref_mut().ok_or_else(|| {
                        CafError::Argument("an allocatable component was never registered".into())
                    })?;
                    let region = if in_arena { &arena.token } else { token };
                    let at = usize::try_from(offset)
                        .map_err(|_| CafError::Descriptor("negative component offset".into()))?;
                    let (addr, desc) = if next_is_array {
                        let (addr, desc) = read_descriptor(engine, region, image, at)?;
                        (addr, Some(desc))
                    } else {
                        (read_word(engine, region, image, at)?, None)
                    };
                    if addr == 0 {
                        return Ok(Target::Unallocated);
                    }
                    offset = arena.offset_of(engine, image, addr)? as isize;
                    in_arena = true;
                    array_desc = desc;
                }
            }
            REF_ARRAY => {
                let desc = array_desc.take().ok_or_else(|| {
                    CafError::Descriptor("array reference without a descriptor".into())
                })?;
                if !dims.is_empty() {
                    return Err(CafError::Unsupported(
                        "two array references in one chain".into(),
                    ));
                }
                // SAFETY: `ref_type` 1 means gfortran wrote the array member.
                let a = unsafe { &reference.u.a };
                for (i, d) in desc.iter().enumerate() {
                    let mode = a.mode[i];
                    if mode == MODE_NONE {
                        break;
                    }
                    let unit = d.stride * reference.item_size as isize;
                    // SAFETY: the mode says which member of the dimension gfortran wrote.
                    let (first, positions) = unsafe { dimension(mode, &a.dim[i], d, unit)? };
                    offset += first;
                    if mode != MODE_SINGLE {
                        shape.push(positions.len());
                        dims.push(positions);
                    }
                }
            }
            REF_STATIC_ARRAY => {
                if !dims.is_empty() {
                    return Err(CafError::Unsupported(
                        "two array references in one chain".into(),
                    ));
                }
                // SAFETY: `ref_type` 2 means gfortran wrote the array member.
                let a = unsafe { &reference.u.a };
                for i in 0..MAX_RANK {
                    let mode = a.mode[i];
                    if mode == MODE_NONE {
                        break;
                    }
                    // SAFETY: the mode says which member of the dimension gfortran wrote.
                    let (first, positions) =
                        unsafe { static_dimension(mode, &a.dim[i], reference.item_size as isize)? };
                    offset += first;
                    if mode != MODE_SINGLE {
                        shape.push(positions.len());
                        dims.push(positions);
                    }
                }
            }
            other => return Err(CafError::Descriptor(format!("reference type {other}"))),
        }
        r = reference.next;
    }
    let offset = usize::try_from(offset)
        .map_err(|_| CafError::Descriptor("reference before its coarray".into()))?;
    Ok(Target::Found {
        in_arena,
        offset,
        layout: Layout {
            elem_len,
            type_code,
            dims,
        },
        shape,
    })
}

/// The dimensions of the descriptor a coarray was registered with, if it is an array.
///
/// # Safety
/// `desc` is null or a live descriptor gfortran built.
unsafe fn registered_dims(desc: *const descriptor::Descriptor) -> Option<Vec<DescDim>> {
    if desc.is_null() {
        return None;
    }
    // SAFETY: a live descriptor (caller's contract).
    let d = unsafe { &*desc };
    let rank = usize::try_from(d.dtype.rank)
        .ok()
        .filter(|&r| r > 0 && r <= MAX_RANK)?;
    // SAFETY: `rank` dimensions follow the descriptor.
    Some(unsafe { std::slice::from_raw_parts(d.dim.as_ptr(), rank) }.to_vec())
}

/// The first element's byte offset and the positions one dimension of an array reference
/// selects, in a dimension with bounds `d` and elements `unit` bytes apart.
///
/// # Safety
/// `mode` names the member of `dim` gfortran wrote; a vector holds `nvec` integers.
unsafe fn dimension(
    mode: u8,
    dim: &ArrayDimRef,
    d: &DescDim,
    unit: isize,
) -> Result<(isize, Positions), CafError> {
    // A subscript outside the dimension's bounds would reach another component's or
    // another array's memory on the image (an array reference of a coarray or of an
    // allocatable component, whose bounds the descriptor gives).
    let inside = |subscript: isize| {
        if (d.lower_bound..=d.upper_bound).contains(&subscript) {
            Ok(())
        } else {
            Err(CafError::Argument(format!(
                "subscript {subscript} is outside the bounds {}:{} of the array",
                d.lower_bound, d.upper_bound
            )))
        }
    };
    let range = |start: isize, end: isize, stride: isize| {
        if stride == 0 {
            return Err(CafError::Descriptor("array reference with stride 0".into()));
        }
        let count = ((end - start) / stride + 1).max(0) as usize;
        if count > 0 {
            inside(start)?;
            inside(start + (count as isize - 1) * stride)?;
        }
        Ok((
            (start - d.lower_bound) * unit,
            Positions::Regular {
                extent: count,
                stride: stride * unit,
            },
        ))
    };
    match mode {
        MODE_VECTOR => {
            // SAFETY: vector mode: gfortran wrote the vector member.
            let v = unsafe { dim.v };
            // SAFETY: the vector holds `nvec` integers of its kind.
            let subscripts = unsafe { descriptor::read_integers(v.vector, v.nvec, v.kind)? };
            for &s in &subscripts {
                inside(s as isize)?;
            }
            Ok((
                0,
                Positions::List(
                    subscripts
                        .into_iter()
                        .map(|s| (s as isize - d.lower_bound) * unit)
                        .collect(),
                ),
            ))
        }
        _ => {
            // SAFETY: every other mode: gfortran wrote the range member.
            let s = unsafe { dim.s };
            match mode {
                MODE_FULL => range(d.lower_bound, d.upper_bound, s.stride.max(1)),
                MODE_RANGE => range(s.start, s.end, s.stride),
                MODE_SINGLE => range(s.start, s.start, 1),
                MODE_OPEN_END => range(s.start, d.upper_bound, s.stride),
                MODE_OPEN_START => range(d.lower_bound, s.end, s.stride),
                other => Err(CafError::Descriptor(format!(
                    "array reference mode {other}"
                ))),
            }
        }
    }
}

/// As [`dimension`] for an array component without a descriptor: gfortran gives the
/// subscripts 0-based and already multiplied by the dimension's stride (in elements of
/// `item` bytes); no vector subscripts.
///
/// # Safety
/// As [`dimension`].
unsafe fn static_dimension(
    mode: u8,
    dim: &ArrayDimRef,
    item: isize,
) -> Result<(isize, Positions), CafError> {
    // SAFETY: the modes below say gfortran wrote the range member (gfortran 12 stops with
    // an internal error before it emits a vector subscript here).
    let s = unsafe { dim.s };
    let (start, end, stride) = match mode {
        MODE_FULL => (0, s.end, s.stride),
        MODE_RANGE => (s.start, s.end, s.stride),
        MODE_SINGLE => (s.start, s.start, 1),
        other => {
            return Err(CafError::Descriptor(format!(
                "array reference mode {other} on an array without descriptor"
            )))
        }
    };
    if stride == 0 {
        return Err(CafError::Descriptor("array reference with stride 0".into()));
    }
    let count = ((end - start) / stride + 1).max(0) as usize;
    Ok((
        start * item,
        Positions::Regular {
            extent: count,
            stride: stride * item,
        },
    ))
}

/// Bytes as the engine moves them untouched.
fn bytes_elem() -> Elem {
    Elem {
        ty: ElemType::Derived,
        kind: 0,
    }
}

/// Reads `len` bytes at `offset` of `image`'s part of `token`.
fn read_bytes(
    engine: &mut Coarrays,
    token: &Token,
    image: Image,
    offset: usize,
    len: usize,
) -> Result<Vec<u8>, CafError> {
    let mut out = vec![0u8; len];
    let one = packed(len, 1);
    engine.get(
        token,
        offset,
        image,
        &one.section(),
        bytes_elem(),
        &mut out,
        &one.section(),
        bytes_elem(),
    )?;
    Ok(out)
}

/// Reads a pointer-sized word (a scalar allocatable component's data pointer).
fn read_word(
    engine: &mut Coarrays,
    token: &Token,
    image: Image,
    offset: usize,
) -> Result<usize, CafError> {
    let b = read_bytes(engine, token, image, offset, 8)?;
    Ok(u64::from_le_bytes(b.try_into().expect("8 bytes read")) as usize)
}

/// Reads a remote array descriptor: its data address and dimensions.
fn read_descriptor(
    engine: &mut Coarrays,
    token: &Token,
    image: Image,
    offset: usize,
) -> Result<(usize, Vec<DescDim>), CafError> {
    const HEAD: usize = std::mem::size_of::<descriptor::Descriptor>();
    const DIM: usize = std::mem::size_of::<DescDim>();
    let head = read_bytes(engine, token, image, offset, HEAD)?;
    let word = |at: usize| i64::from_le_bytes(head[at..at + 8].try_into().expect("8 bytes"));
    let addr = word(0) as usize;
    // `dtype.rank` is the byte after elem_len (8) and version (4).
    let rank = head[28] as i8;
    if !(0..=MAX_RANK as i8).contains(&rank) {
        return Err(CafError::Descriptor(format!(
            "remote descriptor rank {rank}"
        )));
    }
    let raw = read_bytes(engine, token, image, offset + HEAD, DIM * rank as usize)?;
    let dims = raw
        .chunks_exact(DIM)
        .map(|c| {
            let w = |at: usize| i64::from_le_bytes(c[at..at + 8].try_into().expect("8 bytes"));
            DescDim {
                stride: w(0) as isize,
                lower_bound: w(8) as isize,
                upper_bound: w(16) as isize,
            }
        })
        .collect();
    Ok((addr, dims))
}

/// The remote side of a by-reference transfer, with its token chosen.
pub(crate) fn remote<'a>(
    heap: Option<&'a ComponentHeap>,
    token: &'a Token,
    image: Image,
    target: Target,
    kind: c_int,
) -> Result<(Remote<'a>, Vec<usize>), CafError> {
    match target {
        Target::Unallocated => Err(CafError::Argument(
            "the remote allocatable component is not allocated".into(),
        )),
        Target::Found {
            in_arena,
            offset,
            layout,
            shape,
        } => {
            let elem = crate::section::elem(layout.type_code, kind)?;
            let token = match (in_arena, heap) {
                (false, _) => token,
                (true, Some(heap)) => &heap.token,
                (true, None) => unreachable!("a chain reaches the arena only through it"),
            };
            Ok((
                Remote {
                    token,
                    offset,
                    image,
                    layout,
                    elem,
                },
                shape,
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_layout_matches_libcaf_h() {
        assert_eq!(std::mem::size_of::<ArrayDimRef>(), 24);
        assert_eq!(std::mem::size_of::<ArrayRef>(), 24 + 15 * 24);
        assert_eq!(std::mem::offset_of!(CafReference, u), 24);
    }

    fn dim(lower: isize, upper: isize) -> DescDim {
        DescDim {
            stride: 1,
            lower_bound: lower,
            upper_bound: upper,
        }
    }

    #[test]
    fn static_array_subscripts_are_prescaled() {
        let s = |start, end, stride| ArrayDimRef {
            s: RangeRef { start, end, stride },
        };
        // SAFETY: range modes with the range member written.
        unsafe {
            // arr(1, 2:3) of arr(4, 3): the second dimension's subscripts times 4.
            let (first, p) = static_dimension(MODE_RANGE, &s(4, 8, 4), 4).unwrap();
            assert_eq!((first, p.len(), p.at(1)), (16, 2, 16));
            let (first, p) = static_dimension(MODE_SINGLE, &s(3, 0, 0), 4).unwrap();
            assert_eq!((first, p.len()), (12, 1));
            let (first, p) = static_dimension(MODE_FULL, &s(0, 8, 4), 4).unwrap();
            assert_eq!((first, p.len()), (0, 3));
            assert!(static_dimension(MODE_OPEN_END, &s(0, 8, 4), 4).is_err());
        }
    }

    #[test]
    fn array_reference_modes() {
        let d = dim(1, 10);
        let s = |start, end, stride| ArrayDimRef {
            s: RangeRef { start, end, stride },
        };
        // SAFETY: range modes with the range member written.
        unsafe {
            let (first, p) = dimension(MODE_FULL, &s(0, 0, 1), &d, 4).unwrap();
            assert_eq!((first, p.len()), (0, 10));
            let (first, p) = dimension(MODE_RANGE, &s(3, 9, 3), &d, 4).unwrap();
            assert_eq!((first, p.len(), p.at(1)), (8, 3, 12));
            let (first, p) = dimension(MODE_SINGLE, &s(5, 0, 0), &d, 4).unwrap();
            assert_eq!((first, p.len()), (16, 1));
            let (first, p) = dimension(MODE_OPEN_END, &s(8, 0, 1), &d, 4).unwrap();
            assert_eq!((first, p.len()), (28, 3));
            let (first, p) = dimension(MODE_OPEN_START, &s(0, 2, 1), &d, 4).unwrap();
            assert_eq!((first, p.len()), (0, 2));
            assert!(dimension(MODE_RANGE, &s(1, 2, 0), &d, 4).is_err());
            // Outside the bounds 1:10, at either end of a range or alone; an empty range
            // selects nothing and is not checked.
            assert!(dimension(MODE_SINGLE, &s(11, 0, 0), &d, 4).is_err());
            assert!(dimension(MODE_SINGLE, &s(0, 0, 0), &d, 4).is_err());
            assert!(dimension(MODE_RANGE, &s(8, 12, 1), &d, 4).is_err());
            assert!(dimension(MODE_RANGE, &s(12, 8, -1), &d, 4).is_err());
            assert!(dimension(MODE_RANGE, &s(2, 12, 4), &d, 4).is_ok());
            assert!(dimension(MODE_RANGE, &s(20, 5, 1), &d, 4).is_ok());
        }
        let v: [i32; 2] = [4, 2];
        let vd = ArrayDimRef {
            v: VectorRef {
                vector: v.as_ptr().cast(),
                nvec: 2,
                kind: 4,
            },
        };
        // SAFETY: vector mode with the vector member written over `v`.
        let (first, p) = unsafe { dimension(MODE_VECTOR, &vd, &d, 8) }.unwrap();
        assert_eq!((first, p), (0, Positions::List(vec![24, 8])));
        let outside: [i32; 2] = [4, 11];
        let vd = ArrayDimRef {
            v: VectorRef {
                vector: outside.as_ptr().cast(),
                nvec: 2,
                kind: 4,
            },
        };
        // SAFETY: as above, over `outside`.
        assert!(unsafe { dimension(MODE_VECTOR, &vd, &d, 8) }.is_err());
    }
}
