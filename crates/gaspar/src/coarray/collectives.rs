//! co_broadcast, co_sum, co_min, co_max and co_reduce on the current team, built on the
//! world layer's team collectives (O(log n) rounds, reals combined along a tree fixed by
//! the team's size, so every run gives the same bits).

use bytemuck::Pod;

use crate::world::{ReduceOp, Reducible};

use super::convert::{Elem, ElemType};
use super::error::{CoError, CoResult};
use super::{Coarrays, Image};

/// The reduction of `co_sum`, `co_min` or `co_max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Intrinsic {
    Sum,
    Min,
    Max,
}

impl Intrinsic {
    fn op(self) -> ReduceOp {
        match self {
            Intrinsic::Sum => ReduceOp::Sum,
            Intrinsic::Min => ReduceOp::Min,
            Intrinsic::Max => ReduceOp::Max,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Intrinsic::Sum => "co_sum",
            Intrinsic::Min => "co_min",
            Intrinsic::Max => "co_max",
        }
    }
}

/// Fortran's `+` on a numeric type (integers wrap).
trait Plus {
    fn plus(self, other: Self) -> Self;
}

macro_rules! wrapping_plus {
    ($($t:ty),*) => {$(
        impl Plus for $t {
            fn plus(self, other: Self) -> Self {
                self.wrapping_add(other)
            }
        }
    )*};
}
wrapping_plus!(i8, i16, i32, i64, i128);

impl Plus for f32 {
    fn plus(self, other: Self) -> Self {
        self + other
    }
}

impl Plus for f64 {
    fn plus(self, other: Self) -> Self {
        self + other
    }
}

/// Combines one element of `other` into `acc` for the types the builtin path does not
/// take (integer(16), complex, character; any type in an unaligned buffer).
fn combine_one(what: Intrinsic, elem: Elem, acc: &mut [u8], other: &[u8]) {
    fn pick<T: PartialOrd>(what: Intrinsic, a: T, b: T) -> bool {
        // Whether `b` replaces `a`.
        match what {
            Intrinsic::Min => b < a,
            _ => b > a,
        }
    }
    macro_rules! numeric {
        ($t:ty) => {{
            let a = <$t>::from_ne_bytes(acc[..].try_into().unwrap_or_default());
            let b = <$t>::from_ne_bytes(other[..].try_into().unwrap_or_default());
            let r = match what {
                Intrinsic::Sum => a.plus(b),
                _ if pick(what, a, b) => b,
                _ => a,
            };
            acc.copy_from_slice(&r.to_ne_bytes());
        }};
    }
    match (elem.ty, elem.kind) {
        (ElemType::Integer, 1) => numeric!(i8),
        (ElemType::Integer, 2) => numeric!(i16),
        (ElemType::Integer, 4) => numeric!(i32),
        (ElemType::Integer, 8) => numeric!(i64),
        (ElemType::Integer, _) => numeric!(i128),
        (ElemType::Real, 4) => numeric!(f32),
        (ElemType::Real, _) => numeric!(f64),
        (ElemType::Complex, k) => {
            let half = usize::from(k);
            let (a_re, a_im) = acc.split_at_mut(half);
            let (b_re, b_im) = other.split_at(half);
            let real = Elem::new(ElemType::Real, k);
            combine_one(Intrinsic::Sum, real, a_re, b_re);
            combine_one(Intrinsic::Sum, real, a_im, b_im);
        }
        (ElemType::Character, k) => {
            let chars = |s: &[u8]| -> Vec<u32> {
                if k == 1 {
                    s.iter().map(|&c| u32::from(c)).collect()
                } else {
                    s.chunks_exact(4)
                        .map(|c| u32::from_ne_bytes(c.try_into().unwrap_or_default()))
                        .collect()
                }
            };
            if pick(what, chars(acc), chars(other)) {
                acc.copy_from_slice(other);
            }
        }
        _ => {}
    }
}

/// Checks that `what` is defined on `elem` (elements of `elem_len` bytes in `len` bytes).
fn check(what: Intrinsic, elem: Elem, elem_len: usize, len: usize) -> CoResult<()> {
    elem.check(elem_len)?;
    let defined = match elem.ty {
        ElemType::Integer | ElemType::Real => true,
        ElemType::Complex => what == Intrinsic::Sum,
        ElemType::Character => what != Intrinsic::Sum,
        ElemType::Logical | ElemType::Derived => false,
    };
    if !defined {
        return Err(CoError::invalid(
            what.name(),
            format!("not defined on {:?}({}) elements", elem.ty, elem.kind),
        ));
    }
    if elem_len == 0 || len % elem_len != 0 {
        return Err(CoError::invalid(
            what.name(),
            format!("{len} bytes are not a whole number of {elem_len}-byte elements"),
        ));
    }
    Ok(())
}

