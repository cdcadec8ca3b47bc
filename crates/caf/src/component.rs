//! Memory of allocatable components of derived-type coarrays. Each image allocates its
//! components alone (`allocate(b%vals(n))` is not collective), so they cannot come from the
//! engine's collective `allocate`. They come from this image's part of one symmetric arena,
//! allocated once when the engine starts: other images reach a component through the arena
//! token at the component's offset, which they compute from the address the owner stored in
//! its descriptor minus the owner's arena base (the first word of every image's part).
//! The second word of a part says whether the owner ever allocated a component whose
//! elements are not of an intrinsic type (and so may hold pointers): while it has not, the
//! part holds no pointer an accessor could follow ([`ComponentHeap::pointer_free`]).

use std::collections::{BTreeMap, BTreeSet};

use std::sync::atomic::{AtomicU64, Ordering};

use gaspar::coarray::{Coarrays, Elem, ElemType, Image, TeamId, Token};

use crate::error::CafError;
use crate::section::packed;

/// Bytes of each image's part of the arena.
pub(crate) const ARENA_BYTES: usize = 4 << 20;
/// Bytes at the start of each part: the owner's base address, then its flags.
const HEADER: usize = 16;
/// Where the flags word lies in a part.
const FLAGS: usize = 8;
/// Flag: a component whose elements are not of an intrinsic type was allocated here.
const MAY_HOLD_POINTERS: u64 = 1;
/// Alignment of every component.
const ALIGN: usize = 16;

/// This image's component allocator and what it knows of the other images' arenas.
pub(crate) struct ComponentHeap {
    /// The arena (symmetric, `ARENA_BYTES` per image).
    pub(crate) token: Token,
    /// This image's address of its part.
    base: usize,
    /// Which bytes of this image's part are in use.
    blocks: Blocks,
    /// Other images' base addresses, read once each (by image number in the current
    /// team: forgotten when the current team changes).
    remote_bases: BTreeMap<Image, usize>,
    /// Addresses of the live component tokens (`caf_token_t` values): only these are
    /// dereferenced when gfortran hands back a component's token slot.
    tokens: BTreeSet<usize>,
    /// This image's coarray memory holding data (start -> bytes), the arena included: a
    /// token slot inside it belongs to a component.
    data: BTreeMap<usize, usize>,
}

/// A first-fit allocator of byte ranges, merging neighbours when they are freed.
struct Blocks {
    /// Free ranges: offset -> bytes.
    free: BTreeMap<usize, usize>,
    /// Ranges in use: offset -> bytes.
    live: BTreeMap<usize, usize>,
}

impl Blocks {
    /// `len` free bytes from `start`.
    fn new(start: usize, len: usize) -> Blocks {
        Blocks {
            free: BTreeMap::from([(start, len)]),
            live: BTreeMap::new(),
        }
    }

    /// Takes `bytes` (rounded up to `ALIGN`, at least one unit): the offset and the
    /// length taken.
    fn take(&mut self, bytes: usize) -> Result<(usize, usize), CafError> {
        let need = bytes.max(1).div_ceil(ALIGN) * ALIGN;
        let (&at, &len) = self
            .free
            .iter()
            .find(|(_, &len)| len >= need)
            .ok_or_else(|| {
                CafError::Argument(format!(
                    "allocatable components exceed the {} MiB component arena of this image",
                    ARENA_BYTES >> 20
                ))
            })?;
        self.free.remove(&at);
        if len > need {
            self.free.insert(at + need, len - need);
        }
        self.live.insert(at, need);
        Ok((at, need))
    }

    /// Gives back the range taken at `offset`.
    fn give(&mut self, offset: usize) -> Result<(), CafError> {
        let mut len = self.live.remove(&offset).ok_or_else(|| {
            CafError::Argument(format!("no allocatable component at arena offset {offset}"))
        })?;
        let mut at = offset;
        if let Some((&next, &next_len)) = self.free.range(at + len..).next() {
            if next == at + len {
                self.free.remove(&next);
                len += next_len;
            }
        }
        if let Some((&prev, &prev_len)) = self.free.range(..at).next_back() {
            if prev + prev_len == at {
                self.free.remove(&prev);
                at = prev;
                len += prev_len;
            }
        }
        self.free.insert(at, len);
        Ok(())
    }
}

/// The header word as the engine moves it: one 8-byte integer.
const WORD: Elem = Elem {
    ty: ElemType::Integer,
    kind: 8,
};

impl ComponentHeap {
    /// Collective: allocates the arena, publishes this image's base address in its
    /// header, and synchronizes so that every header is written before anyone reads one.
    pub(crate) fn create(engine: &mut Coarrays) -> Result<ComponentHeap, CafError> {
        let token = engine.allocate(ARENA_BYTES)?;
        let base = engine.local_addr(&token)?;
        let me = engine.this_image();
        let word = packed(8, 1);
        engine.put(
            &token,
            0,
            me,
            &word.section(),
            WORD,
            &(base as u64).to_le_bytes(),
            &word.section(),
            WORD,
        )?;
        engine.sync_all()?;
        Ok(ComponentHeap {
            token,
            base,
            blocks: Blocks::new(HEADER, ARENA_BYTES - HEADER),
            remote_bases: BTreeMap::new(),
            tokens: BTreeSet::new(),
            data: BTreeMap::from([(base, ARENA_BYTES)]),
        })
    }

