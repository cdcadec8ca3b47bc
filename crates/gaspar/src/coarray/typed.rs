//! The typed Rust face of coarrays: [`Images`] (the engine with typed collectives) and
//! [`Coarray<T, D>`], a `D`-dimensional array of `T` on every image, allocated
//! collectively, with remote sections picked by ranges with steps, as Fortran's
//! `x(1:n:2, :)[image]` and DASH's `dash::Coarray` do.
//!
//! Arrays are row-major (the last index varies fastest), as Rust's and C's arrays are.
//! Memory other images may write is never covered by a Rust reference: the local part is
//! read and written by copies ([`Coarray::local`], [`Coarray::set_local`]), which on one
//! node are plain memory copies.
//!
//! ```no_run
//! use gaspar::coarray::{Coarray, Images, Slice};
//! let mut images = Images::init()?;
//! let (me, n) = (images.this_image(), images.num_images());
//! let mut x = Coarray::<f64, 2>::new(&mut images, [4, 8])?;    // real(8) :: x(4, 8)[*]
//! x.set_local(&mut images, &vec![f64::from(me); 32])?;
//! images.sync_all()?;
//! // Row 0, every other column, of the next image: x(0, 0:8:2)[right].
//! let right = me % n + 1;
//! let row = x.on(right).get(&mut images, [Slice::at(0), Slice::from(0..8).step(2)])?;
//! assert_eq!(row.len(), 4);
//! let mut total = [row[0]];
//! images.co_sum(&mut total, None)?;
//! images.sync_all()?;
//! x.free(&mut images)?;
//! images.finalize()?;
//! # Ok::<(), gaspar::coarray::CoError>(())
//! ```

use std::marker::PhantomData;
use std::ops::{Deref, DerefMut, Range, RangeFull};

use bytemuck::Pod;

use super::convert::{Elem, ElemType};
use super::error::{CoError, CoResult};
use super::section::{Dim, Section};
use super::{Coarrays, Image, Token};

/// A Rust type with a Fortran counterpart, so that collectives know how to combine it.
///
/// ```
/// use gaspar::coarray::{CoElement, Elem, ElemType};
/// assert_eq!(<f32 as CoElement>::ELEM, Elem::new(ElemType::Real, 4));
/// ```
pub trait CoElement: Pod {
    /// Its Fortran type and kind.
    ///
    /// ```
    /// use gaspar::coarray::{CoElement, ElemType};
    /// assert_eq!(i64::ELEM.ty, ElemType::Integer);
    /// assert_eq!(i64::ELEM.kind, 8);
    /// ```
    const ELEM: Elem;
}

macro_rules! co_element {
    ($($t:ty => $ty:ident),*) => {$(
        impl CoElement for $t {
            const ELEM: Elem = Elem::new(ElemType::$ty, std::mem::size_of::<$t>() as u8);
        }
    )*};
}
co_element!(i8 => Integer, i16 => Integer, i32 => Integer, i64 => Integer, i128 => Integer,
            f32 => Real, f64 => Real);

/// The images of the job as a Rust program sees them: the coarray engine, with typed
/// collectives. Derefs to [`Coarrays`] for everything else (`sync_all`, `sync_images`,
/// `this_image`, ...).
///
/// ```
/// use gaspar::coarray::Images;
/// let mut images = Images::init()?;
/// images.sync_all()?; // the engine's calls through Deref
/// let mut n = [1i32];
/// images.co_sum(&mut n, None)?;
/// assert_eq!(n[0] as u32, images.num_images());
/// images.finalize()?;
/// # Ok::<(), gaspar::coarray::CoError>(())
/// ```
pub struct Images {
    engine: Coarrays,
}

impl Deref for Images {
    type Target = Coarrays;
    fn deref(&self) -> &Coarrays {
        &self.engine
    }
}

impl DerefMut for Images {
    fn deref_mut(&mut self) -> &mut Coarrays {
        &mut self.engine
    }
}

