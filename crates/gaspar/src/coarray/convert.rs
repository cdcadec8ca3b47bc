//! Conversion between Fortran element types and kinds, as intrinsic assignment does it:
//! integer, real and complex convert among each other (real to integer truncates toward
//! zero), logical to logical, character to character (kind 1 <-> 4, blank padding or
//! truncation to the destination's length); derived types only copy between equal
//! lengths. Reals of kind 10 and 16 are not supported yet.

use super::error::{CoError, CoResult};

/// Fortran's intrinsic type of an element (gfortran's `BT_*` order).
///
/// ```
/// use gaspar::coarray::{Elem, ElemType};
/// let logical4 = Elem::new(ElemType::Logical, 4);
/// assert!(logical4.check(4).is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElemType {
    /// `integer(kind)`.
    Integer,
    /// `logical(kind)`.
    Logical,
    /// `real(kind)`.
    Real,
    /// `complex(kind)` (two reals of `kind` bytes).
    Complex,
    /// `character(len, kind)`.
    Character,
    /// A derived type: bytes, copied only to the same type.
    Derived,
}

/// An element's type and kind: `kind` is the bytes of one value (complex: of one part;
/// character: of one character, 1 or 4; derived: ignored).
///
/// ```
/// use gaspar::coarray::{Elem, ElemType};
/// let complex8 = Elem::new(ElemType::Complex, 8); // complex(8): two real(8)
/// assert_eq!((complex8.ty, complex8.kind), (ElemType::Complex, 8));
/// assert!(complex8.check(16).is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elem {
    /// The type.
    pub ty: ElemType,
    /// The kind in bytes.
    pub kind: u8,
}

impl Elem {
    /// An element of type `ty` and kind `kind`.
    ///
    /// ```
    /// use gaspar::coarray::{Elem, ElemType};
    /// const R4: Elem = Elem::new(ElemType::Real, 4);
    /// assert_eq!(R4.kind, 4);
    /// ```
    pub const fn new(ty: ElemType, kind: u8) -> Elem {
        Elem { ty, kind }
    }

    /// Checks that an element of this type may be `elem_len` bytes long, and that its
    /// kind is one this layer knows.
    ///
    /// ```
    /// use gaspar::coarray::{Elem, ElemType};
    /// assert!(Elem::new(ElemType::Integer, 8).check(8).is_ok());
    /// assert!(Elem::new(ElemType::Integer, 8).check(4).is_err()); // kind 8 is 8 bytes
    /// assert!(Elem::new(ElemType::Character, 4).check(12).is_ok()); // 3 characters of kind 4
    /// assert!(Elem::new(ElemType::Real, 3).check(3).is_err()); // no real(3)
    /// ```
    #[inline]
    pub fn check(self, elem_len: usize) -> CoResult<()> {
        if self.is_valid(elem_len) {
            return Ok(());
        }
        self.invalid(elem_len)
    }

    /// Whether [`check`](Self::check) passes, without naming what is wrong.
    #[inline]
    fn is_valid(self, elem_len: usize) -> bool {
        let kind = usize::from(self.kind);
        match self.ty {
            ElemType::Integer | ElemType::Logical => {
                matches!(kind, 1 | 2 | 4 | 8 | 16) && elem_len == kind
            }
            ElemType::Real => matches!(kind, 4 | 8) && elem_len == kind,
            ElemType::Complex => matches!(kind, 4 | 8) && elem_len == 2 * kind,
            ElemType::Character => matches!(kind, 1 | 4) && elem_len % kind == 0,
            ElemType::Derived => true,
        }
    }

    /// The error of an element [`check`](Self::check) refuses.
    #[cold]
    #[inline(never)]
    fn invalid(self, elem_len: usize) -> CoResult<()> {
        let kind = usize::from(self.kind);
        let (kinds, len): (&[u8], usize) = match self.ty {
            ElemType::Integer => (&[1, 2, 4, 8, 16], kind),
            ElemType::Logical => (&[1, 2, 4, 8, 16], kind),
            ElemType::Real => (&[4, 8, 10, 16], kind),
            ElemType::Complex => (&[4, 8, 10, 16], 2 * kind),
            ElemType::Character => {
                if !matches!(self.kind, 1 | 4) || elem_len % kind != 0 {
                    return Err(CoError::invalid(
                        "element type",
                        format!("character of kind {} and {elem_len} bytes", self.kind),
                    ));
                }
                return Ok(());
            }
            ElemType::Derived => return Ok(()),
        };
        if !kinds.contains(&self.kind) {
            return Err(CoError::invalid(
                "element type",
                format!("{:?} has no kind {}", self.ty, self.kind),
            ));
        }
        if matches!(self.ty, ElemType::Real | ElemType::Complex) && self.kind > 8 {
            return Err(CoError::unsupported(format!(
                "{:?} of kind {} (only kinds 4 and 8)",
                self.ty, self.kind
            )));
        }
        // A real(10) occupies 16 bytes; every other kind its own size.
        if elem_len != len {
            return Err(CoError::invalid(
                "element type",
                format!(
                    "{:?}({}) elements are {len} bytes, not {elem_len}",
                    self.ty, self.kind
                ),
            ));
        }
        Ok(())
    }
}

