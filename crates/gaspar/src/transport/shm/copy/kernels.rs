//! The copy routines the engine chooses between ([`Method`]), and the small-copy routine
//! that every size up to 64 bytes uses.

use std::sync::atomic::{compiler_fence, Ordering};

/// One way of copying a disjoint range of more than 64 bytes. Which one is fastest depends
/// on the processor, the size and where the two ranges sit relative to each other in their
/// pages; the calibration measures them (`calibrate`), the table picks one per case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Method {
    /// The C library's memcpy (`ptr::copy_nonoverlapping`): the reference, and the choice
    /// where nothing was measured.
    Memcpy,
    /// 16-byte moves inlined in the caller, unrolled by eight: no call, which pays for
    /// rows of strided transfers.
    Inline16,
    /// memcpy in 2 KiB pieces, each below glibc's `rep movsb` threshold: avoids the 4K
    /// aliasing stall that some processors' `rep movsb` has when the destination's page
    /// offset is a little ahead of the source's.
    Pieces2K,
    /// One `rep movsb` (x86-64), fast on processors with ERMS/FSRM.
    RepMovsb,
    /// Non-temporal (streaming) 16-byte stores after aligning the destination (x86-64):
    /// the destination does not go through the caches, which pays for copies larger than
    /// they are.
    NonTemporal,
}

impl Method {
    /// Every method, in the order of their codes.
    pub(crate) const ALL: [Method; 5] = [
        Method::Memcpy,
        Method::Inline16,
        Method::Pieces2K,
        Method::RepMovsb,
        Method::NonTemporal,
    ];

    /// The name in the cache file and in `gaspar info`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Method::Memcpy => "memcpy",
            Method::Inline16 => "inline16",
            Method::Pieces2K => "pieces2k",
            Method::RepMovsb => "rep-movsb",
            Method::NonTemporal => "nt-stores",
        }
    }

    /// The method named `name` (as [`Method::name`] writes it).
    pub(crate) fn from_name(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Whether this method is worth measuring (and may be chosen) for `len` bytes on this
    /// build: the inline loop only for short copies, the pieces only where there are
    /// several, the x86-64 instructions only there, streaming stores only for large copies.
    pub(crate) fn candidate(self, len: usize) -> bool {
        match self {
            Method::Memcpy => true,
            Method::Inline16 => len <= 8192,
            Method::Pieces2K => len >= 2 * PIECE,
            Method::RepMovsb => cfg!(target_arch = "x86_64"),
            Method::NonTemporal => cfg!(target_arch = "x86_64") && len >= 64 << 10,
        }
    }

    /// Copies `len` bytes from `src` to `dst` this way. A method that is not a
    /// [`candidate`](Method::candidate) on this build copies with memcpy.
    ///
    /// # Safety
    /// `src..src+len` readable, `dst..dst+len` writable, the two disjoint, `len >= 16`.
    #[inline(always)]
    pub(crate) unsafe fn copy(self, src: *const u8, dst: *mut u8, len: usize) {
        // SAFETY: (every arm) the caller's contract is each routine's.
        unsafe {
            match self {
                Method::Memcpy => std::ptr::copy_nonoverlapping(src, dst, len),
                Method::Inline16 => copy_inline16(src, dst, len),
                Method::Pieces2K => copy_in_pieces(src, dst, len),
                #[cfg(target_arch = "x86_64")]
                Method::RepMovsb => copy_rep_movsb(src, dst, len),
                #[cfg(target_arch = "x86_64")]
                Method::NonTemporal => copy_non_temporal(src, dst, len),
                #[cfg(not(target_arch = "x86_64"))]
                Method::RepMovsb | Method::NonTemporal => {
                    std::ptr::copy_nonoverlapping(src, dst, len)
                }
            }
        }
    }
}

/// The piece of [`Method::Pieces2K`].
const PIECE: usize = 2048;

/// memcpy in [`PIECE`]-byte pieces.
///
/// # Safety
/// As [`Method::copy`].
#[inline(never)]
pub(super) unsafe fn copy_in_pieces(src: *const u8, dst: *mut u8, len: usize) {
    let mut done = 0;
    while done < len {
        let n = PIECE.min(len - done);
        // SAFETY: a sub-range of the caller's ranges.
        unsafe { std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), n) };
        done += n;
    }
}

/// `rep movsb`.
///
/// # Safety
/// As [`Method::copy`].
#[cfg(target_arch = "x86_64")]
#[inline(never)]
unsafe fn copy_rep_movsb(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: the instruction reads `len` bytes from `src` and writes `len` bytes to
    // `dst`, forwards (the ABI keeps the direction flag clear), both ranges valid and
    // disjoint by the caller's contract; it touches no stack and no flags.
    unsafe {
        std::arch::asm!(
            "rep movsb",
            inout("rcx") len => _,
            inout("rsi") src => _,
            inout("rdi") dst => _,
            options(nostack, preserves_flags)
        );
    }
}

