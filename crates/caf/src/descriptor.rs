//! gfortran's array descriptor (`gfc_descriptor_t`) and vector subscripts (`caf_vector_t`),
//! read through raw pointers and turned into a checked [`Layout`]: the element size and, per
//! dimension, the byte offsets of the elements it selects. The rest of the library works on
//! layouts; nothing past this module reads gfortran's structures.

use std::ffi::{c_int, c_void};

use crate::abi::type_code;
use crate::error::CafError;

/// The most dimensions (plus codimensions) gfortran allows.
pub(crate) const MAX_RANK: usize = 15;

/// `dtype` of a descriptor.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dtype {
    /// Bytes of one element (characters: length times kind).
    pub(crate) elem_len: usize,
    /// Descriptor version (0).
    pub(crate) version: c_int,
    /// Rank (dimensions only, not codimensions).
    pub(crate) rank: i8,
    /// Type code, see [`type_code`].
    pub(crate) type_code: i8,
    /// Attribute bits (unused here).
    pub(crate) attribute: i16,
}

/// One dimension of a descriptor.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct DescDim {
    /// Distance between consecutive elements, in units of `span`.
    pub(crate) stride: isize,
    /// Lower bound.
    pub(crate) lower_bound: isize,
    /// Upper bound.
    pub(crate) upper_bound: isize,
}

/// `gfc_descriptor_t` with its dimensions following it in memory.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct Descriptor {
    /// Address of the element at all lower bounds.
    pub(crate) base_addr: *mut c_void,
    /// Element offset of the origin (unused: garbage for rank 0).
    pub(crate) offset: isize,
    /// Element type, size and rank.
    pub(crate) dtype: Dtype,
    /// Bytes between elements at stride 1.
    pub(crate) span: isize,
    /// `rank` dimensions (declared with none: the real count varies).
    pub(crate) dim: [DescDim; 0],
}

/// `caf_vector_t`: per dimension either a vector subscript or a triplet.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct CafVector {
    /// Entries of the vector subscript; 0 means `triplet` holds the subscript.
    pub(crate) nvec: usize,
    /// The vector or the triplet.
    pub(crate) u: CafVectorUnion,
}

/// The two forms of one dimension's subscript.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) union CafVectorUnion {
    /// A vector subscript.
    pub(crate) v: VectorSubscript,
    /// A triplet `lower:upper:stride` in the declared bounds.
    pub(crate) triplet: Triplet,
}

/// A vector subscript: `nvec` integers of `kind` bytes.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct VectorSubscript {
    /// The integers.
    pub(crate) vector: *const c_void,
    /// Their kind (1, 2, 4 or 8).
    pub(crate) kind: c_int,
}

/// A subscript triplet.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Triplet {
    /// First subscript.
    pub(crate) lower_bound: isize,
    /// Last subscript (inclusive).
    pub(crate) upper_bound: isize,
    /// Step.
    pub(crate) stride: isize,
}

/// Fortran type of the elements, for conversions between the two sides of a transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TypeCode {
    /// INTEGER.
    Integer,
    /// LOGICAL.
    Logical,
    /// REAL.
    Real,
    /// COMPLEX.
    Complex,
    /// CHARACTER.
    Character,
    /// Derived type or CLASS: moved as bytes.
    Derived,
}

impl TypeCode {
    /// The type of a descriptor's `dtype.type` code.
    pub(crate) fn from_code(code: i8) -> Result<TypeCode, CafError> {
        TypeCode::of(code).ok_or_else(|| CafError::Descriptor(format!("unknown type code {code}")))
    }

    /// As [`TypeCode::from_code`], `None` for an unknown code (the hot paths, which leave
    /// naming the error to the general path).
    #[inline(always)]
    pub(crate) fn of(code: i8) -> Option<TypeCode> {
        Some(match code {
            type_code::INTEGER => TypeCode::Integer,
            type_code::LOGICAL => TypeCode::Logical,
            type_code::REAL => TypeCode::Real,
            type_code::COMPLEX => TypeCode::Complex,
            type_code::CHARACTER => TypeCode::Character,
            type_code::DERIVED | type_code::CLASS => TypeCode::Derived,
            _ => return None,
        })
    }
}

