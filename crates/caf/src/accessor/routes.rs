//! Where an accessor ran before, per coarray token and image: the fast path. The first
//! access to image `i`'s part of a coarray is located by the engine (under its lock); when
//! the accessor can run in this process (the part is this image's, or mapped here and of
//! an intrinsic type), the address it ran against is kept in the token, and later accesses
//! to that image run the accessor on it directly: no engine lock, no lookup.
//!
//! An address stays right as long as the token lives (freeing a coarray frees its token and
//! its routes) and image numbers keep their meaning: CHANGE TEAM and END TEAM renumber the
//! images ([`teams_changed`]), after which every route is found again.

use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Which numbering of the images routes were found under; bumped by CHANGE TEAM and END
/// TEAM.
static TEAM_EPOCH: AtomicU64 = AtomicU64::new(1);

/// Forgets every route: the current team changed, so image numbers name other images (and
/// coarrays of an ended team are gone).
pub(crate) fn teams_changed() {
    TEAM_EPOCH.fetch_add(1, Ordering::AcqRel);
}

/// The current [`TEAM_EPOCH`]: routes found under another are stale.
#[inline]
pub(crate) fn epoch() -> u64 {
    TEAM_EPOCH.load(Ordering::Acquire)
}

/// The first word of every coarray token ([`crate::token::CafToken`]).
pub(crate) const COARRAY_TOKEN: u64 = u64::from_be_bytes(*b"gaspCAF\0");
/// The first word of every accessor's callback token ([`super::owner::CallbackToken`]).
pub(crate) const CALLBACK_TOKEN: u64 = u64::from_be_bytes(*b"gaspCBK\0");

/// The first word of the token behind gfortran's pointer: [`COARRAY_TOKEN`] or
/// [`CALLBACK_TOKEN`].
///
/// # Safety
/// `token` is non-null and points to a coarray token or a callback token (gfortran passes
/// no other), both `repr(C)` with this word first.
#[inline]
pub(crate) unsafe fn kind(token: *const std::ffi::c_void) -> u64 {
    // SAFETY: this function's contract.
    unsafe { *token.cast::<u64>() }
}

/// One token's routes: per image of the current team, the address in this process an
/// accessor for that image's part runs against (0: not known, or not runnable here).
#[derive(Debug)]
#[repr(C)]
pub(crate) struct Routes {
    /// Always [`COARRAY_TOKEN`]: the first word of a coarray token.
    kind: u64,
    /// The [`TEAM_EPOCH`] the addresses were found under (0: none yet).
    epoch: AtomicU64,
    /// Indexed by image - 1; as many as the job has images.
    bases: OnceLock<Box<[AtomicUsize]>>,
}

impl Default for Routes {
    fn default() -> Routes {
        Routes {
            kind: COARRAY_TOKEN,
            epoch: AtomicU64::new(0),
            bases: OnceLock::new(),
        }
    }
}

impl Routes {
    /// The address to run an accessor for `image`'s part against, when known.
    #[inline]
    pub(crate) fn base(&self, image: c_int) -> Option<usize> {
        if self.epoch.load(Ordering::Acquire) != TEAM_EPOCH.load(Ordering::Acquire) {
            return None;
        }
        let slot = usize::try_from(image).ok()?.checked_sub(1)?;
        match self.bases.get()?.get(slot)?.load(Ordering::Relaxed) {
            0 => None,
            base => Some(base),
        }
    }

    /// Keeps `base` as the address for `image`'s part, `images` being the job's size.
    pub(crate) fn record(&self, image: c_int, images: usize, base: usize) {
        let bases = self
            .bases
            .get_or_init(|| (0..images).map(|_| AtomicUsize::new(0)).collect());
        let now = TEAM_EPOCH.load(Ordering::Acquire);
        if self.epoch.load(Ordering::Acquire) != now {
            for slot in bases.iter() {
                slot.store(0, Ordering::Relaxed);
            }
            self.epoch.store(now, Ordering::Release);
        }
        let slot = usize::try_from(image)
            .ok()
            .and_then(|i| i.checked_sub(1))
            .and_then(|i| bases.get(i));
        if let Some(slot) = slot {
            slot.store(base, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_is_kept_per_image_and_forgotten_when_the_team_changes() {
        let routes = Routes::default();
        assert_eq!(routes.base(2), None);
        routes.record(2, 4, 0x1000);
        routes.record(4, 4, 0x2000);
        routes.record(5, 4, 0x3000);
        assert_eq!(routes.base(2), Some(0x1000));
        assert_eq!(routes.base(4), Some(0x2000));
        assert_eq!(routes.base(1), None);
        assert_eq!(routes.base(5), None);
        assert_eq!(routes.base(0), None);
        teams_changed();
        assert_eq!(routes.base(2), None);
        routes.record(1, 4, 0x4000);
        assert_eq!(routes.base(1), Some(0x4000));
        assert_eq!(routes.base(2), None);
    }
}
