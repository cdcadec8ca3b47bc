//! Data sieving for strided and I/O-vector gets: one contiguous MPI_Get of the bytes from
//! a pattern's first chunk (a vector's first segment) to its last, holes included, then the
//! chunks picked out locally, instead of one MPI_Get with a derived datatype, when that is
//! faster on the way to that rank.
//!
//! Why: some one-sided components move a derived datatype chunk by chunk. OpenMPI 4.1's
//! osc/ucx over TCP (the component for jobs across hosts) took 7 us per 8-byte chunk,
//! 16.4 ms for the 2304 chunks of one face of a 48^3 grid, where the 442 KiB from its
//! first to its last chunk came in 0.62 ms (bench/probes/vector_get.c, two hosts of
//! `scripts/lib/two-hosts.sh`); on one host (osc/sm) the datatype is a local copy loop and
//! wins. So the choice is measured where the program runs, per target rank: the first
//! strided get of at least [`PROBE_CHUNKS`] chunks from a rank times both ways on a prefix
//! of itself (and one chunk alone, the round trip both pay), and every later get from that
//! rank takes the way the costs predict faster. ROMIO reads noncontiguous file regions
//! the same way ("data sieving"), with the same 4 MiB bound on what it reads at once.
//! Puts are never sieved: writing the holes back would overwrite other ranks' writes.
//!
//! `GASPAR_MPI_SIEVE` = `auto` (the default), `always` or `never` overrides the choice.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::MpiTransport;
use crate::config::MPI_SIEVE;
use crate::error::{Error, Result};
use crate::transport::{Location, Pattern, Transport};

/// The most bytes one sieved get reads (ROMIO's default `ind_rd_buffer_size`): a pattern
/// spanning more takes the datatype, so that a sparse pattern never stages gigabytes.
pub(super) const MOST_SPAN: u64 = 4 << 20;
/// Chunks in the calibration's probe: enough that the per-chunk cost stands out of the
/// round trip's noise, few enough that the probe costs a few round trips.
const PROBE_CHUNKS: u64 = 64;
/// Rounds of the calibration; each way's fastest round counts (a round can wait for the
/// target's progress, which is no property of the way).
const PROBE_ROUNDS: usize = 3;

/// What `GASPAR_MPI_SIEVE` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Choice {
    /// Measured per target rank.
    Auto,
    /// Every strided get whose span is at most [`MOST_SPAN`].
    Always,
    /// No strided get.
    Never,
}

impl Choice {
    /// Reads `GASPAR_MPI_SIEVE`.
    pub(super) fn from_env() -> Result<Choice> {
        Choice::parse(&MPI_SIEVE.raw())
    }

    fn parse(text: &str) -> Result<Choice> {
        match text.trim() {
            "auto" => Ok(Choice::Auto),
            "always" => Ok(Choice::Always),
            "never" => Ok(Choice::Never),
            _ => Err(Error::Environment(format!(
                "{}={text:?} is not auto, always or never",
                MPI_SIEVE.name
            ))),
        }
    }
}

/// The measured costs of a strided get from one rank, beyond the round trip both ways
/// pay.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Costs {
    /// Seconds per chunk of a get with a derived datatype.
    pub per_chunk: f64,
    /// Seconds per byte of a sieved get's span (the get and the local picking).
    pub per_span_byte: f64,
}

impl Costs {
    /// From the fastest round trip of one chunk, and of `chunks` chunks spanning `span`
    /// bytes with a datatype and sieved. A way measured no slower than the round trip
    /// costs nothing beyond it.
    fn from_times(
        round_trip: Duration,
        typed: Duration,
        sieved: Duration,
        chunks: u64,
        span: u64,
    ) -> Costs {
        let beyond = |t: Duration| t.saturating_sub(round_trip).as_secs_f64();
        Costs {
            per_chunk: beyond(typed) / chunks.max(1) as f64,
            per_span_byte: beyond(sieved) / span.max(1) as f64,
        }
    }

    /// Whether a sieved get of `span` bytes is predicted faster than a datatype of
    /// `chunks` chunks (a tie keeps the datatype, which moves fewer bytes).
    pub(super) fn sieve_wins(&self, chunks: u64, span: u64) -> bool {
        span as f64 * self.per_span_byte < chunks as f64 * self.per_chunk
    }
}

