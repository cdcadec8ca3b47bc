//! ARMCI's strided format and its shape analysis (the XcalableMP runtime's contiguity
//! extraction): which leading dimensions are contiguous on each side, and the chunks the
//! transfer falls into.
//!
//! `count[0]` is the number of contiguous bytes at the lowest level; `count[k]` (k >= 1) the
//! number of blocks at level k, `stride[k-1]` bytes apart. A side is contiguous up to
//! level k when every stride below k equals the length of what it spans.

use crate::error::{Error, Result};
use crate::transport::Pattern;

/// Most stride levels a descriptor may have.
///
/// ```
/// use gaspar::strided::{Descriptor, MAX_STRIDE_LEVELS};
/// let counts = vec![1u64; MAX_STRIDE_LEVELS + 2];
/// let strides = vec![1u64; MAX_STRIDE_LEVELS + 1];
/// assert!(Descriptor::new(&counts, &strides, &strides).is_err()); // one level too many
/// ```
pub const MAX_STRIDE_LEVELS: usize = 15;

/// A validated strided transfer: both sides' strides and the common counts.
///
/// ```
/// use gaspar::strided::Descriptor;
/// // 3 rows of 8 bytes: 8 apart at the source (dense), 32 apart at the destination.
/// let d = Descriptor::new(&[8, 3], &[8], &[32])?;
/// assert_eq!((d.total(), d.src_extent(), d.dst_extent()), (24, 24, 72));
/// # Ok::<(), gaspar::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Descriptor {
    levels: usize,
    count: [u64; MAX_STRIDE_LEVELS + 1],
    src_strides: [u64; MAX_STRIDE_LEVELS],
    dst_strides: [u64; MAX_STRIDE_LEVELS],
    total: u64,
    src_extent: u64,
    dst_extent: u64,
    /// Each side's contiguous length and the level it reaches, worked out once when the
    /// descriptor is set (a program repeats its shapes, and the plan and the pattern of
    /// every transfer ask for them: four walks of the levels per call otherwise).
    src_contiguous: (u64, usize),
    dst_contiguous: (u64, usize),
}

/// Contiguous length of one side and the level it reaches: a side is contiguous up to
/// level k when every stride below k equals the length of what it spans.
fn contiguous_length(count: &[u64], strides: &[u64]) -> (u64, usize) {
    let mut len = count[0];
    let mut level = 0;
    for (k, (&stride, &c)) in strides.iter().zip(&count[1..]).enumerate() {
        if stride != len {
            break;
        }
        len *= c;
        level = k + 1;
    }
    (len, level)
}

/// Bytes from the first to one past the last byte a side touches.
fn extent(count: &[u64], strides: &[u64]) -> Option<u64> {
    strides
        .iter()
        .zip(&count[1..])
        .try_fold(count[0], |acc, (&s, &c)| {
            acc.checked_add((c - 1).checked_mul(s)?)
        })
}

/// Whether no byte is touched twice: sorted by stride, each stride must clear everything
/// below it (sufficient, and what every array section satisfies).
fn non_overlapping(count: &[u64], strides: &[u64]) -> bool {
    let mut dims = [(0u64, 0u64); MAX_STRIDE_LEVELS];
    let mut n = 0;
    for (&stride, &c) in strides.iter().zip(&count[1..]) {
        if c > 1 {
            dims[n] = (stride, c);
            n += 1;
        }
    }
    let dims = &mut dims[..n];
    dims.sort_unstable();
    let mut covered = count[0];
    for &mut (stride, c) in dims {
        if stride < covered {
            return false;
        }
        covered = covered.saturating_add(stride.saturating_mul(c - 1));
    }
    true
}

