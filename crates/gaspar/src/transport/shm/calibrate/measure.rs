//! The measurement behind the method table: every candidate method, at every size class
//! and placement, between a private mapping (a rank's own buffer) and a memfd mapping
//! (a peer's segment), each way (as puts and as gets copy) in trials of its own; and per
//! size class, as the chunks of a strided pattern.

use std::ffi::CString;
use std::fs::File;
use std::hint::black_box;
use std::time::Instant;

use memmap2::{MmapMut, MmapOptions};
use nix::sys::memfd::{memfd_create, MemFdCreateFlag};

use crate::error::{Error, Result};
use crate::transport::shm::copy::copy_with;
use crate::transport::shm::copy::kernels::Method;
use crate::transport::shm::copy::table::{
    class_size, Choice, MethodTable, Placement, CLASSES, STRIDED_LARGEST,
};

/// A method must beat memcpy by this factor to be chosen over it: memcpy is the
/// reference, and a smaller gain is within the noise of a shared machine.
const MARGIN: f64 = 0.97;

/// A winner that beats memcpy by less than this factor is measured once more against
/// memcpy alone before it is chosen: a slow spell that hits memcpy's rounds harder than
/// the winner's (two vCPUs shared with other jobs) once made a table choose `rep movsb`
/// at 1 KiB as "1.03x", where it then copied in 15 ns against memcpy's 10.
const CONFIRM_BELOW: f64 = 1.25;

/// Bytes copied per timed trial (at least one copy each way): long enough for the clock,
/// short enough that the whole table takes about a second.
const TRIAL_BYTES: usize = 128 << 10;

/// The two mappings copies run between, each one page longer than the largest class
/// plus the farthest placement.
struct Buffers {
    own: MmapMut,
    shared: MmapMut,
}

impl Buffers {
    fn new() -> Result<Buffers> {
        let len = class_size(CLASSES - 1) + 2 * 4096;
        let own = MmapOptions::new()
            .len(len)
            .map_anon()
            .map_err(|e| Error::os("mmap (calibration buffer)", e))?;
        let label = CString::new("gaspar-calibration").expect("no NUL");
        let fd = memfd_create(&label, MemFdCreateFlag::MFD_CLOEXEC)
            .map_err(|e| Error::os("memfd_create (calibration)", e))?;
        let file = File::from(fd);
        file.set_len(len as u64)
            .map_err(|e| Error::os("ftruncate (calibration)", e))?;
        // SAFETY: the memfd was just created by this function and no one else has it, so
        // nothing changes its length or contents behind the mapping.
        let shared = unsafe { MmapOptions::new().len(len).map_mut(&file) }
            .map_err(|e| Error::os("mmap (calibration segment)", e))?;
        let mut buffers = Buffers { own, shared };
        // Touch every page first, so that no trial pays for page faults.
        buffers.own.fill(1);
        buffers.shared.fill(2);
        Ok(buffers)
    }

    /// Seconds per byte of a copy of `len` bytes with `method`, one way (own buffer to
    /// segment when `put`, else segment to own buffer; the destination `ahead` bytes
    /// further into its page), over a trial of about [`TRIAL_BYTES`] of copies in the same
    /// direction, as a stream of puts or gets copies. One copy first, not timed, puts the
    /// caches where the method itself leaves them (streaming stores evict the destination,
    /// and the next method measured must not pay for that).
    fn trial(&mut self, method: Method, len: usize, ahead: usize, put: bool) -> f64 {
        let copies = (TRIAL_BYTES / len).max(1);
        let (own, shared) = (self.own.as_mut_ptr(), self.shared.as_mut_ptr());
        let (src, dst) = if put { (own, shared) } else { (shared, own) };
        // SAFETY: both mappings are `class_size(CLASSES - 1) + 8192` bytes long and
        // `len + ahead` is at most that; the two mappings are distinct, so disjoint;
        // `len >= 64` as every class is.
        let copy =
            || unsafe { copy_as_called(method, black_box(src), black_box(dst.add(ahead)), len) };
        copy();
        let start = Instant::now();
        for _ in 0..copies {
            copy();
        }
        black_box((src, dst));
        start.elapsed().as_secs_f64() / (copies * len) as f64
    }
}

/// One contiguous copy with `method` through the path a put or get takes ([`copy_with`]),
/// out of line as in the caller of a put: what a trial times.
///
/// # Safety
/// As [`Method::copy`].
#[inline(never)]
unsafe fn copy_as_called(method: Method, src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: the caller's contract.
    unsafe { copy_with(method, src, dst, len) }
}

/// Bytes a strided trial copies: the chunks of a pattern come from a footprint larger
/// than a first-level cache (and, at this size, than many a second level).
const STRIDED_TRIAL_BYTES: usize = 1 << 20;

