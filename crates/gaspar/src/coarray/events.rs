//! Event variables: one 8-byte counter each.

use crate::transport::AtomicOp as WordOp;

use super::error::{CoError, CoResult};
use super::{control_atomic, Coarrays, Image, Purpose, Token};

impl Coarrays {
    /// Collective: a token of `n` event variables per image, all with count 0.
    ///
    /// ```
    /// use gaspar::coarray::Coarrays;
    /// let mut co = Coarrays::init()?;
    /// let events = co.allocate_events(2)?; // type(event_type) :: ev(2)[*]
    /// assert_eq!(co.event_query(&events, 1, co.this_image())?, 0);
    /// co.deallocate(events)?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn allocate_events(&mut self, n: usize) -> CoResult<Token> {
        let bytes = n
            .checked_mul(8)
            .ok_or_else(|| CoError::invalid("allocate_events", "too many events"))?;
        self.allocate_for(bytes, Purpose::Events)
    }

    /// `event post(ev[image])`: completes this image's puts, then adds one to the count.
    ///
    /// ```
    /// use gaspar::coarray::Coarrays;
    /// let mut co = Coarrays::init()?;
    /// let ev = co.allocate_events(1)?;
    /// let me = co.this_image();
    /// co.event_post(&ev, 0, me)?;
    /// co.event_post(&ev, 0, me)?;
    /// assert_eq!(co.event_query(&ev, 0, me)?, 2);
    /// co.deallocate(ev)?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn event_post(&mut self, token: &Token, index: usize, image: Image) -> CoResult<()> {
        let offset = token.word("event post", Purpose::Events, index)?;
        self.usable(token)?;
        let rank = self.team.rank_of(image)?;
        self.complete_puts()?;
        self.word_op(token.location(&self.rt, rank, offset)?, WordOp::Add(1))
            .map(drop)
    }

    /// `event wait(ev, until_count=)`: waits until this image's event `index` has been
    /// posted `until_count` times (at least once), then takes that many posts off.
    ///
    /// ```
    /// use gaspar::coarray::Coarrays;
    /// let mut co = Coarrays::init()?;
    /// let ev = co.allocate_events(1)?;
    /// let me = co.this_image();
    /// for _ in 0..3 {
    ///     co.event_post(&ev, 0, me)?;
    /// }
    /// co.event_wait(&ev, 0, 2)?; // takes two posts off
    /// assert_eq!(co.event_query(&ev, 0, me)?, 1);
    /// co.deallocate(ev)?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn event_wait(&mut self, token: &Token, index: usize, until_count: u64) -> CoResult<()> {
        let offset = token.word("event wait", Purpose::Events, index)?;
        self.usable(token)?;
        self.complete_puts()?;
        let threshold = until_count.max(1);
        let me = self.rt.rank();
        let word = token.location(&self.rt, me, offset)?;
        let mut stranded = None;
        let waited = self.rt.wait_for_atomics(me, None, || {
            if control_atomic(&self.rt, word, WordOp::Load)? >= threshold {
                return Ok(true);
            }
            // No image left that could post: an error, not a wait forever. (While no
            // image left the job, nobody needs a look.)
            if self.rt.departures() != Some(0) {
                stranded = self.no_other_image_running();
            }
            Ok(stranded.is_some())
        });
        waited?;
        if let Some(gone) = stranded {
            return Err(gone);
        }
        self.word_op(word, WordOp::Add(threshold.wrapping_neg()))
            .map(drop)
    }

    /// `event_query(ev[image], count)`: the posts not yet waited for.
    ///
    /// ```
    /// use gaspar::coarray::Coarrays;
    /// let mut co = Coarrays::init()?;
    /// let ev = co.allocate_events(1)?;
    /// co.event_post(&ev, 0, 1)?;
    /// assert_eq!(co.event_query(&ev, 0, 1)?, 1);
    /// co.deallocate(ev)?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn event_query(&mut self, token: &Token, index: usize, image: Image) -> CoResult<u64> {
        let offset = token.word("event_query", Purpose::Events, index)?;
        self.usable(token)?;
        let rank = self.team.rank_of(image)?;
        self.word_op(token.location(&self.rt, rank, offset)?, WordOp::Load)
    }
}
