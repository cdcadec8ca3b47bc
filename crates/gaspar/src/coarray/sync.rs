//! Image control: sync all, sync images (counted signals), sync memory.

use crate::transport::AtomicOp as WordOp;

use super::error::{CoError, CoResult};
use super::{Coarrays, ControlWord, Image};

impl Coarrays {
    /// `sync memory`: completes every put this image issued.
    pub fn sync_memory(&mut self) -> CoResult<()> {
        self.complete_puts()
    }

    /// `sync all`: completes this image's puts and waits for every image of the current
    /// team; afterwards every image sees every put issued before it. Built on the same
    /// counted signals as `sync images(*)` (one from every image to every other), not on
    /// the runtime's barrier: an image that stopped sits in the runtime's finalize
    /// barrier, and the others must get [`CoError::StoppedImage`] from their sync and go
    /// on, not meet it there.
    pub fn sync_all(&mut self) -> CoResult<()> {
        self.sync_images(None)
    }

    /// `sync images(list)`, or `sync images(*)` for `None`: completes this image's puts,
    /// signals each image of the list and waits for a signal from each. Signals are
    /// counted per pair of images, so repeated and overlapping syncs never lose or reuse
    /// one. This image in the list is ignored; an image twice is an error.
    pub fn sync_images(&mut self, images: Option<&[Image]>) -> CoResult<()> {
        let me = self.rt.rank();
        let partners: Vec<u32> = match images {
            None => self
                .team
                .ranks()
                .iter()
                .copied()
                .filter(|&r| r != me)
                .collect(),
            Some(list) => {
                let mut ranks = Vec::with_capacity(list.len());
                for &image in list {
                    let rank = self.team.rank_of(image)?;
                    if ranks.contains(&rank)
                        || (rank == me && list.iter().filter(|&&i| i == image).count() > 1)
                    {
                        return Err(CoError::invalid(
                            "sync images",
                            format!("image {image} appears twice in the list"),
                        ));
                    }
                    ranks.push(rank);
                }
                ranks.retain(|&r| r != me);
                ranks
            }
        };
        self.complete_puts()?;
        for &rank in &partners {
            self.word_op(
                self.control_ga(rank, ControlWord::Signals(me))?,
                WordOp::Add(1),
            )?;
        }
        for &rank in &partners {
            let word = self.control_ga(me, ControlWord::Signals(rank))?;
            let expected = self.signals_seen[rank as usize] + 1;
            let signalled =
                || -> CoResult<bool> { Ok(self.word_op(word, WordOp::Load)? >= expected) };
            self.wait_for_image(rank, signalled)?;
            self.signals_seen[rank as usize] = expected;
        }
        Ok(())
    }
}