/// Streaming stores of 64 bytes per step once the destination is 64-byte aligned, the
/// head and the tail with memcpy, then a store fence so that later stores (a flag a peer
/// polls) are not seen before these.
///
/// # Safety
/// As [`Method::copy`].
#[cfg(target_arch = "x86_64")]
#[inline(never)]
unsafe fn copy_non_temporal(src: *const u8, dst: *mut u8, len: usize) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
    let head = dst.align_offset(64).min(len);
    // SAFETY: every access below is inside `0..len` of its range (caller's contract);
    // the streaming stores go to `dst + at` with `at >= head`, 16-byte aligned because
    // `dst + head` is 64-byte aligned and `at - head` a multiple of 64; SSE2 is part of
    // x86-64.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, head);
        let mut at = head;
        while at + 64 <= len {
            let s = src.add(at) as *const __m128i;
            let d = dst.add(at) as *mut __m128i;
            let (a, b, c, e) = (
                _mm_loadu_si128(s),
                _mm_loadu_si128(s.add(1)),
                _mm_loadu_si128(s.add(2)),
                _mm_loadu_si128(s.add(3)),
            );
            _mm_stream_si128(d, a);
            _mm_stream_si128(d.add(1), b);
            _mm_stream_si128(d.add(2), c);
            _mm_stream_si128(d.add(3), e);
            at += 64;
        }
        _mm_sfence();
        std::ptr::copy_nonoverlapping(src.add(at), dst.add(at), len - at);
    }
}

/// Copies 16 or more bytes inline: 16-byte moves, each load followed by its store (as
/// compilers inline a memcpy of known size), unrolled by eight by hand (the compiler's own
/// unrolling came and went with unrelated changes, and with it a third of the speed of
/// 3-D transfers), then the rest, then the last 16 bytes (overlapping the previous move,
/// which the disjoint buffers allow).
///
/// # Safety
/// `src..src+len` readable, `dst..dst+len` writable, disjoint, `len >= 16`.
#[inline(always)]
pub(super) unsafe fn copy_inline16(src: *const u8, dst: *mut u8, len: usize) {
    use std::ptr::{read_unaligned as rd, write_unaligned as wr};
    // SAFETY: every move starts at some `at <= len - 16`, so it stays inside both buffers.
    let move16 = |at: usize| unsafe {
        wr(
            dst.add(at) as *mut [u8; 16],
            rd(src.add(at) as *const [u8; 16]),
        )
    };
    let mut done = 0;
    while done + 128 <= len {
        move16(done);
        move16(done + 16);
        move16(done + 32);
        move16(done + 48);
        move16(done + 64);
        move16(done + 80);
        move16(done + 96);
        move16(done + 112);
        done += 128;
    }
    while done + 16 < len {
        move16(done);
        done += 16;
    }
    move16(len - 16);
    // Not hoisted out of the caller's loop (see `copy_small`).
    compiler_fence(Ordering::SeqCst);
}

/// Copies exactly `N` bytes, the length known to the compiler (inlined as straight moves).
///
/// # Safety
/// `src..src+N` readable, `dst..dst+N` writable, disjoint.
#[inline(always)]
pub(super) unsafe fn copy_fixed<const N: usize>(src: *const u8, dst: *mut u8) {
    // SAFETY: the caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, N) }
}