/// The elements a descriptor (and optional vector subscripts) select: element size, and
/// per dimension (first fastest) the byte offsets of the selected elements relative to
/// `origin` bytes past the address the caller measures from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Bytes of one element.
    pub(crate) elem_len: usize,
    /// Type code of the elements.
    pub(crate) type_code: TypeCode,
    /// Per dimension, the selected positions.
    pub(crate) dims: Vec<Positions>,
}

/// The positions one dimension selects, in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Positions {
    /// `extent` positions `stride` bytes apart, starting at 0.
    Regular {
        /// Number of positions.
        extent: usize,
        /// Bytes between consecutive positions (may be negative or 0).
        stride: isize,
    },
    /// Arbitrary positions (a vector subscript).
    List(Vec<isize>),
}

impl Positions {
    /// Number of positions.
    pub(crate) fn len(&self) -> usize {
        match self {
            Positions::Regular { extent, .. } => *extent,
            Positions::List(list) => list.len(),
        }
    }

    /// Byte offset of position `i`.
    pub(crate) fn at(&self, i: usize) -> isize {
        match self {
            Positions::Regular { stride, .. } => *stride * i as isize,
            Positions::List(list) => list[i],
        }
    }
}

impl Layout {
    /// A single element.
    pub(crate) fn scalar(elem_len: usize, type_code: TypeCode) -> Layout {
        Layout {
            elem_len,
            type_code,
            dims: Vec::new(),
        }
    }

    /// Number of elements selected.
    pub(crate) fn count(&self) -> usize {
        self.dims.iter().map(Positions::len).product()
    }

    /// True when every dimension is regular (no vector subscript).
    pub(crate) fn is_regular(&self) -> bool {
        self.dims
            .iter()
            .all(|d| matches!(d, Positions::Regular { .. }))
    }

    /// Byte offsets of every selected element, in array element order (first dimension
    /// fastest).
    pub(crate) fn offsets(&self) -> Vec<isize> {
        let mut out = vec![0isize];
        for dim in self.dims.iter().rev() {
            let mut next = Vec::with_capacity(out.len() * dim.len());
            for base in &out {
                next.extend((0..dim.len()).map(|i| base + dim.at(i)));
            }
            out = next;
        }
        if self.count() == 0 {
            out.clear();
        }
        out
    }

    /// Lowest and one-past-highest byte offsets the selected elements touch (0, 0 when
    /// none is selected).
    pub(crate) fn extent_bytes(&self) -> (isize, isize) {
        if self.count() == 0 {
            return (0, 0);
        }
        let mut low = 0isize;
        let mut high = 0isize;
        for dim in &self.dims {
            let (lo, hi) = match dim {
                Positions::Regular { extent, stride } => {
                    let last = *stride * (*extent as isize - 1);
                    (last.min(0), last.max(0))
                }
                Positions::List(list) => (
                    list.iter().copied().min().unwrap_or(0),
                    list.iter().copied().max().unwrap_or(0),
                ),
            };
            low += lo;
            high += hi;
        }
        (low, high + self.elem_len as isize)
    }
}

/// Reads a descriptor: its elements from `base_addr` as laid out, no vector subscripts.
///
/// # Safety
/// `desc` is null or points to a descriptor gfortran built, followed by `rank` dimensions.
pub(crate) unsafe fn read(desc: *const Descriptor) -> Result<Layout, CafError> {
    // SAFETY: forwarded contract.
    unsafe { read_spans(desc, crate::accessor::table::accessor_abi()) }
}

/// The bytes one unit of a dimension's stride stands for: the descriptor's `span` where
/// the compiler sets it (`spans`: gfortran 15 and later, whose own library caf_shmem reads
/// it, as for a section of a derived type's component), else the element length. gfortran
/// 12 leaves `span` unset in some temporaries it passes (co_broadcast of an allocatable
/// component: a stack address there), and its libraries (single.c, OpenCoarrays) count
/// strides in elements, as this does then.
#[inline(always)]
fn stride_unit(span: isize, elem_len: usize, spans: bool) -> isize {
    if spans && span > 0 {
        span
    } else {
        elem_len as isize
    }
}

