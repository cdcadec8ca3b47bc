//! Rectangular index sets of a `D`-dimensional array: [`Domain`].

/// The indices `lo[k] <= i[k] < hi[k]` in every dimension k (empty when some
/// `hi[k] <= lo[k]`). Global indices of a distributed array count from 0.
///
/// ```
/// use gaspar::darray::Domain;
/// let halo = Domain::new([4, 0], [8, 4]).grown(1, [true, true]);
/// assert_eq!(halo, Domain::new([3, 0], [9, 5]));
/// assert_eq!(halo.intersect(&Domain::of_extents([8, 8])).extents(), [5, 5]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Domain<const D: usize> {
    /// First index in each dimension.
    pub lo: [usize; D],
    /// One past the last index in each dimension.
    pub hi: [usize; D],
}

impl<const D: usize> Domain<D> {
    /// The indices `lo..hi` (per dimension).
    ///
    /// ```
    /// use gaspar::darray::Domain;
    /// let d = Domain::new([1, 2], [3, 5]);
    /// assert_eq!(d.extents(), [2, 3]);
    /// ```
    pub fn new(lo: [usize; D], hi: [usize; D]) -> Domain<D> {
        Domain { lo, hi }
    }

    /// The indices `0..extents` (per dimension).
    ///
    /// ```
    /// use gaspar::darray::Domain;
    /// assert_eq!(Domain::of_extents([4, 3]), Domain::new([0, 0], [4, 3]));
    /// ```
    pub fn of_extents(extents: [usize; D]) -> Domain<D> {
        Domain {
            lo: [0; D],
            hi: extents,
        }
    }

    /// Indices along each dimension (0 where empty).
    ///
    /// ```
    /// use gaspar::darray::Domain;
    /// assert_eq!(Domain::new([5, 0], [2, 3]).extents(), [0, 3]);
    /// ```
    pub fn extents(&self) -> [usize; D] {
        std::array::from_fn(|k| self.hi[k].saturating_sub(self.lo[k]))
    }

    /// Number of indices (`usize::MAX` for a domain of more: an array of it could not be
    /// allocated).
    ///
    /// ```
    /// use gaspar::darray::Domain;
    /// assert_eq!(Domain::of_extents([4, 3]).len(), 12);
    /// assert_eq!(Domain::of_extents([1 << 40, 1 << 40]).len(), usize::MAX);
    /// ```
    pub fn len(&self) -> usize {
        self.extents()
            .iter()
            .try_fold(1usize, |n, &e| n.checked_mul(e))
            .unwrap_or(usize::MAX)
    }

    /// Whether the domain holds no index.
    ///
    /// ```
    /// use gaspar::darray::Domain;
    /// assert!(Domain::new([2], [2]).is_empty());
    /// assert!(!Domain::of_extents([1]).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `index` lies in the domain.
    ///
    /// ```
    /// use gaspar::darray::Domain;
    /// let d = Domain::new([1, 1], [3, 3]);
    /// assert!(d.contains([2, 1]));
    /// assert!(!d.contains([3, 1]));
    /// ```
    pub fn contains(&self, index: [usize; D]) -> bool {
        (0..D).all(|k| self.lo[k] <= index[k] && index[k] < self.hi[k])
    }

    /// Whether every index of `other` lies in this domain (an empty `other` always does).
    ///
    /// ```
    /// use gaspar::darray::Domain;
    /// let d = Domain::of_extents([8, 8]);
    /// assert!(d.contains_domain(&Domain::new([2, 2], [8, 4])));
    /// assert!(!d.contains_domain(&Domain::new([2, 2], [9, 4])));
    /// ```
    pub fn contains_domain(&self, other: &Domain<D>) -> bool {
        other.is_empty() || (0..D).all(|k| self.lo[k] <= other.lo[k] && other.hi[k] <= self.hi[k])
    }

    /// The indices in both domains.
    ///
    /// ```
    /// use gaspar::darray::Domain;
    /// let a = Domain::new([0, 0], [4, 4]);
    /// let b = Domain::new([2, 3], [6, 6]);
    /// assert_eq!(a.intersect(&b), Domain::new([2, 3], [4, 4]));
    /// ```
    pub fn intersect(&self, other: &Domain<D>) -> Domain<D> {
        Domain {
            lo: std::array::from_fn(|k| self.lo[k].max(other.lo[k])),
            hi: std::array::from_fn(|k| self.hi[k].min(other.hi[k])),
        }
    }

