//! Remote atomics as the processor's own atomic instructions on a word mapped in this
//! process: the shm transport's atomics, and the mpi transport's when every rank of the
//! job maps every other's window (one host). Every rank that touches such a word must
//! use these, never an MPI atomic on the same word: the two are not atomic with each
//! other.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::{AtomicOp, Width};

/// The ordering of every read-modify-write: sequentially consistent, so that an atomic is
/// the writer's half of a sleeper's handshake (see `ShmTransport::wait_for`); on x86 the
/// same locked instruction as acquire-release.
const RMW: Ordering = Ordering::SeqCst;

/// `op` on the `width`-byte word at `ptr`; returns the word's value before it.
///
/// # Safety
/// `ptr` is aligned to `width`, and its `width` bytes lie inside memory that stays mapped
/// for the call and that every process touches only through atomics or the program's own
/// copies.
#[inline(always)]
pub(crate) unsafe fn on_word(ptr: *mut u8, width: Width, op: AtomicOp) -> u64 {
    match width {
        // SAFETY: the function's contract (an aligned, live word).
        Width::W8 => on_u64(unsafe { AtomicU64::from_ptr(ptr.cast()) }, op),
        // SAFETY: the function's contract.
        Width::W4 => u64::from(on_u32(unsafe { AtomicU32::from_ptr(ptr.cast()) }, op)),
    }
}

/// `op` on an 8-byte word.
#[inline]
pub(crate) fn on_u64(word: &AtomicU64, op: AtomicOp) -> u64 {
    const ORD: Ordering = RMW;
    match op {
        AtomicOp::CompareSwap { expected, new } => {
            match word.compare_exchange(expected, new, ORD, Ordering::Acquire) {
                Ok(v) | Err(v) => v,
            }
        }
        AtomicOp::Swap(v) => word.swap(v, ORD),
        AtomicOp::Add(v) => word.fetch_add(v, ORD),
        AtomicOp::Xor(v) => word.fetch_xor(v, ORD),
        AtomicOp::Or(v) => word.fetch_or(v, ORD),
        AtomicOp::And(v) => word.fetch_and(v, ORD),
        AtomicOp::Load => word.load(Ordering::Acquire),
        AtomicOp::Store(v) => word.swap(v, ORD),
    }
}

/// `op` on a 4-byte word: the operands' low halves.
#[inline]
fn on_u32(word: &AtomicU32, op: AtomicOp) -> u32 {
    const ORD: Ordering = RMW;
    let low = |v: u64| v as u32;
    match op {
        AtomicOp::CompareSwap { expected, new } => {
            match word.compare_exchange(low(expected), low(new), ORD, Ordering::Acquire) {
                Ok(v) | Err(v) => v,
            }
        }
        AtomicOp::Swap(v) => word.swap(low(v), ORD),
        AtomicOp::Add(v) => word.fetch_add(low(v), ORD),
        AtomicOp::Xor(v) => word.fetch_xor(low(v), ORD),
        AtomicOp::Or(v) => word.fetch_or(low(v), ORD),
        AtomicOp::And(v) => word.fetch_and(low(v), ORD),
        AtomicOp::Load => word.load(Ordering::Acquire),
        AtomicOp::Store(v) => word.swap(low(v), ORD),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_operation_returns_the_old_value_and_leaves_the_new() {
        let mut word = 0b1100u64;
        let at = (&mut word as *mut u64).cast::<u8>();
        let cases = [
            (AtomicOp::Add(3), 0b1100, 0b1111),
            (AtomicOp::And(0b0101), 0b1111, 0b0101),
            (AtomicOp::Or(0b1000), 0b0101, 0b1101),
            (AtomicOp::Xor(0b0001), 0b1101, 0b1100),
            (AtomicOp::Swap(7), 0b1100, 7),
            (
                AtomicOp::CompareSwap {
                    expected: 6,
                    new: 9,
                },
                7,
                7,
            ),
            (
                AtomicOp::CompareSwap {
                    expected: 7,
                    new: 9,
                },
                7,
                9,
            ),
            (AtomicOp::Store(11), 9, 11),
            (AtomicOp::Load, 11, 11),
        ];
        for (op, old, new) in cases {
            // SAFETY: `at` is the aligned local `word`, touched only here.
            assert_eq!(unsafe { on_word(at, Width::W8, op) }, old, "{op:?}");
            assert_eq!(word, new, "{op:?}");
        }
    }

    #[test]
    fn a_four_byte_word_leaves_its_neighbour_alone() {
        let mut words = [u32::MAX - 1, 5u32];
        let at = words.as_mut_ptr().cast::<u8>();
        // SAFETY: `at` is the aligned first element of the local array.
        let old = unsafe { on_word(at, Width::W4, AtomicOp::Add((1 << 32) | 3)) };
        assert_eq!(old, u64::from(u32::MAX - 1));
        assert_eq!(
            words,
            [1, 5],
            "the carry and the operand's high half stay out"
        );
    }
}