/// The typed face of an engine already set up.
impl From<Coarrays> for Images {
    fn from(engine: Coarrays) -> Images {
        Images { engine }
    }
}

impl Images {
    /// Joins the job (collective); see [`Coarrays::init`].
    ///
    /// ```
    /// let images = gaspar::coarray::Images::init()?;
    /// assert_eq!(images.this_image(), 1);
    /// images.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn init() -> CoResult<Images> {
        Ok(Images {
            engine: Coarrays::init()?,
        })
    }

    /// `co_sum(values, result_image)`: the element-wise sum over the images, on
    /// `result_image` or (`None`) on every image. Sums of reals have the same bits in
    /// every run.
    ///
    /// ```
    /// let mut images = gaspar::coarray::Images::init()?;
    /// let mut totals = [1.5f64, f64::from(images.this_image())];
    /// images.co_sum(&mut totals, None)?;
    /// assert_eq!(totals[0], 1.5 * f64::from(images.num_images()));
    /// images.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn co_sum<T: CoElement>(
        &mut self,
        values: &mut [T],
        result_image: Option<Image>,
    ) -> CoResult<()> {
        let len = std::mem::size_of::<T>();
        self.engine
            .co_sum(bytemuck::cast_slice_mut(values), T::ELEM, len, result_image)
    }

    /// `co_min(values, result_image)`: see [`co_sum`](Self::co_sum).
    ///
    /// ```
    /// let mut images = gaspar::coarray::Images::init()?;
    /// let mut lowest = [images.this_image() as i32];
    /// images.co_min(&mut lowest, Some(1))?;
    /// if images.this_image() == 1 {
    ///     assert_eq!(lowest[0], 1);
    /// }
    /// images.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn co_min<T: CoElement>(
        &mut self,
        values: &mut [T],
        result_image: Option<Image>,
    ) -> CoResult<()> {
        let len = std::mem::size_of::<T>();
        self.engine
            .co_min(bytemuck::cast_slice_mut(values), T::ELEM, len, result_image)
    }

    /// `co_max(values, result_image)`: see [`co_sum`](Self::co_sum).
    ///
    /// ```
    /// let mut images = gaspar::coarray::Images::init()?;
    /// let mut highest = [images.this_image() as i64];
    /// images.co_max(&mut highest, None)?;
    /// assert_eq!(highest[0], i64::from(images.num_images()));
    /// images.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn co_max<T: CoElement>(
        &mut self,
        values: &mut [T],
        result_image: Option<Image>,
    ) -> CoResult<()> {
        let len = std::mem::size_of::<T>();
        self.engine
            .co_max(bytemuck::cast_slice_mut(values), T::ELEM, len, result_image)
    }

    /// `co_broadcast(values, source_image)`.
    ///
    /// ```
    /// let mut images = gaspar::coarray::Images::init()?;
    /// let mut params = [0u32; 3];
    /// if images.this_image() == 1 {
    ///     params = [64, 64, 10];
    /// }
    /// images.co_broadcast(&mut params, 1)?;
    /// assert_eq!(params, [64, 64, 10]);
    /// images.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn co_broadcast<T: Pod>(&mut self, values: &mut [T], source: Image) -> CoResult<()> {
        self.engine
            .co_broadcast(bytemuck::cast_slice_mut(values), source)
    }

    /// `co_reduce(values, op, result_image)`: `op(acc, other)` combines `other` into
    /// `acc` (`acc` from lower images); associative, need not be commutative.
    ///
    /// ```
    /// let mut images = gaspar::coarray::Images::init()?;
    /// // Keep the pair with the larger first value (not a builtin reduction).
    /// let mut best = [[2.0f64, f64::from(images.this_image())]];
    /// images.co_reduce(&mut best, |acc, other| {
    ///     if other[0] > acc[0] {
    ///         *acc = *other;
    ///     }
    /// }, None)?;
    /// assert_eq!(best[0][0], 2.0);
    /// images.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn co_reduce<T: Pod>(
        &mut self,
        values: &mut [T],
        mut op: impl FnMut(&mut T, &T),
        result_image: Option<Image>,
    ) -> CoResult<()> {
        let len = std::mem::size_of::<T>();
        let mut combine = |acc: &mut [u8], other: &[u8]| {
            let mut a: T = bytemuck::pod_read_unaligned(acc);
            op(&mut a, &bytemuck::pod_read_unaligned(other));
            acc.copy_from_slice(bytemuck::bytes_of(&a));
        };
        self.engine.co_reduce(
            bytemuck::cast_slice_mut(values),
            len,
            &mut combine,
            result_image,
        )
    }

    /// Leaves the job at the program's normal end (the termination barrier).
    ///
    /// ```
    /// let images = gaspar::coarray::Images::init()?;
    /// images.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn finalize(self) -> CoResult<()> {
        self.engine.finalize()
    }
}

