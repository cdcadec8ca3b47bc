//! Layouts as the engine's sections: the remote side as an offset plus a [`Section`], the
//! local side as a byte slice plus a [`Section`] inside it.

use std::ffi::{c_int, c_void};

use gaspar::coarray::{Dim, Elem, ElemType, Section};

use crate::descriptor::{Layout, Positions, TypeCode};
use crate::error::CafError;

/// A regular layout in the engine's terms: dims, and the byte distance from the lowest
/// touched byte to the first element.
pub(crate) struct Regular {
    /// Bytes of one element.
    pub(crate) elem_len: usize,
    /// Dimensions, first fastest, strides in bytes.
    pub(crate) dims: Vec<Dim>,
    /// Lowest touched byte relative to the first element (<= 0).
    pub(crate) low: isize,
    /// Bytes from the lowest touched byte to one past the highest.
    pub(crate) len: usize,
}

impl Regular {
    /// The regular form of `layout`, `None` when it has a vector subscript. With
    /// `broadcast_to`, a scalar layout is repeated that many times (stride 0; once stays a
    /// scalar).
    pub(crate) fn of(layout: &Layout, broadcast_to: Option<usize>) -> Option<Regular> {
        if !layout.is_regular() {
            return None;
        }
        let (low, high) = layout.extent_bytes();
        let mut dims: Vec<Dim> = layout
            .dims
            .iter()
            .map(|p| match p {
                Positions::Regular { extent, stride } => Dim {
                    extent: *extent,
                    stride: *stride,
                },
                Positions::List(_) => unreachable!("is_regular checked above"),
            })
            .collect();
        if let Some(n) = broadcast_to.filter(|&n| layout.dims.is_empty() && n != 1) {
            dims.push(Dim {
                extent: n,
                stride: 0,
            });
        }
        Some(Regular {
            elem_len: layout.elem_len,
            dims,
            low,
            len: (high - low) as usize,
        })
    }

    /// The engine's section, measured from the lowest touched byte.
    pub(crate) fn section(&self) -> Section<'_> {
        Section {
            elem_len: self.elem_len,
            start: (-self.low) as usize,
            dims: &self.dims,
        }
    }
}

/// `count` elements of `elem_len` bytes packed one after the other.
pub(crate) fn packed(elem_len: usize, count: usize) -> Regular {
    Regular {
        elem_len,
        dims: vec![Dim {
            extent: count,
            stride: elem_len as isize,
        }],
        low: 0,
        len: elem_len * count,
    }
}

/// The remote byte offset of the lowest byte a layout touches, given gfortran's `offset`
/// of its first element.
pub(crate) fn remote_offset(offset: usize, low: isize) -> Result<usize, CafError> {
    usize::try_from(offset as isize + low)
        .map_err(|_| CafError::Descriptor(format!("section starts {low} bytes before the coarray")))
}

/// The engine's element type from a descriptor's type code and gfortran's kind argument.
pub(crate) fn elem(type_code: TypeCode, kind: c_int) -> Result<Elem, CafError> {
    elem_of(type_code, kind).ok_or_else(|| CafError::Descriptor(format!("kind {kind}")))
}

/// As [`elem`], `None` for a kind out of range (the hot paths).
#[inline(always)]
pub(crate) fn elem_of(type_code: TypeCode, kind: c_int) -> Option<Elem> {
    let ty = match type_code {
        TypeCode::Integer => ElemType::Integer,
        TypeCode::Logical => ElemType::Logical,
        TypeCode::Real => ElemType::Real,
        TypeCode::Complex => ElemType::Complex,
        TypeCode::Character => ElemType::Character,
        TypeCode::Derived => ElemType::Derived,
    };
    // Derived types are moved as bytes; their kind argument carries no meaning.
    let kind = if ty == ElemType::Derived {
        0
    } else {
        u8::try_from(kind).ok()?
    };
    Some(Elem { ty, kind })
}

/// Local memory a layout touches: the slice starts at its lowest byte.
///
/// # Safety
/// `base` is the first element of memory laid out as `regular` says, readable for the
/// lifetime `'a`, not written by anything else meanwhile.
pub(crate) unsafe fn local<'a>(base: *const c_void, regular: &Regular) -> &'a [u8] {
    if regular.len == 0 {
        return &[];
    }
    // SAFETY: the bytes from `base + low` for `len` bytes are the ones the layout touches,
    // readable (caller's contract).
    unsafe { std::slice::from_raw_parts(base.cast::<u8>().offset(regular.low), regular.len) }
}

/// Local memory a layout touches, writable.
///
/// # Safety
/// As [`local`], writable and not referenced otherwise for `'a`.
pub(crate) unsafe fn local_mut<'a>(base: *mut c_void, regular: &Regular) -> &'a mut [u8] {
    if regular.len == 0 {
        return &mut [];
    }
    // SAFETY: as in `local`, and the memory is writable and unaliased (caller's contract).
    unsafe { std::slice::from_raw_parts_mut(base.cast::<u8>().offset(regular.low), regular.len) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(dims: Vec<Positions>) -> Layout {
        Layout {
            elem_len: 4,
            type_code: TypeCode::Integer,
            dims,
        }
    }

    #[test]
    fn negative_stride_section_starts_at_its_last_element() {
        let l = layout(vec![Positions::Regular {
            extent: 3,
            stride: -8,
        }]);
        let r = Regular::of(&l, None).unwrap();
        assert_eq!(r.low, -16);
        assert_eq!(r.len, 20);
        assert_eq!(r.section().start, 16);
        assert_eq!(remote_offset(40, r.low).unwrap(), 24);
        assert!(remote_offset(8, r.low).is_err());
    }

    #[test]
    fn scalar_broadcast_repeats_with_stride_zero() {
        let r = Regular::of(&Layout::scalar(8, TypeCode::Real), Some(5)).unwrap();
        assert_eq!(r.dims.len(), 1);
        assert_eq!((r.dims[0].extent, r.dims[0].stride), (5, 0));
        assert_eq!(r.len, 8);
    }

    #[test]
    fn scalar_to_one_element_stays_scalar() {
        let r = Regular::of(&Layout::scalar(4, TypeCode::Integer), Some(1)).unwrap();
        assert!(r.dims.is_empty());
        assert_eq!(r.section().start, 0);
    }

    #[test]
    fn vector_layout_is_not_regular() {
        assert!(Regular::of(&layout(vec![Positions::List(vec![8, 0])]), None).is_none());
    }

    #[test]
    fn derived_kind_is_ignored_and_bad_kind_rejected() {
        assert_eq!(elem(TypeCode::Derived, 400).unwrap().kind, 0);
        assert!(elem(TypeCode::Integer, 300).is_err());
        assert_eq!(elem(TypeCode::Complex, 8).unwrap().kind, 8);
    }
}