/// Whether copying bytes converts `from` into `to` (same type, kind and length).
#[inline]
pub fn is_plain_copy(from: Elem, from_len: usize, to: Elem, to_len: usize) -> bool {
    from_len == to_len && (from == to || (from.ty == ElemType::Derived && to.ty == from.ty))
}

/// A numeric value on its way from one kind to another.
#[derive(Debug, Clone, Copy)]
enum Number {
    Int(i128),
    Real(f64),
    Complex(f64, f64),
}

fn read_int(bytes: &[u8]) -> i128 {
    match bytes.len() {
        1 => i8::from_ne_bytes([bytes[0]]).into(),
        2 => i16::from_ne_bytes(bytes.try_into().unwrap_or_default()).into(),
        4 => i32::from_ne_bytes(bytes.try_into().unwrap_or_default()).into(),
        8 => i64::from_ne_bytes(bytes.try_into().unwrap_or_default()).into(),
        _ => i128::from_ne_bytes(bytes.try_into().unwrap_or_default()),
    }
}

fn write_int(value: i128, out: &mut [u8]) {
    // Truncation to the destination kind (wrapping), as gfortran's conversions do.
    let bytes = value.to_ne_bytes();
    let len = out.len();
    if cfg!(target_endian = "little") {
        out.copy_from_slice(&bytes[..len]);
    } else {
        out.copy_from_slice(&bytes[16 - len..]);
    }
}

/// `i as f64`, through `i64` when the value fits: the same correctly rounded result, in
/// one instruction instead of `i128`'s software routine.
fn int_to_real(i: i128) -> f64 {
    match i64::try_from(i) {
        Ok(small) => small as f64,
        Err(_) => i as f64,
    }
}

fn read_real(bytes: &[u8]) -> f64 {
    match bytes.len() {
        4 => f32::from_ne_bytes(bytes.try_into().unwrap_or_default()).into(),
        _ => f64::from_ne_bytes(bytes.try_into().unwrap_or_default()),
    }
}

fn write_real(value: f64, out: &mut [u8]) {
    match out.len() {
        4 => out.copy_from_slice(&(value as f32).to_ne_bytes()),
        _ => out.copy_from_slice(&value.to_ne_bytes()),
    }
}

fn read_number(elem: Elem, bytes: &[u8]) -> Number {
    let kind = usize::from(elem.kind);
    match elem.ty {
        ElemType::Real => Number::Real(read_real(bytes)),
        ElemType::Complex => Number::Complex(read_real(&bytes[..kind]), read_real(&bytes[kind..])),
        _ => Number::Int(read_int(bytes)),
    }
}

fn write_number(value: Number, elem: Elem, out: &mut [u8]) {
    let kind = usize::from(elem.kind);
    match elem.ty {
        ElemType::Real => write_real(
            match value {
                Number::Int(i) => int_to_real(i),
                Number::Real(r) | Number::Complex(r, _) => r,
            },
            out,
        ),
        ElemType::Complex => {
            let (re, im) = match value {
                Number::Int(i) => (int_to_real(i), 0.0),
                Number::Real(r) => (r, 0.0),
                Number::Complex(re, im) => (re, im),
            };
            let (a, b) = out.split_at_mut(kind);
            write_real(re, a);
            write_real(im, b);
        }
        _ => write_int(
            match value {
                Number::Int(i) => i,
                // `as` truncates toward zero and saturates, NaN to 0.
                Number::Real(r) | Number::Complex(r, _) => r as i128,
            },
            out,
        ),
    }
}

fn is_numeric(ty: ElemType) -> bool {
    matches!(ty, ElemType::Integer | ElemType::Real | ElemType::Complex)
}