impl Coarrays {
    /// The team rank of `image` as a collective's root.
    fn root(&self, image: Image) -> CoResult<u32> {
        self.team.rank_of(image)?;
        Ok(image - 1)
    }

    /// `co_broadcast(a, source_image)`: every image's `buf` becomes `source`'s. One way:
    /// the source image does not wait for the others (beyond flow control), so an image
    /// whose call differs (another collective, source or length) gets the error, and the
    /// source image only when its own later calls meet that image's.
    ///
    /// Where it goes one way, an image that receives needs only the source image: it
    /// fails only when the source stopped or an image failed, not when another image
    /// took in its value and stopped meanwhile (as the source itself may, once every
    /// image took in its value: see [`stop`](Self::stop)).
    ///
    /// ```
    /// use gaspar::coarray::Coarrays;
    /// let mut co = Coarrays::init()?;
    /// let mut seed = if co.this_image() == 1 { 42u64.to_ne_bytes() } else { [0; 8] };
    /// co.co_broadcast(&mut seed, 1)?;
    /// assert_eq!(u64::from_ne_bytes(seed), 42);
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn co_broadcast(&mut self, buf: &mut [u8], source: Image) -> CoResult<()> {
        let root = self.root(source)?;
        let team = self.collective_team();
        if team.broadcasts_one_way(&self.rt, buf.len()) && self.this_image() != source {
            self.images_running_for(Some(self.team.rank_of(source)?))?;
        } else {
            self.all_images_running()?;
        }
        Ok(self
            .collective_team()
            .broadcast_bytes_one_way(&self.rt, buf, root)?)
    }

    /// `co_sum(a, result_image)`: `buf` holds elements of type `elem`, `elem_len` bytes
    /// each; the element-wise sum goes to `result_image`, or to every image for `None`
    /// (elsewhere `buf` is left undefined, as Fortran says).
    ///
    /// ```
    /// use gaspar::coarray::{Coarrays, Elem, ElemType};
    /// let mut co = Coarrays::init()?;
    /// let mut buf = 2.5f64.to_ne_bytes(); // real(8) :: a
    /// co.co_sum(&mut buf, Elem::new(ElemType::Real, 8), 8, None)?;
    /// assert_eq!(f64::from_ne_bytes(buf), 2.5 * f64::from(co.num_images()));
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    #[inline]
    pub fn co_sum(
        &mut self,
        buf: &mut [u8],
        elem: Elem,
        elem_len: usize,
        result_image: Option<Image>,
    ) -> CoResult<()> {
        self.co_intrinsic(Intrinsic::Sum, buf, elem, elem_len, result_image)
    }

    /// `co_min(a, result_image)` (integer, real, character): see [`co_sum`](Self::co_sum).
    ///
    /// ```
    /// use gaspar::coarray::{Coarrays, Elem, ElemType};
    /// let mut co = Coarrays::init()?;
    /// let mut buf = (co.this_image() as i32).to_ne_bytes(); // integer(4)
    /// co.co_min(&mut buf, Elem::new(ElemType::Integer, 4), 4, Some(1))?;
    /// if co.this_image() == 1 {
    ///     assert_eq!(i32::from_ne_bytes(buf), 1);
    /// }
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    #[inline]
    pub fn co_min(
        &mut self,
        buf: &mut [u8],
        elem: Elem,
        elem_len: usize,
        result_image: Option<Image>,
    ) -> CoResult<()> {
        self.co_intrinsic(Intrinsic::Min, buf, elem, elem_len, result_image)
    }

    /// `co_max(a, result_image)` (integer, real, character): see [`co_sum`](Self::co_sum).
    ///
    /// ```
    /// use gaspar::coarray::{Coarrays, Elem, ElemType};
    /// let mut co = Coarrays::init()?;
    /// // character(len=3): compared as strings.
    /// let mut word = *b"abc";
    /// co.co_max(&mut word, Elem::new(ElemType::Character, 1), 3, None)?;
    /// assert_eq!(&word, b"abc");
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    #[inline]
    pub fn co_max(
        &mut self,
        buf: &mut [u8],
        elem: Elem,
        elem_len: usize,
        result_image: Option<Image>,
    ) -> CoResult<()> {
        self.co_intrinsic(Intrinsic::Max, buf, elem, elem_len, result_image)
    }

