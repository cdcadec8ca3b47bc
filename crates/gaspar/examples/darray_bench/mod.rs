//! The harness of the LAPPS benchmarks (examples `darray_sobel`, `darray_heat`,
//! `darray_transpose`, `darray_dgemm`, `darray_sparse`): the variants, the arguments, the
//! timing and the one line each run prints on rank 0:
//!
//! ```text
//! darray-bench sobel variant=ac ranks=2 size=512 iterations=4 seconds=0.0123 hwm_kib=9876 prefetch_peak_kib=16 check=passed
//! ```
//!
//! `hwm_kib` is the largest memory high-water mark (VmHWM) of the ranks' processes, taken
//! right after the timed part (before the check's serial computation).
//! Arguments: `VARIANT [SIZE [ITERATIONS]]`, VARIANT one of `base`, `handopt`, `ac`, `mc`,
//! `ac-sd`, `mc-sd`.

use std::cell::Cell;
use std::time::Instant;

use gaspar::darray::{Darrays, DistArray, Domain, Prefetch};
use gaspar::world::World;
use gaspar::{Error, Result};

/// How a benchmark reaches remote data (the paper's variants, section 6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// Fine-grained remote reads.
    Base,
    /// Hand-written local copies of the remote data ([`HandCopies`]): the data movement of
    /// LAPPS, written by the programmer; local elements are read from the array, as in
    /// the paper's HandOpt.
    HandOpt,
    /// LAPPS prefetch, automatic consistency.
    Ac,
    /// LAPPS prefetch, manual consistency.
    Mc,
    /// Automatic consistency with the static-domain optimization.
    AcSd,
    /// Manual consistency with the static-domain optimization.
    McSd,
}

impl Variant {
    fn parse(name: &str) -> Option<Variant> {
        Some(match name {
            "base" => Variant::Base,
            "handopt" => Variant::HandOpt,
            "ac" => Variant::Ac,
            "mc" => Variant::Mc,
            "ac-sd" => Variant::AcSd,
            "mc-sd" => Variant::McSd,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Variant::Base => "base",
            Variant::HandOpt => "handopt",
            Variant::Ac => "ac",
            Variant::Mc => "mc",
            Variant::AcSd => "ac-sd",
            Variant::McSd => "mc-sd",
        }
    }

    /// The prefetch of a LAPPS variant, `None` for Base and HandOpt.
    pub fn prefetch(self) -> Option<Prefetch> {
        match self {
            Variant::Base | Variant::HandOpt => None,
            Variant::Ac => Some(Prefetch::AUTOMATIC),
            Variant::Mc => Some(Prefetch::MANUAL),
            Variant::AcSd => Some(Prefetch::AUTOMATIC.with_static_domain()),
            Variant::McSd => Some(Prefetch::MANUAL.with_static_domain()),
        }
    }

    /// Whether the program must update the prefetched data itself (manual consistency).
    pub fn manual(self) -> bool {
        self.prefetch().is_some_and(|p| !p.consistent)
    }
}

/// What a run was asked to do.
pub struct Params {
    /// The variant.
    pub variant: Variant,
    /// The problem size (the benchmark says what it counts).
    pub size: usize,
    /// Repetitions of the kernel.
    pub iterations: usize,
}

/// What the timed part of a run measured on this rank.
pub struct Measured {
    /// Seconds of the timed part (prefetch requests, updates and the kernel).
    pub seconds: f64,
    /// The process's memory high-water mark after it, in KiB.
    pub hwm_kib: u64,
}

/// What a run measured (the seconds and check of rank 0 are reported).
pub struct Outcome {
    /// The timed part.
    pub measured: Measured,
    /// Whether the result matched the serial computation (checked on rank 0).
    pub passed: bool,
}

/// A failed step of a benchmark.
pub fn fail(reason: String) -> Error {
    Error::InvalidArgument {
        call: "darray benchmark",
        reason,
    }
}

/// Runs `body` between two barriers; returns its value, the seconds between them and the
/// memory high-water mark after it.
pub fn timed<R>(ctx: &Darrays, body: impl FnOnce() -> Result<R>) -> Result<(R, Measured)> {
    ctx.barrier()?;
    let start = Instant::now();
    let value = body()?;
    ctx.barrier()?;
    let seconds = start.elapsed().as_secs_f64();
    Ok((
        value,
        Measured {
            seconds,
            hwm_kib: high_water_kib(),
        },
    ))
}

/// Whether `got` matches `want` within a relative 1e-9 (both from the same operations in
/// possibly another order).
pub fn close(got: &[f64], want: &[f64]) -> bool {
    got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .all(|(g, w)| (g - w).abs() <= 1e-9 * w.abs().max(1.0))
}

/// The benchmark's `main`: parses the arguments, runs `kernel`, prints the line.
pub fn main_of(
    name: &str,
    default_size: usize,
    default_iterations: usize,
    kernel: fn(&Darrays, &Params) -> Result<Outcome>,
) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let params = match parse(&args, default_size, default_iterations) {
        Some(params) => params,
        None => {
            eprintln!(
                "usage: {name} base|handopt|ac|mc|ac-sd|mc-sd [SIZE (default {default_size}) \
                 [ITERATIONS (default {default_iterations})]]"
            );
            std::process::exit(2);
        }
    };
    let ctx = match Darrays::init() {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("{name}: {e}");
            std::process::exit(1);
        }
    };
    let passed = match kernel(&ctx, &params).and_then(|o| report(&ctx, name, &params, o)) {
        Ok(passed) => passed,
        Err(e) => ctx.runtime().abort(&format!("{name}: {e}")),
    };
    if let Err(e) = ctx.finalize() {
        eprintln!("{name}: {e}");
        std::process::exit(1);
    }
    if !passed {
        std::process::exit(1);
    }
}

