//! A 1-D diffusion stencil on a line of cells split in blocks over the ranks: each step,
//! every rank sends its edge cells into its neighbours' halo cells with put-with-signal
//! and waits for theirs, then updates its block. Every rank checks its block against the
//! same computation done serially on the whole line:
//! `gaspar run -n 4 target/debug/examples/halo [CELLS_PER_RANK] [STEPS]`.

use gaspar::{Compare, SignalOp};

/// Fixed values just outside the line, at its left and right ends.
const LEFT_END: f64 = 1.0;
const RIGHT_END: f64 = 0.0;

/// Halo cells and signal words, by the side they come from.
const FROM_LEFT: usize = 0;
const FROM_RIGHT: usize = 1;

fn initial(cell: usize) -> f64 {
    ((cell * 7) % 13) as f64 / 13.0
}

/// One step of the stencil on `cells` with `left` and `right` outside them.
fn step(cells: &[f64], left: f64, right: f64, next: &mut [f64]) {
    let n = cells.len();
    for i in 0..n {
        let l = if i == 0 { left } else { cells[i - 1] };
        let r = if i + 1 == n { right } else { cells[i + 1] };
        next[i] = 0.25 * l + 0.5 * cells[i] + 0.25 * r;
    }
}

/// The whole line after `steps` steps, computed by one process.
fn serial(total: usize, steps: usize) -> Vec<f64> {
    let mut cells: Vec<f64> = (0..total).map(initial).collect();
    let mut next = vec![0.0; total];
    for _ in 0..steps {
        step(&cells, LEFT_END, RIGHT_END, &mut next);
        std::mem::swap(&mut cells, &mut next);
    }
    cells
}

fn main() -> gaspar::Result<()> {
    let mut args = std::env::args().skip(1);
    let per_rank: usize = args
        .next()
        .map(|a| a.parse().expect("CELLS_PER_RANK must be a number"))
        .unwrap_or(1000);
    let steps: usize = args
        .next()
        .map(|a| a.parse().expect("STEPS must be a number"))
        .unwrap_or(100);
    gaspar::run_job(|rt| {
        let (me, n) = (rt.rank(), rt.procs());
        let first = me as usize * per_rank;
        let mut cells: Vec<f64> = (first..first + per_rank).map(initial).collect();
        let mut next = vec![0.0; per_rank];
        // Halo cells, two per side: step s writes slot s % 2, so a neighbour one step
        // ahead never overwrites a value this rank has yet to use.
        let halo = rt.alloc::<f64>(4)?;
        // How many halo values have arrived from each side.
        let arrived = rt.alloc::<u64>(2)?;
        let slot = |side: usize, s: usize| side * 2 + s % 2;
        for s in 0..steps {
            if me > 0 {
                halo.put_signal(
                    me - 1,
                    slot(FROM_RIGHT, s),
                    &cells[..1],
                    &arrived,
                    FROM_RIGHT,
                    SignalOp::Add(1),
                )?;
            }
            if me + 1 < n {
                halo.put_signal(
                    me + 1,
                    slot(FROM_LEFT, s),
                    &cells[per_rank - 1..],
                    &arrived,
                    FROM_LEFT,
                    SignalOp::Add(1),
                )?;
            }
            let left = if me > 0 {
                arrived.wait_until(FROM_LEFT, Compare::Ge, s as u64 + 1)?;
                halo.local().get(slot(FROM_LEFT, s))?
            } else {
                LEFT_END
            };
            let right = if me + 1 < n {
                arrived.wait_until(FROM_RIGHT, Compare::Ge, s as u64 + 1)?;
                halo.local().get(slot(FROM_RIGHT, s))?
            } else {
                RIGHT_END
            };
            step(&cells, left, right, &mut next);
            std::mem::swap(&mut cells, &mut next);
        }
        let expected = serial(per_rank * n as usize, steps);
        if cells[..] != expected[first..first + per_rank] {
            rt.abort(&format!(
                "rank {me}: the block differs from the serial computation"
            ));
        }
        halo.free()?;
        arrived.free()?;
        println!("rank {me}: halo of {n} x {per_rank} cells, {steps} steps ok");
        Ok(())
    })
}