/// The indices of one dimension of a section: `start..end` walked by `step` (from the
/// end backwards when `step` is negative), or a single index.
///
/// ```
/// use gaspar::coarray::{Coarray, Images, Slice};
/// let mut images = Images::init()?;
/// let x = Coarray::<i32, 1>::new(&mut images, [10])?;
/// x.set_local(&mut images, &(0..10).collect::<Vec<i32>>())?;
/// images.sync_all()?;
/// // x(1:9:4)[1], x(:)[1] and x(3)[1]
/// assert_eq!(x.on(1).get(&mut images, [Slice::from(1..9).step(4)])?, [1, 5]);
/// assert_eq!(x.on(1).get(&mut images, [Slice::all()])?.len(), 10);
/// assert_eq!(x.on(1).get(&mut images, [Slice::from(3)])?, [3]);
/// x.free(&mut images)?;
/// images.finalize()?;
/// # Ok::<(), gaspar::coarray::CoError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slice {
    start: usize,
    /// `None`: to the end of the dimension.
    end: Option<usize>,
    step: isize,
}

impl Slice {
    /// The single index `index`.
    ///
    /// ```
    /// use gaspar::coarray::{Coarray, Images, Slice};
    /// let mut images = Images::init()?;
    /// let x = Coarray::<f32, 2>::new(&mut images, [2, 3])?;
    /// x.set_local(&mut images, &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0])?;
    /// images.sync_all()?;
    /// // Row 1 (row-major): x(1, :)[1]
    /// assert_eq!(x.on(1).get(&mut images, [Slice::at(1), Slice::all()])?, [3.0, 4.0, 5.0]);
    /// x.free(&mut images)?;
    /// images.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn at(index: usize) -> Slice {
        Slice {
            start: index,
            // Saturating: `usize::MAX` is then past every dimension (an error), not 0.
            end: Some(index.saturating_add(1)),
            step: 1,
        }
    }

    /// The whole dimension (Fortran's `:`).
    ///
    /// ```
    /// use gaspar::coarray::{Coarray, Images, Slice};
    /// let mut images = Images::init()?;
    /// let x = Coarray::<u8, 2>::new(&mut images, [2, 2])?;
    /// x.set_local(&mut images, &[1, 2, 3, 4])?;
    /// images.sync_all()?;
    /// // Column 0: x(:, 0)[1]
    /// assert_eq!(x.on(1).get(&mut images, [Slice::all(), Slice::at(0)])?, [1, 3]);
    /// x.free(&mut images)?;
    /// images.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn all() -> Slice {
        Slice::from(..)
    }

    /// Every `step`-th index of this slice; a negative step walks it from its last index
    /// down (Fortran's `n:1:-1`). A step of 0 is an error when the slice is used.
    ///
    /// ```
    /// use gaspar::coarray::{Coarray, Images, Slice};
    /// let mut images = Images::init()?;
    /// let x = Coarray::<i64, 1>::new(&mut images, [5])?;
    /// x.set_local(&mut images, &[0, 1, 2, 3, 4])?;
    /// images.sync_all()?;
    /// // x(5:1:-2)[1]: walked from the last index down.
    /// assert_eq!(x.on(1).get(&mut images, [Slice::all().step(-2)])?, [4, 2, 0]);
    /// assert!(x.on(1).get(&mut images, [Slice::all().step(0)]).is_err());
    /// x.free(&mut images)?;
    /// images.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn step(self, step: isize) -> Slice {
        Slice { step, ..self }
    }

    /// The first index, count and step (in elements) over a dimension of `extent`.
    fn resolve(self, extent: usize) -> CoResult<(usize, usize, isize)> {
        let end = self.end.unwrap_or(extent);
        if self.step == 0 || self.start > end || end > extent {
            return Err(CoError::invalid(
                "coarray section",
                format!("{self:?} does not fit a dimension of {extent}"),
            ));
        }
        let span = end - self.start;
        let stride = self.step.unsigned_abs();
        let count = span.div_ceil(stride);
        let first = if self.step > 0 || count == 0 {
            self.start
        } else {
            self.start + (count - 1) * stride
        };
        Ok((first, count, self.step))
    }
}

