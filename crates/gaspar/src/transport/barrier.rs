//! The dissemination barrier (Hensgen, Finkel and Manber): ceil(log2 N) rounds; in round k
//! rank r signals rank (r + 2^k) mod N and waits for the signal of rank (r - 2^k) mod N.
//! No word is written by more than one rank, so no rank spins on a shared counter. A
//! small job (up to [`ALL_TO_ALL`] ranks) runs the all-to-all barrier instead: every rank
//! signals every other, then waits for each.
//!
//! Each rank owns one [`Slot`] per round (all to all: per source) and barrier parity,
//! written only by its round-k source (all to all: the rank k + 1 before it). A slot's
//! flag holds the number of the last barrier of that parity its source reached (and what
//! the source has heard, see [`Arrival`]), so flags never need resetting: a source can
//! run at most one barrier ahead (it needs this rank's signal to finish the next), so it
//! never overwrites a value this rank has not read yet.

use crate::error::Result;

/// A word one rank writes and another waits on.
pub(crate) trait Flag {
    fn load_acquire(&self) -> u64;
    fn store_release(&self, value: u64);
    fn load_relaxed(&self) -> u64;
    fn store_relaxed(&self, value: u64);
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
    #[inline]
    fn load_relaxed(&self) -> u64 {
        self.load(std::sync::atomic::Ordering::Relaxed)
    }
    #[inline]
    fn store_relaxed(&self, value: u64) {
        self.store(value, std::sync::atomic::Ordering::Relaxed)
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
    fn load_relaxed(&self) -> u64 {
        self.load(loom::sync::atomic::Ordering::Relaxed)
    }
    fn store_relaxed(&self, value: u64) {
        self.store(value, loom::sync::atomic::Ordering::Relaxed)
    }
}

/// What a rank's round-k source writes to it in one barrier: the call its source is in
/// (see [`dissemination`]), then the flag that publishes it. Both share a cache line, so
/// the signal moves one line from writer to reader, as a lone flag did.
#[repr(C, align(64))]
pub(crate) struct Slot<F> {
    /// The source's barrier number and what it has heard (see [`arrived`]); stored with
    /// release after `call`, so that a reader that sees the barrier's number sees `call`.
    pub(crate) flag: F,
    /// The word the source passed to this barrier.
    pub(crate) call: F,
}

/// Number of rounds for `procs` ranks.
pub(crate) const fn rounds(procs: u32) -> usize {
    (u32::BITS - procs.saturating_sub(1).leading_zeros()) as usize
}

/// Jobs of up to this many ranks run the all-to-all barrier. With more ranks than cores,
/// a rank that waits for the others one after the other lets any of them run ahead, where
/// the dissemination rounds wait for one source at a time (each wait for a rank that has
/// no core costs a switch of cores). Measured on 2 cores (medians of 8-12 alternating
/// runs of 2000-barrier loops on a loaded machine): 3 ranks 2.9 -> 1.5 us, 4 ranks
/// 8.9 -> 5.6 us, 8 ranks 29 -> 15 us; 2 ranks unchanged (73 ns: the same one signal).
pub(crate) const ALL_TO_ALL: u32 = 8;

/// How a barrier signals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Algorithm {
    /// ceil(log2 N) rounds of one signal and one wait.
    Dissemination,
    /// N - 1 signals, then N - 1 waits (slot k of a rank is written by the rank k + 1
    /// before it, so a job needs N - 1 slots per parity).
    AllToAll,
}

impl Algorithm {
    /// The algorithm of a job of `procs` ranks.
    pub(crate) fn for_job(procs: u32) -> Algorithm {
        if procs <= ALL_TO_ALL {
            Algorithm::AllToAll
        } else {
            Algorithm::Dissemination
        }
    }

    /// Slots per parity a rank of a job of `procs` ranks needs.
    pub(crate) const fn slots(self, procs: u32) -> usize {
        match self {
            Algorithm::Dissemination => rounds(procs),
            Algorithm::AllToAll => procs.saturating_sub(1) as usize,
        }
    }
}

/// Low bits of a flag's value: what the ranks its source has heard from agree on.
const FLAG_BITS: u32 = 3;
/// Some rank heard from entered the barrier to finalize.
const ANY_FINALIZING: u64 = 1;
/// Every rank heard from entered the barrier to finalize.
const ALL_FINALIZING: u64 = 2;
/// Every rank heard from passed the same call word as the flag's source.
const SAME_CALL: u64 = 4;

