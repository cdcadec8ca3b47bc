//! The dissemination barrier (Hensgen, Finkel and Manber): ceil(log2 N) rounds; in round k
//! rank r signals rank (r + 2^k) mod N and waits for the signal of rank (r - 2^k) mod N.
//! No word is written by more than one rank, so no rank spins on a shared counter.
//!
//! Each rank owns one flag per round, written only by its round-k source. A flag holds the
//! number of the last barrier its source reached, so flags never need resetting: a source
//! can run at most one barrier ahead (it needs this rank's signal to finish the next).

use crate::error::Result;

/// A word one rank writes and another waits on.
pub(crate) trait Flag {
    fn load_acquire(&self) -> u64;
    fn store_release(&self, value: u64);
}

impl Flag for std::sync::atomic::AtomicU64 {
    #[inline]
    fn load_acquire(&self) -> u64 {
        self.load(std::sync::atomic::Ordering::Acquire)
    }
    #[inline]
    fn store_release(&self, value: u64) {
        self.store(value, std::sync::atomic::Ordering::Release)
    }
}

#[cfg(loom)]
impl Flag for loom::sync::atomic::AtomicU64 {
    fn load_acquire(&self) -> u64 {
        self.load(loom::sync::atomic::Ordering::Acquire)
    }
    fn store_release(&self, value: u64) {
        self.store(value, loom::sync::atomic::Ordering::Release)
    }
}

/// Number of rounds for `procs` ranks.
pub(crate) fn rounds(procs: u32) -> usize {
    (u32::BITS - procs.saturating_sub(1).leading_zeros()) as usize
}

/// Runs barrier number `epoch` (1, 2, ...) for `rank` of `procs`. `flag(r, k)` is rank r's
/// round-k flag; `idle` is called while waiting and may end the wait with an error.
pub(crate) fn dissemination<'a, F: Flag + 'a>(
    rank: u32,
    procs: u32,
    epoch: u64,
    flag: impl Fn(u32, usize) -> &'a F,
    mut idle: impl FnMut(u64) -> Result<()>,
) -> Result<()> {
    for round in 0..rounds(procs) {
        let distance = 1u64 << round;
        let partner = ((u64::from(rank) + distance) % u64::from(procs)) as u32;
        flag(partner, round).store_release(epoch);
        let mine = flag(rank, round);
        let mut spins = 0u64;
        while mine.load_acquire() < epoch {
            idle(spins)?;
            spins += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::rounds;

    #[test]
    fn round_counts() {
        assert_eq!(rounds(1), 0);
        assert_eq!(rounds(2), 1);
        assert_eq!(rounds(3), 2);
        assert_eq!(rounds(4), 2);
        assert_eq!(rounds(5), 3);
        assert_eq!(rounds(1024), 10);
        assert_eq!(rounds(1025), 11);
    }

    #[test]
    fn threads_never_pass_a_barrier_early() {
        use std::sync::atomic::{AtomicU64, Ordering};
        use std::sync::Arc;
        for procs in [1u32, 2, 3, 5, 8] {
            let flags: Arc<Vec<Vec<AtomicU64>>> = Arc::new(
                (0..procs)
                    .map(|_| (0..rounds(procs)).map(|_| AtomicU64::new(0)).collect())
                    .collect(),
            );
            let arrived = Arc::new(AtomicU64::new(0));
            let threads: Vec<_> = (0..procs)
                .map(|rank| {
                    let flags = Arc::clone(&flags);
                    let arrived = Arc::clone(&arrived);
                    std::thread::spawn(move || {
                        for epoch in 1..=200u64 {
                            arrived.fetch_add(1, Ordering::SeqCst);
                            super::dissemination(
                                rank,
                                procs,
                                epoch,
                                |r, k| &flags[r as usize][k],
                                |_| {
                                    std::thread::yield_now();
                                    Ok(())
                                },
                            )
                            .unwrap();
                            // Everyone has arrived at this barrier.
                            assert!(arrived.load(Ordering::SeqCst) >= epoch * u64::from(procs));
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
        }
    }
}

/// Model checks with loom: `RUSTFLAGS="--cfg loom" cargo test --release --lib loom`.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::dissemination;
    use loom::cell::UnsafeCell;
    use loom::sync::atomic::AtomicU64;
    use loom::sync::Arc;

    fn run(procs: u32, barriers: u64, preemptions: usize) {
        // Spin loops make the full state space unbounded; bounding preemptions (as the
        // loom docs advise) keeps the check exhaustive up to that many forced switches.
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(preemptions);
        model.max_branches = 100_000;
        model.check(move || {
            let flags: Arc<Vec<Vec<AtomicU64>>> = Arc::new(
                (0..procs)
                    .map(|_| {
                        (0..super::rounds(procs))
                            .map(|_| AtomicU64::new(0))
                            .collect()
                    })
                    .collect(),
            );
            // One plain (non-atomic) cell per rank: written before a barrier, read by
            // every other rank after it. loom reports a data race if the barrier does not
            // order the accesses.
            let data: Arc<Vec<UnsafeCell<u64>>> =
                Arc::new((0..procs).map(|_| UnsafeCell::new(0)).collect());
            let handles: Vec<_> = (0..procs)
                .map(|rank| {
                    let flags = flags.clone();
                    let data = data.clone();
                    loom::thread::spawn(move || {
                        for round_trip in 1..=barriers {
                            let epoch = 2 * round_trip - 1;
                            data[rank as usize].with_mut(|p| {
                                // SAFETY: only this thread writes its cell, and the previous
                                // barrier ordered every other thread's reads before this write.
                                unsafe { *p = epoch }
                            });
                            dissemination(
                                rank,
                                procs,
                                epoch,
                                |r, k| &flags[r as usize][k],
                                |_| {
                                    loom::thread::yield_now();
                                    Ok(())
                                },
                            )
                            .unwrap();
                            for other in 0..procs as usize {
                                // SAFETY: the barrier ordered the owner's write before this read.
                                let seen = data[other].with(|p| unsafe { *p });
                                assert_eq!(seen, epoch);
                            }
                            if round_trip < barriers {
                                // Nobody may overwrite a cell before everyone has read it.
                                dissemination(
                                    rank,
                                    procs,
                                    epoch + 1,
                                    |r, k| &flags[r as usize][k],
                                    |_| {
                                        loom::thread::yield_now();
                                        Ok(())
                                    },
                                )
                                .unwrap();
                            }
                        }
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
        });
    }

    #[test]
    fn loom_two_ranks_two_barriers() {
        run(2, 2, 3);
    }
}