impl From<Range<usize>> for Slice {
    fn from(r: Range<usize>) -> Slice {
        Slice {
            start: r.start,
            end: Some(r.end),
            step: 1,
        }
    }
}

impl From<RangeFull> for Slice {
    fn from(_: RangeFull) -> Slice {
        Slice {
            start: 0,
            end: None,
            step: 1,
        }
    }
}

impl From<usize> for Slice {
    fn from(index: usize) -> Slice {
        Slice::at(index)
    }
}

/// A `D`-dimensional array of `T` on every image (`T :: x(shape)[*]`), row-major.
/// Allocated and freed collectively; dropping it without [`free`](Self::free) leaves
/// its memory allocated until the job ends.
///
/// ```
/// use gaspar::coarray::{Coarray, Images};
/// let mut images = Images::init()?;
/// let me = images.this_image();
/// let x = Coarray::<u32, 1>::new(&mut images, [4])?; // integer :: x(4)[*]
/// x.on(me).set(&mut images, [2], 7)?; // x(2)[me] = 7
/// images.sync_all()?;
/// assert_eq!(x.local(&mut images)?, [0, 0, 7, 0]);
/// x.free(&mut images)?;
/// images.finalize()?;
/// # Ok::<(), gaspar::coarray::CoError>(())
/// ```
#[derive(Debug)]
pub struct Coarray<T: Pod, const D: usize> {
    token: Token,
    shape: [usize; D],
    _elements: PhantomData<T>,
}

