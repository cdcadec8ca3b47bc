//! The 64-bit global address, its bit layout and the limits that follow from it. This is
//! the only place that knows them: a leaf that the transport (below) and the memory layer
//! (above) both build on. Users name these through [`gmem`](crate::gmem).
//!
//! ```text
//!  63            48 47  46 45        38 37                                   0
//! +----------------+------+------------+--------------------------------------+
//! |  rank (16 bit) |color | segment(8) |            offset (38 bit)           |
//! +----------------+------+------------+--------------------------------------+
//! ```
//!
//! * `rank`: the (logical) rank that owns the memory, 0..65535.
//! * `color`: ACP's network-interface hint, 0..3; a no-op on the shared-memory transport.
//! * `segment`: 0 is never valid (so the all-zero address is [`GlobalAddr::NULL`]), 1 is the
//!   rank's starter memory, 2 its symmetric heap, 3..=255 user memory registered by it.
//! * `offset`: byte offset inside the segment (256 GiB per segment).
//!
//! The offset is in the low bits so that `ga + n` addresses the n-th byte after `ga`, as
//! ACP programs write it; running past the segment is caught when the address is used.

use std::fmt;

/// Number of bits of each field, low to high.
const OFFSET_BITS: u32 = 38;
const SEGMENT_BITS: u32 = 8;
const COLOR_BITS: u32 = 2;
const RANK_BITS: u32 = 16;
const _: () = assert!(OFFSET_BITS + SEGMENT_BITS + COLOR_BITS + RANK_BITS == 64);

const SEGMENT_SHIFT: u32 = OFFSET_BITS;
const COLOR_SHIFT: u32 = OFFSET_BITS + SEGMENT_BITS;
const RANK_SHIFT: u32 = OFFSET_BITS + SEGMENT_BITS + COLOR_BITS;

/// Largest offset a global address can carry, plus one (256 GiB).
///
/// ```
/// assert_eq!(gaspar::gmem::MAX_SEGMENT_LEN, 256 << 30);
/// ```
pub const MAX_SEGMENT_LEN: u64 = 1 << OFFSET_BITS;
/// Number of colors (ACP's `acp_colors()`).
///
/// ```
/// assert_eq!(gaspar::gmem::COLORS, 4);
/// ```
pub const COLORS: u32 = 1 << COLOR_BITS;
/// Largest number of ranks a global address can name.
///
/// ```
/// assert_eq!(gaspar::gmem::MAX_RANKS, 65536);
/// ```
pub const MAX_RANKS: u64 = 1 << RANK_BITS;

/// Alignment of every symmetric-heap block: a cache line, so that separate allocations
/// never share one. The transports align the memory they expose to it.
pub(crate) const HEAP_BLOCK_ALIGN: u64 = 64;

/// Which memory of a rank an address points into.
///
/// The discriminants are the address field's codes (3 for every registered slot), so that
/// decoding an address is a clamp, not a chain of branches, on every transfer's path.
///
/// ```
/// use gaspar::gmem::{GlobalAddr, Segment};
/// let ga = GlobalAddr::new(1, 0, Segment::Heap, 64).unwrap();
/// assert_eq!(ga.decode().unwrap().segment, Segment::Heap);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Segment {
    /// The rank's starter memory.
    Starter = 1,
    /// The rank's symmetric heap.
    Heap = 2,
    /// User memory the rank registered, by registration slot (0..253).
    Registered(u8) = 3,
}

/// Number of registration slots per rank.
///
/// ```
/// assert_eq!(gaspar::gmem::REGISTRATION_SLOTS, 253);
/// ```
pub const REGISTRATION_SLOTS: usize = 256 - 3;

impl Segment {
    pub(crate) const fn code(self) -> u64 {
        match self {
            Segment::Starter => 1,
            Segment::Heap => 2,
            Segment::Registered(slot) => 3 + slot as u64,
        }
    }

    pub(crate) const fn from_code(code: u64) -> Option<Segment> {
        match code {
            0 => None,
            1 => Some(Segment::Starter),
            2 => Some(Segment::Heap),
            c => Some(Segment::Registered((c - 3) as u8)),
        }
    }
}

/// A global address: (rank, color, segment, offset) packed into 64 bits.
///
/// ```
/// use gaspar::gmem::{GlobalAddr, Segment};
/// let ga = GlobalAddr::new(2, 0, Segment::Starter, 0).unwrap();
/// assert_eq!(ga.to_string(), "GA(rank 2 starter+0x0)");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[repr(transparent)]
pub struct GlobalAddr(u64);

/// The fields of a global address.
///
/// ```
/// use gaspar::gmem::{Decoded, GlobalAddr, Segment};
/// let ga = GlobalAddr::new(2, 1, Segment::Heap, 8).unwrap();
/// assert_eq!(ga.decode(), Some(Decoded { rank: 2, color: 1, segment: Segment::Heap, offset: 8 }));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoded {
    /// Owning rank.
    pub rank: u32,
    /// Color hint.
    pub color: u32,
    /// Segment.
    pub segment: Segment,
    /// Byte offset in the segment.
    pub offset: u64,
}