    /// Allocates `bytes` (zero-filled) in this image's part for elements of an intrinsic
    /// type or not; returns the offset.
    pub(crate) fn allocate(&mut self, bytes: usize, intrinsic: bool) -> Result<usize, CafError> {
        let (at, need) = self.blocks.take(bytes)?;
        // SAFETY: `at..at + need` lies in this image's part of the arena (it was free),
        // memory this process owns and nothing else references now.
        unsafe { std::ptr::write_bytes((self.base + at) as *mut u8, 0, need) };
        if !intrinsic {
            // SAFETY: the flags word of this image's part, 8-aligned (the part is), read
            // by other images with atomics too.
            unsafe { flags_word(self.base) }.fetch_or(MAY_HOLD_POINTERS, Ordering::Release);
        }
        Ok(at)
    }

    /// Where `image`'s part of the arena lies in this process, when it is mapped at the
    /// address its owner uses and holds no pointer (no component of a non-intrinsic type
    /// was ever allocated in it): what an accessor may reach there is that image's
    /// intrinsic data.
    pub(crate) fn pointer_free(
        &self,
        engine: &Coarrays,
        image: Image,
        team: TeamId,
    ) -> Option<std::ops::Range<usize>> {
        let part = engine.part_in(&self.token, image, team).ok()?;
        let base = part.mapped.filter(|_| part.at_home)?;
        // SAFETY: the flags word of a mapped part of the arena (see `allocate`).
        let flags = unsafe { flags_word(base) }.load(Ordering::Acquire);
        (flags & MAY_HOLD_POINTERS == 0).then_some(base + HEADER..base + ARENA_BYTES)
    }

    /// Frees the component at `offset`.
    pub(crate) fn free(&mut self, offset: usize) -> Result<(), CafError> {
        self.blocks.give(offset)
    }

    /// Forgets the other images' base addresses: image numbers now name other images
    /// (CHANGE TEAM, END TEAM).
    pub(crate) fn forget_remote_bases(&mut self) {
        self.remote_bases.clear();
    }

    /// Records a component token (registered with ALLOC_REGISTER_ONLY).
    pub(crate) fn add_token(&mut self, token: usize) {
        self.tokens.insert(token);
    }

    /// Forgets a component token (deregistered).
    pub(crate) fn remove_token(&mut self, token: usize) {
        self.tokens.remove(&token);
    }

    /// True when `token` is a live component token.
    pub(crate) fn has_token(&self, token: usize) -> bool {
        self.tokens.contains(&token)
    }

    /// Records this image's part of a data coarray (`bytes` at `start`).
    pub(crate) fn add_data(&mut self, start: usize, bytes: usize) {
        self.data.insert(start, bytes);
    }

    /// Forgets a data coarray's part.
    pub(crate) fn remove_data(&mut self, start: usize) {
        self.data.remove(&start);
    }

    /// True when `addr` lies in coarray memory of this image: a token slot there is a
    /// component's (an allocatable coarray's descriptor is never in coarray memory).
    pub(crate) fn in_coarray_memory(&self, addr: usize) -> bool {
        self.data
            .range(..=addr)
            .next_back()
            .is_some_and(|(&start, &len)| addr < start + len)
    }

    /// This image's address of the component at `offset`.
    pub(crate) fn local_addr(&self, offset: usize) -> usize {
        self.base + offset
    }

    /// The arena offset of `addr`, an address in `image`'s process of memory in its part
    /// of the arena (a component's data pointer read from its descriptor).
    pub(crate) fn offset_of(
        &mut self,
        engine: &mut Coarrays,
        image: Image,
        addr: usize,
    ) -> Result<usize, CafError> {
        let base = match self.remote_bases.get(&image) {
            Some(&b) => b,
            None => {
                let mut word = [0u8; 8];
                let one = packed(8, 1);
                engine.get(
                    &self.token,
                    0,
                    image,
                    &one.section(),
                    WORD,
                    &mut word,
                    &one.section(),
                    WORD,
                )?;
                let b = u64::from_le_bytes(word) as usize;
                self.remote_bases.insert(image, b);
                b
            }
        };
        addr.checked_sub(base)
            .filter(|&o| (HEADER..ARENA_BYTES).contains(&o))
            .ok_or_else(|| {
                CafError::Descriptor(format!(
                    "component address {addr:#x} is outside image {image}'s component arena"
                ))
            })
    }
}

/// The flags word of the part of the arena at `base`.
///
/// # Safety
/// `base` is the address of a part of the arena mapped in this process (8-aligned).
unsafe fn flags_word<'a>(base: usize) -> &'a AtomicU64 {
    // SAFETY: the caller's contract; an AtomicU64 may alias memory other processes
    // access with atomics.
    unsafe { &*((base + FLAGS) as *const AtomicU64) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_aligned_and_merge_when_freed() {
        let mut b = Blocks::new(16, 160);
        let (a, la) = b.take(1).unwrap();
        let (c, lc) = b.take(20).unwrap();
        let (d, _) = b.take(16).unwrap();
        assert_eq!((a, la, c, lc, d), (16, 16, 32, 32, 64));
        b.give(c).unwrap();
        // The hole of 32 bytes is reused first-fit.
        assert_eq!(b.take(32).unwrap(), (32, 32));
        b.give(32).unwrap();
        b.give(a).unwrap();
        b.give(d).unwrap();
        assert_eq!(b.free, BTreeMap::from([(16, 160)]));
        assert!(b.give(d).is_err());
    }

    #[test]
    fn blocks_report_exhaustion() {
        let mut b = Blocks::new(0, 64);
        assert!(b.take(64).is_ok());
        assert!(b.take(1).is_err());
    }
}