impl<T: Pod, const D: usize> Coarray<T, D> {
    /// Collective over the current team: allocates the array, zeroed, on every image
    /// (every image passes the same shape).
    ///
    /// ```
    /// use gaspar::coarray::{Coarray, Images};
    /// let mut images = Images::init()?;
    /// let x = Coarray::<f64, 3>::new(&mut images, [2, 3, 4])?;
    /// assert_eq!(x.local(&mut images)?, vec![0.0; 24]); // zeroed
    /// x.free(&mut images)?;
    /// images.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn new(images: &mut Coarrays, shape: [usize; D]) -> CoResult<Self> {
        let bytes = shape
            .iter()
            .try_fold(std::mem::size_of::<T>(), |n, &e| n.checked_mul(e))
            .ok_or_else(|| CoError::invalid("Coarray::new", "the array's size overflows"))?;
        Ok(Coarray {
            token: images.allocate(bytes)?,
            shape,
            _elements: PhantomData,
        })
    }

    /// Collective over the current team: frees the array on every image.
    ///
    /// ```
    /// use gaspar::coarray::{Coarray, Images};
    /// let mut images = Images::init()?;
    /// let x = Coarray::<u8, 1>::new(&mut images, [1 << 16])?;
    /// x.free(&mut images)?; // collective
    /// images.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn free(self, images: &mut Coarrays) -> CoResult<()> {
        images.deallocate(self.token)
    }

    /// The shape of each image's array.
    ///
    /// ```
    /// use gaspar::coarray::{Coarray, Images};
    /// let mut images = Images::init()?;
    /// let x = Coarray::<i16, 2>::new(&mut images, [3, 5])?;
    /// assert_eq!(x.shape(), [3, 5]);
    /// x.free(&mut images)?;
    /// images.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn shape(&self) -> [usize; D] {
        self.shape
    }

    /// Elements on each image.
    ///
    /// ```
    /// use gaspar::coarray::{Coarray, Images};
    /// let mut images = Images::init()?;
    /// let x = Coarray::<i16, 2>::new(&mut images, [3, 5])?;
    /// assert_eq!(x.len(), 15);
    /// x.free(&mut images)?;
    /// images.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn len(&self) -> usize {
        self.token.len() / std::mem::size_of::<T>().max(1)
    }

    /// Whether each image's array has no elements.
    ///
    /// ```
    /// use gaspar::coarray::{Coarray, Images};
    /// let mut images = Images::init()?;
    /// let x = Coarray::<i16, 2>::new(&mut images, [3, 0])?;
    /// assert!(x.is_empty());
    /// x.free(&mut images)?;
    /// images.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A copy of this image's array, row-major.
    ///
    /// ```
    /// use gaspar::coarray::{Coarray, Images};
    /// let mut images = Images::init()?;
    /// let x = Coarray::<i32, 1>::new(&mut images, [3])?;
    /// x.set_local(&mut images, &[4, 5, 6])?;
    /// assert_eq!(x.local(&mut images)?, [4, 5, 6]);
    /// x.free(&mut images)?;
    /// images.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn local(&self, images: &mut Coarrays) -> CoResult<Vec<T>> {
        let me = images.this_image();
        self.on(me).read(images)
    }

    /// Overwrites this image's array with `values` (row-major, [`len`](Self::len)
    /// elements). Like any write to a coarray, others see it after a sync.
    ///
    /// ```
    /// use gaspar::coarray::{Coarray, Images};
    /// let mut images = Images::init()?;
    /// let x = Coarray::<i32, 2>::new(&mut images, [2, 2])?;
    /// x.set_local(&mut images, &[1, 2, 3, 4])?;
    /// assert!(x.set_local(&mut images, &[1, 2, 3]).is_err()); // len() elements
    /// images.sync_all()?; // now the other images see it
    /// assert_eq!(x.on(images.this_image()).at(&mut images, [1, 0])?, 3);
    /// x.free(&mut images)?;
    /// images.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn set_local(&self, images: &mut Coarrays, values: &[T]) -> CoResult<()> {
        let me = images.this_image();
        self.on(me).write(images, values)
    }

    /// The array of `image` (Fortran's `x[image]`), to read or write sections of.
    ///
    /// ```
    /// use gaspar::coarray::{Coarray, Images};
    /// let mut images = Images::init()?;
    /// let (me, n) = (images.this_image(), images.num_images());
    /// let x = Coarray::<u64, 1>::new(&mut images, [1])?;
    /// x.on(me % n + 1).write(&mut images, &[u64::from(me)])?; // x[right] = me
    /// images.sync_all()?;
    /// assert_eq!(x.local(&mut images)?, [u64::from((me + n - 2) % n + 1)]);
    /// x.free(&mut images)?;
    /// images.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn on(&self, image: Image) -> Remote<'_, T, D> {
        Remote { array: self, image }
    }

    /// The section `slices` of the array as engine dimensions (fastest first) and the
    /// byte offset of its first element.
    fn section(&self, slices: [Slice; D]) -> CoResult<(Vec<Dim>, usize)> {
        let size = std::mem::size_of::<T>();
        let mut dims = Vec::with_capacity(D);
        let mut start = 0usize;
        let mut stride = size;
        for axis in (0..D).rev() {
            let (first, count, step) = slices[axis].resolve(self.shape[axis])?;
            // A step that reaches a second element is less than the extent, so the byte
            // stride fits (the array's size did); with one element the step is not used.
            let step = if count > 1 { step } else { 1 };
            start += first * stride;
            dims.push(Dim {
                extent: count,
                stride: step * stride as isize,
            });
            stride *= self.shape[axis];
        }
        Ok((dims, start))
    }
}