impl GlobalAddr {
    /// The null address (ACP_GA_NULL); names no memory.
    ///
    /// ```
    /// assert_eq!(gaspar::GlobalAddr::NULL.decode(), None);
    /// ```
    pub const NULL: GlobalAddr = GlobalAddr(0);

    /// Packs the fields; `None` if one does not fit its bit field, or names a registration
    /// slot past [`REGISTRATION_SLOTS`] (whose code would not fit the segment field).
    ///
    /// ```
    /// use gaspar::gmem::{GlobalAddr, Segment};
    /// assert!(GlobalAddr::new(0, 0, Segment::Heap, 4096).is_some());
    /// assert!(GlobalAddr::new(0, 4, Segment::Heap, 0).is_none()); // no color 4
    /// ```
    #[inline]
    pub fn new(rank: u32, color: u32, segment: Segment, offset: u64) -> Option<GlobalAddr> {
        if u64::from(rank) >= MAX_RANKS
            || color >= COLORS
            || offset >= MAX_SEGMENT_LEN
            || segment.code() >= 1 << SEGMENT_BITS
        {
            return None;
        }
        Some(GlobalAddr(
            (u64::from(rank) << RANK_SHIFT)
                | (u64::from(color) << COLOR_SHIFT)
                | (segment.code() << SEGMENT_SHIFT)
                | offset,
        ))
    }

    /// The raw 64 bits (what C and Fortran code pass around).
    ///
    /// ```
    /// use gaspar::gmem::{GlobalAddr, Segment};
    /// let ga = GlobalAddr::new(0, 0, Segment::Heap, 8).unwrap();
    /// assert_eq!(GlobalAddr::from_bits(ga.to_bits()), ga);
    /// ```
    pub const fn to_bits(self) -> u64 {
        self.0
    }

    /// An address from raw bits; it is checked when used, not here.
    ///
    /// ```
    /// assert_eq!(gaspar::GlobalAddr::from_bits(0), gaspar::GlobalAddr::NULL);
    /// ```
    pub const fn from_bits(bits: u64) -> GlobalAddr {
        GlobalAddr(bits)
    }

    /// The fields, or `None` for an address with segment 0 (null or garbage).
    ///
    /// ```
    /// use gaspar::gmem::{GlobalAddr, Segment};
    /// let d = GlobalAddr::new(5, 0, Segment::Starter, 16).unwrap().decode().unwrap();
    /// assert_eq!((d.rank, d.offset), (5, 16));
    /// ```
    #[inline]
    pub fn decode(self) -> Option<Decoded> {
        let segment = Segment::from_code((self.0 >> SEGMENT_SHIFT) & ((1 << SEGMENT_BITS) - 1))?;
        Some(Decoded {
            rank: (self.0 >> RANK_SHIFT) as u32,
            color: ((self.0 >> COLOR_SHIFT) & ((1 << COLOR_BITS) - 1)) as u32,
            segment,
            offset: self.0 & (MAX_SEGMENT_LEN - 1),
        })
    }

    /// The owning rank (ACP's `acp_query_rank`), whatever the segment.
    ///
    /// ```
    /// use gaspar::gmem::{GlobalAddr, Segment};
    /// assert_eq!(GlobalAddr::new(7, 0, Segment::Heap, 0).unwrap().rank(), 7);
    /// ```
    pub const fn rank(self) -> u32 {
        (self.0 >> RANK_SHIFT) as u32
    }

    /// The address `bytes` on from this one, on rank `rank`, for a caller that knows both
    /// fit (a rank of the job, a place inside a block): what does not fit is cut to its
    /// field, and the address is checked when used, as every address is.
    #[inline(always)]
    pub(crate) const fn on_rank_at(self, rank: u32, bytes: u64) -> GlobalAddr {
        let offset = ((self.0 & (MAX_SEGMENT_LEN - 1)) + bytes) & (MAX_SEGMENT_LEN - 1);
        let rank = (rank as u64 & (MAX_RANKS - 1)) << RANK_SHIFT;
        GlobalAddr((self.0 & !(u64::MAX << RANK_SHIFT) & !(MAX_SEGMENT_LEN - 1)) | rank | offset)
    }

    /// The color (ACP's `acp_query_color`).
    ///
    /// ```
    /// use gaspar::gmem::{GlobalAddr, Segment};
    /// assert_eq!(GlobalAddr::new(0, 3, Segment::Heap, 0).unwrap().color(), 3);
    /// ```
    pub const fn color(self) -> u32 {
        ((self.0 >> COLOR_SHIFT) & ((1 << COLOR_BITS) - 1)) as u32
    }

