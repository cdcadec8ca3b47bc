//! 2-D heat diffusion on a grid split by columns among the images, with the halo columns
//! exchanged as coarray sections (a strided column of the neighbour's array), checked
//! against a serial run of the same grid on every image: the values must be identical.
//!
//! ```sh
//! gaspar run -n 4 target/debug/examples/coarray_heat
//! ```

use gaspar::coarray::{CoError, CoResult, Coarray, Images, Slice};

/// Rows of the grid (the first and last are held at 0).
const ROWS: usize = 32;
/// Columns of the grid, split evenly among the images (1 to 4 images, or 6, 8, ...).
const COLS: usize = 48;
/// Temperature of the (fixed) boundary left of column 0; the right one is 0.
const HOT_EDGE: f64 = 100.0;
const ALPHA: f64 = 0.2;
const STEPS: usize = 200;

fn main() {
    let result = Images::init().and_then(|mut images| {
        heat(&mut images)?;
        images.finalize()
    });
    if let Err(e) = result {
        eprintln!("coarray_heat: {e} (stat {})", e.stat());
        std::process::exit(1);
    }
}

/// One explicit step on `grid` (`ROWS` x `width`, row-major) whose left and right
/// neighbouring columns are `left` and `right`.
fn step(grid: &[f64], width: usize, left: &[f64], right: &[f64]) -> Vec<f64> {
    let mut next = grid.to_vec();
    for y in 1..ROWS - 1 {
        for x in 0..width {
            let at = |yy: usize| grid[yy * width + x];
            let west = if x == 0 {
                left[y]
            } else {
                grid[y * width + x - 1]
            };
            let east = if x + 1 == width {
                right[y]
            } else {
                grid[y * width + x + 1]
            };
            let here = at(y);
            next[y * width + x] = here + ALPHA * (at(y - 1) + at(y + 1) + west + east - 4.0 * here);
        }
    }
    next
}

/// The initial grid: a hot square in the middle of the whole grid.
fn initial(x: usize, y: usize) -> f64 {
    let hot = (ROWS / 3..2 * ROWS / 3).contains(&y) && (COLS / 3..2 * COLS / 3).contains(&x);
    if hot {
        50.0
    } else {
        0.0
    }
}

fn heat(images: &mut Images) -> CoResult<()> {
    let (me, n) = (images.this_image(), images.num_images());
    if COLS % n as usize != 0 {
        return Err(CoError::invalid(
            "coarray_heat",
            format!("{COLS} columns do not split among {n} images"),
        ));
    }
    let width = COLS / n as usize;
    let first = (me as usize - 1) * width;
    // real(8) :: u(ROWS, width)[*], row-major here.
    let u = Coarray::<f64, 2>::new(images, [ROWS, width])?;
    let mut mine: Vec<f64> = (0..ROWS * width)
        .map(|k| initial(first + k % width, k / width))
        .collect();
    u.set_local(images, &mine)?;
    images.sync_all()?;
    let neighbours: Vec<u32> = [me - 1, me + 1]
        .into_iter()
        .filter(|&i| i >= 1 && i <= n)
        .collect();
    for _ in 0..STEPS {
        // Halo columns: the neighbours' boundary columns, strided sections u(:, k)[image].
        let left = if me > 1 {
            u.on(me - 1)
                .get(images, [Slice::all(), Slice::at(width - 1)])?
        } else {
            vec![HOT_EDGE; ROWS]
        };
        let right = if me < n {
            u.on(me + 1).get(images, [Slice::all(), Slice::at(0)])?
        } else {
            vec![0.0; ROWS]
        };
        mine = step(&mine, width, &left, &right);
        // Nobody reads the old values any more; then everybody's new values are in place.
        images.sync_images(Some(&neighbours))?;
        u.set_local(images, &mine)?;
        images.sync_images(Some(&neighbours))?;
    }
    // The same run on one image, serially.
    let mut serial: Vec<f64> = (0..ROWS * COLS)
        .map(|k| initial(k % COLS, k / COLS))
        .collect();
    for _ in 0..STEPS {
        serial = step(&serial, COLS, &[HOT_EDGE; ROWS], &[0.0; ROWS]);
    }
    let differing = (0..ROWS * width)
        .filter(|&k| mine[k].to_bits() != serial[(k / width) * COLS + first + k % width].to_bits())
        .count();
    if differing != 0 {
        return Err(CoError::invalid(
            "coarray_heat",
            format!("{differing} values differ from the serial run"),
        ));
    }
    // Heat in the whole grid, by co_sum, against the serial total.
    let mut total = [mine.iter().sum::<f64>()];
    images.co_sum(&mut total, None)?;
    let serial_total: f64 = serial.iter().sum();
    if (total[0] - serial_total).abs() > 1e-9 * serial_total.abs().max(1.0) {
        return Err(CoError::invalid(
            "coarray_heat",
            format!("total {} but serially {serial_total}", total[0]),
        ));
    }
    println!(
        "image {me}: coarray_heat ok: {STEPS} steps on {ROWS}x{COLS}, equal to the serial run, total heat {:.6}",
        total[0]
    );
    images.sync_all()?;
    u.free(images)
}
