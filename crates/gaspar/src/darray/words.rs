//! [`Words`]: a prefetched copy's bytes, held in atomic 64-bit words so that any number of
//! threads read it while one refills or writes it, without a lock and without `unsafe`.
//! A read of an element is one or two relaxed loads (an element is never torn across a
//! refill in a way a remote read could not be: each word is read whole).

use std::sync::atomic::{AtomicU64, Ordering};

use bytemuck::Pod;

/// Bytes per word.
const WORD: usize = 8;

/// `len` bytes, zero at first, in atomic words.
pub(super) struct Words {
    words: Box<[AtomicU64]>,
}

impl Words {
    /// `bytes` zero bytes.
    pub fn zeroed(bytes: usize) -> Words {
        Words {
            words: (0..bytes.div_ceil(WORD))
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    /// The `T` starting at byte `at`.
    #[inline(always)]
    pub fn load<T: Pod>(&self, at: usize) -> T {
        let size = std::mem::size_of::<T>();
        if size == WORD && at % WORD == 0 {
            let word = self.words[at / WORD].load(Ordering::Relaxed);
            return bytemuck::cast_slice::<u64, T>(std::slice::from_ref(&word))[0];
        }
        let mut value = T::zeroed();
        let out = bytemuck::bytes_of_mut(&mut value);
        let mut done = 0;
        while done < size {
            let byte = at + done;
            let word = self.words[byte / WORD]
                .load(Ordering::Relaxed)
                .to_ne_bytes();
            let from = byte % WORD;
            let n = (WORD - from).min(size - done);
            out[done..done + n].copy_from_slice(&word[from..from + n]);
            done += n;
        }
        value
    }

    /// Stores `bytes` from byte `at` on. Whole words are stored; a partly covered word is
    /// merged with its other bytes atomically (a concurrent store to them is kept).
    pub fn store(&self, at: usize, bytes: &[u8]) {
        let mut done = 0;
        while done < bytes.len() {
            let byte = at + done;
            let from = byte % WORD;
            let n = (WORD - from).min(bytes.len() - done);
            let word = &self.words[byte / WORD];
            let part = &bytes[done..done + n];
            if n == WORD {
                let mut whole = [0u8; WORD];
                whole.copy_from_slice(part);
                word.store(u64::from_ne_bytes(whole), Ordering::Relaxed);
            } else {
                let merge = |old: u64| {
                    let mut merged = old.to_ne_bytes();
                    merged[from..from + n].copy_from_slice(part);
                    Some(u64::from_ne_bytes(merged))
                };
                // The closure always returns `Some`: the update cannot fail.
                let _ = word.fetch_update(Ordering::Relaxed, Ordering::Relaxed, merge);
            }
            done += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_of_any_size_round_trip_at_any_offset() {
        let words = Words::zeroed(40);
        words.store(8, bytemuck::bytes_of(&2.5f64));
        assert_eq!(words.load::<f64>(8), 2.5);
        words.store(3, bytemuck::bytes_of(&0x0102_0304_0506_0708u64));
        assert_eq!(words.load::<u64>(3), 0x0102_0304_0506_0708);
        words.store(21, &[9, 8, 7]);
        assert_eq!(words.load::<[u8; 3]>(21), [9, 8, 7]);
        assert_eq!(words.load::<u16>(19), u16::from_ne_bytes([0, 0]));
        words.store(30, bytemuck::bytes_of(&[1.5f32, -4.0]));
        assert_eq!(words.load::<[f32; 2]>(30), [1.5, -4.0]);
    }
}