    /// The address `bytes` further on, if it stays inside the offset field of the same
    /// segment (whether the segment is that long is checked on use).
    ///
    /// ```
    /// use gaspar::gmem::{GlobalAddr, Segment};
    /// let ga = GlobalAddr::new(1, 0, Segment::Heap, 64).unwrap();
    /// assert_eq!(ga.offset(8), GlobalAddr::new(1, 0, Segment::Heap, 72));
    /// ```
    pub fn offset(self, bytes: u64) -> Option<GlobalAddr> {
        let offset = (self.0 & (MAX_SEGMENT_LEN - 1)).checked_add(bytes)?;
        (offset < MAX_SEGMENT_LEN).then_some(GlobalAddr((self.0 & !(MAX_SEGMENT_LEN - 1)) | offset))
    }

    /// The owning rank and the offset when this is a symmetric-heap address: what a
    /// blocking transfer's fast path needs, without decoding the segment into a value.
    #[inline(always)]
    pub(crate) const fn heap_place(self) -> Option<(u32, u64)> {
        if (self.0 >> SEGMENT_SHIFT) & ((1 << SEGMENT_BITS) - 1) == Segment::Heap.code() {
            Some((
                (self.0 >> RANK_SHIFT) as u32,
                self.0 & (MAX_SEGMENT_LEN - 1),
            ))
        } else {
            None
        }
    }
}

impl fmt::Debug for GlobalAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl fmt::Display for GlobalAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.decode() {
            None if self.0 == 0 => write!(f, "GA(null)"),
            None => write!(f, "GA({:#018x}: no segment)", self.0),
            Some(d) => {
                let seg = match d.segment {
                    Segment::Starter => "starter".to_string(),
                    Segment::Heap => "heap".to_string(),
                    Segment::Registered(s) => format!("reg{s}"),
                };
                write!(f, "GA(rank {} {seg}+{:#x}", d.rank, d.offset)?;
                if d.color != 0 {
                    write!(f, " color {}", d.color)?;
                }
                write!(f, ")")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn null_decodes_to_nothing() {
        assert_eq!(GlobalAddr::NULL.decode(), None);
        assert_eq!(GlobalAddr::NULL.to_string(), "GA(null)");
    }

    #[test]
    fn fields_that_do_not_fit_are_refused() {
        assert!(GlobalAddr::new(1 << 16, 0, Segment::Heap, 0).is_none());
        assert!(GlobalAddr::new(0, 4, Segment::Heap, 0).is_none());
        assert!(GlobalAddr::new(0, 0, Segment::Heap, MAX_SEGMENT_LEN).is_none());
    }

    #[test]
    fn add_stays_in_the_offset_field() {
        let ga = GlobalAddr::new(3, 1, Segment::Starter, 10).unwrap();
        let next = ga.offset(6).unwrap();
        assert_eq!(next.decode().unwrap().offset, 16);
        assert_eq!(next.rank(), 3);
        assert_eq!(next.color(), 1);
        assert!(ga.offset(MAX_SEGMENT_LEN).is_none());
    }

    #[test]
    fn on_rank_at_changes_only_the_rank_and_offset() {
        let ga = GlobalAddr::new(3, 1, Segment::Heap, 0x40).unwrap();
        assert_eq!(
            ga.on_rank_at(9, 0),
            GlobalAddr::new(9, 1, Segment::Heap, 0x40).unwrap()
        );
        assert_eq!(
            ga.on_rank_at(9, 0x10),
            GlobalAddr::new(9, 1, Segment::Heap, 0x50).unwrap()
        );
    }

    #[test]
    fn registration_slots_past_the_last_are_refused() {
        let last = (REGISTRATION_SLOTS - 1) as u8;
        let ga = GlobalAddr::new(0, 0, Segment::Registered(last), 0).unwrap();
        assert_eq!(ga.decode().unwrap().segment, Segment::Registered(last));
        for slot in last + 1..=u8::MAX {
            assert_eq!(
                GlobalAddr::new(0, 0, Segment::Registered(slot), 0),
                None,
                "slot {slot}"
            );
        }
    }

    proptest! {
        #[test]
        fn encode_decode_round_trip(rank in 0u32..(1 << 16), color in 0u32..4, seg in 0u16..258, offset in 0u64..MAX_SEGMENT_LEN) {
            let segment = match seg { 0 => Segment::Starter, 1 => Segment::Heap, s => Segment::Registered((s - 2) as u8) };
            let Some(ga) = GlobalAddr::new(rank, color, segment, offset) else {
                // Only a slot past the last may be refused: every field here fits.
                prop_assert!(seg - 2 >= REGISTRATION_SLOTS as u16);
                return Ok(());
            };
            let d = ga.decode().unwrap();
            prop_assert_eq!(d, Decoded { rank, color, segment, offset });
            prop_assert_eq!(ga.rank(), rank);
            prop_assert_eq!(ga.color(), color);
        }
    }
}