/// [`read`] with `span` read or not (see [`stride_unit`]).
///
/// # Safety
/// As [`read`].
unsafe fn read_spans(desc: *const Descriptor, spans: bool) -> Result<Layout, CafError> {
    // SAFETY: the caller passes a descriptor gfortran built (or null, checked inside).
    let (dtype, span, dims) = unsafe { header(desc)? };
    let elem_len = dtype.elem_len;
    let stride_unit = stride_unit(span, elem_len, spans);
    let dims = dims
        .iter()
        .map(|d| {
            let extent = (d.upper_bound - d.lower_bound + 1).max(0) as usize;
            Positions::Regular {
                extent,
                stride: d.stride * stride_unit,
            }
        })
        .collect();
    Ok(Layout {
        elem_len,
        type_code: TypeCode::from_code(dtype.type_code)?,
        dims,
    })
}

/// The elements of a descriptor that lays them out one after the other from `base_addr`
/// (a scalar, a whole array, a contiguous section): read without allocating, for the hot
/// paths of transfers and collectives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dense {
    /// The first element.
    pub(crate) base: *mut c_void,
    /// Bytes of one element.
    pub(crate) elem_len: usize,
    /// Type code of the elements.
    pub(crate) type_code: TypeCode,
    /// Number of elements.
    pub(crate) count: usize,
}

impl Dense {
    /// Bytes the elements occupy.
    pub(crate) fn bytes(&self) -> usize {
        self.elem_len * self.count
    }
}

/// The descriptor's elements when they are dense (see [`Dense`]), `None` when they are
/// strided, reversed or empty, and when the descriptor is malformed (null, a bad rank,
/// type code or element length: [`read`] names what is wrong). A scalar's descriptor (rank
/// 0) is read as plain values.
///
/// # Safety
/// As [`read`].
#[inline(always)]
pub(crate) unsafe fn dense(desc: *const Descriptor) -> Option<Dense> {
    if desc.is_null() {
        return None;
    }
    // SAFETY: non-null and built by gfortran (caller's contract).
    let d = unsafe { &*desc };
    let Dtype {
        elem_len,
        rank,
        type_code,
        ..
    } = d.dtype;
    let type_code = TypeCode::of(type_code)?;
    if elem_len == 0 || !(0..=MAX_RANK as i8).contains(&rank) {
        return None;
    }
    let mut count = 1usize;
    if rank > 0 {
        // SAFETY: gfortran lays out `rank` dimensions right after the fixed part.
        let dims = unsafe { std::slice::from_raw_parts(d.dim.as_ptr(), rank as usize) };
        let stride_unit = stride_unit(d.span, elem_len, crate::accessor::table::accessor_abi());
        for dim in dims {
            let extent = (dim.upper_bound - dim.lower_bound + 1).max(0) as usize;
            if extent == 0 {
                return None;
            }
            if extent > 1 && dim.stride * stride_unit != (count * elem_len) as isize {
                return None;
            }
            count *= extent;
        }
    }
    Some(Dense {
        base: d.base_addr,
        elem_len,
        type_code,
        count,
    })
}

/// The length in bytes of a scalar character's descriptor; `None` for a null descriptor
/// or any other.
///
/// # Safety
/// `desc` is null or a descriptor gfortran built.
pub(crate) unsafe fn scalar_character_len(desc: *const Descriptor) -> Option<usize> {
    if desc.is_null() {
        return None;
    }
    // SAFETY: a descriptor gfortran built (caller's contract); its fixed part is read.
    let dtype = unsafe { (*desc).dtype };
    (dtype.rank == 0 && dtype.type_code == type_code::CHARACTER).then_some(dtype.elem_len)
}

/// A copy of a scalar's descriptor with element length `len`.
///
/// # Safety
/// `desc` is a descriptor of rank 0 gfortran built.
pub(crate) unsafe fn scalar_with_len(desc: *const Descriptor, len: usize) -> Descriptor {
    // SAFETY: a rank-0 descriptor (caller's contract): its fixed part is all there is.
    let d = unsafe { &*desc };
    Descriptor {
        base_addr: d.base_addr,
        offset: d.offset,
        dtype: Dtype {
            elem_len: len,
            ..d.dtype
        },
        span: len as isize,
        dim: [],
    }
}

