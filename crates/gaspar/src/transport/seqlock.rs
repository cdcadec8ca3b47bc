//! The sequence lock that publishes a rank's registration table: its owner rewrites an
//! entry while any rank reads it, without a lock, and a reader never sees half of a write.
//! Both transports keep their tables in this form (shm in the segment header, mpi in the
//! window), so that reading a peer's entry is the same few loads everywhere.

use std::sync::atomic::{AtomicU64, Ordering};

/// An atomic word as the sequence lock needs it; implemented for std's atomics (the
/// shared segment) and loom's (the model check).
pub(crate) trait Word {
    fn load(&self, order: Ordering) -> u64;
    fn store(&self, value: u64, order: Ordering);
    fn fence(order: Ordering);
    /// Called while waiting for a writer to finish.
    fn relax();
}

impl Word for AtomicU64 {
    #[inline]
    fn load(&self, order: Ordering) -> u64 {
        AtomicU64::load(self, order)
    }
    #[inline]
    fn store(&self, value: u64, order: Ordering) {
        AtomicU64::store(self, value, order)
    }
    #[inline]
    fn fence(order: Ordering) {
        std::sync::atomic::fence(order)
    }
    #[inline]
    fn relax() {
        std::hint::spin_loop()
    }
}

/// One registration slot, published by its owner with a sequence lock: `seq` is odd while
/// the owner rewrites the entry; `len == 0` means the slot is empty.
#[repr(C)]
pub(crate) struct RegionEntry<W = AtomicU64> {
    pub(crate) seq: W,
    pub(crate) base: W,
    pub(crate) len: W,
    pub(crate) color: W,
}

impl<W: Word> RegionEntry<W> {
    /// Publishes (or, with `len == 0`, clears) the entry. Only the owner calls this.
    pub(crate) fn write(&self, base: u64, len: u64, color: u64) {
        let seq = self.seq.load(Ordering::Relaxed);
        self.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        W::fence(Ordering::Release);
        self.base.store(base, Ordering::Relaxed);
        self.len.store(len, Ordering::Relaxed);
        self.color.store(color, Ordering::Relaxed);
        self.seq.store(seq.wrapping_add(2), Ordering::Release);
    }

    /// A consistent snapshot `(base, len)`; `len == 0` means empty.
    pub(crate) fn read(&self) -> (u64, u64) {
        loop {
            let before = self.seq.load(Ordering::Acquire);
            if before % 2 == 1 {
                W::relax();
                continue;
            }
            let base = self.base.load(Ordering::Relaxed);
            let len = self.len.load(Ordering::Relaxed);
            W::fence(Ordering::Acquire);
            if self.seq.load(Ordering::Relaxed) == before {
                return (base, len);
            }
        }
    }
}

/// Model checks with loom: `RUSTFLAGS="--cfg loom" cargo test --release --lib loom`.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::{RegionEntry, Word};
    use loom::sync::atomic::{AtomicU64, Ordering};
    use loom::sync::Arc;

    impl Word for AtomicU64 {
        fn load(&self, order: Ordering) -> u64 {
            AtomicU64::load(self, order)
        }
        fn store(&self, value: u64, order: Ordering) {
            AtomicU64::store(self, value, order)
        }
        fn fence(order: Ordering) {
            loom::sync::atomic::fence(order)
        }
        fn relax() {
            loom::thread::yield_now()
        }
    }

    /// A reader never sees a torn entry: base and len always come from one write.
    #[test]
    fn loom_seqlock_reads_are_never_torn() {
        loom::model(|| {
            let entry = Arc::new(RegionEntry {
                seq: AtomicU64::new(0),
                base: AtomicU64::new(0),
                len: AtomicU64::new(0),
                color: AtomicU64::new(0),
            });
            let writer = {
                let entry = entry.clone();
                loom::thread::spawn(move || {
                    entry.write(1, 1, 0);
                    entry.write(2, 2, 0);
                })
            };
            let (base, len) = entry.read();
            assert_eq!(base, len, "torn read");
            writer.join().unwrap();
            assert_eq!(entry.read(), (2, 2));
        });
    }
}
