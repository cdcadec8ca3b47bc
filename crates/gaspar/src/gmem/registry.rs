//! Registration of user memory (ACP's deferred bulk registration).
//!
//! `register` only records a region; adjacent or overlapping regions of the same color are
//! merged into one and share one key, whose reference count `unregister` decrements. The
//! region is published to other ranks (given a registration slot that global addresses
//! name) only when a global address is first asked for, by `publish`. Once published, a
//! region only grows upward, so that addresses already handed out stay valid.

use crate::addr::{COLORS, MAX_SEGMENT_LEN, REGISTRATION_SLOTS};
use crate::error::{Error, Result};

/// A registration key (ACP's `acp_atkey_t`): a slot and a generation, so that a key kept
/// after its region was unregistered is refused instead of naming a newer region.
///
/// ```
/// let rt = gaspar::init()?;
/// let acp = rt.acp();
/// let mut buffer = vec![0u8; 256];
/// // SAFETY: the buffer outlives the registration, and no reference into it is held while
/// // other ranks may write it.
/// let key: gaspar::Key = unsafe { acp.register(buffer.as_mut_ptr(), 256, 0)? };
/// acp.unregister(key)?;
/// assert!(acp.unregister(key).is_err()); // a stale key is refused
/// drop(buffer);
/// rt.finalize()?;
/// # Ok::<(), gaspar::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key(u64);

impl Key {
    fn new(slot: usize, generation: u64) -> Key {
        Key((generation << 8) | slot as u64)
    }

    fn slot(self) -> usize {
        (self.0 & 0xff) as usize
    }

    fn generation(self) -> u64 {
        self.0 >> 8
    }

    /// The raw value (for the C ABI).
    ///
    /// ```
    /// use gaspar::Key;
    /// let key = Key::from_bits(0x1234);
    /// assert_eq!(key.to_bits(), 0x1234);
    /// ```
    pub fn to_bits(self) -> u64 {
        self.0
    }

    /// A key from raw bits; checked when used.
    ///
    /// ```
    /// let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let mut buffer = vec![0u8; 64];
    /// // SAFETY: the buffer outlives the registration and no reference into it is held.
    /// let key = unsafe { acp.register(buffer.as_mut_ptr(), 64, 0)? };
    /// // Through the C ABI as a plain integer and back.
    /// let again = gaspar::Key::from_bits(key.to_bits());
    /// acp.unregister(again)?;
    /// drop(buffer);
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn from_bits(bits: u64) -> Key {
        Key(bits)
    }
}

#[derive(Debug, Clone)]
struct Region {
    base: usize,
    len: u64,
    color: u32,
    refs: u32,
    published: bool,
}

impl Region {
    fn end(&self) -> usize {
        self.base + self.len as usize
    }
}

/// What the caller must tell the transport after a registry change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Publication {
    /// Nothing changed for other ranks.
    None,
    /// Publish (or re-publish, grown) slot `slot`.
    Publish {
        /// Registration slot.
        slot: u8,
        /// Region start in this process.
        base: usize,
        /// Region length.
        len: u64,
        /// Region color.
        color: u32,
    },
    /// Withdraw slot `slot`.
    Retract {
        /// Registration slot.
        slot: u8,
    },
}

/// This rank's registered regions.
#[derive(Debug)]
pub struct Registry {
    slots: Vec<Option<Region>>,
    generations: Vec<u64>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            slots: vec![None; REGISTRATION_SLOTS],
            generations: vec![1; REGISTRATION_SLOTS],
        }
    }
}

