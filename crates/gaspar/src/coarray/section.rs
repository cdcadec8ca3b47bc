//! Array sections as the engine receives them (byte strides, possibly negative, up to 15
//! dimensions) and what the strided layer needs from them: a [`Descriptor`] pairing two
//! sections of the same shape, or the element offsets of a section for the general path.

use crate::strided::{Descriptor, MAX_STRIDE_LEVELS};

use super::error::{CoError, CoResult};

/// Most dimensions (rank) of a section.
///
/// ```
/// use gaspar::coarray::{Dim, Section, MAX_RANK};
/// let dims = vec![Dim { extent: 1, stride: 8 }; MAX_RANK + 1];
/// let s = Section { elem_len: 8, start: 0, dims: &dims };
/// assert!(s.check("put", 8).is_err()); // Fortran allows 15 dimensions
/// ```
pub const MAX_RANK: usize = MAX_STRIDE_LEVELS;

/// One dimension of a section: `extent` elements, `stride` BYTES apart (may be negative).
///
/// ```
/// use gaspar::coarray::{Dim, Section};
/// // a(1:10:3) of real(4): 4 elements, 12 bytes apart.
/// let dims = [Dim { extent: 4, stride: 12 }];
/// let s = Section { elem_len: 4, start: 0, dims: &dims };
/// assert_eq!(s.offsets().collect::<Vec<_>>(), [0, 12, 24, 36]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dim {
    /// Elements along this dimension.
    pub extent: usize,
    /// Bytes from one element to the next along this dimension.
    pub stride: isize,
}

/// A section of memory: elements of `elem_len` bytes laid out along `dims` (`dims[0]`
/// varies fastest, as in Fortran). `start` is the byte offset of the first element inside
/// the buffer the section describes (negative strides put later elements below it).
///
/// ```
/// use gaspar::coarray::{Dim, Section};
/// // a(3:1:-1) of integer(8): from byte 16 down.
/// let dims = [Dim { extent: 3, stride: -8 }];
/// let s = Section { elem_len: 8, start: 16, dims: &dims };
/// assert_eq!(s.check("get", 24)?, 0); // the lowest byte touched
/// assert_eq!(s.offsets().collect::<Vec<_>>(), [16, 8, 0]);
/// # Ok::<(), gaspar::coarray::CoError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Section<'a> {
    /// Bytes of one element.
    pub elem_len: usize,
    /// Byte offset of the first element.
    pub start: usize,
    /// The dimensions, fastest first; empty for a scalar.
    pub dims: &'a [Dim],
}