/// Checks that elements of `from` (`from_len` bytes each) can be assigned to elements of
/// `to` (`to_len` bytes each).
#[inline]
pub fn check_conversion(from: Elem, from_len: usize, to: Elem, to_len: usize) -> CoResult<()> {
    from.check(from_len)?;
    to.check(to_len)?;
    let allowed = match (from.ty, to.ty) {
        (a, b) if is_numeric(a) && is_numeric(b) => true,
        (ElemType::Logical, ElemType::Logical) | (ElemType::Character, ElemType::Character) => true,
        (ElemType::Derived, ElemType::Derived) => from_len == to_len,
        _ => false,
    };
    if !allowed {
        return Err(CoError::invalid(
            "assignment",
            format!(
                "cannot assign {:?}({}) of {from_len} bytes to {:?}({}) of {to_len} bytes",
                from.ty, from.kind, to.ty, to.kind
            ),
        ));
    }
    Ok(())
}

/// The commonest assignments of one element — integer and real of kinds 4 and 8 into
/// integer or real of kinds 4 and 8, except real into integer — done with no check beyond
/// the match on types, kinds and lengths itself; `false` (and `dst` untouched) for every
/// other pair, which goes through [`check_conversion`] and [`convert`]. The results are
/// [`convert`]'s: integers wrap to the destination kind, an integer becomes the nearest
/// real(8) first (then real(4), as [`convert`] does), reals round to the destination kind.
#[inline(always)]
pub fn convert_common(from: Elem, src: &[u8], to: Elem, dst: &mut [u8]) -> bool {
    enum Value {
        Int(i64),
        Real(f64),
    }
    let value = match (from.ty, from.kind, src) {
        (ElemType::Integer, 4, &[a, b, c, d]) => {
            Value::Int(i32::from_ne_bytes([a, b, c, d]).into())
        }
        (ElemType::Integer, 8, bytes) if bytes.len() == 8 => {
            Value::Int(i64::from_ne_bytes(bytes.try_into().unwrap_or_default()))
        }
        (ElemType::Real, 4, &[a, b, c, d]) => Value::Real(f32::from_ne_bytes([a, b, c, d]).into()),
        (ElemType::Real, 8, bytes) if bytes.len() == 8 => {
            Value::Real(f64::from_ne_bytes(bytes.try_into().unwrap_or_default()))
        }
        _ => return false,
    };
    match (to.ty, to.kind, dst.len(), value) {
        (ElemType::Integer, 4, 4, Value::Int(i)) => dst.copy_from_slice(&(i as i32).to_ne_bytes()),
        (ElemType::Integer, 8, 8, Value::Int(i)) => dst.copy_from_slice(&i.to_ne_bytes()),
        (ElemType::Real, 4, 4, Value::Int(i)) => {
            dst.copy_from_slice(&((i as f64) as f32).to_ne_bytes())
        }
        (ElemType::Real, 8, 8, Value::Int(i)) => dst.copy_from_slice(&(i as f64).to_ne_bytes()),
        (ElemType::Real, 4, 4, Value::Real(r)) => dst.copy_from_slice(&(r as f32).to_ne_bytes()),
        (ElemType::Real, 8, 8, Value::Real(r)) => dst.copy_from_slice(&r.to_ne_bytes()),
        _ => return false,
    }
    true
}

/// Assigns one element: `src` (of type `from`) converted into `dst` (of type `to`). The
/// pair must have passed [`check_conversion`] with these lengths.
#[inline]
pub fn convert(from: Elem, src: &[u8], to: Elem, dst: &mut [u8]) {
    match (from.ty, to.ty) {
        (ElemType::Logical, ElemType::Logical) => {
            write_int(i128::from(read_int(src) != 0), dst);
        }
        (ElemType::Character, ElemType::Character) => convert_chars(from.kind, src, to.kind, dst),
        (ElemType::Derived, _) | (_, ElemType::Derived) => dst.copy_from_slice(src),
        _ => write_number(read_number(from, src), to, dst),
    }
}