impl Descriptor {
    /// One contiguous byte: a constant to start from, e.g. for a descriptor kept in a
    /// `thread_local!` with a constant initializer and refilled by [`set`](Self::set).
    ///
    /// ```
    /// use gaspar::strided::Descriptor;
    /// assert_eq!(Descriptor::ONE_BYTE, Descriptor::contiguous(1)?);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub const ONE_BYTE: Descriptor = Descriptor {
        levels: 0,
        count: [1; MAX_STRIDE_LEVELS + 1],
        src_strides: [0; MAX_STRIDE_LEVELS],
        dst_strides: [0; MAX_STRIDE_LEVELS],
        total: 1,
        src_extent: 1,
        dst_extent: 1,
        src_contiguous: (1, 0),
        dst_contiguous: (1, 0),
    };

    /// Checks and stores a descriptor (`count.len()` = levels + 1, each strides array
    /// has `levels` entries). The destination may not overlap itself.
    ///
    /// ```
    /// use gaspar::strided::Descriptor;
    /// let d = Descriptor::new(&[4, 2, 3], &[4, 8], &[16, 64])?;
    /// assert_eq!(d.levels(), 2);
    /// // A destination that writes a byte twice is refused.
    /// assert!(Descriptor::new(&[8, 2], &[8], &[4]).is_err());
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn new(count: &[u64], src_strides: &[u64], dst_strides: &[u64]) -> Result<Descriptor> {
        let mut d = Descriptor::ONE_BYTE;
        d.set(count, src_strides, dst_strides)?;
        Ok(d)
    }

    /// Checks a descriptor as [`new`](Self::new) does and stores it in place of this one
    /// (which stays as it was on error). A descriptor is ~400 bytes: code that builds one
    /// per transfer (the C interface) refills one instead of moving new ones around.
    ///
    /// ```
    /// use gaspar::strided::Descriptor;
    /// let mut d = Descriptor::contiguous(1)?;
    /// d.set(&[2, 5], &[2], &[10])?;
    /// assert_eq!(d.total(), 10);
    /// assert!(d.set(&[0], &[], &[]).is_err());
    /// assert_eq!(d.total(), 10); // unchanged on error
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn set(&mut self, count: &[u64], src_strides: &[u64], dst_strides: &[u64]) -> Result<()> {
        // The shape it holds already (programs repeat their shapes: an ARMCI code puts the
        // same patch call after call): it was checked when it was stored.
        if self.holds(count, src_strides, dst_strides) {
            return Ok(());
        }
        let bad = |reason: String| Err(Error::invalid("strided transfer", reason));
        if count.is_empty() || count.len() > MAX_STRIDE_LEVELS + 1 {
            return bad(format!(
                "{} counts: need 1 to {}",
                count.len(),
                MAX_STRIDE_LEVELS + 1
            ));
        }
        let levels = count.len() - 1;
        if src_strides.len() != levels || dst_strides.len() != levels {
            return bad(format!(
                "{levels} stride levels but {} source and {} destination strides",
                src_strides.len(),
                dst_strides.len()
            ));
        }
        if let Some(k) = count.iter().position(|&c| c == 0) {
            return bad(format!("count[{k}] is zero"));
        }
        // Not `ok_or`: an error built eagerly is dropped (a call) on every success, 1.3 %
        // of a 2-D ARMCI_PutS's samples.
        let overflow = |what| Err(Error::LengthOverflow { what });
        let Some(total) = count.iter().try_fold(1u64, |acc, &c| acc.checked_mul(c)) else {
            return overflow("strided size");
        };
        let (Some(src_extent), Some(dst_extent)) =
            (extent(count, src_strides), extent(count, dst_strides))
        else {
            return overflow("strided extent");
        };
        if !non_overlapping(count, dst_strides) {
            return bad(format!(
                "destination strides {dst_strides:?} with counts {count:?} write some bytes twice"
            ));
        }
        self.levels = levels;
        self.count = [1; MAX_STRIDE_LEVELS + 1];
        self.count[..=levels].copy_from_slice(count);
        self.src_strides[..levels].copy_from_slice(src_strides);
        self.dst_strides[..levels].copy_from_slice(dst_strides);
        self.src_strides[levels..].fill(0);
        self.dst_strides[levels..].fill(0);
        self.total = total;
        self.src_extent = src_extent;
        self.dst_extent = dst_extent;
        // Cannot overflow: a contiguous length is at most the total, checked above.
        self.src_contiguous = contiguous_length(count, src_strides);
        self.dst_contiguous = contiguous_length(count, dst_strides);
        Ok(())
    }

    /// Whether this descriptor was set from exactly these arrays.
    #[inline]
    fn holds(&self, count: &[u64], src_strides: &[u64], dst_strides: &[u64]) -> bool {
        // Element by element: `==` on slices calls memcmp, which costs more than these
        // few words (5 % of a two-row ARMCI_PutS).
        let same =
            |a: &[u64], b: &[u64]| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y);
        same(count, self.count())
            && same(src_strides, self.strides(Side::Src))
            && same(dst_strides, self.strides(Side::Dst))
    }

    /// A contiguous transfer of `bytes`.
    ///
    /// ```
    /// use gaspar::strided::Descriptor;
    /// let d = Descriptor::contiguous(100)?;
    /// assert_eq!((d.levels(), d.total()), (0, 100));
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn contiguous(bytes: u64) -> Result<Descriptor> {
        Descriptor::new(&[bytes], &[], &[])
    }

    /// Number of stride levels.
    ///
    /// ```
    /// use gaspar::strided::Descriptor;
    /// assert_eq!(Descriptor::new(&[8, 2], &[8], &[16])?.levels(), 1);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn levels(&self) -> usize {
        self.levels
    }

    /// Bytes moved.
    ///
    /// ```
    /// use gaspar::strided::Descriptor;
    /// assert_eq!(Descriptor::new(&[8, 2, 3], &[8, 16], &[16, 32])?.total(), 48);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Bytes spanned on the source side.
    ///
    /// ```
    /// use gaspar::strided::Descriptor;
    /// assert_eq!(Descriptor::new(&[8, 2], &[100], &[8])?.src_extent(), 108);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn src_extent(&self) -> u64 {
        self.src_extent
    }

    /// Bytes spanned on the destination side.
    ///
    /// ```
    /// use gaspar::strided::Descriptor;
    /// assert_eq!(Descriptor::new(&[8, 2], &[100], &[8])?.dst_extent(), 16);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn dst_extent(&self) -> u64 {
        self.dst_extent
    }

    /// The counts.
    ///
    /// ```
    /// use gaspar::strided::Descriptor;
    /// assert_eq!(Descriptor::new(&[8, 2], &[8], &[8])?.count(), [8, 2]);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn count(&self) -> &[u64] {
        &self.count[..=self.levels]
    }

    /// The strides of one side.
    ///
    /// ```
    /// use gaspar::strided::{Descriptor, Side};
    /// let d = Descriptor::new(&[8, 2], &[8], &[32])?;
    /// assert_eq!((d.strides(Side::Src), d.strides(Side::Dst)), (&[8u64][..], &[32u64][..]));
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn strides(&self, side: Side) -> &[u64] {
        match side {
            Side::Src => &self.src_strides[..self.levels],
            Side::Dst => &self.dst_strides[..self.levels],
        }
    }

    /// Contiguous length of one side and the level it reaches.
    pub(crate) fn contiguous_length(&self, side: Side) -> (u64, usize) {
        match side {
            Side::Src => self.src_contiguous,
            Side::Dst => self.dst_contiguous,
        }
    }

    /// The transfer as a transport pattern, with `local` as the local side.
    pub(crate) fn pattern(&self, local: Side) -> Pattern<'_> {
        let (chunk, level) = self.chunk_shape();
        let (local_strides, remote_strides) = match local {
            Side::Src => (
                &self.src_strides[level..self.levels],
                &self.dst_strides[level..self.levels],
            ),
            Side::Dst => (
                &self.dst_strides[level..self.levels],
                &self.src_strides[level..self.levels],
            ),
        };
        Pattern {
            chunk,
            counts: &self.count[level + 1..=self.levels],
            local_strides,
            remote_strides,
        }
    }

    /// Length of the chunks contiguous on both sides, and the level they span.
    pub(crate) fn chunk_shape(&self) -> (u64, usize) {
        let (src_len, src_level) = self.contiguous_length(Side::Src);
        let (dst_len, dst_level) = self.contiguous_length(Side::Dst);
        if src_len <= dst_len {
            (src_len, src_level)
        } else {
            (dst_len, dst_level)
        }
    }

    /// The transfer as chunks contiguous on both sides: `(chunk length, iterator of
    /// (source offset, destination offset))` in issue order.
    ///
    /// ```
    /// use gaspar::strided::Descriptor;
    /// // Rows of 4 bytes, 4 apart at the source, 8 apart at the destination.
    /// let d = Descriptor::new(&[4, 3], &[4], &[8])?;
    /// let (len, offsets) = d.chunks();
    /// assert_eq!(len, 4);
    /// assert_eq!(offsets.collect::<Vec<_>>(), [(0, 0), (4, 8), (8, 16)]);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn chunks(&self) -> (u64, Chunks<'_>) {
        let (len, level) = self.chunk_shape();
        let chunks = Chunks {
            d: self,
            level,
            index: [0; MAX_STRIDE_LEVELS + 1],
            src: 0,
            dst: 0,
            left: self.total / len,
        };
        (len, chunks)
    }
}

