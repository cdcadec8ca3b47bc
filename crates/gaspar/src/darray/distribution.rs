//! Block distribution: a `D`-dimensional grid of ranks ([`Grid`]) and the block of the
//! index space each rank owns ([`Block`]), computed as Chapel's `Block` distribution does.

use super::domain::Domain;
use super::error::DarrayError;
use crate::error::Result;

/// A `D`-dimensional grid of ranks. Rank r sits at the coordinates of r in the grid
/// stored with the last dimension varying fastest (Chapel's `targetLocales` order).
///
/// ```
/// use gaspar::darray::Grid;
/// let grid = Grid::<2>::for_procs(6); // 3 x 2
/// for rank in 0..grid.size() {
///     assert_eq!(grid.rank_at(grid.coords(rank)), rank);
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid<const D: usize> {
    dims: [u32; D],
}

impl<const D: usize> Grid<D> {
    /// The grid Chapel's `Block` chooses for `procs` ranks: each prime factor of `procs`,
    /// smallest first, multiplies the (first) smallest dimension; the dimensions are then
    /// sorted largest first. 4 ranks in 2-D are 2 x 2, 6 are 3 x 2, 8 in 3-D 2 x 2 x 2.
    ///
    /// ```
    /// use gaspar::darray::Grid;
    /// assert_eq!(Grid::<2>::for_procs(6).dims(), [3, 2]);
    /// assert_eq!(Grid::<3>::for_procs(8).dims(), [2, 2, 2]);
    /// ```
    pub fn for_procs(procs: u32) -> Grid<D> {
        let mut dims = [1u32; D];
        let mut rest = procs;
        while rest > 1 && D > 0 {
            let factor = (2..=rest).find(|f| rest % f == 0).unwrap_or(rest);
            let smallest = (0..D).min_by_key(|&k| dims[k]).unwrap_or(0);
            dims[smallest] *= factor;
            rest /= factor;
        }
        dims.sort_unstable_by(|a, b| b.cmp(a));
        Grid { dims }
    }

    /// The grid `dims`, which must hold exactly `procs` ranks.
    ///
    /// ```
    /// use gaspar::darray::Grid;
    /// let grid = Grid::new([1, 4], 4)?;
    /// assert_eq!(grid.dims(), [1, 4]);
    /// assert!(Grid::new([2, 3], 4).is_err());
    /// assert!(Grid::new([0], 0).is_err());
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn new(dims: [u32; D], procs: u32) -> Result<Grid<D>> {
        let size = dims.iter().try_fold(1u32, |acc, &d| acc.checked_mul(d));
        // A dimension of no ranks holds no rank (and would divide by zero).
        if size != Some(procs) || procs == 0 {
            return Err(DarrayError::GridMismatch {
                dims: dims.to_vec(),
                procs,
            }
            .into());
        }
        Ok(Grid { dims })
    }

    /// Ranks along each dimension.
    ///
    /// ```
    /// use gaspar::darray::Grid;
    /// assert_eq!(Grid::<2>::for_procs(4).dims(), [2, 2]);
    /// ```
    pub fn dims(&self) -> [u32; D] {
        self.dims
    }

    /// Number of ranks in the grid.
    ///
    /// ```
    /// use gaspar::darray::Grid;
    /// assert_eq!(Grid::<2>::for_procs(6).size(), 6);
    /// ```
    pub fn size(&self) -> u32 {
        self.dims.iter().product()
    }

    /// The coordinates of `rank` (which must be in the grid).
    ///
    /// ```
    /// use gaspar::darray::Grid;
    /// let grid = Grid::new([3, 2], 6)?;
    /// // The last dimension varies fastest.
    /// assert_eq!(grid.coords(3), [1, 1]);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn coords(&self, rank: u32) -> [u32; D] {
        let mut coords = [0; D];
        let mut rest = rank;
        for k in (0..D).rev() {
            coords[k] = rest % self.dims[k];
            rest /= self.dims[k];
        }
        coords
    }

    /// The rank at `coords` (each inside the grid).
    ///
    /// ```
    /// use gaspar::darray::Grid;
    /// let grid = Grid::new([3, 2], 6)?;
    /// assert_eq!(grid.rank_at([2, 1]), 5);
    /// assert_eq!(grid.rank_at(grid.coords(4)), 4);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn rank_at(&self, coords: [u32; D]) -> u32 {
        // Wrapping: coordinates outside the grid give a meaningless rank, never a panic.
        (0..D).fold(0u32, |rank, k| {
            rank.wrapping_mul(self.dims[k]).wrapping_add(coords[k])
        })
    }
}

/// The block distribution of `extents` indices over the ranks of `grid`: along dimension
/// k, grid coordinate c owns indices `ceil(n c / b) .. ceil(n (c + 1) / b)` (n indices,
/// b ranks), so blocks differ by at most one index and `i` belongs to `floor(i b / n)`.
///
/// ```
/// use gaspar::darray::{Block, Grid};
/// let block = Block::new([100, 100], Grid::for_procs(4));
/// assert_eq!(block.owner([99, 0]), Some(2)); // grid coordinates (1, 0)
/// assert_eq!(block.largest_block(), 50 * 50);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block<const D: usize> {
    extents: [usize; D],
    grid: Grid<D>,
}