impl<'a> Section<'a> {
    /// A scalar of `elem_len` bytes at byte `start`.
    ///
    /// ```
    /// use gaspar::coarray::Section;
    /// let s = Section::scalar(4, 8);
    /// assert_eq!(s.count()?, 1);
    /// assert_eq!(s.offsets().collect::<Vec<_>>(), [8]);
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn scalar(elem_len: usize, start: usize) -> Section<'a> {
        Section {
            elem_len,
            start,
            dims: &[],
        }
    }

    /// Elements in the section.
    ///
    /// ```
    /// use gaspar::coarray::{Dim, Section};
    /// let dims = [Dim { extent: 3, stride: 8 }, Dim { extent: 4, stride: 64 }];
    /// assert_eq!(Section { elem_len: 8, start: 0, dims: &dims }.count()?, 12);
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    #[inline]
    pub fn count(&self) -> CoResult<usize> {
        self.dims
            .iter()
            .try_fold(1usize, |n, d| n.checked_mul(d.extent))
            .ok_or_else(|| CoError::invalid("section", "element count overflows"))
    }

    /// Checks the section against a buffer of `len` bytes: rank, and every byte it
    /// touches inside `0..len`. Returns the lowest byte it touches.
    ///
    /// ```
    /// use gaspar::coarray::{Dim, Section};
    /// let dims = [Dim { extent: 4, stride: 8 }];
    /// let s = Section { elem_len: 8, start: 0, dims: &dims };
    /// assert_eq!(s.check("put", 32)?, 0);
    /// assert!(s.check("put", 31).is_err()); // the last element would end past the buffer
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    #[inline]
    pub fn check(&self, call: &'static str, len: usize) -> CoResult<usize> {
        if self.dims.is_empty()
            && self
                .start
                .checked_add(self.elem_len)
                .is_some_and(|end| end <= len)
        {
            // A scalar inside the buffer (the common case, checked without the loop).
            return Ok(self.start);
        }
        let run_inside = self.dims.len() <= MAX_RANK
            && self
                .run_len()
                .and_then(|bytes| self.start.checked_add(bytes))
                .is_some_and(|end| end <= len);
        if run_inside {
            // One run inside the buffer (whole arrays, rows): its bytes are start..end.
            return Ok(self.start);
        }
        self.check_dims(call, len)
    }

    #[inline(never)]
    fn check_dims(&self, call: &'static str, len: usize) -> CoResult<usize> {
        if self.dims.len() > MAX_RANK {
            return Err(CoError::invalid(
                call,
                format!("rank {} exceeds {MAX_RANK}", self.dims.len()),
            ));
        }
        if self.count()? == 0 {
            return Ok(self.start.min(len));
        }
        let overflow = || CoError::invalid(call, "section extent overflows");
        let (mut low, mut high) = (self.start as i128, self.start as i128);
        for d in self.dims {
            let reach = (d.extent as i128 - 1) * d.stride as i128;
            if reach < 0 {
                low += reach;
            } else {
                high += reach;
            }
        }
        high = high
            .checked_add(self.elem_len as i128)
            .ok_or_else(overflow)?;
        if low < 0 || high > len as i128 {
            // On the remote side the bytes count from the element the section starts at,
            // where the coarray has `len` bytes left.
            let message = if call.contains("remote") {
                format!(
                    "the section reaches bytes {low}..{high} from its first element, where \
                     the coarray has {len} bytes left (a subscript out of the bounds?)"
                )
            } else {
                format!("the section touches bytes {low}..{high} of a {len}-byte buffer")
            };
            return Err(CoError::invalid(call, message));
        }
        Ok(low as usize)
    }

    /// The byte offset of every element, in Fortran (array element) order. The section
    /// must have passed [`check`](Self::check): the offsets of one that did not are
    /// meaningless (none at all past [`MAX_RANK`] dimensions), never a panic.
    ///
    /// ```
    /// use gaspar::coarray::{Dim, Section};
    /// // a(1:2, 1:2) of a 3 x 3 integer(1) array: columns 3 bytes apart.
    /// let dims = [Dim { extent: 2, stride: 1 }, Dim { extent: 2, stride: 3 }];
    /// let s = Section { elem_len: 1, start: 0, dims: &dims };
    /// assert_eq!(s.offsets().collect::<Vec<_>>(), [0, 1, 3, 4]);
    /// ```
    pub fn offsets(&self) -> impl Iterator<Item = usize> + 'a + use<'a> {
        let dims = self.dims;
        let mut index = [0usize; MAX_RANK];
        let mut at = self.start as isize;
        let mut remaining = if dims.len() > MAX_RANK {
            0
        } else {
            self.count().unwrap_or(0)
        };
        std::iter::from_fn(move || {
            if remaining == 0 {
                return None;
            }
            remaining -= 1;
            let here = at as usize;
            for (k, d) in dims.iter().enumerate() {
                index[k] += 1;
                if index[k] < d.extent {
                    at = at.wrapping_add(d.stride);
                    break;
                }
                at = at.wrapping_sub((d.extent as isize).wrapping_sub(1).wrapping_mul(d.stride));
                index[k] = 0;
            }
            Some(here)
        })
    }

    /// The bytes of the section when its elements lie one after another in Fortran order
    /// (a single run from `start`), `None` when they do not (or their count overflows).
    #[inline]
    pub fn run_len(&self) -> Option<usize> {
        let mut bytes = self.elem_len;
        for d in self.dims.iter().filter(|d| d.extent != 1) {
            if d.stride != bytes as isize {
                return None;
            }
            bytes = bytes.checked_mul(d.extent)?;
        }
        Some(bytes)
    }

    /// Whether the section's elements, counted, take no more bytes than it spans from its
    /// lowest byte to its highest: true of every section that writes each element once
    /// (what a destination must), false of one with a stride of 0 along a dimension of
    /// several elements.
    ///
    /// ```
    /// use gaspar::coarray::{Dim, Section};
    /// let rows = [Dim { extent: 4, stride: 8 }, Dim { extent: 2, stride: -64 }];
    /// assert!(Section { elem_len: 8, start: 64, dims: &rows }.spans_its_elements());
    /// let same = [Dim { extent: 1 << 40, stride: 0 }];
    /// assert!(!Section { elem_len: 16, start: 0, dims: &same }.spans_its_elements());
    /// ```
    pub fn spans_its_elements(&self) -> bool {
        let Ok(count) = self.count() else {
            return false;
        };
        // Saturating: 15 dimensions of the largest extents and strides pass i128's range.
        let span = self.dims.iter().fold(self.elem_len as i128, |span, d| {
            let reach = (d.extent as i128 - 1).max(0);
            span.saturating_add(reach.saturating_mul((d.stride as i128).abs()))
        });
        (count as i128).saturating_mul(self.elem_len as i128) <= span
    }

    /// Whether the elements lie one after another in Fortran order (a single run).
    ///
    /// ```
    /// use gaspar::coarray::{Dim, Section};
    /// let dense = [Dim { extent: 2, stride: 4 }, Dim { extent: 3, stride: 8 }];
    /// assert!(Section { elem_len: 4, start: 0, dims: &dense }.is_contiguous());
    /// let gaps = [Dim { extent: 2, stride: 4 }, Dim { extent: 3, stride: 12 }];
    /// assert!(!Section { elem_len: 4, start: 0, dims: &gaps }.is_contiguous());
    /// ```
    #[inline]
    pub fn is_contiguous(&self) -> bool {
        let mut expected = Some(self.elem_len as isize);
        for d in self.dims.iter().filter(|d| d.extent != 1) {
            if Some(d.stride) != expected {
                return false;
            }
            expected = isize::try_from(d.extent)
                .ok()
                .and_then(|e| d.stride.checked_mul(e));
        }
        true
    }
}