/// Which side of a descriptor.
///
/// ```
/// use gaspar::strided::{Descriptor, Method, Side};
/// let rt = gaspar::init()?;
/// let d = Descriptor::contiguous(64)?;
/// // A put reads the local source; a get writes the local destination.
/// assert_eq!(rt.acp().plan(&d, Side::Src), rt.acp().plan(&d, Side::Dst));
/// rt.finalize()?;
/// # Ok::<(), gaspar::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The source.
    Src,
    /// The destination.
    Dst,
}

/// Offsets of a transfer's chunks, in order (an odometer over the levels above the
/// chunk).
///
/// ```
/// use gaspar::strided::{shape::Chunks, Descriptor};
/// let d = Descriptor::new(&[2, 2, 2], &[2, 4], &[4, 8])?;
/// let (len, offsets): (u64, Chunks<'_>) = d.chunks();
/// assert_eq!(len, 2);
/// assert_eq!(offsets.count(), 4);
/// # Ok::<(), gaspar::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Chunks<'d> {
    d: &'d Descriptor,
    level: usize,
    index: [u64; MAX_STRIDE_LEVELS + 1],
    src: u64,
    dst: u64,
    left: u64,
}

impl Iterator for Chunks<'_> {
    type Item = (u64, u64);

    #[inline]
    fn next(&mut self) -> Option<(u64, u64)> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let here = (self.src, self.dst);
        if self.left > 0 {
            let d = self.d;
            let mut k = self.level + 1;
            // Most steps stay in the lowest level above the chunk.
            self.index[k] += 1;
            self.src += d.src_strides[k - 1];
            self.dst += d.dst_strides[k - 1];
            while self.index[k] == d.count[k] {
                self.src -= d.count[k] * d.src_strides[k - 1];
                self.dst -= d.count[k] * d.dst_strides[k - 1];
                self.index[k] = 0;
                k += 1;
                self.index[k] += 1;
                self.src += d.src_strides[k - 1];
                self.dst += d.dst_strides[k - 1];
            }
        }
        Some(here)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_dimensions_merge() {
        // 4 rows of 16 bytes: contiguous on the source (stride 16), rows 64 apart remotely.
        let d = Descriptor::new(&[16, 4], &[16], &[64]).unwrap();
        assert_eq!(d.contiguous_length(Side::Src), (64, 1));
        assert_eq!(d.contiguous_length(Side::Dst), (16, 0));
        let (len, chunks) = d.chunks();
        assert_eq!(len, 16);
        assert_eq!(
            chunks.collect::<Vec<_>>(),
            [(0, 0), (16, 64), (32, 128), (48, 192)]
        );
        // Both sides contiguous: one chunk.
        let d = Descriptor::new(&[8, 3, 2], &[8, 24], &[8, 24]).unwrap();
        let (len, chunks) = d.chunks();
        assert_eq!((len, chunks.count()), (48, 1));
    }

    #[test]
    fn three_levels_enumerate_in_order() {
        let d = Descriptor::new(&[2, 2, 2], &[10, 100], &[2, 4]).unwrap();
        let (len, chunks) = d.chunks();
        assert_eq!(len, 2);
        assert_eq!(
            chunks.collect::<Vec<_>>(),
            [(0, 0), (10, 2), (100, 4), (110, 6)]
        );
        assert_eq!(d.src_extent(), 112);
        assert_eq!(d.dst_extent(), 8);
    }

    #[test]
    fn the_transport_pattern_walks_the_same_chunks() {
        for (count, src, dst) in [
            (vec![2u64, 2, 2], vec![10u64, 100], vec![2u64, 4]),
            (vec![8, 3, 4], vec![8, 24], vec![32, 8]),
            (vec![16, 4], vec![16], vec![64]),
            (vec![5], vec![], vec![]),
            (vec![1, 3, 1, 2], vec![7, 50, 50], vec![1, 3, 3]),
        ] {
            let d = Descriptor::new(&count, &src, &dst).unwrap();
            let (len, chunks) = d.chunks();
            let pattern = d.pattern(Side::Src);
            assert_eq!(pattern.chunk, len);
            assert_eq!(pattern.extent(pattern.local_strides), Some(d.src_extent()));
            assert_eq!(pattern.extent(pattern.remote_strides), Some(d.dst_extent()));
            let mut walked = Vec::new();
            pattern
                .for_each(|l, r| -> Result<(), ()> {
                    walked.push((l, r));
                    Ok(())
                })
                .unwrap();
            assert_eq!(walked, chunks.collect::<Vec<_>>(), "{count:?}");
        }
    }

    #[test]
    fn bad_descriptors_are_refused() {
        assert!(Descriptor::new(&[], &[], &[]).is_err());
        assert!(Descriptor::new(&[8, 2], &[8], &[]).is_err());
        assert!(Descriptor::new(&[8, 0], &[8], &[8]).is_err());
        assert!(Descriptor::new(&[0], &[], &[]).is_err());
        // Destination rows overlap (stride 4 < row of 8).
        assert!(Descriptor::new(&[8, 2], &[8], &[4]).is_err());
        // Source overlap is fine (reads only).
        assert!(Descriptor::new(&[8, 2], &[4], &[8]).is_ok());
        assert!(matches!(
            Descriptor::new(&[8, u64::MAX], &[8], &[8]),
            Err(Error::LengthOverflow { .. })
        ));
        assert!(Descriptor::new(
            &[1; MAX_STRIDE_LEVELS + 2],
            &[1; MAX_STRIDE_LEVELS + 1],
            &[1; MAX_STRIDE_LEVELS + 1]
        )
        .is_err());
        // Transposed but disjoint destination strides are fine.
        assert!(Descriptor::new(&[8, 3, 4], &[8, 24], &[32, 8]).is_ok());
    }
}