impl Registry {
    /// Records `len` bytes at `base`, merging with a touching region of the same color.
    pub fn register(&mut self, base: usize, len: u64, color: u32) -> Result<(Key, Publication)> {
        if len == 0 {
            return Err(Error::invalid("register", "length is zero"));
        }
        if color >= COLORS {
            return Err(Error::invalid(
                "register",
                format!("color {color} is not below acp_colors() = {COLORS}"),
            ));
        }
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| base.checked_add(l))
            .ok_or(Error::LengthOverflow {
                what: "register: address + length",
            })?;
        for (slot, entry) in self.slots.iter_mut().enumerate() {
            let Some(region) = entry else { continue };
            let touches = base <= region.end() && end >= region.base;
            if !touches || region.color != color {
                continue;
            }
            // A published region may only grow upward.
            if region.published && base < region.base {
                continue;
            }
            let new_base = region.base.min(base);
            let new_end = region.end().max(end);
            let new_len = (new_end - new_base) as u64;
            if new_len >= MAX_SEGMENT_LEN {
                continue;
            }
            let grew = new_len != region.len;
            region.base = new_base;
            region.len = new_len;
            region.refs += 1;
            let publication = if region.published && grew {
                Publication::Publish {
                    slot: slot as u8,
                    base: region.base,
                    len: region.len,
                    color,
                }
            } else {
                Publication::None
            };
            return Ok((Key::new(slot, self.generations[slot]), publication));
        }
        if len >= MAX_SEGMENT_LEN {
            return Err(Error::LengthOverflow {
                what: "register: region larger than a global address can span",
            });
        }
        let slot = self
            .slots
            .iter()
            .position(Option::is_none)
            .ok_or(Error::RegistrationTableFull(REGISTRATION_SLOTS))?;
        self.slots[slot] = Some(Region {
            base,
            len,
            color,
            refs: 1,
            published: false,
        });
        Ok((Key::new(slot, self.generations[slot]), Publication::None))
    }

    fn region_mut(&mut self, key: Key) -> Result<&mut Region> {
        let slot = key.slot();
        if slot >= REGISTRATION_SLOTS || self.generations[slot] != key.generation() {
            return Err(Error::InvalidKey(key.0));
        }
        self.slots[slot].as_mut().ok_or(Error::InvalidKey(key.0))
    }

    /// Drops one reference to `key`'s region; the last one withdraws it.
    pub fn unregister(&mut self, key: Key) -> Result<Publication> {
        let region = self.region_mut(key)?;
        region.refs -= 1;
        if region.refs > 0 {
            return Ok(Publication::None);
        }
        let published = region.published;
        let slot = key.slot();
        self.slots[slot] = None;
        self.generations[slot] += 1;
        Ok(if published {
            Publication::Retract { slot: slot as u8 }
        } else {
            Publication::None
        })
    }

    /// The (slot, offset, color) of `addr` in `key`'s region, publishing the region on
    /// first use.
    pub fn locate(&mut self, key: Key, addr: usize) -> Result<(u8, u64, u32, Publication)> {
        let slot = key.slot() as u8;
        let region = self.region_mut(key)?;
        if addr < region.base || addr > region.end() {
            return Err(Error::invalid(
                "query_ga",
                format!("address {addr:#x} is outside the region registered under this key"),
            ));
        }
        let publication = if region.published {
            Publication::None
        } else {
            region.published = true;
            Publication::Publish {
                slot,
                base: region.base,
                len: region.len,
                color: region.color,
            }
        };
        Ok((slot, (addr - region.base) as u64, region.color, publication))
    }

    /// This process's address of `offset` in published slot `slot`.
    pub fn local_address(&self, slot: u8, offset: u64) -> Option<usize> {
        let region = self.slots.get(slot as usize)?.as_ref()?;
        (region.published && offset <= region.len).then(|| region.base + offset as usize)
    }

    /// Every published slot (for reset, which withdraws them all).
    pub fn clear(&mut self) -> Vec<u8> {
        let published = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, r)| r.as_ref().is_some_and(|r| r.published))
            .map(|(s, _)| s as u8)
            .collect();
        for (slot, entry) in self.slots.iter_mut().enumerate() {
            if entry.take().is_some() {
                self.generations[slot] += 1;
            }
        }
        published
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjacent_regions_merge_into_one_key() {
        let mut r = Registry::default();
        let (a, _) = r.register(0x1000, 0x100, 0).unwrap();
        let (b, _) = r.register(0x1100, 0x100, 0).unwrap();
        let (c, _) = r.register(0x0f00, 0x100, 0).unwrap();
        assert_eq!(a, b);
        assert_eq!(a, c);
        let (slot, off, _, publication) = r.locate(a, 0x1180).unwrap();
        assert_eq!(off, 0x280);
        assert_eq!(
            publication,
            Publication::Publish {
                slot,
                base: 0x0f00,
                len: 0x300,
                color: 0
            }
        );
        // Already published: asking again publishes nothing.
        assert_eq!(r.locate(a, 0x0f00).unwrap().3, Publication::None);
    }

    #[test]
    fn different_colors_do_not_merge() {
        let mut r = Registry::default();
        let (a, _) = r.register(0x1000, 0x100, 0).unwrap();
        let (b, _) = r.register(0x1100, 0x100, 1).unwrap();
        assert_ne!(a, b);
        assert!(r.register(0x2000, 1, COLORS).is_err());
    }

    #[test]
    fn published_regions_grow_only_upward() {
        let mut r = Registry::default();
        let (a, _) = r.register(0x1000, 0x100, 0).unwrap();
        r.locate(a, 0x1000).unwrap();
        let (below, p) = r.register(0x0f00, 0x100, 0).unwrap();
        assert_ne!(a, below);
        assert_eq!(p, Publication::None);
        let (above, p) = r.register(0x1100, 0x100, 0).unwrap();
        assert_eq!(a, above);
        assert!(matches!(p, Publication::Publish { len: 0x200, .. }));
    }

    #[test]
    fn unregister_counts_references_and_stale_keys_fail() {
        let mut r = Registry::default();
        let (a, _) = r.register(0x1000, 0x100, 0).unwrap();
        let (b, _) = r.register(0x1000, 0x10, 0).unwrap();
        assert_eq!(a, b);
        r.locate(a, 0x1000).unwrap();
        assert_eq!(r.unregister(a).unwrap(), Publication::None);
        assert!(matches!(
            r.unregister(a).unwrap(),
            Publication::Retract { .. }
        ));
        assert!(matches!(r.unregister(a), Err(Error::InvalidKey(_))));
        assert!(matches!(r.locate(a, 0x1000), Err(Error::InvalidKey(_))));
        let (c, _) = r.register(0x1000, 0x100, 0).unwrap();
        assert_ne!(a, c, "a reused slot gets a new generation");
    }

    #[test]
    fn bad_registrations_are_errors() {
        let mut r = Registry::default();
        assert!(r.register(0x1000, 0, 0).is_err());
        assert!(matches!(
            r.register(usize::MAX - 10, 100, 0),
            Err(Error::LengthOverflow { .. })
        ));
        for i in 0..REGISTRATION_SLOTS {
            r.register(0x10_0000 * (i + 1), 16, 0).unwrap();
        }
        assert!(matches!(
            r.register(0x1, 1, 0),
            Err(Error::RegistrationTableFull(_))
        ));
        assert!(r.locate(Key::from_bits(0xffff_ffff), 0).is_err());
    }
}
