//! The dissemination barrier (Hensgen, Finkel and Manber): ceil(log2 N) rounds; in round k
//! rank r signals rank (r + 2^k) mod N and waits for the signal of rank (r - 2^k) mod N.
//! No word is written by more than one rank, so no rank spins on a shared counter.
//!
//! Each rank owns one flag per round and barrier parity, written only by its round-k
//! source. A flag holds the number of the last barrier of that parity its source reached
//! (and what the source has heard, see [`Arrival`]), so flags never need resetting: a
//! source can run at most one barrier ahead (it needs this rank's signal to finish the
//! next), so it never overwrites a value this rank has not read yet.

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

/// Low bits of a flag's value: what the ranks its source has heard from agree on.
const FLAG_BITS: u32 = 2;
/// Some rank heard from entered the barrier to finalize.
const ANY_FINALIZING: u64 = 1;
/// Every rank heard from entered the barrier to finalize.
const ALL_FINALIZING: u64 = 2;

/// Whether a flag holding `value` says its source reached barrier number `epoch`.
#[inline]
pub(crate) fn arrived(value: u64, epoch: u64) -> bool {
    value >> FLAG_BITS >= epoch
}

/// What every rank learns from a barrier besides that all have arrived: a dissemination
/// barrier is also an all-reduce, since after its last round each rank has heard,
/// directly or through others, from every rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Arrival {
    /// Some rank entered it to finalize.
    pub(crate) any_finalizing: bool,
    /// Every rank entered it to finalize.
    pub(crate) all_finalizing: bool,
}

impl Arrival {
    /// Some ranks finalize while others are in another collective.
    pub(crate) fn mismatched(self) -> bool {
        self.any_finalizing && !self.all_finalizing
    }
}

