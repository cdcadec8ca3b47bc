//! A work queue guarded by a lock: the next task number lives on image 1, and every image
//! takes tasks under `lock`/`unlock` until none are left. Each task is done exactly once,
//! which co_sum checks.
//!
//! ```sh
//! gaspar run -n 4 target/debug/examples/coarray_queue
//! ```

use gaspar::coarray::{CoError, CoResult, Coarray, Images};

const TASKS: i64 = 300;

fn main() {
    let result = Images::init().and_then(|mut images| {
        work(&mut images)?;
        images.finalize()
    });
    if let Err(e) = result {
        eprintln!("coarray_queue: {e} (stat {})", e.stat());
        std::process::exit(1);
    }
}

fn work(images: &mut Images) -> CoResult<()> {
    let me = images.this_image();
    let next = Coarray::<i64, 1>::new(images, [1])?;
    let lock = images.allocate_locks(1)?;
    let (mut done, mut results) = (0i64, 0i64);
    loop {
        images.lock(&lock, 0, 1, false)?;
        let task = next.on(1).at(images, [0])?;
        if task < TASKS {
            next.on(1).set(images, [0], task + 1)?;
        }
        // unlock completes the put before the next image takes the lock.
        images.unlock(&lock, 0, 1)?;
        if task >= TASKS {
            break;
        }
        done += 1;
        results += task * task;
    }
    let mut totals = [done, results];
    images.co_sum(&mut totals, None)?;
    let expected: i64 = (0..TASKS).map(|t| t * t).sum();
    if totals != [TASKS, expected] {
        return Err(CoError::invalid(
            "coarray_queue",
            format!("{totals:?} instead of [{TASKS}, {expected}]"),
        ));
    }
    println!("image {me}: did {done} of {TASKS} tasks ok");
    images.sync_all()?;
    images.deallocate(lock)?;
    next.free(images)
}
