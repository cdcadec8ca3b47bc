//! Where each image's part of a coarray lives in this process: the fast paths' table. The
//! first statement on image `i`'s part goes through the engine (under its lock), which
//! locates the part; when the statement's fast path can use the part's address here, the
//! address is kept in the coarray's token with the job rank that owns the part and the
//! bytes from the address to the part's end, and later statements on that image use it
//! directly: no engine lock, no lookup.
//!
//! A token keeps one table per fast path, as each keeps routes under its own condition:
//! accessors ([`crate::accessor`]: the part is this image's, or mapped here and of an
//! intrinsic type) and the atomic and lock words ([`crate::words`]: the part is mapped
//! here and the transport's atomics are the CPU's).
//!
//! A route stays right as long as the token lives (freeing a coarray frees its token and
//! its routes) and image numbers keep their meaning: CHANGE TEAM and END TEAM renumber the
//! images ([`teams_changed`]), after which every route is found again. The accessor routes
//! of a derived-type coarray last one segment only ([`Routes::per_segment`]): whether its
//! accessors may run here depends on the pointers its parts hold, which an owner may change
//! between two image control statements of this image ([`segment_began`]) but not within
//! one segment of it (a conforming program orders them).

use std::ffi::c_int;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Which numbering of the images routes were found under; bumped by CHANGE TEAM and END
/// TEAM.
static TEAM_EPOCH: AtomicU64 = AtomicU64::new(1);

/// Forgets every route: the current team changed, so image numbers name other images (and
/// coarrays of an ended team are gone).
pub(crate) fn teams_changed() {
    TEAM_EPOCH.fetch_add(1, Ordering::AcqRel);
}

/// How many image control statements this image has completed; bumped by each.
static SEGMENT_EPOCH: AtomicU64 = AtomicU64::new(0);

/// Forgets the routes that last one segment: this image completed an image control
/// statement (SYNC ALL, SYNC IMAGES, SYNC MEMORY, LOCK, UNLOCK, EVENT POST, EVENT WAIT,
/// the team statements, ALLOCATE and DEALLOCATE of coarrays), so other images may have
/// changed what their parts point to.
///
/// Called by the thread that runs the image's statements only (inside the runtime's
/// `enter`), so a load and a store do what a locked add would, at the cost of a plain
/// store: one locked instruction less per LOCK, UNLOCK, SYNC ALL.
pub(crate) fn segment_began() {
    let next = SEGMENT_EPOCH.load(Ordering::Relaxed) + 1;
    SEGMENT_EPOCH.store(next, Ordering::Release);
}

/// The current epoch of routes that last as long as the team (`per_segment` false) or one
/// segment: routes found under another are stale. Both counters only grow, so their sum
/// moves whenever either does.
#[inline]
fn epoch(per_segment: bool) -> u64 {
    let team = TEAM_EPOCH.load(Ordering::Acquire);
    if per_segment {
        team + SEGMENT_EPOCH.load(Ordering::Acquire)
    } else {
        team
    }
}

/// Where one image's part lives in this process.
#[derive(Debug, Default)]
struct Part {
    /// The part's address in this process (0: not known).
    base: AtomicUsize,
    /// The job rank that owns it (whose waiters an UNLOCK wakes).
    rank: AtomicU32,
}

/// An image's part, found by the engine: what [`Routes::record`] keeps.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Route {
    /// The part's address in this process (not 0).
    pub(crate) base: usize,
    /// Bytes from `base` to the part's end.
    pub(crate) len: usize,
    /// The job rank that owns the part.
    pub(crate) rank: u32,
}

/// A word of an image's part, at its address in this process.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MappedWord {
    /// The word's address in this process, aligned to its width.
    pub(crate) addr: usize,
    /// The job rank that owns it.
    pub(crate) rank: u32,
}

/// One token's routes for one fast path, per image of the current team (and one for image
/// 0, which gfortran passes for "this image" to atomics, LOCK and UNLOCK).
#[derive(Debug, Default)]
pub(crate) struct Routes {
    /// The [`epoch`] the routes were found under (0: none yet).
    epoch: AtomicU64,
    /// Whether the routes last one segment of this image (else as long as the team).
    per_segment: bool,
    /// Bytes from a part's address to its end (the same for every image).
    len: AtomicUsize,
    /// Indexed by gfortran's image number (0: this image); as many as the job has images,
    /// plus one.
    parts: OnceLock<Box<[Part]>>,
}

impl Routes {
    /// Routes forgotten at every image control statement of this image.
    pub(crate) fn per_segment() -> Routes {
        Routes {
            per_segment: true,
            ..Routes::default()
        }
    }

    /// The slot of gfortran's image number (0: this image).
    #[inline]
    fn slot(parts: &[Part], image: c_int) -> Option<&Part> {
        // A negative number becomes one past any job (2^31 or more): one comparison.
        parts.get(image as u32 as usize)
    }