/// Whether a flag holding `value` says its source reached barrier number `epoch`.
#[inline]
pub(crate) fn arrived(value: u64, epoch: u64) -> bool {
    value >> FLAG_BITS >= epoch
}

/// What every rank learns from a barrier besides that all have arrived: a dissemination
/// barrier is also an all-reduce (for idempotent operators such as "and"), since after
/// its last round each rank has heard, directly or through others, from every rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Arrival {
    /// Some rank entered it to finalize.
    pub(crate) any_finalizing: bool,
    /// Every rank entered it to finalize.
    pub(crate) all_finalizing: bool,
    /// Every rank passed the same call word (then every rank learns it; otherwise every
    /// rank saw a word other than its own, so every rank learns that they differ).
    pub(crate) same_call: bool,
}

impl Arrival {
    /// Some ranks finalize while others are in another collective.
    pub(crate) fn mismatched(self) -> bool {
        self.any_finalizing && !self.all_finalizing
    }
}

/// Runs barrier number `epoch` with `algorithm`: see [`dissemination`], whose arguments
/// it takes (a slot's index is then the source's distance less one for
/// [`Algorithm::AllToAll`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn barrier<'a, F: Flag + 'a>(
    algorithm: Algorithm,
    rank: u32,
    procs: u32,
    epoch: u64,
    finalizing: bool,
    call: u64,
    slot: impl Fn(u32, usize, usize) -> &'a Slot<F>,
    signaled: impl FnMut(u32),
    wait: impl FnMut(&'a F, u32, u64) -> Result<u64>,
) -> Result<Arrival> {
    match algorithm {
        Algorithm::Dissemination => {
            dissemination(rank, procs, epoch, finalizing, call, slot, signaled, wait)
        }
        Algorithm::AllToAll => {
            all_to_all(rank, procs, epoch, finalizing, call, slot, signaled, wait)
        }
    }
}