/// Character assignment: each character converted between kinds (a kind-4 character
/// beyond 255 becomes `?` in kind 1), then blank padding or truncation.
fn convert_chars(from_kind: u8, src: &[u8], to_kind: u8, dst: &mut [u8]) {
    let read = |k: usize| -> u32 {
        if from_kind == 1 {
            src[k].into()
        } else {
            u32::from_ne_bytes(src[4 * k..4 * k + 4].try_into().unwrap_or_default())
        }
    };
    let from_chars = src.len() / usize::from(from_kind);
    let to_chars = dst.len() / usize::from(to_kind);
    for k in 0..to_chars {
        let c = if k < from_chars {
            read(k)
        } else {
            u32::from(b' ')
        };
        if to_kind == 1 {
            dst[k] = u8::try_from(c).unwrap_or(b'?');
        } else {
            dst[4 * k..4 * k + 4].copy_from_slice(&c.to_ne_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const I1: Elem = Elem::new(ElemType::Integer, 1);
    const I4: Elem = Elem::new(ElemType::Integer, 4);
    const I8: Elem = Elem::new(ElemType::Integer, 8);
    const I16: Elem = Elem::new(ElemType::Integer, 16);
    const R4: Elem = Elem::new(ElemType::Real, 4);
    const R8: Elem = Elem::new(ElemType::Real, 8);
    const C4: Elem = Elem::new(ElemType::Complex, 4);
    const C8: Elem = Elem::new(ElemType::Complex, 8);
    const L1: Elem = Elem::new(ElemType::Logical, 1);
    const L4: Elem = Elem::new(ElemType::Logical, 4);
    const CH1: Elem = Elem::new(ElemType::Character, 1);
    const CH4: Elem = Elem::new(ElemType::Character, 4);

    fn assign(from: Elem, src: &[u8], to: Elem, to_len: usize) -> Vec<u8> {
        check_conversion(from, src.len(), to, to_len).unwrap();
        let mut out = vec![0u8; to_len];
        convert(from, src, to, &mut out);
        out
    }

    #[test]
    fn integers_widen_with_sign_and_narrow_by_truncation() {
        assert_eq!(
            assign(I4, &(-5i32).to_ne_bytes(), I8, 8),
            (-5i64).to_ne_bytes()
        );
        assert_eq!(assign(I1, &[0xff], I16, 16), (-1i128).to_ne_bytes());
        assert_eq!(assign(I8, &300i64.to_ne_bytes(), I1, 1), [44]);
        assert_eq!(
            assign(I16, &(1i128 << 70).to_ne_bytes(), I16, 16),
            (1i128 << 70).to_ne_bytes()
        );
    }

    #[test]
    fn reals_and_integers_convert_as_assignment_does() {
        assert_eq!(
            assign(R8, &(-2.75f64).to_ne_bytes(), I4, 4),
            (-2i32).to_ne_bytes()
        );
        assert_eq!(assign(I4, &7i32.to_ne_bytes(), R8, 8), 7.0f64.to_ne_bytes());
        // Rounded to the nearest real whatever the integer's kind (i64 and i128 paths).
        let odd = (1i64 << 60) + 1;
        assert_eq!(
            assign(I8, &odd.to_ne_bytes(), R8, 8),
            (odd as f64).to_ne_bytes()
        );
        let huge = (1i128 << 100) + 1;
        assert_eq!(
            assign(I16, &huge.to_ne_bytes(), R8, 8),
            (huge as f64).to_ne_bytes()
        );
        assert_eq!(
            assign(R8, &0.1f64.to_ne_bytes(), R4, 4),
            0.1f32.to_ne_bytes()
        );
        assert_eq!(
            assign(R4, &1.5f32.to_ne_bytes(), R8, 8),
            1.5f64.to_ne_bytes()
        );
    }

    #[test]
    fn complex_parts_convert_and_reals_gain_a_zero_imaginary_part() {
        let mut c8 = 1.25f64.to_ne_bytes().to_vec();
        c8.extend((-3.5f64).to_ne_bytes());
        let mut c4 = 1.25f32.to_ne_bytes().to_vec();
        c4.extend((-3.5f32).to_ne_bytes());
        assert_eq!(assign(C8, &c8, C4, 8), c4);
        assert_eq!(assign(C4, &c4, R8, 8), 1.25f64.to_ne_bytes());
        let mut two = 2.0f32.to_ne_bytes().to_vec();
        two.extend(0.0f32.to_ne_bytes());
        assert_eq!(assign(I8, &2i64.to_ne_bytes(), C4, 8), two);
    }

    #[test]
    fn logicals_keep_truth_across_kinds() {
        assert_eq!(assign(L1, &[1], L4, 4), 1i32.to_ne_bytes());
        assert_eq!(assign(L4, &0i32.to_ne_bytes(), L1, 1), [0]);
        assert!(check_conversion(L4, 4, I4, 4).is_err());
    }

    #[test]
    fn characters_pad_with_blanks_truncate_and_change_kind() {
        assert_eq!(assign(CH1, b"ab", CH1, 4), b"ab  ");
        assert_eq!(assign(CH1, b"abcdef", CH1, 3), b"abc");
        let wide: Vec<u8> = ['x' as u32, 0x263a]
            .iter()
            .flat_map(|c| c.to_ne_bytes())
            .collect();
        assert_eq!(assign(CH4, &wide, CH1, 3), b"x? ");
        let expected: Vec<u8> = ['h' as u32, 'i' as u32, ' ' as u32]
            .iter()
            .flat_map(|c| c.to_ne_bytes())
            .collect();
        assert_eq!(assign(CH1, b"hi", CH4, 12), expected);
        assert!(check_conversion(CH1, 2, I4, 4).is_err());
    }

    #[test]
    fn the_common_assignments_agree_with_the_general_conversion() {
        let kinds = [
            Elem::new(ElemType::Integer, 4),
            Elem::new(ElemType::Integer, 8),
            Elem::new(ElemType::Real, 4),
            Elem::new(ElemType::Real, 8),
            Elem::new(ElemType::Integer, 2),
            Elem::new(ElemType::Complex, 4),
        ];
        let values: [f64; 6] = [0.0, -1.5, 3.0e9, -7.0, 16_777_217.0, 1.0e300];
        for from in kinds {
            for to in kinds {
                for v in values {
                    let src = encode(from, v);
                    let len = if to.ty == ElemType::Complex {
                        2 * usize::from(to.kind)
                    } else {
                        usize::from(to.kind)
                    };
                    let mut quick = vec![0u8; len];
                    if !convert_common(from, &src, to, &mut quick) {
                        assert!(
                            quick.iter().all(|&b| b == 0),
                            "{from:?} -> {to:?}: refused but wrote"
                        );
                        continue;
                    }
                    assert!(from.ty != ElemType::Real || to.ty != ElemType::Integer);
                    let mut general = vec![0u8; len];
                    check_conversion(from, src.len(), to, len).expect("a valid pair");
                    convert(from, &src, to, &mut general);
                    assert_eq!(quick, general, "{from:?} -> {to:?} of {v}");
                }
            }
        }
    }

    /// `v` as an element of `elem` (integers truncated toward zero, wrapping).
    fn encode(elem: Elem, v: f64) -> Vec<u8> {
        match (elem.ty, elem.kind) {
            (ElemType::Integer, 2) => ((v as i64) as i16).to_ne_bytes().to_vec(),
            (ElemType::Integer, 4) => ((v as i64) as i32).to_ne_bytes().to_vec(),
            (ElemType::Integer, _) => (v as i64).to_ne_bytes().to_vec(),
            (ElemType::Real, 4) => (v as f32).to_ne_bytes().to_vec(),
            (ElemType::Complex, 4) => [(v as f32).to_ne_bytes(), 0f32.to_ne_bytes()].concat(),
            _ => v.to_ne_bytes().to_vec(),
        }
    }

    #[test]
    fn the_quick_element_check_agrees_with_the_one_naming_errors() {
        let types = [
            ElemType::Integer,
            ElemType::Logical,
            ElemType::Real,
            ElemType::Complex,
            ElemType::Character,
            ElemType::Derived,
        ];
        for ty in types {
            for kind in 0..=20u8 {
                for len in 0..=40 {
                    let elem = Elem::new(ty, kind);
                    assert_eq!(
                        elem.is_valid(len),
                        elem.invalid(len).is_ok(),
                        "{elem:?} of {len} bytes"
                    );
                }
            }
        }
    }

    #[test]
    fn unsupported_and_invalid_kinds_are_errors_with_stat() {
        let r16 = Elem::new(ElemType::Real, 16);
        let e = check_conversion(r16, 16, R8, 8).unwrap_err();
        assert!(matches!(e, CoError::Unsupported { .. }), "{e}");
        assert!(check_conversion(Elem::new(ElemType::Integer, 3), 3, I4, 4).is_err());
        assert!(check_conversion(I4, 8, I4, 4).is_err());
        let d = Elem::new(ElemType::Derived, 0);
        assert!(check_conversion(d, 24, d, 24).is_ok());
        assert!(check_conversion(d, 24, d, 16).is_err());
        assert!(is_plain_copy(d, 24, d, 24));
        assert!(!is_plain_copy(CH1, 2, CH1, 4));
    }
}
