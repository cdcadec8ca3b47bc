//! The block distribution's serialization helpers (LAPPS Appendix A's utility functions):
//! how a slice of a block is laid out in a prefetch buffer ([`SerialLayout`]) and how a
//! domain travels as metadata words.

use super::domain::Domain;
use super::error::DarrayError;
use crate::error::Result;

/// Words of a domain's metadata: the lows of dimensions 0..3, then the highs (unused
/// dimensions 0).
///
/// ```
/// use gaspar::darray::{domain_words, Domain, METADATA_WORDS};
/// assert_eq!(domain_words(&Domain::of_extents([7]))?.len(), METADATA_WORDS);
/// # Ok::<(), gaspar::Error>(())
/// ```
pub const METADATA_WORDS: usize = 6;

/// A slice of `T` elements stored densely (dimension 0 varying fastest) in a buffer: the
/// layout of prefetched data, and of the data a block's owner sends for a slice.
///
/// ```
/// use gaspar::darray::{Domain, SerialLayout};
/// let layout = SerialLayout::new(Domain::new([1, 1], [3, 3]), 4);
/// for index in layout.slice().iter() {
///     let at = layout.byte_offset(index).expect("inside the slice");
///     assert_eq!(layout.index_at(at), Some(index));
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SerialLayout<const D: usize> {
    slice: Domain<D>,
    element_bytes: usize,
}

impl<const D: usize> SerialLayout<D> {
    /// `slice` of elements of `element_bytes` bytes.
    ///
    /// ```
    /// use gaspar::darray::{Domain, SerialLayout};
    /// let layout = SerialLayout::new(Domain::new([2, 0], [4, 3]), 8);
    /// assert_eq!(layout.data_bytes(), 2 * 3 * 8);
    /// ```
    pub fn new(slice: Domain<D>, element_bytes: usize) -> SerialLayout<D> {
        SerialLayout {
            slice,
            element_bytes,
        }
    }

    /// The slice laid out.
    ///
    /// ```
    /// use gaspar::darray::{Domain, SerialLayout};
    /// let slice = Domain::new([2], [9]);
    /// assert_eq!(SerialLayout::new(slice, 4).slice(), slice);
    /// ```
    pub fn slice(&self) -> Domain<D> {
        self.slice
    }

    /// Bytes of the serialized data (LAPPS's `getSerializedSize`).
    ///
    /// ```
    /// use gaspar::darray::{Domain, SerialLayout};
    /// assert_eq!(SerialLayout::new(Domain::of_extents([5]), 4).data_bytes(), 20);
    /// ```
    pub fn data_bytes(&self) -> usize {
        self.slice.len().saturating_mul(self.element_bytes)
    }

    /// The metadata describing the slice (LAPPS's `serializeMetadata`).
    ///
    /// ```
    /// use gaspar::darray::{words_domain, Domain, SerialLayout};
    /// let slice = Domain::new([1, 2], [3, 4]);
    /// let words = SerialLayout::new(slice, 8).metadata()?;
    /// assert_eq!(words_domain::<2>(&words)?, slice);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn metadata(&self) -> Result<[u64; METADATA_WORDS]> {
        domain_words(&self.slice)
    }

    /// Byte offset of `index` in the data, `None` outside the slice (LAPPS's
    /// `getByteOffsetFromIdx`).
    ///
    /// ```
    /// use gaspar::darray::{Domain, SerialLayout};
    /// let layout = SerialLayout::new(Domain::new([2, 0], [4, 3]), 8);
    /// assert_eq!(layout.byte_offset([3, 1]), Some((1 + 2) * 8));
    /// assert_eq!(layout.byte_offset([0, 0]), None);
    /// ```
    #[inline(always)]
    pub fn byte_offset(&self, index: [usize; D]) -> Option<usize> {
        self.slice
            .contains(index)
            .then(|| self.slice.linear(index).checked_mul(self.element_bytes))
            .flatten()
    }

    /// The index of the element at byte `offset`, `None` past the data or inside an
    /// element (LAPPS's `getIdxFromByteOffset`).
    ///
    /// ```
    /// use gaspar::darray::{Domain, SerialLayout};
    /// let layout = SerialLayout::new(Domain::new([2, 0], [4, 3]), 8);
    /// assert_eq!(layout.index_at(24), Some([3, 1]));
    /// assert_eq!(layout.index_at(25), None); // inside an element
    /// assert_eq!(layout.index_at(48), None); // past the data
    /// ```
    pub fn index_at(&self, offset: usize) -> Option<[usize; D]> {
        if self.element_bytes == 0
            || offset % self.element_bytes != 0
            || offset >= self.data_bytes()
        {
            return None;
        }
        let mut rest = offset / self.element_bytes;
        let extents = self.slice.extents();
        Some(std::array::from_fn(|k| {
            let i = self.slice.lo[k] + rest % extents[k];
            rest /= extents[k];
            i
        }))
    }
}

/// A domain as metadata words (see [`METADATA_WORDS`]).
///
/// ```
/// use gaspar::darray::{domain_words, Domain, METADATA_WORDS};
/// let words: [u64; METADATA_WORDS] = domain_words(&Domain::new([1, 2], [3, 4]))?;
/// assert_eq!(words, [1, 2, 0, 3, 4, 0]);
/// assert!(domain_words(&Domain::new([0; 4], [1; 4])).is_err()); // 1 to 3 dimensions
/// # Ok::<(), gaspar::Error>(())
/// ```
pub fn domain_words<const D: usize>(domain: &Domain<D>) -> Result<[u64; METADATA_WORDS]> {
    check_dimensions::<D>()?;
    let mut words = [0u64; METADATA_WORDS];
    for k in 0..D {
        (words[k], words[3 + k]) = (domain.lo[k] as u64, domain.hi[k] as u64);
    }
    Ok(words)
}

/// The metadata words hold 1 to 3 dimensions, as distributed arrays have.
fn check_dimensions<const D: usize>() -> Result<()> {
    if D == 0 || D > METADATA_WORDS / 2 {
        return Err(DarrayError::Dimensions { dims: D }.into());
    }
    Ok(())
}

/// The domain that metadata `words` describe (LAPPS's `getDeserializationContainer`
/// starts from it: a dense buffer over this domain).
///
/// ```
/// use gaspar::darray::{words_domain, Domain};
/// assert_eq!(words_domain::<1>(&[5, 0, 0, 9, 0, 0])?, Domain::new([5], [9]));
/// assert!(words_domain::<4>(&[0; 6]).is_err());
/// # Ok::<(), gaspar::Error>(())
/// ```
pub fn words_domain<const D: usize>(words: &[u64; METADATA_WORDS]) -> Result<Domain<D>> {
    check_dimensions::<D>()?;
    Ok(Domain {
        lo: std::array::from_fn(|k| words[k] as usize),
        hi: std::array::from_fn(|k| words[3 + k] as usize),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_and_indices_invert_each_other_and_metadata_round_trips() {
        let slice = Domain::new([2, 5, 1], [4, 8, 3]);
        let layout = SerialLayout::new(slice, 8);
        assert_eq!(layout.data_bytes(), 2 * 3 * 2 * 8);
        for index in slice.iter() {
            let offset = layout.byte_offset(index).expect("inside the slice");
            assert_eq!(layout.index_at(offset), Some(index));
        }
        assert_eq!(layout.byte_offset([1, 5, 1]), None);
        assert_eq!(layout.index_at(3), None);
        assert_eq!(layout.index_at(layout.data_bytes()), None);
        assert_eq!(
            words_domain::<3>(&layout.metadata().unwrap()).unwrap(),
            slice
        );
    }
}