/// One image's array of a [`Coarray`]: sections of it are read and written from here.
/// Writes are complete at the next image control statement (sync, lock, event, ...).
///
/// ```
/// use gaspar::coarray::{Coarray, Images, Remote};
/// let mut images = Images::init()?;
/// let x = Coarray::<f32, 1>::new(&mut images, [4])?;
/// let first: Remote<'_, f32, 1> = x.on(1);
/// first.set(&mut images, [0], 2.5)?;
/// images.sync_all()?;
/// assert_eq!(first.at(&mut images, [0])?, 2.5);
/// x.free(&mut images)?;
/// images.finalize()?;
/// # Ok::<(), gaspar::coarray::CoError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Remote<'a, T: Pod, const D: usize> {
    array: &'a Coarray<T, D>,
    image: Image,
}

/// A dense run of `count` elements of `T`.
fn dense<T>(count: usize) -> [Dim; 1] {
    [Dim {
        extent: count,
        stride: std::mem::size_of::<T>() as isize,
    }]
}

impl<T: Pod, const D: usize> Remote<'_, T, D> {
    /// The elements of section `slices` (Fortran's `x(s1, s2, ...)[image]`), row-major.
    ///
    /// ```
    /// use gaspar::coarray::{Coarray, Images, Slice};
    /// let mut images = Images::init()?;
    /// let x = Coarray::<i32, 2>::new(&mut images, [3, 3])?;
    /// x.set_local(&mut images, &(0..9).collect::<Vec<i32>>())?;
    /// images.sync_all()?;
    /// // x(0:2, 1:3)[1], row-major.
    /// let block = x.on(1).get(&mut images, [Slice::from(0..2), Slice::from(1..3)])?;
    /// assert_eq!(block, [1, 2, 4, 5]);
    /// x.free(&mut images)?;
    /// images.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn get(&self, images: &mut Coarrays, slices: [Slice; D]) -> CoResult<Vec<T>> {
        let (dims, start) = self.array.section(slices)?;
        let count = dims.iter().map(|d| d.extent).product::<usize>();
        let mut out = vec![T::zeroed(); count];
        let size = std::mem::size_of::<T>();
        let elem = Elem::new(ElemType::Derived, 0);
        let local = dense::<T>(count);
        images.get(
            &self.array.token,
            0,
            self.image,
            &Section {
                elem_len: size,
                start,
                dims: &dims,
            },
            elem,
            bytemuck::cast_slice_mut(&mut out),
            &Section {
                elem_len: size,
                start: 0,
                dims: &local,
            },
            elem,
        )?;
        Ok(out)
    }

    /// Writes `values` (row-major, one per element of the section, or a single value for
    /// all of them) into section `slices` (Fortran's `x(s1, s2, ...)[image] = values`).
    ///
    /// ```
    /// use gaspar::coarray::{Coarray, Images, Slice};
    /// let mut images = Images::init()?;
    /// let x = Coarray::<i32, 1>::new(&mut images, [6])?;
    /// x.on(1).put(&mut images, [Slice::from(0..6).step(2)], &[7, 8, 9])?; // x(0:6:2)[1] = ...
    /// x.on(1).put(&mut images, [Slice::from(1..3)], &[-1])?; // one value for all
    /// images.sync_all()?;
    /// assert_eq!(x.local(&mut images)?, [7, -1, -1, 0, 9, 0]);
    /// x.free(&mut images)?;
    /// images.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn put(&self, images: &mut Coarrays, slices: [Slice; D], values: &[T]) -> CoResult<()> {
        let (dims, start) = self.array.section(slices)?;
        let size = std::mem::size_of::<T>();
        let elem = Elem::new(ElemType::Derived, 0);
        let local = dense::<T>(values.len());
        images.put(
            &self.array.token,
            0,
            self.image,
            &Section {
                elem_len: size,
                start,
                dims: &dims,
            },
            elem,
            bytemuck::cast_slice(values),
            &Section {
                elem_len: size,
                start: 0,
                dims: &local,
            },
            elem,
        )
    }

    /// The whole array of the image (`x(:, ...)[image]`).
    ///
    /// ```
    /// use gaspar::coarray::{Coarray, Images};
    /// let mut images = Images::init()?;
    /// let x = Coarray::<u8, 1>::new(&mut images, [3])?;
    /// x.set_local(&mut images, &[1, 2, 3])?;
    /// images.sync_all()?;
    /// assert_eq!(x.on(1).read(&mut images)?, [1, 2, 3]);
    /// x.free(&mut images)?;
    /// images.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn read(&self, images: &mut Coarrays) -> CoResult<Vec<T>> {
        self.get(images, [Slice::all(); D])
    }

    /// Overwrites the whole array of the image.
    ///
    /// ```
    /// use gaspar::coarray::{Coarray, Images};
    /// let mut images = Images::init()?;
    /// let x = Coarray::<u8, 1>::new(&mut images, [3])?;
    /// x.on(1).write(&mut images, &[9, 8, 7])?;
    /// images.sync_all()?;
    /// assert_eq!(x.local(&mut images)?, [9, 8, 7]);
    /// x.free(&mut images)?;
    /// images.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn write(&self, images: &mut Coarrays, values: &[T]) -> CoResult<()> {
        if values.len() != self.array.len() {
            return Err(CoError::invalid(
                "Coarray write",
                format!("{} values for {} elements", values.len(), self.array.len()),
            ));
        }
        self.put(images, [Slice::all(); D], values)
    }

    /// The element at `index`.
    ///
    /// ```
    /// use gaspar::coarray::{Coarray, Images};
    /// let mut images = Images::init()?;
    /// let x = Coarray::<i64, 2>::new(&mut images, [2, 2])?;
    /// x.set_local(&mut images, &[1, 2, 3, 4])?;
    /// images.sync_all()?;
    /// assert_eq!(x.on(1).at(&mut images, [0, 1])?, 2);
    /// x.free(&mut images)?;
    /// images.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn at(&self, images: &mut Coarrays, index: [usize; D]) -> CoResult<T> {
        Ok(self.get(images, index.map(Slice::at))?[0])
    }

    /// Sets the element at `index`.
    ///
    /// ```
    /// use gaspar::coarray::{Coarray, Images};
    /// let mut images = Images::init()?;
    /// let x = Coarray::<i64, 2>::new(&mut images, [2, 2])?;
    /// x.on(1).set(&mut images, [1, 1], -4)?; // x(1, 1)[1] = -4
    /// images.sync_all()?;
    /// assert_eq!(x.local(&mut images)?, [0, 0, 0, -4]);
    /// x.free(&mut images)?;
    /// images.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn set(&self, images: &mut Coarrays, index: [usize; D], value: T) -> CoResult<()> {
        self.put(images, index.map(Slice::at), &[value])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_resolve_to_first_index_count_and_step() {
        assert_eq!(Slice::from(0..8).step(2).resolve(8).unwrap(), (0, 4, 2));
        assert_eq!(Slice::from(1..8).step(3).resolve(8).unwrap(), (1, 3, 3));
        // Backwards: from the last index the step reaches.
        assert_eq!(Slice::all().step(-1).resolve(5).unwrap(), (4, 5, -1));
        assert_eq!(Slice::from(0..5).step(-2).resolve(5).unwrap(), (4, 3, -2));
        assert_eq!(Slice::at(3).resolve(4).unwrap(), (3, 1, 1));
        assert!(Slice::at(4).resolve(4).is_err());
        assert!(Slice::all().step(0).resolve(4).is_err());
        assert_eq!(Slice::from(2..2).resolve(4).unwrap(), (2, 0, 1));
    }
}