/// A dense section of `count` elements of `elem_len` bytes shaped like `like`'s
/// dimensions (its `dims` are written into `storage`).
pub fn dense<'s>(like: &Section<'_>, elem_len: usize, storage: &'s mut Vec<Dim>) -> Section<'s> {
    storage.clear();
    let mut stride = elem_len as isize;
    for d in like.dims {
        storage.push(Dim {
            extent: d.extent,
            stride,
        });
        stride *= d.extent as isize;
    }
    Section {
        elem_len,
        start: 0,
        dims: storage,
    }
}

/// Two sections of one shape paired for the strided layer: the descriptor and where each
/// side's lowest element lies.
pub struct Paired {
    /// Local side = source of a put / destination of a get.
    pub descriptor: Descriptor,
    /// Byte of the local buffer the descriptor's local side starts at.
    pub local_base: usize,
    /// Byte (relative to the remote section's buffer) the remote side starts at.
    pub remote_base: usize,
}

/// Pairs `local` with `remote` when both have the same element length and the same
/// extents (dimensions of extent 1 aside) and every remote stride, once the dimensions the
/// remote side runs backwards are reversed on both sides, leaves the local stride
/// non-negative. `put` says which side is the descriptor's source. `None` when the
/// general path is needed.
pub fn pair(local: &Section<'_>, remote: &Section<'_>, put: bool) -> CoResult<Option<Paired>> {
    if local.elem_len != remote.elem_len {
        return Ok(None);
    }
    let significant = |s: &Section<'_>| {
        s.dims
            .iter()
            .copied()
            .filter(|d| d.extent != 1)
            .collect::<Vec<Dim>>()
    };
    let (l, r) = (significant(local), significant(remote));
    if l.len() != r.len() || l.iter().zip(&r).any(|(a, b)| a.extent != b.extent) {
        return Ok(None);
    }
    let (mut local_base, mut remote_base) = (local.start as isize, remote.start as isize);
    let mut count = vec![local.elem_len as u64];
    let (mut local_strides, mut remote_strides) = (Vec::new(), Vec::new());
    for (a, b) in l.iter().zip(&r) {
        let (mut ls, mut rs) = (a.stride, b.stride);
        if rs < 0 {
            local_base += (a.extent as isize - 1) * ls;
            remote_base += (b.extent as isize - 1) * rs;
            ls = -ls;
            rs = -rs;
        }
        if ls < 0 {
            return Ok(None);
        }
        count.push(a.extent as u64);
        local_strides.push(ls as u64);
        remote_strides.push(rs as u64);
    }
    let descriptor = if put {
        Descriptor::new(&count, &local_strides, &remote_strides)
    } else {
        Descriptor::new(&count, &remote_strides, &local_strides)
    }
    .map_err(CoError::from)?;
    Ok(Some(Paired {
        descriptor,
        local_base: local_base as usize,
        remote_base: remote_base as usize,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dim(extent: usize, stride: isize) -> Dim {
        Dim { extent, stride }
    }

    #[test]
    fn offsets_walk_in_fortran_order_also_backwards() {
        let dims = [dim(3, -8), dim(2, 100)];
        let s = Section {
            elem_len: 8,
            start: 16,
            dims: &dims,
        };
        assert_eq!(s.check("get", 124).unwrap(), 0);
        assert_eq!(s.offsets().collect::<Vec<_>>(), [16, 8, 0, 116, 108, 100]);
        assert!(s.check("get", 123).is_err());
        assert_eq!(Section::scalar(4, 12).offsets().collect::<Vec<_>>(), [12]);
        assert!(!s.is_contiguous());
        let whole = [dim(4, 8), dim(1, 0), dim(3, 32)];
        assert!(Section {
            elem_len: 8,
            start: 0,
            dims: &whole
        }
        .is_contiguous());
    }

    #[test]
    fn pairing_reverses_backward_remote_dimensions_on_both_sides() {
        let local = [dim(4, -8)];
        let remote = [dim(4, -16)];
        let backward = Section {
            elem_len: 8,
            start: 24,
            dims: &local,
        };
        let r = Section {
            elem_len: 8,
            start: 48,
            dims: &remote,
        };
        // Both backwards: both reversed, from their lowest elements.
        let p = pair(&backward, &r, true).unwrap().expect("pairs");
        assert_eq!((p.local_base, p.remote_base), (0, 0));
        // Reversing the remote side would make a forward local side run backwards:
        // general path.
        let forward = [dim(4, 8)];
        let l = Section {
            elem_len: 8,
            start: 0,
            dims: &forward,
        };
        assert!(pair(&l, &r, true).unwrap().is_none());
        assert!(pair(&r, &l, true).unwrap().is_none());
        // Extents must agree, dimensions of extent 1 aside.
        let other = [dim(1, 999), dim(4, 8)];
        let o = Section {
            elem_len: 8,
            start: 0,
            dims: &other,
        };
        assert!(pair(&o, &l, false).unwrap().is_some());
        let short = [dim(3, 8)];
        let s = Section {
            elem_len: 8,
            start: 0,
            dims: &short,
        };
        assert!(pair(&s, &l, false).unwrap().is_none());
    }
}
