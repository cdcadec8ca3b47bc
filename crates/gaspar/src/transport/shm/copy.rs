//! The copy kernels of puts and gets between mapped segments: small and medium copies
//! inlined without a call to memcpy, large ones in pieces that avoid 4K aliasing, and
//! the loops that move a strided pattern's chunks with one routine chosen per pattern.

use std::sync::atomic::{compiler_fence, Ordering};

use crate::transport::Pattern;

/// Which way a pattern's bytes move.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    LocalToRemote,
    RemoteToLocal,
}

/// Moves every chunk of `pattern` between a local buffer and a mapped remote segment, each
/// given as (base, extent). The copy routine is chosen once for the whole pattern: the
/// chunk length is fixed, and the two extents either overlap or not.
///
/// # Safety
/// Both ranges are valid for the pattern's accesses (the source side readable, the
/// destination writable), which holds when each extent was checked against its buffer.
#[inline]
pub(super) unsafe fn move_pattern(
    pattern: &Pattern<'_>,
    (local, local_extent): (*const u8, u64),
    (remote, remote_extent): (*mut u8, u64),
    direction: Direction,
) {
    let chunk = pattern.chunk as usize;
    let (l, r) = (local as usize, remote as usize);
    let disjoint = l + local_extent as usize <= r || r + remote_extent as usize <= l;
    // One loop per copy routine, each with its routine inlined.
    #[inline(always)]
    fn each(
        pattern: &Pattern<'_>,
        (local, remote): (*const u8, *mut u8),
        direction: Direction,
        copy: impl Fn(*const u8, *mut u8),
    ) {
        let Ok(()) = pattern.for_each(|lo, ro| -> Result<(), std::convert::Infallible> {
            let (lp, rp) = (
                local.wrapping_add(lo as usize),
                remote.wrapping_add(ro as usize),
            );
            match direction {
                Direction::LocalToRemote => copy(lp, rp),
                Direction::RemoteToLocal => copy(rp, lp as *mut u8),
            }
            Ok(())
        });
    }
    let ends = (local, remote);
    // SAFETY: (every arm) each chunk is inside both extents (caller's contract); the
    // routines other than `copy_bytes` need disjoint ranges, checked just above.
    unsafe {
        match (chunk, direction) {
            _ if !disjoint => each(pattern, ends, direction, |s, d| copy_bytes(s, d, chunk)),
            (0..=64, _) => each(pattern, ends, direction, |s, d| copy_small(s, d, chunk)),
            (65..=MEDIUM, _) => medium_chunks(pattern, ends, direction, chunk),
            _ => each(pattern, ends, direction, |s, d| copy_bytes(s, d, chunk)),
        }
    }
}

/// The loops of [`move_pattern`] for 65..=MEDIUM-byte chunks (rows of 3-D sections, say),
/// each in a function of its own: their speed moved by half with where unrelated changes
/// put the code (3-D sections of 256-byte rows, gathered in 6.7-7.0 us or 9.5-11 us).
///
/// # Safety
/// As [`move_pattern`], with disjoint extents.
unsafe fn medium_chunks(
    pattern: &Pattern<'_>,
    (local, remote): (*const u8, *mut u8),
    direction: Direction,
    chunk: usize,
) {
    #[inline(never)]
    fn run(pattern: &Pattern<'_>, copy: impl Fn(u64, u64)) {
        let Ok(()) = pattern.for_each(|lo, ro| -> Result<(), std::convert::Infallible> {
            copy(lo, ro);
            Ok(())
        });
    }
    let local_at = |lo: u64| (local as *mut u8).wrapping_add(lo as usize);
    let remote_at = |ro: u64| remote.wrapping_add(ro as usize);
    match direction {
        Direction::RemoteToLocal => run(pattern, |lo, ro| {
            // SAFETY: each chunk is inside both extents and they are disjoint (caller's
            // contract).
            unsafe { copy_medium(remote_at(ro), local_at(lo), chunk) }
        }),
        Direction::LocalToRemote => run(pattern, |lo, ro| {
            // SAFETY: as above.
            unsafe { copy_medium(local_at(lo), remote_at(ro), chunk) }
        }),
    }
}

/// memcpy when the ranges are disjoint (the usual case, and faster), memmove otherwise.
///
/// # Safety
/// `src..src+len` must be readable and `dst..dst+len` writable.
#[inline]
pub(super) unsafe fn copy_bytes(src: *const u8, dst: *mut u8, len: usize) {
    let (s, d) = (src as usize, dst as usize);
    if s.abs_diff(d) >= len {
        if len <= 64 {
            // SAFETY: as below (disjoint, readable and writable for `len` bytes).
            unsafe { copy_small(src, dst, len) };
            return;
        }
        if len <= MEDIUM {
            // SAFETY: as below (disjoint, readable and writable for `len` bytes).
            unsafe { copy_medium(src, dst, len) };
            return;
        }
        // glibc copies 4 KiB and more with `rep movsb`, which stalls on 4K aliasing when
        // the destination's page offset is a little ahead of the source's (measured here:
        // a 4 KiB get from a page-aligned heap block into a malloc'd buffer ran at 27
        // instead of 108 GB/s). Pieces below glibc's rep-movsb threshold avoid it.
        const PIECE: usize = 2048;
        let ahead = d.wrapping_sub(s) % 4096;
        if len >= 2 * PIECE && ahead != 0 && ahead < 1024 {
            let mut done = 0;
            while done < len {
                let n = PIECE.min(len - done);
                // SAFETY: a sub-range of the ranges below.
                unsafe { std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), n) };
                done += n;
            }
            return;
        }
        // SAFETY: readable/writable by the caller's contract; disjoint as just checked.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, len) }
    } else {
        // SAFETY: readable/writable by the caller's contract; memmove allows overlap.
        unsafe { std::ptr::copy(src, dst, len) }
    }
}

/// Rows up to this many bytes are gathered inline by [`copy_medium`]: measured here, a
/// strided gather of 256-byte rows took 10.8 us through glibc's memcpy (its AVX-512 entry,
/// per call) and 6.5 us with inline 16-byte moves.
const MEDIUM: usize = 512;

/// Copies 65..=MEDIUM bytes inline: 16-byte moves, each load followed by its store (as
/// compilers inline a memcpy of known size), unrolled by eight by hand (the compiler's own
/// unrolling came and went with unrelated changes, and with it a third of the speed of
/// 3-D transfers), then the rest, then the last 16 bytes (overlapping the previous move,
/// which the disjoint buffers allow).
///
/// # Safety
/// `src..src+len` readable, `dst..dst+len` writable, disjoint, `64 < len <= MEDIUM`.
#[inline(always)]
unsafe fn copy_medium(src: *const u8, dst: *mut u8, len: usize) {
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
unsafe fn copy_small(src: *const u8, dst: *mut u8, len: usize) {
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
    // SAFETY: in every arm both moves stay inside `0..len` of each buffer, because the
    // arm's width is at most `len`; the buffers are disjoint, so order does not matter.
    unsafe {
        match len {
            32..=64 => {
                let (a, b) = (
                    rd(src as *const [u8; 32]),
                    rd(src.add(len - 32) as *const [u8; 32]),
                );
                wr(dst as *mut [u8; 32], a);
                wr(dst.add(len - 32) as *mut [u8; 32], b);
            }
            16..=31 => {
                let (a, b) = (
                    rd(src as *const [u8; 16]),
                    rd(src.add(len - 16) as *const [u8; 16]),
                );
                wr(dst as *mut [u8; 16], a);
                wr(dst.add(len - 16) as *mut [u8; 16], b);
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
