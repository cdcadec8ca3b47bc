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
