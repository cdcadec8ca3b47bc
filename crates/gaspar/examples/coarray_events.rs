//! Producer/consumer with events: every image but the first produces ITEMS values into
//! its own slots of a small ring on image 1 and posts an event; image 1 waits for each
//! producer's events, consumes the values and posts back that the slot is free again.
//!
//! ```sh
//! gaspar run -n 4 target/debug/examples/coarray_events
//! ```

use gaspar::coarray::{CoError, CoResult, Coarray, Images, Slice};

const ITEMS: i64 = 200;
/// Slots per producer in the ring on image 1.
const DEPTH: usize = 4;

fn main() {
    let result = Images::init().and_then(|mut images| {
        produce_and_consume(&mut images)?;
        images.finalize()
    });
    if let Err(e) = result {
        eprintln!("coarray_events: {e} (stat {})", e.stat());
        std::process::exit(1);
    }
}

fn produce_and_consume(images: &mut Images) -> CoResult<()> {
    let (me, n) = (images.this_image(), images.num_images());
    // integer(8) :: ring(n, DEPTH)[*]; only image 1's is used.
    let ring = Coarray::<i64, 2>::new(images, [n as usize, DEPTH])?;
    // Event `p - 1` on image 1: producer p filled a slot. Event 0 on a producer: a slot of
    // its ring is free again.
    let events = images.allocate_events(n as usize)?;
    if me == 1 {
        let mut total = 0i64;
        for k in 0..ITEMS {
            for producer in 2..=n {
                images.event_wait(&events, producer as usize - 1, 1)?;
                let slot = k as usize % DEPTH;
                total += ring.on(1).at(images, [producer as usize - 1, slot])?;
                images.event_post(&events, 0, producer)?;
            }
        }
        let expected: i64 = (2..=i64::from(n))
            .map(|p| (0..ITEMS).map(|k| p * 1000 + k).sum::<i64>())
            .sum();
        if total != expected {
            return Err(CoError::invalid(
                "coarray_events",
                format!("consumed {total}, expected {expected}"),
            ));
        }
        println!(
            "image 1: consumed {} items, total {total} ok",
            ITEMS * i64::from(n - 1)
        );
    } else {
        for k in 0..ITEMS {
            if k as usize >= DEPTH {
                // Wait until the consumer freed the slot this item goes into.
                images.event_wait(&events, 0, 1)?;
            }
            let slot = k as usize % DEPTH;
            ring.on(1).put(
                images,
                [Slice::at(me as usize - 1), Slice::at(slot)],
                &[i64::from(me) * 1000 + k],
            )?;
            // event post completes the put first: the consumer sees the value.
            images.event_post(&events, me as usize - 1, 1)?;
        }
        // The consumer's last DEPTH posts.
        images.event_wait(&events, 0, DEPTH as u64)?;
        println!("image {me}: produced {ITEMS} items ok");
    }
    images.sync_all()?;
    images.deallocate(events)?;
    ring.free(images)
}
