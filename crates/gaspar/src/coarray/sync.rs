//! Image control: sync all, sync images (counted signals), sync memory.

use crate::transport::AtomicOp as WordOp;

use super::error::{CoError, CoResult};
use super::{control_atomic, Coarrays, Image, GONE};

/// The longest sync images list whose ranks live on the stack.
const SHORT_LIST: usize = 16;

impl Coarrays {
    /// `sync memory`: completes every put this image issued.
    ///
    /// ```
    /// use gaspar::coarray::{Coarrays, Elem, ElemType, Section};
    /// let mut co = Coarrays::init()?;
    /// let a = co.allocate(8)?;
    /// let i8 = Elem::new(ElemType::Integer, 8);
    /// let one = Section::scalar(8, 0);
    /// co.put(&a, 0, 1, &one, i8, &1i64.to_ne_bytes(), &one, i8)?;
    /// co.sync_memory()?; // the put is complete
    /// co.deallocate(a)?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    #[inline]
    pub fn sync_memory(&mut self) -> CoResult<()> {
        self.complete_puts()
    }

    /// `sync all`: completes this image's puts and waits for every image of the current
    /// team; afterwards every image sees every put issued before it. Built on the same
    /// counted signals as `sync images(*)` (one from every image to every other), not on
    /// the runtime's barrier: an image that stopped sits in the runtime's finalize
    /// barrier, and the others must get [`CoError::StoppedImage`] from their sync and go
    /// on, not meet it there.
    ///
    /// ```
    /// let mut co = gaspar::coarray::Coarrays::init()?;
    /// co.sync_all()?; // every image's earlier puts are visible to every image
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn sync_all(&mut self) -> CoResult<()> {
        let me = self.rt.rank();
        // The team's ranks by index, not collected first: a sync all allocates nothing.
        let members = self.team.ranks().len();
        self.signal_and_wait_each(members, |engine, i| {
            Some(engine.team.ranks()[i]).filter(|&rank| rank != me)
        })
    }

    /// `sync images(list)`, or `sync images(*)` for `None`: completes this image's puts,
    /// signals each image of the list and waits for a signal from each. Signals are
    /// counted per pair of images, so repeated and overlapping syncs never lose or reuse
    /// one. This image in the list is ignored; an image twice is an error.
    ///
    /// ```
    /// let mut co = gaspar::coarray::Coarrays::init()?;
    /// let me = co.this_image();
    /// let n = co.num_images();
    /// co.sync_images(Some(&[me % n + 1]))?; // sync images(right)
    /// co.sync_images(None)?; // sync images(*)
    /// assert!(co.sync_images(Some(&[1, 1])).is_err() || n == 1);
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn sync_images(&mut self, images: Option<&[Image]>) -> CoResult<()> {
        let Some(list) = images else {
            return self.sync_all();
        };
        if let [image] = *list {
            // One partner (a neighbour, a producer): no list to check for repeats.
            let rank = self.team.rank_of(image)?;
            let count = usize::from(rank != self.rt.rank());
            return self.signal_and_wait_each(count, |_, _| Some(rank));
        }
        if list.len() <= SHORT_LIST {
            // The usual list (a few neighbours): its ranks on the stack, nothing allocated.
            let mut ranks = [0u32; SHORT_LIST];
            let count = self.partner_ranks(list, &mut ranks)?;
            return self.signal_and_wait(&ranks[..count]);
        }
        let mut ranks = vec![0u32; list.len()];
        let count = self.partner_ranks(list, &mut ranks)?;
        self.signal_and_wait(&ranks[..count])
    }

    /// The job ranks of the images of a sync images list, this image left out, into
    /// `ranks` (as long as the list); how many. An image twice is an error.
    fn partner_ranks(&self, list: &[Image], ranks: &mut [u32]) -> CoResult<usize> {
        let me = self.rt.rank();
        for (k, &image) in list.iter().enumerate() {
            let rank = self.team.rank_of(image)?;
            if ranks[..k].contains(&rank) {
                return Err(CoError::invalid(
                    "sync images",
                    format!("image {image} appears twice in the list"),
                ));
            }
            ranks[k] = rank;
        }
        let mut count = 0;
        for k in 0..list.len() {
            if ranks[k] != me {
                ranks[count] = ranks[k];
                count += 1;
            }
        }
        Ok(count)
    }

    /// Completes this image's puts, signals each of `partners` (job ranks, not this one)
    /// and waits for a signal from each.
    pub(crate) fn signal_and_wait(&mut self, partners: &[u32]) -> CoResult<()> {
        self.signal_and_wait_each(partners.len(), |_, i| Some(partners[i]))
    }

    /// [`signal_and_wait`](Self::signal_and_wait) with the partners given by index:
    /// `partner(self, i)` for `i` in `0..count`, `None` for an index to skip.
    fn signal_and_wait_each(
        &mut self,
        count: usize,
        partner: impl Fn(&Self, usize) -> Option<u32>,
    ) -> CoResult<()> {
        let me = self.rt.rank();
        self.complete_puts()?;
        for i in 0..count {
            let Some(rank) = partner(self, i) else {
                continue;
            };
            let outgoing = self.signal_words[rank as usize].outgoing;
            control_atomic(&self.rt, outgoing, WordOp::Add(1))?;
        }
        // An image that stopped or failed is reported after the others were waited for:
        // the images still running synchronize among themselves. One word says both
        // whether the partner signalled and whether it announced that it is gone, so the
        // wait looks at one word, as a bare wait for the signal would.
        let mut gone = None;
        for i in 0..count {
            let Some(rank) = partner(self, i) else {
                continue;
            };
            let word = self.signal_words[rank as usize].incoming;
            let expected = self.signals_seen[rank as usize] + 1;
            let mut seen = 0;
            let waited = self.rt.wait_for_atomics(me, Some(rank), || {
                seen = control_atomic(&self.rt, word, WordOp::Load)?;
                Ok(seen & !GONE >= expected || seen & GONE != 0)
            });
            let outcome = match waited {
                Ok(()) if seen & !GONE >= expected => Ok(()),
                Ok(()) => Err(self.announced_gone(rank)),
                Err(e) => Err(CoError::from(e)),
            };
            match outcome {
                Ok(()) => self.signals_seen[rank as usize] = expected,
                Err(e @ (CoError::StoppedImage { .. } | CoError::FailedImage { .. })) => {
                    gone.get_or_insert(e);
                }
                Err(e) => return Err(e),
            }
        }
        gone.map_or(Ok(()), Err)
    }
}
