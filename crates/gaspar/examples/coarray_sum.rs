//! A distributed sum with `co_sum`: each image sums its block of 1..=N, the images
//! combine their sums, and every image checks the total (and image 1 a second total
//! delivered to it alone).
//!
//! ```sh
//! gaspar run -n 4 target/debug/examples/coarray_sum
//! ```

use gaspar::coarray::{CoError, CoResult, Images};

const N: u64 = 1_000_000;

fn main() {
    let result = Images::init().and_then(|mut images| {
        sum(&mut images)?;
        images.finalize()
    });
    if let Err(e) = result {
        eprintln!("coarray_sum: {e} (stat {})", e.stat());
        std::process::exit(1);
    }
}

fn sum(images: &mut Images) -> CoResult<()> {
    let (me, n) = (
        u64::from(images.this_image()),
        u64::from(images.num_images()),
    );
    let block = N.div_ceil(n);
    let (first, last) = ((me - 1) * block + 1, (me * block).min(N));
    let mine: i64 = (first..=last).map(|k| k as i64).sum();
    let expected = (N * (N + 1) / 2) as i64;
    let mut total = [mine];
    images.co_sum(&mut total, None)?;
    if total[0] != expected {
        return Err(CoError::invalid(
            "coarray_sum",
            format!("total {} instead of {expected}", total[0]),
        ));
    }
    let mut to_first = [mine as f64];
    images.co_sum(&mut to_first, Some(1))?;
    if me == 1 && to_first[0] != expected as f64 {
        return Err(CoError::invalid(
            "coarray_sum",
            format!("image 1 got {}", to_first[0]),
        ));
    }
    println!(
        "image {me}: sum of 1..={N} over {n} images = {} ok",
        total[0]
    );
    Ok(())
}