/// Reads a descriptor with vector subscripts: with `vector` non-null, the descriptor's
/// origin is the array's first element and `vector[j]` selects the subscripts of dimension
/// `j` (in the declared bounds, which the descriptor's lower bounds carry).
///
/// # Safety
/// As [`read`]; `vector` is null or points to `rank` entries whose vectors hold `nvec`
/// integers of their kind.
pub(crate) unsafe fn read_with_vector(
    desc: *const Descriptor,
    vector: *const CafVector,
) -> Result<Layout, CafError> {
    if vector.is_null() {
        // SAFETY: forwarded from the caller.
        return unsafe { read(desc) };
    }
    // SAFETY: the caller passes a descriptor gfortran built.
    let (dtype, span, dims) = unsafe { header(desc)? };
    let elem_len = dtype.elem_len;
    let stride_unit = stride_unit(span, elem_len, crate::accessor::table::accessor_abi());
    let mut out = Vec::with_capacity(dims.len());
    for (j, d) in dims.iter().enumerate() {
        // SAFETY: gfortran passes one `caf_vector_t` per dimension of the descriptor.
        let entry = unsafe { *vector.add(j) };
        let unit = d.stride * stride_unit;
        if entry.nvec == 0 {
            // SAFETY: `nvec == 0` means the triplet member is the one gfortran wrote.
            let t = unsafe { entry.u.triplet };
            let positions = triplet_positions(t, d.lower_bound, unit)?;
            out.push(positions);
        } else {
            // SAFETY: `nvec > 0` means the vector member is the one gfortran wrote.
            let v = unsafe { entry.u.v };
            // SAFETY: gfortran's vector holds `nvec` integers of kind `v.kind`.
            let subscripts = unsafe { read_integers(v.vector, entry.nvec, v.kind)? };
            out.push(Positions::List(
                subscripts
                    .into_iter()
                    .map(|s| (s - d.lower_bound as i64) as isize * unit)
                    .collect(),
            ));
        }
    }
    Ok(Layout {
        elem_len,
        type_code: TypeCode::from_code(dtype.type_code)?,
        dims: out,
    })
}

/// The positions of a triplet in a dimension whose declared lower bound is `lower` and
/// whose elements are `unit` bytes apart.
fn triplet_positions(t: Triplet, lower: isize, unit: isize) -> Result<Positions, CafError> {
    if t.stride == 0 {
        return Err(CafError::Descriptor("vector triplet with stride 0".into()));
    }
    let count = (t.upper_bound - t.lower_bound + t.stride) / t.stride;
    let extent = count.max(0) as usize;
    let first = (t.lower_bound - lower) * unit;
    Ok(Positions::List(
        (0..extent)
            .map(|i| first + i as isize * t.stride * unit)
            .collect(),
    ))
}

/// The fixed part of a descriptor and its dimensions, checked.
///
/// # Safety
/// As [`read`].
#[inline]
unsafe fn header<'a>(desc: *const Descriptor) -> Result<(Dtype, isize, &'a [DescDim]), CafError> {
    if desc.is_null() {
        return Err(CafError::Descriptor("null array descriptor".into()));
    }
    // SAFETY: non-null and built by gfortran (caller's contract).
    let d = unsafe { &*desc };
    let rank = d.dtype.rank;
    if !(0..=MAX_RANK as i8).contains(&rank) {
        return Err(CafError::Descriptor(format!("descriptor rank {rank}")));
    }
    if d.dtype.elem_len == 0 && d.dtype.type_code != type_code::CHARACTER {
        return Err(CafError::Descriptor("descriptor element length 0".into()));
    }
    // SAFETY: gfortran lays out `rank` dimensions right after the fixed part.
    let dims = unsafe { std::slice::from_raw_parts(d.dim.as_ptr(), rank as usize) };
    Ok((d.dtype, d.span, dims))
}