/// The gap between two chunks of a strided trial's pattern side: one line, so that each
/// chunk sits one line further into its page than the one before, relative to its
/// dense side (a pattern's chunks are seldom placed alike).
const STRIDED_GAP: usize = 64;

/// Where the strided side starts in its mapping, one trial each: line-aligned with the
/// dense side, and 8 bytes off (doubles in a C or Fortran array), which also puts one
/// chunk in 64 less than a line ahead of its source.
const STRIDED_OFFSETS: [usize; 2] = [0, 8];

impl Buffers {
    /// Seconds per byte of copying the chunks of `len` bytes of a strided pattern with
    /// `method`, one way: [`STRIDED_TRIAL_BYTES`] (at least one chunk) between a dense run
    /// of chunks in the own buffer and chunks [`STRIDED_GAP`] bytes apart in the segment,
    /// from byte `offset` on (a put when `put`, else a get). One pass first, not timed, as
    /// in [`Buffers::trial`].
    fn strided_trial(&mut self, method: Method, len: usize, offset: usize, put: bool) -> f64 {
        let stride = len + STRIDED_GAP;
        // Both mappings hold `class_size(CLASSES - 1) + 8192` bytes: at least one chunk
        // of every class, its gap and the offset fit.
        let room = self.own.len().min(self.shared.len()) - offset;
        let chunks = (STRIDED_TRIAL_BYTES / len).clamp(1, room / stride);
        let (own, shared) = (self.own.as_mut_ptr(), self.shared.as_mut_ptr());
        let pass = || {
            for k in 0..chunks {
                // SAFETY: chunk k of the dense side ends at (k + 1) * len and of the
                // strided side at offset + k * stride + len, both within the mappings by
                // the choice of `chunks`; the two mappings are distinct, so disjoint;
                // `len >= 64`.
                unsafe {
                    let dense = own.add(k * len);
                    let strided = shared.add(offset + k * stride);
                    if put {
                        method.copy(black_box(dense), strided, len);
                    } else {
                        method.copy(black_box(strided), dense, len);
                    }
                }
            }
        };
        pass();
        let start = Instant::now();
        pass();
        black_box((own, shared));
        start.elapsed().as_secs_f64() / (chunks * len) as f64
    }
}

/// How many rounds of trials a class gets: the best of each method over the rounds
/// counts, so more rounds resist a noisy neighbour better; large classes get fewer
/// (each of their trials is long enough to average over the noise).
fn rounds(len: usize) -> usize {
    if len >= 1 << 20 {
        5
    } else {
        7
    }
}

/// Measures the table: per size class and placement, and per size class up to
/// [`STRIDED_LARGEST`] as a strided pattern's chunks (both [`STRIDED_OFFSETS`]), every
/// candidate method in rounds (interleaved, so that a slow spell hits all of them), the
/// best of each kept; the fastest is chosen if it beats memcpy by [`MARGIN`], else memcpy.
pub(super) fn measure_table() -> Result<MethodTable> {
    let mut buffers = Buffers::new()?;
    let mut table = MethodTable::default();
    for class in 0..CLASSES {
        let len = class_size(class);
        let methods: Vec<Method> = Method::ALL
            .into_iter()
            .filter(|m| m.candidate(len))
            .collect();
        for placement in Placement::ALL {
            let ahead = placement.measured_ahead();
            // Trial 0 a put, trial 1 a get.
            let choice = measured_choice::<2>(&methods, rounds(len), |m, trial| {
                buffers.trial(m, len, ahead, trial == 0)
            });
            table.set(class, placement, choice);
        }
        if len > STRIDED_LARGEST {
            // Not consulted (a pattern of such chunks takes the placement's method).
            continue;
        }
        // A put and a get at each of the offsets.
        let choice = measured_choice::<4>(&methods, rounds(len), |m, trial| {
            buffers.strided_trial(m, len, STRIDED_OFFSETS[trial / 2], trial % 2 == 0)
        });
        table.set_strided(class, choice);
    }
    Ok(table)
}

/// The choice among `methods` (memcpy first) after `rounds` rounds of `TRIALS` trials of
/// each (see [`best_of_rounds`]); a winner by less than [`CONFIRM_BELOW`] is kept only if
/// a second measurement of it beside memcpy alone confirms it, with the smaller of its
/// two speed-ups.
fn measured_choice<const TRIALS: usize>(
    methods: &[Method],
    rounds: usize,
    mut trial: impl FnMut(Method, usize) -> f64,
) -> Choice {
    let first = best_of_rounds::<TRIALS>(methods, rounds, &mut trial);
    if first.method == Method::Memcpy || first.speedup >= CONFIRM_BELOW {
        return first;
    }
    let again = best_of_rounds::<TRIALS>(&[Method::Memcpy, first.method], rounds, &mut trial);
    if again.method == Method::Memcpy {
        return again;
    }
    Choice {
        method: first.method,
        speedup: first.speedup.min(again.speedup),
    }
}