fn parse(args: &[String], size: usize, iterations: usize) -> Option<Params> {
    let variant = Variant::parse(args.first()?)?;
    let number = |k: usize, default: usize| match args.get(k) {
        None => Some(default),
        Some(text) => text.parse().ok().filter(|&n| n > 0),
    };
    Some(Params {
        variant,
        size: number(1, size)?,
        iterations: number(2, iterations)?,
    })
}

/// Prints the run's line on rank 0 (collective: gathers the ranks' high-water marks);
/// returns whether the check passed.
fn report(ctx: &Darrays, name: &str, params: &Params, outcome: Outcome) -> Result<bool> {
    let world: &World = ctx.runtime();
    let mut marks = vec![0u64; ctx.procs() as usize];
    world.allgather_u64(outcome.measured.hwm_kib, &mut marks)?;
    if ctx.rank() == 0 {
        println!(
            "darray-bench {name} variant={} ranks={} size={} iterations={} seconds={:.6} \
             hwm_kib={} prefetch_peak_kib={} check={}",
            params.variant.name(),
            ctx.procs(),
            params.size,
            params.iterations,
            outcome.measured.seconds,
            marks.iter().max().copied().unwrap_or(0),
            ctx.prefetch_peak_bytes().div_ceil(1024),
            if outcome.passed { "passed" } else { "FAILED" }
        );
    }
    Ok(outcome.passed || ctx.rank() != 0)
}

/// This process's memory high-water mark (VmHWM) in KiB, 0 where the system has none.
fn high_water_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// The HandOpt variant's copies: for each other rank, the part of `domains` it owns, read
/// with one strided get per part whenever the program refreshes them. The copies' memory
/// is allocated at the first refresh (the other variants hold none).
pub struct HandCopies<const D: usize> {
    copies: Vec<(Domain<D>, Vec<f64>)>,
    /// The copy that served the last read (tried first).
    last: Cell<usize>,
}

impl<const D: usize> HandCopies<D> {
    /// The copies of what `array`'s other ranks own of `domains` (not read yet).
    pub fn new(array: &DistArray<'_, f64, D>, domains: &[Domain<D>]) -> HandCopies<D> {
        let dist = array.distribution();
        let mut copies: Vec<(Domain<D>, Vec<f64>)> = Vec::new();
        for source in (0..dist.grid().size()).filter(|&r| r != array.rank()) {
            let block = dist.block_of(source);
            for domain in domains {
                let part = domain.intersect(&array.domain()).intersect(&block);
                if !part.is_empty() && !copies.iter().any(|(d, _)| *d == part) {
                    copies.push((part, Vec::new()));
                }
            }
        }
        HandCopies {
            copies,
            last: Cell::new(0),
        }
    }

    /// Reads every copy again from `array`.
    pub fn refresh(&mut self, array: &DistArray<'_, f64, D>) -> Result<()> {
        for (domain, copy) in &mut self.copies {
            copy.resize(domain.len(), 0.0);
            array.read_slice_into(*domain, copy)?;
        }
        Ok(())
    }

    /// Element `index` of `array`: from a copy when one holds it, else from the array
    /// (local, or an error outside the array).
    #[inline(always)]
    pub fn read(&self, array: &DistArray<'_, f64, D>, index: [usize; D]) -> Result<f64> {
        if let Some((d, copy)) = self.copies.get(self.last.get()) {
            if d.contains(index) {
                return Ok(copy[d.linear(index)]);
            }
        }
        if array.local_domain().contains(index) {
            return array.get(index);
        }
        let position = self
            .copies
            .iter()
            .position(|(d, _)| d.contains(index))
            .ok_or_else(|| fail(format!("{index:?} is neither local nor copied")))?;
        self.last.set(position);
        let (d, copy) = &self.copies[position];
        Ok(copy[d.linear(index)])
    }
}