    /// `co_reduce(a, operation, result_image)`: `op(acc, other)` makes `acc` the
    /// combination of two elements of `elem_len` bytes (`acc` from lower images than
    /// `other`); it must be associative, need not be commutative.
    ///
    /// ```
    /// use gaspar::coarray::Coarrays;
    /// let mut co = Coarrays::init()?;
    /// // 2-byte elements combined by keeping the larger first byte.
    /// let mut buf = [3u8, 7, 1, 2];
    /// co.co_reduce(&mut buf, 2, &mut |acc: &mut [u8], other: &[u8]| {
    ///     if other[0] > acc[0] {
    ///         acc.copy_from_slice(other);
    ///     }
    /// }, None)?;
    /// assert_eq!(buf, [3, 7, 1, 2]);
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn co_reduce(
        &mut self,
        buf: &mut [u8],
        elem_len: usize,
        op: &mut dyn FnMut(&mut [u8], &[u8]),
        result_image: Option<Image>,
    ) -> CoResult<()> {
        let root = result_image.map(|i| self.root(i)).transpose()?;
        self.all_images_running()?;
        Ok(self
            .collective_team()
            .reduce_bytes(&self.rt, buf, elem_len, op, root)?)
    }

    #[inline]
    fn co_intrinsic(
        &mut self,
        what: Intrinsic,
        buf: &mut [u8],
        elem: Elem,
        elem_len: usize,
        result_image: Option<Image>,
    ) -> CoResult<()> {
        let root = result_image.map(|i| self.root(i)).transpose()?;
        // Integers and reals of the common kinds go to the team's builtin reduction, whose
        // cast checks the length (no general element check, no division); anything else,
        // or such a buffer that is not aligned, is checked and combined as bytes.
        let done = match (elem.ty, elem.kind, elem_len) {
            (ElemType::Integer, 1, 1) => self.builtin::<i8>(what, buf, root)?,
            (ElemType::Integer, 2, 2) => self.builtin::<i16>(what, buf, root)?,
            (ElemType::Integer, 4, 4) => self.builtin::<i32>(what, buf, root)?,
            (ElemType::Integer, 8, 8) => self.builtin::<i64>(what, buf, root)?,
            (ElemType::Real, 4, 4) => self.builtin::<f32>(what, buf, root)?,
            (ElemType::Real, 8, 8) => self.builtin::<f64>(what, buf, root)?,
            _ => false,
        };
        if done {
            return Ok(());
        }
        check(what, elem, elem_len, buf.len())?;
        self.all_images_running()?;
        let mut combine = |acc: &mut [u8], other: &[u8]| combine_one(what, elem, acc, other);
        Ok(self
            .collective_team()
            .reduce_bytes(&self.rt, buf, elem_len, &mut combine, root)?)
    }

    /// The team's builtin reduction on `buf` as `T`s, after the check that every image
    /// runs; `false` (nothing done) when `buf` is not a whole number of `T`s aligned for
    /// `T` (the caller checks and combines bytes then).
    #[inline]
    fn builtin<T: Reducible + Pod>(
        &self,
        what: Intrinsic,
        buf: &mut [u8],
        root: Option<u32>,
    ) -> CoResult<bool> {
        let Ok(values) = bytemuck::try_cast_slice_mut::<u8, T>(buf) else {
            return Ok(false);
        };
        self.all_images_running()?;
        let team = self.collective_team();
        match root {
            Some(root) => team.reduce(&self.rt, values, what.op(), root)?,
            None => team.allreduce(&self.rt, values, what.op())?,
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_combination_covers_the_types_without_a_builtin() {
        let i16k = Elem::new(ElemType::Integer, 16);
        let mut acc = (-5i128).to_ne_bytes();
        combine_one(Intrinsic::Sum, i16k, &mut acc, &7i128.to_ne_bytes());
        assert_eq!(i128::from_ne_bytes(acc), 2);
        combine_one(Intrinsic::Min, i16k, &mut acc, &(-9i128).to_ne_bytes());
        assert_eq!(i128::from_ne_bytes(acc), -9);
        let c8 = Elem::new(ElemType::Complex, 8);
        let mut z: Vec<u8> = [1.0f64, 2.0].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let w: Vec<u8> = [0.5f64, -4.0]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        combine_one(Intrinsic::Sum, c8, &mut z, &w);
        let expected: Vec<u8> = [1.5f64, -2.0]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        assert_eq!(z, expected);
        let ch = Elem::new(ElemType::Character, 1);
        let mut s = *b"pear";
        combine_one(Intrinsic::Min, ch, &mut s, b"peak");
        assert_eq!(&s, b"peak");
        combine_one(Intrinsic::Max, ch, &mut s, b"plum");
        assert_eq!(&s, b"plum");
        assert!(check(Intrinsic::Sum, ch, 4, 8).is_err());
        assert!(check(Intrinsic::Max, c8, 16, 16).is_err());
        assert!(check(Intrinsic::Sum, Elem::new(ElemType::Logical, 4), 4, 4).is_err());
        assert!(check(Intrinsic::Sum, Elem::new(ElemType::Integer, 4), 4, 6).is_err());
    }
}