/// Copies up to 64 bytes inline, with two possibly overlapping moves of the largest power
/// of two that fits (what memcpy does for small sizes, without the call).
///
/// One side is memory other processes write, and this copy is inlined into the caller's
/// loop, where a plain load could be hoisted out of a polling loop (`while p.get(&rt)? == 0
/// {}` would then spin forever). So an aligned 4- or 8-byte word — what programs poll — is
/// moved with volatile accesses (one `mov` each, single-copy atomic on x86-64 and AArch64),
/// and every other size ends with a compiler fence, which no load is moved across.
/// (Volatile moves of byte arrays, which would be sound at any alignment, are lowered to
/// one access per byte: 8x slower, measured.)
///
/// # Safety
/// `src..src+len` readable, `dst..dst+len` writable, disjoint, `len <= 64`.
#[inline(always)]
pub(super) unsafe fn copy_small(src: *const u8, dst: *mut u8, len: usize) {
    use std::ptr::{read_unaligned as rd, write_unaligned as wr};
    let aligned = |width: usize| (src as usize | dst as usize) % width == 0;
    if len == 8 && aligned(8) {
        // SAFETY: both 8-byte words are inside the buffers (caller) and 8-aligned.
        unsafe { (dst as *mut u64).write_volatile((src as *const u64).read_volatile()) };
        return;
    }
    if len == 4 && aligned(4) {
        // SAFETY: both 4-byte words are inside the buffers (caller) and 4-aligned.
        unsafe { (dst as *mut u32).write_volatile((src as *const u32).read_volatile()) };
        return;
    }
    // SAFETY: in every arm each move stays inside `0..len` of each buffer, because the
    // arm's width is at most `len`; the buffers are disjoint, so order does not matter.
    // Each load is followed by its store (four loads held at once were spilled to the
    // stack and read back, a store-forwarding stall per chunk of strided transfers).
    unsafe {
        let move16 = |at: usize| {
            wr(
                dst.add(at) as *mut [u8; 16],
                rd(src.add(at) as *const [u8; 16]),
            )
        };
        match len {
            32..=64 => {
                move16(0);
                move16(16);
                move16(len - 32);
                move16(len - 16);
            }
            16..=31 => {
                move16(0);
                move16(len - 16);
            }
            8..=15 => {
                let (a, b) = (rd(src as *const u64), rd(src.add(len - 8) as *const u64));
                wr(dst as *mut u64, a);
                wr(dst.add(len - 8) as *mut u64, b);
            }
            4..=7 => {
                let (a, b) = (rd(src as *const u32), rd(src.add(len - 4) as *const u32));
                wr(dst as *mut u32, a);
                wr(dst.add(len - 4) as *mut u32, b);
            }
            _ => {
                for i in 0..len {
                    *dst.add(i) = *src.add(i);
                }
            }
        }
    }
    compiler_fence(Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Copies `len` bytes with `method` from offset `from` of one buffer to offset `to` of
    /// another and checks the copy and that nothing around it changed.
    fn check(method: Method, len: usize, from: usize, to: usize) {
        let src: Vec<u8> = (0..from + len).map(|i| (i * 7 + 3) as u8).collect();
        let mut dst = vec![0xa5u8; to + len + 64];
        // SAFETY: `src[from..from + len]` and `dst[to..to + len]` are in bounds of two
        // distinct vectors; `len >= 16`.
        unsafe { method.copy(src.as_ptr().add(from), dst.as_mut_ptr().add(to), len) };
        assert!(
            dst[..to].iter().all(|&b| b == 0xa5),
            "{method:?} wrote before"
        );
        assert_eq!(
            &dst[to..to + len],
            &src[from..],
            "{method:?} {len} {from} {to}"
        );
        assert!(
            dst[to + len..].iter().all(|&b| b == 0xa5),
            "{method:?} wrote after"
        );
    }

    /// The sizes where a routine changes its course: unrolled-loop steps, pieces, lines,
    /// pages, the table's classes, each with its neighbours.
    fn boundary_sizes() -> Vec<usize> {
        let mut sizes = Vec::new();
        for base in [16usize, 32, 64, 128, 2048, 4096, 4096 + 64, 65536, 1 << 20] {
            for len in base.saturating_sub(2)..=base + 2 {
                if len >= 16 {
                    sizes.push(len);
                }
            }
        }
        sizes
    }

    #[test]
    fn every_method_copies_at_every_boundary_and_placement() {
        for method in Method::ALL {
            for len in boundary_sizes() {
                for (from, to) in [
                    (0, 0),
                    (1, 0),
                    (0, 1),
                    (63, 64),
                    (0, 128),
                    (128, 0),
                    (7, 2049),
                ] {
                    check(method, len, from, to);
                }
            }
        }
    }

    #[test]
    fn small_copies_every_length_and_alignment() {
        for len in 0..=64 {
            for (from, to) in [(0, 0), (1, 3), (8, 8), (4, 12), (5, 0)] {
                let src: Vec<u8> = (0..from + len).map(|i| i as u8 ^ 0x5c).collect();
                let mut dst = vec![0xa5u8; to + len + 8];
                // SAFETY: both ranges are in bounds of distinct vectors; `len <= 64`.
                unsafe { copy_small(src.as_ptr().add(from), dst.as_mut_ptr().add(to), len) };
                assert_eq!(&dst[to..to + len], &src[from..]);
                assert!(dst[..to].iter().chain(&dst[to + len..]).all(|&b| b == 0xa5));
            }
        }
    }

    #[test]
    fn fixed_widths_copy_exactly_their_width() {
        fn fixed<const N: usize>(from: usize, to: usize) {
            let src: Vec<u8> = (0..from + N).map(|i| (i * 5 + 1) as u8).collect();
            let mut dst = vec![0xa5u8; to + N + 8];
            // SAFETY: both ranges are in bounds of distinct vectors.
            unsafe { copy_fixed::<N>(src.as_ptr().add(from), dst.as_mut_ptr().add(to)) };
            assert_eq!(&dst[to..to + N], &src[from..]);
            assert!(dst[..to].iter().chain(&dst[to + N..]).all(|&b| b == 0xa5));
        }
        for (from, to) in [(0, 0), (1, 3), (7, 0), (0, 63)] {
            fixed::<8>(from, to);
            fixed::<16>(from, to);
            fixed::<32>(from, to);
            fixed::<64>(from, to);
        }
    }

    #[test]
    fn names_round_trip() {
        for method in Method::ALL {
            assert_eq!(Method::from_name(method.name()), Some(method));
        }
        assert_eq!(Method::from_name("memmove"), None);
    }

    proptest! {
        #[test]
        fn every_method_copies_any_size_and_placement(
            method in proptest::sample::select(Method::ALL.to_vec()),
            len in 16usize..20_000,
            from in 0usize..4096,
            to in 0usize..4096,
        ) {
            check(method, len, from, to);
        }
    }
}