/// Runs barrier number `epoch` (1, 2, ...) for `rank` of `procs`; `finalizing` says that
/// this rank entered it to finalize. `flag(r, k, parity)` is rank r's round-k flag for
/// barriers of that parity (a source is at most one barrier ahead, so two sets of flags
/// keep each barrier's value until it is read); `signaled(r)` is called after a write to
/// one of rank r's flags; `wait(flag, source, epoch)` waits until `flag`, written by rank
/// `source`, says `epoch` (see [`arrived`]) and returns its value.
pub(crate) fn dissemination<'a, F: Flag + 'a>(
    rank: u32,
    procs: u32,
    epoch: u64,
    finalizing: bool,
    flag: impl Fn(u32, usize, usize) -> &'a F,
    mut signaled: impl FnMut(u32),
    mut wait: impl FnMut(&'a F, u32, u64) -> Result<u64>,
) -> Result<Arrival> {
    let parity = (epoch % 2) as usize;
    let mut heard = if finalizing {
        ANY_FINALIZING | ALL_FINALIZING
    } else {
        0
    };
    for round in 0..rounds(procs) {
        let distance = 1u64 << round;
        let procs64 = u64::from(procs);
        let partner = ((u64::from(rank) + distance) % procs64) as u32;
        let source = ((u64::from(rank) + procs64 - distance) % procs64) as u32;
        flag(partner, round, parity).store_release(epoch << FLAG_BITS | heard);
        signaled(partner);
        let seen = wait(flag(rank, round, parity), source, epoch)?;
        heard = ((heard | seen) & ANY_FINALIZING) | (heard & seen & ALL_FINALIZING);
    }
    Ok(Arrival {
        any_finalizing: heard & ANY_FINALIZING != 0,
        all_finalizing: heard & ALL_FINALIZING != 0,
    })
}

/// A wait for tests and model checks: yields until the flag arrives.
#[cfg(test)]
fn yielding_wait<F: Flag>(flag: &F, epoch: u64, yield_now: impl Fn()) -> Result<u64> {
    loop {
        let value = flag.load_acquire();
        if arrived(value, epoch) {
            return Ok(value);
        }
        yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::{dissemination, rounds, yielding_wait, Arrival};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

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

    type Flags = Arc<Vec<Vec<[AtomicU64; 2]>>>;

    fn flags(procs: u32) -> Flags {
        Arc::new(
            (0..procs)
                .map(|_| {
                    (0..rounds(procs))
                        .map(|_| [AtomicU64::new(0), AtomicU64::new(0)])
                        .collect()
                })
                .collect(),
        )
    }

    fn barrier(flags: &Flags, rank: u32, procs: u32, epoch: u64, finalizing: bool) -> Arrival {
        dissemination(
            rank,
            procs,
            epoch,
            finalizing,
            |r, k, parity| &flags[r as usize][k][parity],
            |_| {},
            |flag, _, epoch| yielding_wait(flag, epoch, std::thread::yield_now),
        )
        .unwrap()
    }

    #[test]
    fn threads_never_pass_a_barrier_early() {
        for procs in [1u32, 2, 3, 5, 8] {
            let flags = flags(procs);
            let arrived = Arc::new(AtomicU64::new(0));
            let threads: Vec<_> = (0..procs)
                .map(|rank| {
                    let flags = Arc::clone(&flags);
                    let arrived = Arc::clone(&arrived);
                    std::thread::spawn(move || {
                        for epoch in 1..=200u64 {
                            arrived.fetch_add(1, Ordering::SeqCst);
                            let arrival = barrier(&flags, rank, procs, epoch, false);
                            assert!(!arrival.any_finalizing);
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

    /// Whoever finalizes, every rank learns whether some and whether all did.
    #[test]
    fn every_rank_learns_who_finalizes() {
        for procs in [1u32, 2, 3, 5, 8] {
            for finalizers in [0u32, 1, procs / 2, procs] {
                let flags = flags(procs);
                let threads: Vec<_> = (0..procs)
                    .map(|rank| {
                        let flags = Arc::clone(&flags);
                        std::thread::spawn(move || {
                            // A plain barrier first, so that the finalizing one is number 2.
                            barrier(&flags, rank, procs, 1, false);
                            barrier(&flags, rank, procs, 2, rank < finalizers)
                        })
                    })
                    .collect();
                for t in threads {
                    let arrival = t.join().unwrap();
                    assert_eq!(
                        arrival.any_finalizing,
                        finalizers > 0,
                        "{finalizers}/{procs}"
                    );
                    assert_eq!(arrival.all_finalizing, finalizers == procs);
                    assert_eq!(arrival.mismatched(), finalizers > 0 && finalizers < procs);
                }
            }
        }
    }
}

/// Model checks with loom: `RUSTFLAGS="--cfg loom" cargo test --release --lib loom`.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::{dissemination, yielding_wait};
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
            let flags: Arc<Vec<Vec<[AtomicU64; 2]>>> = Arc::new(
                (0..procs)
                    .map(|_| {
                        (0..super::rounds(procs))
                            .map(|_| [AtomicU64::new(0), AtomicU64::new(0)])
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
                        let barrier = |epoch: u64| {
                            dissemination(
                                rank,
                                procs,
                                epoch,
                                false,
                                |r, k, parity| &flags[r as usize][k][parity],
                                |_| {},
                                |flag, _, epoch| {
                                    yielding_wait(flag, epoch, loom::thread::yield_now)
                                },
                            )
                            .unwrap()
                        };
                        for round_trip in 1..=barriers {
                            let epoch = 2 * round_trip - 1;
                            data[rank as usize].with_mut(|p| {
                                // SAFETY: only this thread writes its cell, and the previous
                                // barrier ordered every other thread's reads before this write.
                                unsafe { *p = epoch }
                            });
                            barrier(epoch);
                            for other in 0..procs as usize {
                                // SAFETY: the barrier ordered the owner's write before this read.
                                let seen = data[other].with(|p| unsafe { *p });
                                assert_eq!(seen, epoch);
                            }
                            if round_trip < barriers {
                                // Nobody may overwrite a cell before everyone has read it.
                                barrier(epoch + 1);
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