impl<const D: usize> Block<D> {
    /// `extents` distributed over `grid`.
    ///
    /// ```
    /// use gaspar::darray::{Block, Domain, Grid};
    /// let block = Block::new([10], Grid::new([4], 4)?);
    /// // ceil(10 c / 4): 0, 3, 5, 8, 10.
    /// assert_eq!(block.block_of(1), Domain::new([3], [5]));
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn new(extents: [usize; D], grid: Grid<D>) -> Block<D> {
        Block { extents, grid }
    }

    /// The whole index space.
    ///
    /// ```
    /// use gaspar::darray::{Block, Domain, Grid};
    /// let block = Block::new([6, 4], Grid::for_procs(2));
    /// assert_eq!(block.domain(), Domain::of_extents([6, 4]));
    /// ```
    pub fn domain(&self) -> Domain<D> {
        Domain::of_extents(self.extents)
    }

    /// The grid of ranks.
    ///
    /// ```
    /// use gaspar::darray::{Block, Grid};
    /// let block = Block::new([6, 4], Grid::<2>::for_procs(2));
    /// assert_eq!(block.grid().dims(), [2, 1]);
    /// ```
    pub fn grid(&self) -> Grid<D> {
        self.grid
    }

    /// The indices `rank` owns (empty when it owns none).
    ///
    /// ```
    /// use gaspar::darray::{Block, Domain, Grid};
    /// let block = Block::new([6, 4], Grid::new([2, 1], 2)?);
    /// assert_eq!(block.block_of(0), Domain::new([0, 0], [3, 4]));
    /// assert_eq!(block.block_of(1), Domain::new([3, 0], [6, 4]));
    /// // More ranks than indices: some own none.
    /// assert!(Block::new([2], Grid::new([3], 3)?).block_of(2).is_empty());
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn block_of(&self, rank: u32) -> Domain<D> {
        let coords = self.grid.coords(rank);
        Domain {
            lo: std::array::from_fn(|k| bound(self.extents[k], self.grid.dims[k], coords[k])),
            hi: std::array::from_fn(|k| bound(self.extents[k], self.grid.dims[k], coords[k] + 1)),
        }
    }

    /// The rank owning `index`, or `None` outside the index space.
    ///
    /// ```
    /// use gaspar::darray::{Block, Grid};
    /// let block = Block::new([10], Grid::new([4], 4)?);
    /// assert_eq!(block.owner([4]), Some(1));
    /// assert_eq!(block.owner([10]), None);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn owner(&self, index: [usize; D]) -> Option<u32> {
        if !self.domain().contains(index) {
            return None;
        }
        let coords = std::array::from_fn(|k| {
            ((index[k] as u128 * u128::from(self.grid.dims[k])) / self.extents[k] as u128) as u32
        });
        Some(self.grid.rank_at(coords))
    }

    /// The most indices any rank owns (`usize::MAX` when they are more: such a block
    /// cannot be allocated).
    ///
    /// ```
    /// use gaspar::darray::{Block, Grid};
    /// assert_eq!(Block::new([10], Grid::new([4], 4)?).largest_block(), 3);
    /// assert_eq!(Block::new([1 << 40, 1 << 40], Grid::new([1, 1], 1)?).largest_block(), usize::MAX);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn largest_block(&self) -> usize {
        (0..D)
            .map(|k| self.extents[k].div_ceil(self.grid.dims[k] as usize))
            .try_fold(1usize, |n, e| n.checked_mul(e))
            .unwrap_or(usize::MAX)
    }
}

/// The first index of block `c` of `n` indices in `b` blocks: `ceil(n c / b)`.
fn bound(n: usize, b: u32, c: u32) -> usize {
    (n as u128 * u128::from(c)).div_ceil(u128::from(b)) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_are_chosen_as_chapel_chooses_them() {
        assert_eq!(Grid::<2>::for_procs(4).dims(), [2, 2]);
        assert_eq!(Grid::<2>::for_procs(6).dims(), [3, 2]);
        assert_eq!(Grid::<2>::for_procs(3).dims(), [3, 1]);
        assert_eq!(Grid::<3>::for_procs(8).dims(), [2, 2, 2]);
        assert_eq!(Grid::<3>::for_procs(12).dims(), [3, 2, 2]);
        assert_eq!(Grid::<1>::for_procs(5).dims(), [5]);
        assert_eq!(Grid::<2>::for_procs(1).dims(), [1, 1]);
        assert!(Grid::new([2, 3], 5).is_err());
    }

    #[test]
    fn blocks_tile_the_space_and_owners_agree_with_them() {
        for procs in 1..=7u32 {
            let block = Block::new([13, 5], Grid::for_procs(procs));
            let mut owned = 0;
            for rank in 0..procs {
                let mine = block.block_of(rank);
                owned += mine.len();
                assert!(mine.len() <= block.largest_block());
                for index in mine.iter() {
                    assert_eq!(block.owner(index), Some(rank));
                }
            }
            assert_eq!(owned, 13 * 5);
        }
        assert_eq!(Block::new([4], Grid::for_procs(2)).owner([4]), None);
    }
}