/// Reads `n` integers of `kind` bytes from `ptr`.
///
/// # Safety
/// `ptr` points to `n` readable integers of that kind.
pub(crate) unsafe fn read_integers(
    ptr: *const c_void,
    n: usize,
    kind: c_int,
) -> Result<Vec<i64>, CafError> {
    if ptr.is_null() {
        return Err(CafError::Descriptor("null vector subscript".into()));
    }
    // SAFETY: `ptr` holds `n` integers of `kind` bytes (caller's contract); unaligned reads
    // because gfortran does not promise alignment of temporaries.
    let read = |i: usize| unsafe {
        match kind {
            1 => Ok(i64::from((ptr as *const i8).add(i).read_unaligned())),
            2 => Ok(i64::from((ptr as *const i16).add(i).read_unaligned())),
            4 => Ok(i64::from((ptr as *const i32).add(i).read_unaligned())),
            8 => Ok((ptr as *const i64).add(i).read_unaligned()),
            other => Err(CafError::Descriptor(format!(
                "vector subscript kind {other}"
            ))),
        }
    };
    (0..n).map(read).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A descriptor with room for three dimensions, as gfortran lays one out.
    #[repr(C)]
    struct Desc3 {
        head: Descriptor,
        dims: [DescDim; 3],
    }

    fn desc(elem_len: usize, type_code: i8, span: isize, dims: &[(isize, isize, isize)]) -> Desc3 {
        let mut d = Desc3 {
            head: Descriptor {
                base_addr: std::ptr::null_mut(),
                offset: 0,
                dtype: Dtype {
                    elem_len,
                    version: 0,
                    rank: dims.len() as i8,
                    type_code,
                    attribute: 0,
                },
                span,
                dim: [],
            },
            dims: [DescDim {
                stride: 0,
                lower_bound: 0,
                upper_bound: 0,
            }; 3],
        };
        for (k, &(stride, lower_bound, upper_bound)) in dims.iter().enumerate() {
            d.dims[k] = DescDim {
                stride,
                lower_bound,
                upper_bound,
            };
        }
        d
    }

    #[test]
    fn layout_matches_gfortran_offsets() {
        assert_eq!(std::mem::size_of::<Descriptor>(), 40);
        assert_eq!(std::mem::size_of::<DescDim>(), 24);
        assert_eq!(std::mem::size_of::<CafVector>(), 32);
    }

    #[test]
    fn strided_section_has_byte_strides() {
        // a(1:9:2) of integer(4): 5 elements, stride 2 elements.
        let d = desc(4, type_code::INTEGER, 4, &[(2, 1, 5)]);
        // SAFETY: a descriptor built above with its dimensions following it.
        let l = unsafe { read(&d.head).unwrap() };
        assert_eq!(l.count(), 5);
        assert_eq!(
            l.dims,
            vec![Positions::Regular {
                extent: 5,
                stride: 8
            }]
        );
        assert_eq!(l.offsets(), vec![0, 8, 16, 24, 32]);
    }

    #[test]
    fn two_dimensional_row_walks_column_major() {
        // x(2, :) of x(4, 3) real(8): 3 elements 4 apart.
        let d = desc(8, type_code::REAL, 8, &[(4, 1, 3)]);
        // SAFETY: as above.
        let l = unsafe { read(&d.head).unwrap() };
        assert_eq!(l.offsets(), vec![0, 32, 64]);
        assert_eq!(l.type_code, TypeCode::Real);
        // A 2x2 block of the same array: first dimension fastest.
        let d = desc(8, type_code::REAL, 8, &[(1, 1, 2), (4, 1, 2)]);
        // SAFETY: as above.
        let l = unsafe { read(&d.head).unwrap() };
        assert_eq!(l.offsets(), vec![0, 8, 32, 40]);
        assert_eq!(l.extent_bytes(), (0, 48));
    }

    #[test]
    fn component_section_strides_by_span() {
        // a(:)%y where each element of a is 16 bytes and y is integer(4), as gfortran 15+
        // describes it.
        let d = desc(4, type_code::INTEGER, 16, &[(1, 1, 3)]);
        // SAFETY: as above.
        let l = unsafe { read_spans(&d.head, true).unwrap() };
        assert_eq!(l.offsets(), vec![0, 16, 32]);
    }

    #[test]
    fn an_unset_span_of_gfortran_12_is_not_read() {
        // gfortran 12's temporary for co_broadcast of an allocatable component: a whole
        // array of integer(4) whose span holds whatever was on the stack.
        let d = desc(4, type_code::INTEGER, 0x7fff_f7fa_7920, &[(1, 1, 3)]);
        // SAFETY: as above.
        let l = unsafe { read_spans(&d.head, false).unwrap() };
        assert_eq!(l.offsets(), vec![0, 4, 8]);
    }

    #[test]
    fn empty_and_scalar_sections() {
        let d = desc(4, type_code::INTEGER, 4, &[(1, 1, 0)]);
        // SAFETY: as above.
        let l = unsafe { read(&d.head).unwrap() };
        assert_eq!(l.count(), 0);
        assert!(l.offsets().is_empty());
        let d = desc(5, type_code::CHARACTER, 5, &[]);
        // SAFETY: as above.
        let l = unsafe { read(&d.head).unwrap() };
        assert_eq!((l.count(), l.offsets()), (1, vec![0]));
    }

    #[test]
    fn dense_descriptors_are_recognised_without_a_walk() {
        // A 3 x 2 whole array, a column of it, a row of it (strided), an empty section.
        let whole = desc(8, type_code::REAL, 8, &[(1, 1, 3), (3, 1, 2)]);
        let column = desc(8, type_code::REAL, 8, &[(1, 1, 3)]);
        let row = desc(8, type_code::REAL, 8, &[(3, 1, 2)]);
        let empty = desc(8, type_code::REAL, 8, &[(1, 1, 0)]);
        let scalar = desc(4, type_code::INTEGER, 0, &[]);
        // SAFETY: descriptors built above, with their dimensions.
        let [whole, column, row, empty, scalar] =
            [&whole, &column, &row, &empty, &scalar].map(|d| unsafe { dense(&d.head) });
        assert_eq!(whole.map(|d| (d.count, d.bytes())), Some((6, 48)));
        assert_eq!(column.map(|d| d.count), Some(3));
        assert_eq!(row, None);
        assert_eq!(empty, None);
        assert_eq!(
            scalar.map(|d| (d.count, d.type_code)),
            Some((1, TypeCode::Integer))
        );
    }

    #[test]
    fn bad_descriptors_are_errors() {
        let mut d = desc(4, type_code::INTEGER, 4, &[(1, 1, 3)]);
        d.head.dtype.rank = 16;
        // SAFETY: as above.
        assert!(unsafe { read(&d.head) }.is_err());
        // SAFETY: as above; `dense` leaves a bad descriptor to `read`.
        assert_eq!(unsafe { dense(&d.head) }, None);
        let d = desc(4, 9, 4, &[]);
        // SAFETY: as above.
        assert!(unsafe { read(&d.head) }.is_err());
        // SAFETY: as above.
        assert_eq!(unsafe { dense(&d.head) }, None);
        // SAFETY: null is checked.
        assert!(unsafe { read(std::ptr::null()) }.is_err());
        // SAFETY: null is checked.
        assert_eq!(unsafe { dense(std::ptr::null()) }, None);
    }

    #[test]
    fn vector_subscripts_select_declared_indices() {
        // a(v, 2:4) with a(0:9, 5) integer(4), v = [3, 1, 2] (declared indices).
        let d = desc(4, type_code::INTEGER, 4, &[(1, 0, 2), (10, 1, 3)]);
        let v: [i32; 3] = [3, 1, 2];
        let vector = [
            CafVector {
                nvec: 3,
                u: CafVectorUnion {
                    v: VectorSubscript {
                        vector: v.as_ptr().cast(),
                        kind: 4,
                    },
                },
            },
            CafVector {
                nvec: 0,
                u: CafVectorUnion {
                    triplet: Triplet {
                        lower_bound: 2,
                        upper_bound: 4,
                        stride: 1,
                    },
                },
            },
        ];
        // SAFETY: descriptor and one vector entry per dimension, built above.
        let l = unsafe { read_with_vector(&d.head, vector.as_ptr()).unwrap() };
        assert!(!l.is_regular());
        assert_eq!(l.count(), 9);
        // Element (3, 2) is 3 elements into column 2 (10 elements from column 1).
        assert_eq!(&l.offsets()[..4], &[12 + 40, 4 + 40, 8 + 40, 12 + 80]);
    }

    #[test]
    fn vector_subscript_kinds() {
        let v: [i64; 2] = [7, -1];
        // SAFETY: two readable integers of kind 8.
        let read8 = unsafe { read_integers(v.as_ptr().cast(), 2, 8) };
        assert_eq!(read8.unwrap(), vec![7, -1]);
        let v: [i16; 1] = [300];
        // SAFETY: one readable integer of kind 2.
        let read2 = unsafe { read_integers(v.as_ptr().cast(), 1, 2) };
        assert_eq!(read2.unwrap(), vec![300]);
        // SAFETY: kind 3 is rejected before any read.
        assert!(unsafe { read_integers(v.as_ptr().cast(), 1, 3) }.is_err());
    }
}