/// The sieving choice of one transport: the setting and each target rank's measured
/// costs (set by the first get that measures them).
pub(super) struct Sieve {
    choice: Choice,
    costs: Vec<OnceLock<Costs>>,
}

impl Sieve {
    /// For a job of `procs` ranks, nothing measured yet.
    pub(super) fn new(choice: Choice, procs: u32) -> Sieve {
        Sieve {
            choice,
            costs: (0..procs).map(|_| OnceLock::new()).collect(),
        }
    }
}

/// The first chunks of `pattern`, at most [`PROBE_CHUNKS`] of them in its order (the
/// inner levels whole, then part of the next level), as (counts, dense local strides),
/// and their number.
fn probe_shape(pattern: &Pattern<'_>) -> (Vec<u64>, Vec<u64>, u64) {
    let (mut counts, mut strides) = (Vec::new(), Vec::new());
    let mut chunks = 1u64;
    for &count in pattern.counts {
        strides.push(pattern.chunk * chunks);
        let taken = count.min(PROBE_CHUNKS / chunks).max(1);
        counts.push(taken);
        chunks *= taken;
        if taken < count {
            break;
        }
    }
    (counts, strides, chunks)
}

/// How long `way` took.
fn timed(way: impl FnOnce() -> Result<()>) -> Result<Duration> {
    let start = Instant::now();
    way()?;
    Ok(start.elapsed())
}

/// Chunks in `pattern`, saturating.
fn chunk_count(pattern: &Pattern<'_>) -> u64 {
    pattern
        .counts
        .iter()
        .fold(1u64, |n, &c| n.saturating_mul(c))
}

impl MpiTransport {
    /// Whether the strided get of `pattern` (already checked, spanning `span` bytes at
    /// its source) from `src` is sieved; measures the costs from that rank when this get
    /// is the first large enough to.
    pub(super) fn sieves(&self, src: Location, pattern: &Pattern<'_>, span: u64) -> Result<bool> {
        self.sieve_choice(src, chunk_count(pattern), span, Some(pattern))
    }

    /// Whether the get of the I/O vector of `count` segments spanning `span` bytes at
    /// `src` (the shortest `shortest` bytes long) is sieved. Measured, when the costs from
    /// that rank are not known yet, on a pattern of [`PROBE_CHUNKS`] chunks of `shortest`
    /// bytes spread evenly over the span.
    pub(super) fn sieves_segments(
        &self,
        src: Location,
        count: u64,
        shortest: u64,
        span: u64,
    ) -> Result<bool> {
        let chunk = shortest.clamp(1, span.max(1));
        let stride = (span.saturating_sub(chunk) / (PROBE_CHUNKS - 1)).max(chunk);
        let (counts, local, remote) = ([PROBE_CHUNKS], [chunk], [stride]);
        let probe = Pattern {
            chunk,
            counts: &counts,
            local_strides: &local,
            remote_strides: &remote,
        };
        // A span too short for the probe (under PROBE_CHUNKS shortest segments) is not
        // measured on: without known costs the datatype stays.
        let fits = probe.extent(&remote).is_some_and(|e| e <= span);
        self.sieve_choice(src, count, span, fits.then_some(&probe))
    }

    /// The choice for a get of `chunks` chunks spanning `span` bytes at `src`; `probe`, if
    /// any, is what to time when the costs from that rank are not known yet and `chunks`
    /// is at least [`PROBE_CHUNKS`].
    fn sieve_choice(
        &self,
        src: Location,
        chunks: u64,
        span: u64,
        probe: Option<&Pattern<'_>>,
    ) -> Result<bool> {
        if chunks < 2 || span > MOST_SPAN {
            return Ok(false);
        }
        let costs = match self.sieve.choice {
            Choice::Never => return Ok(false),
            Choice::Always => return Ok(true),
            Choice::Auto => &self.sieve.costs[src.rank() as usize],
        };
        if let Some(known) = costs.get() {
            return Ok(known.sieve_wins(chunks, span));
        }
        let (true, Some(probe)) = (chunks >= PROBE_CHUNKS, probe) else {
            return Ok(false);
        };
        let measured = self.measure_sieve(src, probe)?;
        // Two threads measuring at once keep the first result.
        let costs = costs.get_or_init(|| measured);
        let sieved = costs.sieve_wins(chunks, span);
        tracing::debug!(
            rank = src.rank(),
            ?costs,
            chunks,
            span,
            sieved,
            "strided get costs measured"
        );
        Ok(sieved)
    }

