//! The stencil prefetch pattern (LAPPS's `stencilPrefetch`): the halo of this rank's
//! block, from every rank owning part of it.

use bytemuck::Pod;

use super::array::DistArray;
use super::domain::Domain;
use super::prefetch::Prefetch;
use crate::error::Result;

impl<T: Pod + Send + Sync, const D: usize> DistArray<'_, T, D> {
    /// Prefetches the elements within `depth` of this rank's block (the halo a stencil of
    /// that depth reads): with `corners`, every element of the block grown by `depth` in
    /// every dimension (a square / cube operator); without, only those reached along one
    /// dimension (a plus-shaped operator). Indices outside the array are left out. One
    /// entry per source rank and direction; each rank requests its own halo (see
    /// [`custom_prefetch`](Self::custom_prefetch)).
    ///
    /// ```
    /// use gaspar::darray::{Darrays, DistArray, Prefetch};
    /// let ctx = Darrays::init()?;
    /// let mut a = DistArray::<f64, 2>::new(&ctx, [32, 32])?;
    /// a.stencil_prefetch(1, false, Prefetch::AUTOMATIC)?; // a 5-point stencil's halo
    /// ctx.barrier()?;
    /// let d = a.local_domain();
    /// let mut sum = 0.0;
    /// for [i, j] in d.iter() {
    ///     if i > 0 && j > 0 && i < 31 && j < 31 {
    ///         sum += a.get([i - 1, j])? + a.get([i + 1, j])? + a.get([i, j - 1])? + a.get([i, j + 1])?;
    ///     }
    /// }
    /// assert_eq!(sum, 0.0);
    /// assert_eq!(a.remote_reads(), 0); // the halo was prefetched
    /// a.free()?;
    /// ctx.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn stencil_prefetch(&mut self, depth: usize, corners: bool, how: Prefetch) -> Result<()> {
        let mine = self.local_domain();
        if mine.is_empty() || depth == 0 {
            return Ok(());
        }
        let halos: Vec<Domain<D>> = if corners {
            vec![mine.grown(depth, [true; D])]
        } else {
            (0..D)
                .map(|k| mine.grown(depth, std::array::from_fn(|j| j == k)))
                .collect()
        };
        self.custom_prefetch(&halos, how)
    }
}
