//! Lock variables: one 8-byte word each, 0 when unlocked, else the holder's rank + 1, with
//! [`LOCK_WAITERS`] set once an image waits for it (as a futex mutex's "contended" state):
//! an UNLOCK that finds the bit clear has nobody to wake, so it wakes nobody. Without it,
//! every UNLOCK woke whatever slept on the owner's memory, and an image waiting in a SYNC
//! ALL beside a loop of LOCK/UNLOCK on its lock woke, found nothing, and slept again at
//! every iteration (a futex call each: 25 ns per lock + unlock became 100-1500 ns).

use crate::transport::AtomicOp as WordOp;

use super::error::{CoError, CoResult};
use super::{atomic_unwatched_at, Coarrays, Image, Purpose, Token};
use crate::transport::Location;

/// The bit of a lock word that says an image waits for the lock (or did, and took it
/// while others may still wait): its UNLOCK must wake the images that sleep on the lock
/// owner's memory. The rest of the word is the holder's job rank + 1.
///
/// ```
/// assert_eq!(gaspar::coarray::LOCK_WAITERS, 1 << 63);
/// ```
pub const LOCK_WAITERS: u64 = 1 << 63;

impl Coarrays {
    /// Collective: a token of `n` lock variables per image, all unlocked.
    ///
    /// ```
    /// use gaspar::coarray::Coarrays;
    /// let mut co = Coarrays::init()?;
    /// let locks = co.allocate_locks(4)?; // type(lock_type) :: l(4)[*]
    /// assert!(co.lock(&locks, 3, 1, true)?);
    /// co.unlock(&locks, 3, 1)?;
    /// co.deallocate(locks)?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn allocate_locks(&mut self, n: usize) -> CoResult<Token> {
        let bytes = n
            .checked_mul(8)
            .ok_or_else(|| CoError::invalid("allocate_locks", "too many locks"))?;
        self.allocate_for(bytes, Purpose::Locks)
    }

    /// `lock(l[image])`: acquires lock `index` of `image`, waiting while another image
    /// holds it; with `try_only` (`acquired_lock=`) returns `false` instead of waiting.
    /// A lock this image holds is [`CoError::Locked`].
    ///
    /// ```
    /// use gaspar::coarray::{CoError, Coarrays};
    /// let mut co = Coarrays::init()?;
    /// let l = co.allocate_locks(1)?;
    /// co.lock(&l, 0, 1, false)?; // lock(l[1])
    /// assert!(matches!(co.lock(&l, 0, 1, true), Err(CoError::Locked))); // held by this image
    /// co.unlock(&l, 0, 1)?;
    /// co.deallocate(l)?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    #[inline]
    pub fn lock(
        &mut self,
        token: &Token,
        index: usize,
        image: Image,
        try_only: bool,
    ) -> CoResult<bool> {
        if let Some((_, word)) = self.lock_word(token, index, image) {
            let me = u64::from(self.rt.rank()) + 1;
            let taken = WordOp::CompareSwap {
                expected: 0,
                new: me,
            };
            // Taking a free lock changes nothing a waiter waits for (waiters wait for the
            // marked word of a holder to change): no wake-up.
            if self.pending_ranks == 0 && atomic_unwatched_at(&self.rt, word, taken).ok() == Some(0)
            {
                return Ok(true);
            }
        }
        self.lock_checked(token, index, image, try_only)
    }

    /// The place of lock `index` of `token` on `image` when all of it is in range, found
    /// without building an error: the fast paths of [`lock`](Self::lock) and
    /// [`unlock`](Self::unlock), which leave everything else (and every error) to the
    /// checked paths.
    #[inline(always)]
    fn lock_word(&self, token: &Token, index: usize, image: Image) -> Option<(u32, Location)> {
        if token.purpose != Purpose::Locks {
            return None;
        }
        self.run_target(token, index.checked_mul(8)?, image, 0, 8)
    }

    /// [`lock`](Self::lock) with every check, waiting while another image holds it.
    #[inline(never)]
    fn lock_checked(
        &mut self,
        token: &Token,
        index: usize,
        image: Image,
        try_only: bool,
    ) -> CoResult<bool> {
        let offset = token.word("lock", super::Purpose::Locks, index)?;
        self.usable(token)?;
        let rank = self.team.rank_of(image)?;
        self.complete_puts()?;
        let word = token.location(&self.rt, rank, offset)?;
        let me = u64::from(self.rt.rank()) + 1;
        let mut taken = me;
        loop {
            let seen = self.word_op(
                word,
                WordOp::CompareSwap {
                    expected: 0,
                    new: taken,
                },
            )?;
            if seen == 0 {
                return Ok(true);
            }
            let holder = seen & !LOCK_WAITERS;
            if holder == me {
                return Err(CoError::Locked);
            }
            if try_only {
                return Ok(false);
            }
            let marked = seen | LOCK_WAITERS;
            if seen != marked {
                let cas = WordOp::CompareSwap {
                    expected: seen,
                    new: marked,
                };
                if self.word_op(word, cas)? != seen {
                    // Unlocked or taken meanwhile: look again.
                    continue;
                }
            }
            // Until the holder unlocks, or announces that it stopped or failed.
            self.wait_on(rank, (holder - 1) as u32, || {
                Ok(self.word_op(word, WordOp::Load)? != marked)
            })?;
            // Others may wait too: this image's UNLOCK must wake them.
            taken = me | LOCK_WAITERS;
        }
    }

    /// `unlock(l[image])`: releases lock `index` of `image`, which this image must hold
    /// ([`CoError::Unlocked`], [`CoError::LockedOtherImage`] otherwise).
    ///
    /// ```
    /// use gaspar::coarray::{CoError, Coarrays};
    /// let mut co = Coarrays::init()?;
    /// let l = co.allocate_locks(1)?;
    /// assert!(matches!(co.unlock(&l, 0, 1), Err(CoError::Unlocked))); // nobody holds it
    /// co.lock(&l, 0, 1, false)?;
    /// co.unlock(&l, 0, 1)?;
    /// co.deallocate(l)?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    #[inline]
    pub fn unlock(&mut self, token: &Token, index: usize, image: Image) -> CoResult<()> {
        if let Some((_, word)) = self.lock_word(token, index, image) {
            let me = u64::from(self.rt.rank()) + 1;
            let free = WordOp::CompareSwap {
                expected: me,
                new: 0,
            };
            // Succeeds only without the waiters bit: nobody to wake.
            if self.pending_ranks == 0 && atomic_unwatched_at(&self.rt, word, free).ok() == Some(me)
            {
                return Ok(());
            }
        }
        self.unlock_checked(token, index, image)
    }

    /// [`unlock`](Self::unlock) with every check and every error.
    #[inline(never)]
    fn unlock_checked(&mut self, token: &Token, index: usize, image: Image) -> CoResult<()> {
        let offset = token.word("unlock", super::Purpose::Locks, index)?;
        self.usable(token)?;
        let rank = self.team.rank_of(image)?;
        self.complete_puts()?;
        let me = u64::from(self.rt.rank()) + 1;
        let word = token.location(&self.rt, rank, offset)?;
        let free = |expected| WordOp::CompareSwap { expected, new: 0 };
        let mut old = self.word_op(word, free(me))?;
        if old == me | LOCK_WAITERS {
            // Only this image clears the word: the swap cannot fail. On shm the atomic
            // wakes the sleepers (`Transport::atomic`); on mpi waiters poll.
            old = self.word_op(word, free(old))?;
        }
        match old & !LOCK_WAITERS {
            holder if holder == me => Ok(()),
            0 => Err(CoError::Unlocked),
            holder => Err(CoError::LockedOtherImage {
                holder: holder as u32,
            }),
        }
    }
}