    /// The parts, when found under the current numbering of the images.
    #[inline]
    fn current(&self) -> Option<&[Part]> {
        if self.epoch.load(Ordering::Acquire) != epoch(self.per_segment) {
            return None;
        }
        self.parts.get().map(|parts| &parts[..])
    }

    /// The address of `image`'s part (0: this image), when known.
    #[inline]
    pub(crate) fn base(&self, image: c_int) -> Option<usize> {
        match Self::slot(self.current()?, image)?
            .base
            .load(Ordering::Relaxed)
        {
            0 => None,
            base => Some(base),
        }
    }

    /// The `width`-byte word `offset` bytes into `image`'s part (0: this image), when the
    /// part's address is known and the word lies in the part, aligned.
    #[inline]
    pub(crate) fn word(&self, image: c_int, offset: usize, width: usize) -> Option<MappedWord> {
        let parts = self.current()?;
        if offset.checked_add(width)? > self.len.load(Ordering::Relaxed) {
            return None;
        }
        let part = Self::slot(parts, image)?;
        let base = part.base.load(Ordering::Relaxed);
        let addr = base.checked_add(offset)?;
        (base != 0 && addr % width == 0).then(|| MappedWord {
            addr,
            rank: part.rank.load(Ordering::Relaxed),
        })
    }

    /// Keeps `route` for `image`'s part (0: this image), `images` being the job's size.
    pub(crate) fn record(&self, image: c_int, images: usize, route: Route) {
        let parts = self
            .parts
            .get_or_init(|| (0..=images).map(|_| Part::default()).collect());
        let now = epoch(self.per_segment);
        if self.epoch.load(Ordering::Acquire) != now {
            for part in parts.iter() {
                part.base.store(0, Ordering::Relaxed);
            }
            self.epoch.store(now, Ordering::Release);
        }
        if let Some(part) = Self::slot(parts, image) {
            self.len.store(route.len, Ordering::Relaxed);
            part.rank.store(route.rank, Ordering::Relaxed);
            part.base.store(route.base, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(base: usize, rank: u32) -> Route {
        Route {
            base,
            len: 64,
            rank,
        }
    }

    #[test]
    fn a_route_is_kept_per_image_and_forgotten_when_the_team_changes() {
        let routes = Routes::default();
        assert_eq!(routes.base(2), None);
        routes.record(2, 4, route(0x1000, 1));
        routes.record(4, 4, route(0x2000, 3));
        routes.record(5, 4, route(0x3000, 0));
        routes.record(0, 4, route(0x5000, 0));
        assert_eq!(routes.base(2), Some(0x1000));
        assert_eq!(routes.base(4), Some(0x2000));
        assert_eq!(routes.base(0), Some(0x5000));
        assert_eq!(routes.base(1), None);
        assert_eq!(routes.base(5), None, "past the images");
        assert_eq!(routes.base(-1), None);
        teams_changed();
        assert_eq!(routes.base(2), None);
        routes.record(1, 4, route(0x4000, 0));
        assert_eq!(routes.base(1), Some(0x4000));
        assert_eq!(routes.base(2), None);
    }

    #[test]
    fn routes_per_segment_are_forgotten_at_each_image_control_statement() {
        let team_long = Routes::default();
        let segment_long = Routes::per_segment();
        team_long.record(2, 4, route(0x1000, 1));
        segment_long.record(2, 4, route(0x2000, 1));
        assert_eq!(segment_long.base(2), Some(0x2000));
        segment_began();
        assert_eq!(segment_long.base(2), None);
        assert_eq!(team_long.base(2), Some(0x1000));
        segment_long.record(3, 4, route(0x3000, 2));
        assert_eq!(segment_long.base(3), Some(0x3000));
        assert_eq!(segment_long.base(2), None, "found in an earlier segment");
    }

    #[test]
    fn a_word_is_routed_inside_its_part_aligned_and_until_the_team_changes() {
        let words = Routes::default();
        assert!(words.word(2, 0, 8).is_none());
        words.record(2, 4, route(0x1000, 1));
        words.record(0, 4, route(0x3000, 3));
        let w = words.word(2, 8, 8).expect("routed");
        assert_eq!((w.addr, w.rank), (0x1008, 1));
        assert_eq!(
            words.word(0, 60, 4).map(|w| (w.addr, w.rank)),
            Some((0x303c, 3))
        );
        assert!(words.word(2, 60, 8).is_none(), "past the part");
        assert!(words.word(2, 4, 8).is_none(), "misaligned");
        assert!(words.word(1, 0, 8).is_none(), "not recorded");
        assert!(words.word(5, 0, 8).is_none(), "past the images");
        assert!(words.word(-1, 0, 8).is_none());
        teams_changed();
        assert!(words.word(2, 0, 8).is_none());
        words.record(1, 4, route(0x4000, 0));
        assert!(words.word(1, 0, 8).is_some());
        assert!(words.word(2, 0, 8).is_none());
    }
}
