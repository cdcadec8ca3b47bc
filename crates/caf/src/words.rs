//! Where the atomic and lock words of each image's part of a coarray are mapped in this
//! process: the fast path of the atomic subroutines, LOCK and UNLOCK. The first statement
//! on image `i`'s part goes through the engine, which also tells where the part is mapped;
//! later ones do the CPU's atomic on the mapped word directly, as GCC's caf_shmem does: no
//! engine lock, no lookup.
//!
//! Only where the transport's own atomics are the CPU's atomics on that same memory (the
//! shm transport: [`gaspar::world::World::transport_name`]): an MPI job's atomics are
//! MPI's, and a CPU atomic beside them would not be atomic with them. Routes are forgotten
//! when the current team changes, as the accessors' are ([`crate::accessor::routes`]).

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::accessor::routes;

/// Whether this process's transport does its atomics as CPU atomics on mapped memory.
static CPU_ATOMICS: AtomicBool = AtomicBool::new(false);

/// Says whether the transport's atomics are CPU atomics on mapped memory (at start).
pub(crate) fn set_cpu_atomics(yes: bool) {
    CPU_ATOMICS.store(yes, Ordering::Relaxed);
}

/// Whether the transport's atomics are CPU atomics on mapped memory (routes are kept).
#[inline]
pub(crate) fn cpu_atomics() -> bool {
    CPU_ATOMICS.load(Ordering::Relaxed)
}

/// Where one image's part is mapped.
#[derive(Debug, Default)]
struct Part {
    /// The part's address in this process (0: not known).
    base: AtomicUsize,
    /// The job rank that owns it (whose waiters an UNLOCK wakes).
    rank: AtomicU32,
}

/// A word of an image's part, mapped here.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MappedWord {
    /// The word's address in this process, aligned to its width.
    pub(crate) addr: usize,
    /// The job rank that owns it.
    pub(crate) rank: u32,
}

/// One token's word routes, per image of the current team (and one for image 0, which
/// gfortran passes for "this image").
#[derive(Debug, Default)]
pub(crate) struct WordRoutes {
    /// The team epoch the routes were found under (0: none yet).
    epoch: AtomicU64,
    /// Bytes from a part's mapped address to its end (the same for every image).
    len: AtomicUsize,
    /// Indexed by image - 1, then image 0 last.
    parts: OnceLock<Box<[Part]>>,
}

impl WordRoutes {
    /// The slot of gfortran's image number (0: this image).
    #[inline]
    fn slot(parts: &[Part], image: c_int) -> Option<&Part> {
        let own = parts.len().checked_sub(1)?;
        match usize::try_from(image).ok()? {
            0 => parts.get(own),
            i => parts[..own].get(i - 1),
        }
    }

    /// The `width`-byte word `offset` bytes into `image`'s part (0: this image), when the
    /// part is mapped here, the transport's atomics are CPU atomics, and the word lies in
    /// the part, aligned.
    #[inline]
    pub(crate) fn word(&self, image: c_int, offset: usize, width: usize) -> Option<MappedWord> {
        if !cpu_atomics()
            || self.epoch.load(Ordering::Acquire) != routes::epoch()
            || offset.checked_add(width)? > self.len.load(Ordering::Relaxed)
        {
            return None;
        }
        let part = Self::slot(self.parts.get()?, image)?;
        let base = part.base.load(Ordering::Relaxed);
        let addr = base.checked_add(offset)?;
        (base != 0 && addr % width == 0).then(|| MappedWord {
            addr,
            rank: part.rank.load(Ordering::Relaxed),
        })
    }

    /// Keeps `base` (owned by job rank `rank`, `len` bytes) as the mapped address of
    /// `image`'s part (0: this image), `images` being the job's size.
    pub(crate) fn record(&self, image: c_int, images: usize, base: usize, len: usize, rank: u32) {
        if !cpu_atomics() {
            return;
        }
        let parts = self
            .parts
            .get_or_init(|| (0..=images).map(|_| Part::default()).collect());
        let now = routes::epoch();
        if self.epoch.load(Ordering::Acquire) != now {
            for part in parts.iter() {
                part.base.store(0, Ordering::Relaxed);
            }
            self.epoch.store(now, Ordering::Release);
        }
        if let Some(part) = Self::slot(parts, image) {
            self.len.store(len, Ordering::Relaxed);
            part.rank.store(rank, Ordering::Relaxed);
            part.base.store(base, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_is_routed_inside_its_part_aligned_and_until_the_team_changes() {
        set_cpu_atomics(true);
        let words = WordRoutes::default();
        assert!(words.word(2, 0, 8).is_none());
        words.record(2, 4, 0x1000, 64, 1);
        words.record(0, 4, 0x3000, 64, 3);
        let w = words.word(2, 8, 8).expect("routed");
        assert_eq!((w.addr, w.rank), (0x1008, 1));
        assert_eq!(words.word(0, 60, 4).map(|w| w.addr), Some(0x303c));
        assert!(words.word(2, 60, 8).is_none(), "past the part");
        assert!(words.word(2, 4, 8).is_none(), "misaligned");
        assert!(words.word(1, 0, 8).is_none(), "not recorded");
        assert!(words.word(5, 0, 8).is_none(), "past the images");
        assert!(words.word(-1, 0, 8).is_none());
        routes::teams_changed();
        assert!(words.word(2, 0, 8).is_none());
        words.record(1, 4, 0x4000, 64, 0);
        assert!(words.word(1, 0, 8).is_some());
        assert!(words.word(2, 0, 8).is_none());
    }
}