/// The choice among `methods` (memcpy first) after `rounds` rounds of `TRIALS` trials of
/// each (`trial(method, k)`, seconds per byte), interleaved so that a slow spell hits all
/// of them: each trial's best over the rounds, summed per method.
fn best_of_rounds<const TRIALS: usize>(
    methods: &[Method],
    rounds: usize,
    mut trial: impl FnMut(Method, usize) -> f64,
) -> Choice {
    let mut best = vec![[f64::INFINITY; TRIALS]; methods.len()];
    for _ in 0..rounds {
        for (i, &m) in methods.iter().enumerate() {
            for (k, time) in best[i].iter_mut().enumerate() {
                *time = time.min(trial(m, k));
            }
        }
    }
    let totals: Vec<f64> = best.iter().map(|times| times.iter().sum()).collect();
    choose(methods, &totals)
}

/// The choice among `methods` (memcpy first) given each one's best time.
fn choose(methods: &[Method], best: &[f64]) -> Choice {
    let memcpy = best[0];
    let (fastest, time) = methods
        .iter()
        .zip(best)
        .min_by(|a, b| a.1.total_cmp(b.1))
        .map(|(&m, &t)| (m, t))
        .unwrap_or((Method::Memcpy, memcpy));
    if time < memcpy * MARGIN {
        Choice {
            method: fastest,
            // Three decimals, as the cache file keeps it.
            speedup: (memcpy / time * 1000.0).round() / 1000.0,
        }
    } else {
        Choice {
            method: Method::Memcpy,
            speedup: 1.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_trials_of_every_class_and_offset_stay_in_their_buffers() {
        let mut buffers = Buffers::new().expect("buffers");
        for class in 0..CLASSES {
            for offset in STRIDED_OFFSETS {
                for put in [true, false] {
                    let t = buffers.strided_trial(Method::Memcpy, class_size(class), offset, put);
                    assert!(t.is_finite() && t > 0.0, "class {class}: {t}");
                }
            }
        }
    }

    #[test]
    fn memcpy_stays_unless_beaten_by_the_margin() {
        let methods = [Method::Memcpy, Method::RepMovsb, Method::Pieces2K];
        assert_eq!(
            choose(&methods, &[1.0, 0.99, 0.98]).method,
            Method::Memcpy,
            "within the margin"
        );
        let chosen = choose(&methods, &[1.0, 0.5, 0.8]);
        assert_eq!(chosen.method, Method::RepMovsb);
        assert!((chosen.speedup - 2.0).abs() < 1e-12);
        assert_eq!(choose(&methods, &[1.0, 1.5, 2.0]).method, Method::Memcpy);
    }

    /// A trial function whose `rep movsb` wins by `lead` over memcpy during its first
    /// `lucky` calls and then runs at memcpy's speed (a slow spell that hit memcpy's
    /// first rounds); `pieces2k` always loses.
    fn spell(lucky: usize, lead: f64) -> impl FnMut(Method, usize) -> f64 {
        let mut calls = 0;
        move |method, _| {
            calls += 1;
            match method {
                Method::RepMovsb if calls <= lucky => 1.0 / lead,
                Method::Pieces2K => 2.0,
                _ => 1.0,
            }
        }
    }

    #[test]
    fn a_narrow_winner_is_measured_again_and_dropped_when_it_does_not_win_twice() {
        let methods = [Method::Memcpy, Method::RepMovsb, Method::Pieces2K];
        // Three methods, 7 rounds, 2 trials: the first measurement is 42 calls.
        let chosen = measured_choice::<2>(&methods, 7, spell(42, 1.1));
        assert_eq!(chosen.method, Method::Memcpy, "the lucky spell ended");
        let chosen = measured_choice::<2>(&methods, 7, spell(usize::MAX, 1.1));
        assert_eq!(chosen.method, Method::RepMovsb, "confirmed");
        assert!((chosen.speedup - 1.1).abs() < 1e-3, "{}", chosen.speedup);
    }

    #[test]
    fn a_clear_winner_is_not_measured_again() {
        let methods = [Method::Memcpy, Method::RepMovsb, Method::Pieces2K];
        let chosen = measured_choice::<2>(&methods, 7, spell(42, 2.0));
        assert_eq!(chosen.method, Method::RepMovsb);
        assert!((chosen.speedup - 2.0).abs() < 1e-3);
    }
}