/// The all-to-all barrier (see [`Algorithm::AllToAll`]): this rank's own bits go to
/// every other rank, and every rank combines what every other sent, so all learn the
/// same [`Arrival`].
#[allow(clippy::too_many_arguments)]
fn all_to_all<'a, F: Flag + 'a>(
    rank: u32,
    procs: u32,
    epoch: u64,
    finalizing: bool,
    call: u64,
    slot: impl Fn(u32, usize, usize) -> &'a Slot<F>,
    mut signaled: impl FnMut(u32),
    mut wait: impl FnMut(&'a F, u32, u64) -> Result<u64>,
) -> Result<Arrival> {
    let parity = (epoch % 2) as usize;
    let own = SAME_CALL
        | if finalizing {
            ANY_FINALIZING | ALL_FINALIZING
        } else {
            0
        };
    for distance in 1..procs {
        let partner = ((u64::from(rank) + u64::from(distance)) % u64::from(procs)) as u32;
        let outgoing = slot(partner, distance as usize - 1, parity);
        outgoing.call.store_relaxed(call);
        outgoing.flag.store_release(epoch << FLAG_BITS | own);
        signaled(partner);
    }
    let mut heard = own;
    for distance in 1..procs {
        let source = ((u64::from(rank) + u64::from(procs - distance)) % u64::from(procs)) as u32;
        let incoming = slot(rank, distance as usize - 1, parity);
        let seen = wait(&incoming.flag, source, epoch)?;
        let same_call = if incoming.call.load_relaxed() == call {
            heard & SAME_CALL
        } else {
            0
        };
        heard = ((heard | seen) & ANY_FINALIZING) | (heard & seen & ALL_FINALIZING) | same_call;
    }
    Ok(Arrival {
        any_finalizing: heard & ANY_FINALIZING != 0,
        all_finalizing: heard & ALL_FINALIZING != 0,
        same_call: heard & SAME_CALL != 0,
    })
}

/// Runs barrier number `epoch` (1, 2, ...) for `rank` of `procs`; `finalizing` says that
/// this rank entered it to finalize, `call` is the word this rank passes (the barrier
/// finds out whether every rank passed the same one). `slot(r, k, parity)` is rank r's
/// round-k slot for barriers of that parity (a source is at most one barrier ahead, so
/// two sets of slots keep each barrier's values until they are read); `signaled(r)` is
/// called after a write to one of rank r's slots; `wait(flag, source, epoch)` waits until
/// `flag`, written by rank `source`, says `epoch` (see [`arrived`]) and returns its value.
#[allow(clippy::too_many_arguments)]
pub(crate) fn dissemination<'a, F: Flag + 'a>(
    rank: u32,
    procs: u32,
    epoch: u64,
    finalizing: bool,
    call: u64,
    slot: impl Fn(u32, usize, usize) -> &'a Slot<F>,
    mut signaled: impl FnMut(u32),
    mut wait: impl FnMut(&'a F, u32, u64) -> Result<u64>,
) -> Result<Arrival> {
    let parity = (epoch % 2) as usize;
    let mut heard = SAME_CALL
        | if finalizing {
            ANY_FINALIZING | ALL_FINALIZING
        } else {
            0
        };
    for round in 0..rounds(procs) {
        let distance = 1u64 << round;
        let procs64 = u64::from(procs);
        let partner = ((u64::from(rank) + distance) % procs64) as u32;
        let source = ((u64::from(rank) + procs64 - distance) % procs64) as u32;
        let outgoing = slot(partner, round, parity);
        outgoing.call.store_relaxed(call);
        outgoing.flag.store_release(epoch << FLAG_BITS | heard);
        signaled(partner);
        let incoming = slot(rank, round, parity);
        let seen = wait(&incoming.flag, source, epoch)?;
        // Everybody the source heard from made the source's call, which is this rank's.
        let same_call = if incoming.call.load_relaxed() == call {
            heard & seen & SAME_CALL
        } else {
            0
        };
        heard = ((heard | seen) & ANY_FINALIZING) | (heard & seen & ALL_FINALIZING) | same_call;
    }
    Ok(Arrival {
        any_finalizing: heard & ANY_FINALIZING != 0,
        all_finalizing: heard & ALL_FINALIZING != 0,
        same_call: heard & SAME_CALL != 0,
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
    use super::{barrier as run, rounds, yielding_wait, Algorithm, Arrival, Slot};
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
        assert_eq!(Algorithm::for_job(8), Algorithm::AllToAll);
        assert_eq!(Algorithm::for_job(9), Algorithm::Dissemination);
        assert_eq!(Algorithm::AllToAll.slots(8), 7);
        assert_eq!(Algorithm::Dissemination.slots(9), 4);
    }

    type Flags = Arc<Vec<Vec<[Slot<AtomicU64>; 2]>>>;

    fn slot() -> Slot<AtomicU64> {
        Slot {
            flag: AtomicU64::new(0),
            call: AtomicU64::new(0),
        }
    }

    const ALGORITHMS: [Algorithm; 2] = [Algorithm::Dissemination, Algorithm::AllToAll];

    fn flags(algorithm: Algorithm, procs: u32) -> Flags {
        Arc::new(
            (0..procs)
                .map(|_| {
                    (0..algorithm.slots(procs))
                        .map(|_| [slot(), slot()])
                        .collect()
                })
                .collect(),
        )
    }

    fn barrier(
        algorithm: Algorithm,
        flags: &Flags,
        rank: u32,
        procs: u32,
        epoch: u64,
        finalizing: bool,
        call: u64,
    ) -> Arrival {
        run(
            algorithm,
            rank,
            procs,
            epoch,
            finalizing,
            call,
            |r, k, parity| &flags[r as usize][k][parity],
            |_| {},
            |flag, _, epoch| yielding_wait(flag, epoch, std::thread::yield_now),
        )
        .unwrap()
    }

    #[test]
    fn threads_never_pass_a_barrier_early() {
        for (algorithm, procs) in ALGORITHMS
            .into_iter()
            .flat_map(|a| [1u32, 2, 3, 5, 8].map(|p| (a, p)))
        {
            let flags = flags(algorithm, procs);
            let arrived = Arc::new(AtomicU64::new(0));
            let threads: Vec<_> = (0..procs)
                .map(|rank| {
                    let flags = Arc::clone(&flags);
                    let arrived = Arc::clone(&arrived);
                    std::thread::spawn(move || {
                        for epoch in 1..=200u64 {
                            arrived.fetch_add(1, Ordering::SeqCst);
                            let arrival =
                                barrier(algorithm, &flags, rank, procs, epoch, false, epoch);
                            assert!(!arrival.any_finalizing);
                            assert!(arrival.same_call);
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
        for (algorithm, procs) in ALGORITHMS
            .into_iter()
            .flat_map(|a| [1u32, 2, 3, 5, 8].map(|p| (a, p)))
        {
            for finalizers in [0u32, 1, procs / 2, procs] {
                let flags = flags(algorithm, procs);
                let threads: Vec<_> = (0..procs)
                    .map(|rank| {
                        let flags = Arc::clone(&flags);
                        std::thread::spawn(move || {
                            // A plain barrier first, so that the finalizing one is number 2.
                            barrier(algorithm, &flags, rank, procs, 1, false, 0);
                            barrier(algorithm, &flags, rank, procs, 2, rank < finalizers, 0)
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

    /// Whichever ranks pass another word (alone, in a block, or everywhere a different
    /// one), every rank learns whether all passed the same word, in every barrier of a
    /// series, even when the words differ from one barrier to the next.
    #[test]
    fn every_rank_learns_whether_all_passed_the_same_word() {
        for (algorithm, procs) in ALGORITHMS
            .into_iter()
            .flat_map(|a| [1u32, 2, 3, 5, 6, 8].map(|p| (a, p)))
        {
            // Word of `rank` in barrier `epoch` for each pattern: all the same, one rank
            // out, ranks below a cut out, every rank its own.
            let patterns: [fn(u32, u32, u64) -> u64; 4] = [
                |_, _, epoch| epoch,
                |rank, procs, epoch| epoch + u64::from(rank == (epoch as u32) % procs),
                |rank, procs, epoch| epoch + u64::from(rank < (epoch as u32) % procs),
                |rank, _, epoch| epoch * 100 + u64::from(rank),
            ];
            for (index, word) in patterns.into_iter().enumerate() {
                let flags = flags(algorithm, procs);
                let threads: Vec<_> = (0..procs)
                    .map(|rank| {
                        let flags = Arc::clone(&flags);
                        std::thread::spawn(move || {
                            (1..=40u64)
                                .map(|epoch| {
                                    let call = word(rank, procs, epoch);
                                    barrier(algorithm, &flags, rank, procs, epoch, false, call)
                                        .same_call
                                })
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect();
                let verdicts: Vec<Vec<bool>> =
                    threads.into_iter().map(|t| t.join().unwrap()).collect();
                for epoch in 1..=40u64 {
                    let all_same =
                        (0..procs).all(|r| word(r, procs, epoch) == word(0, procs, epoch));
                    for (rank, verdict) in verdicts.iter().enumerate() {
                        assert_eq!(
                            verdict[epoch as usize - 1],
                            all_same,
                            "{algorithm:?}: pattern {index}, rank {rank} of {procs}, barrier {epoch}"
                        );
                    }
                }
            }
        }
    }
}

/// Model checks with loom: `RUSTFLAGS="--cfg loom" cargo test --release --lib loom`.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::{dissemination, yielding_wait, Slot};
    use loom::cell::UnsafeCell;
    use loom::sync::atomic::AtomicU64;
    use loom::sync::Arc;

    /// Checks `barriers` round trips of two barriers each, in which `rank` passes
    /// `word(rank, epoch)` to barrier number `epoch`.
    fn run(procs: u32, barriers: u64, preemptions: usize, word: fn(u32, u64) -> u64) {
        // Spin loops make the full state space unbounded; bounding preemptions (as the
        // loom docs advise) keeps the check exhaustive up to that many forced switches.
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(preemptions);
        model.max_branches = 100_000;
        model.check(move || {
            let slot = || Slot {
                flag: AtomicU64::new(0),
                call: AtomicU64::new(0),
            };
            let flags: Arc<Vec<Vec<[Slot<AtomicU64>; 2]>>> = Arc::new(
                (0..procs)
                    .map(|_| {
                        (0..super::rounds(procs))
                            .map(|_| [slot(), slot()])
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
                            let arrival = dissemination(
                                rank,
                                procs,
                                epoch,
                                false,
                                word(rank, epoch),
                                |r, k, parity| &flags[r as usize][k][parity],
                                |_| {},
                                |flag, _, epoch| {
                                    yielding_wait(flag, epoch, loom::thread::yield_now)
                                },
                            )
                            .unwrap();
                            // Every rank learns whether all passed the same word.
                            let same = (0..procs).all(|r| word(r, epoch) == word(rank, epoch));
                            assert_eq!(arrival.same_call, same);
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
        run(2, 2, 3, |_, epoch| epoch);
    }

    /// The call words, written beside the flags, are read as written in their barrier:
    /// the ranks differ in every other barrier, and agree (on another word) in the rest.
    #[test]
    fn loom_two_ranks_with_differing_calls() {
        run(2, 2, 3, |rank, epoch| {
            if epoch % 2 == 1 {
                epoch * 10 + u64::from(rank)
            } else {
                epoch
            }
        });
    }
}