    /// The domain grown by `depth` on both sides of every dimension `k` with
    /// `grow[k]`, clipped at 0 below (not above: intersect with the array's domain).
    ///
    /// ```
    /// use gaspar::darray::Domain;
    /// let block = Domain::new([0, 4], [4, 8]);
    /// // A halo of depth 1 along dimension 1 only, clipped at 0.
    /// assert_eq!(block.grown(1, [false, true]), Domain::new([0, 3], [4, 9]));
    /// assert_eq!(block.grown(1, [true, false]), Domain::new([0, 4], [5, 8]));
    /// ```
    pub fn grown(&self, depth: usize, grow: [bool; D]) -> Domain<D> {
        Domain {
            lo: std::array::from_fn(|k| {
                if grow[k] {
                    self.lo[k].saturating_sub(depth)
                } else {
                    self.lo[k]
                }
            }),
            hi: std::array::from_fn(|k| {
                if grow[k] {
                    self.hi[k].saturating_add(depth)
                } else {
                    self.hi[k]
                }
            }),
        }
    }

    /// Element strides of the domain stored densely, dimension 0 varying fastest.
    ///
    /// ```
    /// use gaspar::darray::Domain;
    /// assert_eq!(Domain::of_extents([4, 3, 2]).dense_strides(), [1, 4, 12]);
    /// ```
    pub fn dense_strides(&self) -> [usize; D] {
        // Wrapping: exact for every domain whose elements can be stored (an array checks
        // its size when it is made), never a panic for another; as cheap as plain
        // arithmetic on the element accesses' path (`linear`).
        let extents = self.extents();
        let mut strides = [1usize; D];
        for k in 1..D {
            strides[k] = strides[k - 1].wrapping_mul(extents[k - 1]);
        }
        strides
    }

    /// Position of `index` (inside the domain) in the domain stored densely; an index
    /// outside gives a meaningless position, never a panic.
    ///
    /// ```
    /// use gaspar::darray::Domain;
    /// let d = Domain::new([10, 20], [14, 23]);
    /// assert_eq!(d.linear([10, 20]), 0);
    /// assert_eq!(d.linear([11, 21]), 1 + 4);
    /// ```
    pub fn linear(&self, index: [usize; D]) -> usize {
        let strides = self.dense_strides();
        (0..D).fold(0usize, |at, k| {
            at.wrapping_add(index[k].wrapping_sub(self.lo[k]).wrapping_mul(strides[k]))
        })
    }

    /// Every index, in dense storage order (dimension 0 varying fastest).
    ///
    /// ```
    /// use gaspar::darray::Domain;
    /// let all: Vec<[usize; 2]> = Domain::of_extents([2, 2]).iter().collect();
    /// assert_eq!(all, [[0, 0], [1, 0], [0, 1], [1, 1]]);
    /// ```
    pub fn iter(&self) -> DomainIter<D> {
        DomainIter {
            domain: *self,
            next: if self.is_empty() { None } else { Some(self.lo) },
        }
    }
}

/// The indices of a [`Domain`], dimension 0 varying fastest (from [`Domain::iter`]).
///
/// ```
/// use gaspar::darray::{Domain, DomainIter};
/// let mut it: DomainIter<1> = Domain::new([3], [5]).iter();
/// assert_eq!((it.next(), it.next(), it.next()), (Some([3]), Some([4]), None));
/// ```
#[derive(Debug, Clone)]
pub struct DomainIter<const D: usize> {
    domain: Domain<D>,
    next: Option<[usize; D]>,
}

impl<const D: usize> Iterator for DomainIter<D> {
    type Item = [usize; D];

    fn next(&mut self) -> Option<[usize; D]> {
        let current = self.next?;
        let mut following = current;
        self.next = None;
        for k in 0..D {
            following[k] += 1;
            if following[k] < self.domain.hi[k] {
                self.next = Some(following);
                break;
            }
            following[k] = self.domain.lo[k];
        }
        Some(current)
    }
}

impl<const D: usize> IntoIterator for &Domain<D> {
    type Item = [usize; D];
    type IntoIter = DomainIter<D>;

    fn into_iter(self) -> DomainIter<D> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iteration_visits_every_index_once_in_storage_order() {
        let d = Domain::new([1, 2], [3, 5]);
        let all: Vec<_> = d.iter().collect();
        assert_eq!(all.len(), d.len());
        for (position, index) in all.iter().enumerate() {
            assert_eq!(d.linear(*index), position);
        }
        assert_eq!(Domain::new([2, 0], [2, 4]).iter().count(), 0);
    }

    #[test]
    fn intersection_and_growth_clip_as_documented() {
        let d = Domain::new([2, 2], [4, 4]);
        assert_eq!(d.grown(3, [true, false]), Domain::new([0, 2], [7, 4]));
        let i = d.intersect(&Domain::new([3, 0], [10, 3]));
        assert_eq!(i, Domain::new([3, 2], [4, 3]));
        assert!(d.contains_domain(&i));
        assert!(d.intersect(&Domain::new([5, 5], [6, 6])).is_empty());
    }
}
