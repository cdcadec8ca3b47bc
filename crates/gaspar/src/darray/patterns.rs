//! The prefetch patterns of LAPPS's high-level interface besides the stencil: row-wise,
//! column-wise, transpose, all-to-all and custom. Each rank calls them for itself (no
//! collective): they request, with [`DistArray::request_prefetch`], the part of every
//! other rank's block the pattern names.

use bytemuck::Pod;

use super::array::DistArray;
use super::domain::Domain;
use super::prefetch::Prefetch;
use crate::error::Result;

impl<T: Pod + Send + Sync, const D: usize> DistArray<'_, T, D> {
    /// Prefetches the rows of this rank's block: every element whose index along
    /// dimension 0 this rank owns (the blocks of the ranks in its row of the grid).
    ///
    /// ```
    /// use gaspar::darray::{Darrays, DistArray, Prefetch};
    /// let ctx = Darrays::init()?;
    /// let mut a = DistArray::<f64, 2>::new(&ctx, [16, 16])?;
    /// a.row_wise_prefetch(Prefetch::AUTOMATIC)?;
    /// ctx.barrier()?;
    /// let lo = a.local_domain().lo;
    /// // Every element of this rank's rows reads locally now.
    /// assert_eq!(a.get([lo[0], 15])?, 0.0);
    /// assert_eq!(a.remote_reads(), 0);
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn row_wise_prefetch(&mut self, how: Prefetch) -> Result<()> {
        let mine = self.local_domain();
        let mut rows = self.domain();
        (rows.lo[0], rows.hi[0]) = (mine.lo[0], mine.hi[0]);
        self.custom_prefetch(&[rows], how)
    }

    /// Prefetches the columns of this rank's block: every element whose index along the
    /// last dimension this rank owns.
    ///
    /// ```
    /// use gaspar::darray::{Darrays, DistArray, Prefetch};
    /// let ctx = Darrays::init()?;
    /// let mut a = DistArray::<f64, 2>::new(&ctx, [16, 16])?;
    /// a.col_wise_prefetch(Prefetch::MANUAL)?;
    /// let lo = a.local_domain().lo;
    /// assert_eq!(a.get([15, lo[1]])?, 0.0);
    /// assert_eq!(a.remote_reads(), 0);
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn col_wise_prefetch(&mut self, how: Prefetch) -> Result<()> {
        let mine = self.local_domain();
        let mut cols = self.domain();
        (cols.lo[D - 1], cols.hi[D - 1]) = (mine.lo[D - 1], mine.hi[D - 1]);
        self.custom_prefetch(&[cols], how)
    }

    /// Prefetches what a transpose reads: the elements at this rank's indices reversed
    /// (in 2-D, `A[j, i]` for every `(i, j)` this rank owns).
    ///
    /// ```
    /// use gaspar::darray::{Darrays, DistArray, Prefetch};
    /// let ctx = Darrays::init()?;
    /// let mut a = DistArray::<u32, 2>::new(&ctx, [8, 8])?;
    /// a.transpose_prefetch(Prefetch::AUTOMATIC)?;
    /// ctx.barrier()?;
    /// for [i, j] in a.local_domain().iter() {
    ///     let _transposed = a.get([j, i])?; // prefetched or local
    /// }
    /// assert_eq!(a.remote_reads(), 0);
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn transpose_prefetch(&mut self, how: Prefetch) -> Result<()> {
        let mine = self.local_domain();
        let mut reversed = mine;
        reversed.lo.reverse();
        reversed.hi.reverse();
        self.custom_prefetch(&[reversed], how)
    }

    /// Prefetches the whole array (every other rank's block).
    ///
    /// ```
    /// use gaspar::darray::{Darrays, DistArray, Prefetch};
    /// let ctx = Darrays::init()?;
    /// let mut a = DistArray::<u32, 1>::new(&ctx, [64])?;
    /// a.all_to_all_prefetch(Prefetch::AUTOMATIC.with_static_domain())?;
    /// ctx.barrier()?;
    /// assert_eq!(a.to_vec()?.len(), 64);
    /// assert_eq!(a.get([63])?, 0);
    /// assert_eq!(a.remote_reads(), 0);
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn all_to_all_prefetch(&mut self, how: Prefetch) -> Result<()> {
        self.custom_prefetch(&[self.domain()], how)
    }

    /// Prefetches the indices of `domains` (this rank's own list): the parts that other
    /// ranks own, one request per source rank and domain. Local indices and indices
    /// outside the array are left out.
    ///
    /// ```
    /// use gaspar::darray::{Darrays, DistArray, Domain, Prefetch};
    /// let ctx = Darrays::init()?;
    /// let mut a = DistArray::<u32, 1>::new(&ctx, [64])?;
    /// // The first and last four elements, whoever owns them.
    /// a.custom_prefetch(&[Domain::new([0], [4]), Domain::new([60], [64])], Prefetch::AUTOMATIC)?;
    /// ctx.barrier()?;
    /// assert_eq!(a.get([61])?, 0);
    /// assert_eq!(a.remote_reads(), 0);
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn custom_prefetch(&mut self, domains: &[Domain<D>], how: Prefetch) -> Result<()> {
        let whole = self.domain();
        let me = self.rank();
        for source in (0..self.distribution().grid().size()).filter(|&r| r != me) {
            let block = self.distribution().block_of(source);
            let mut requested: Vec<Domain<D>> = Vec::new();
            for domain in domains {
                let slice = domain.intersect(&whole).intersect(&block);
                if !slice.is_empty() && !requested.contains(&slice) {
                    self.request_prefetch(source, Some(slice), how)?;
                    requested.push(slice);
                }
            }
        }
        Ok(())
    }
}
