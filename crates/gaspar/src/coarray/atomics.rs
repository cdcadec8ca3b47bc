//! Atomic subroutines on 4- and 8-byte integer and logical words of a coarray.

use crate::transport::{AtomicOp as WordOp, Width};

use super::error::{CoError, CoResult};
use super::{atomic_at, Coarrays, Image, Token};

/// The read-modify-write operations of `atomic_add`, `atomic_and`, `atomic_or`,
/// `atomic_xor` and their fetching forms.
///
/// ```
/// use gaspar::coarray::{FetchOp, Coarrays};
/// let mut co = Coarrays::init()?;
/// let counter = co.allocate(8)?;
/// let me = co.this_image();
/// assert_eq!(co.atomic_fetch(FetchOp::Add, &counter, 0, 1, 8, 5)?, 0);
/// assert_eq!(co.atomic_fetch(FetchOp::Or, &counter, 0, 1, 8, 2)?, 5);
/// assert_eq!(co.atomic_ref(&counter, 0, me, 8)?, 7);
/// co.deallocate(counter)?;
/// co.finalize()?;
/// # Ok::<(), gaspar::coarray::CoError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchOp {
    /// Wrapping add.
    Add,
    /// Bitwise and.
    And,
    /// Bitwise or.
    Or,
    /// Bitwise exclusive or.
    Xor,
}

fn width(bytes: u8) -> CoResult<Width> {
    match bytes {
        4 => Ok(Width::W4),
        8 => Ok(Width::W8),
        other => Err(CoError::invalid(
            "atomic",
            format!("atomic variables are 4 or 8 bytes, not {other}"),
        )),
    }
}

impl Coarrays {
    /// One atomic on the `bytes`-wide word at `offset` of `image`'s part of `token`,
    /// complete on return; the previous value (zero-extended).
    fn atomic_word(
        &mut self,
        token: &Token,
        offset: usize,
        image: Image,
        bytes: u8,
        op: WordOp,
    ) -> CoResult<u64> {
        let w = width(bytes)?;
        let rank = self.team.rank_of(image)?;
        self.usable(token)?;
        if token.after("atomic", offset)? < usize::from(bytes) {
            return Err(CoError::invalid(
                "atomic",
                format!(
                    "a {bytes}-byte word at offset {offset} runs past the {}-byte coarray",
                    token.len()
                ),
            ));
        }
        self.before_read(rank)?;
        let word = token.location(&self.rt, rank, offset)?;
        Ok(atomic_at(&self.rt, word, w, op)?)
    }

    /// `atomic_define`: stores `value` (its low `width` bytes).
    ///
    /// ```
    /// use gaspar::coarray::Coarrays;
    /// let mut co = Coarrays::init()?;
    /// let flags = co.allocate(8)?; // two integer(4) words
    /// co.atomic_define(&flags, 4, 1, 4, 42)?; // flags(2)[1] = 42
    /// assert_eq!(co.atomic_ref(&flags, 4, 1, 4)?, 42);
    /// co.deallocate(flags)?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn atomic_define(
        &mut self,
        token: &Token,
        offset: usize,
        image: Image,
        width: u8,
        value: u64,
    ) -> CoResult<()> {
        self.atomic_word(token, offset, image, width, WordOp::Store(value))
            .map(drop)
    }

    /// `atomic_ref`: the word's value, zero-extended.
    ///
    /// ```
    /// use gaspar::coarray::Coarrays;
    /// let mut co = Coarrays::init()?;
    /// let word = co.allocate(4)?;
    /// co.atomic_define(&word, 0, 1, 4, u64::from(u32::MAX))?;
    /// assert_eq!(co.atomic_ref(&word, 0, 1, 4)?, u64::from(u32::MAX)); // zero-extended
    /// assert!(co.atomic_ref(&word, 0, 1, 2).is_err()); // 4 or 8 bytes only
    /// co.deallocate(word)?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn atomic_ref(
        &mut self,
        token: &Token,
        offset: usize,
        image: Image,
        width: u8,
    ) -> CoResult<u64> {
        self.atomic_word(token, offset, image, width, WordOp::Load)
    }

    /// `atomic_cas`: stores `new` if the word equals `compare`; returns the old value.
    ///
    /// ```
    /// use gaspar::coarray::Coarrays;
    /// let mut co = Coarrays::init()?;
    /// let word = co.allocate(8)?;
    /// assert_eq!(co.atomic_cas(&word, 0, 1, 8, 0, 9)?, 0); // swapped
    /// assert_eq!(co.atomic_cas(&word, 0, 1, 8, 0, 5)?, 9); // not swapped
    /// assert_eq!(co.atomic_ref(&word, 0, 1, 8)?, 9);
    /// co.deallocate(word)?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn atomic_cas(
        &mut self,
        token: &Token,
        offset: usize,
        image: Image,
        width: u8,
        compare: u64,
        new: u64,
    ) -> CoResult<u64> {
        self.atomic_word(
            token,
            offset,
            image,
            width,
            WordOp::CompareSwap {
                expected: compare,
                new,
            },
        )
    }

    /// `atomic_add/and/or/xor` and `atomic_fetch_*`: applies `op` with `value`; returns
    /// the old value.
    ///
    /// ```
    /// use gaspar::coarray::{FetchOp, Coarrays};
    /// let mut co = Coarrays::init()?;
    /// let word = co.allocate(8)?;
    /// co.atomic_define(&word, 0, 1, 8, 0b1100)?;
    /// assert_eq!(co.atomic_fetch(FetchOp::Xor, &word, 0, 1, 8, 0b0110)?, 0b1100);
    /// assert_eq!(co.atomic_fetch(FetchOp::And, &word, 0, 1, 8, 0b0010)?, 0b1010);
    /// assert_eq!(co.atomic_ref(&word, 0, 1, 8)?, 0b0010);
    /// co.deallocate(word)?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn atomic_fetch(
        &mut self,
        op: FetchOp,
        token: &Token,
        offset: usize,
        image: Image,
        width: u8,
        value: u64,
    ) -> CoResult<u64> {
        let op = match op {
            FetchOp::Add => WordOp::Add(value),
            FetchOp::And => WordOp::And(value),
            FetchOp::Or => WordOp::Or(value),
            FetchOp::Xor => WordOp::Xor(value),
        };
        self.atomic_word(token, offset, image, width, op)
    }
}