    /// One contiguous get of the `stage.len()` bytes the pattern spans at `src`, then its
    /// chunks copied into `dst`. The caller checked the pattern against both lengths.
    pub(super) fn get_sieved(
        &self,
        src: Location,
        dst: &mut [u8],
        pattern: &Pattern<'_>,
        stage: &mut [u8],
    ) -> Result<()> {
        self.get(src, stage).map_err(|e| *e)?;
        let chunk = pattern.chunk as usize;
        pattern.for_each(|local, remote| {
            let (l, r) = (local as usize, remote as usize);
            dst[l..l + chunk].copy_from_slice(&stage[r..r + chunk]);
            Ok::<(), Error>(())
        })
    }

    /// The costs of both ways from `src`, timed on the first chunks of `pattern`.
    fn measure_sieve(&self, src: Location, pattern: &Pattern<'_>) -> Result<Costs> {
        let (counts, local_strides, chunks) = probe_shape(pattern);
        let probe = Pattern {
            chunk: pattern.chunk,
            counts: &counts,
            local_strides: &local_strides,
            remote_strides: &pattern.remote_strides[..counts.len()],
        };
        let local_len = (chunks * pattern.chunk) as usize;
        let (_, span) = probe.checked_extents(local_len)?;
        let mut scratch = vec![0u8; local_len];
        let mut stage = vec![0u8; span as usize];
        let chunk = pattern.chunk as usize;
        let mut best = [Duration::MAX; 3];
        for _ in 0..PROBE_ROUNDS {
            let times = [
                timed(|| self.get(src, &mut scratch[..chunk]).map_err(|e| *e))?,
                timed(|| self.get_typed_pattern(src, &mut scratch, &probe, span))?,
                timed(|| self.get_sieved(src, &mut scratch, &probe, &mut stage))?,
            ];
            for (fastest, time) in best.iter_mut().zip(times) {
                *fastest = (*fastest).min(time);
            }
        }
        Ok(Costs::from_times(best[0], best[1], best[2], chunks, span))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_is_a_prefix_of_the_pattern_of_at_most_probe_chunks() {
        let shape = |counts: &[u64]| {
            let strides = vec![1000; counts.len()];
            let pattern = Pattern {
                chunk: 8,
                counts,
                local_strides: &strides,
                remote_strides: &strides,
            };
            probe_shape(&pattern)
        };
        assert_eq!(shape(&[2304]), (vec![64], vec![8], 64));
        assert_eq!(shape(&[10]), (vec![10], vec![8], 10));
        assert_eq!(shape(&[4, 100, 7]), (vec![4, 16], vec![8, 32], 64));
        assert_eq!(shape(&[50, 100]), (vec![50, 1], vec![8, 400], 50));
        assert_eq!(
            shape(&[2, 2, 2, 100]),
            (vec![2, 2, 2, 8], vec![8, 16, 32, 64], 64)
        );
    }

    #[test]
    fn the_costs_predict_the_faster_way() {
        let us = Duration::from_micros;
        // Across TCP (measured): 30 us round trip, 64 chunks in 480 us, their 12 KiB
        // span in 40 us.
        let network = Costs::from_times(us(30), us(480), us(40), 64, 12 << 10);
        assert!(network.sieve_wins(2304, 442 << 10));
        assert!(!network.sieve_wins(2, 64 << 20));
        // Where a datatype costs no more than a round trip, it always wins.
        let shared = Costs::from_times(us(2), us(1), us(3), 64, 12 << 10);
        assert!(!shared.sieve_wins(2304, 442 << 10));
    }

    #[test]
    fn the_setting_parses_its_three_words_only() {
        assert_eq!(Choice::parse("auto").ok(), Some(Choice::Auto));
        assert_eq!(Choice::parse(" always ").ok(), Some(Choice::Always));
        assert_eq!(Choice::parse("never").ok(), Some(Choice::Never));
        assert!(Choice::parse("sometimes").is_err());
    }
}
