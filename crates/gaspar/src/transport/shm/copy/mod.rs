//! The copy engine of puts and gets between mapped segments: up to 64 bytes inline,
//! larger copies with the method the installed [`table`] measured fastest on this CPU for
//! the size and placement of the two ranges (memcpy where nothing was measured), and the
//! loops that move a strided pattern's chunks with one method chosen per pattern.

pub mod kernels;
pub mod table;

use crate::transport::Pattern;

use std::sync::atomic::{compiler_fence, Ordering};

use self::kernels::{copy_fixed, copy_in_pieces, copy_inline16, copy_small, Method};

/// Which way a pattern's bytes move.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
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
pub(crate) unsafe fn move_pattern(
    pattern: &Pattern<'_>,
    (local, local_extent): (*const u8, u64),
    (remote, remote_extent): (*mut u8, u64),
    direction: Direction,
) {
    let chunk = pattern.chunk as usize;
    let (l, r) = (local as usize, remote as usize);
    let disjoint = l + local_extent as usize <= r || r + remote_extent as usize <= l;
    // One loop per copy routine and direction, each with its routine inlined (the
    // direction tested inside the loop cost a branch and spilled registers per chunk).
    #[inline(always)]
    fn each(
        pattern: &Pattern<'_>,
        (local, remote): (*const u8, *mut u8),
        direction: Direction,
        copy: impl Fn(*const u8, *mut u8),
    ) {
        let moved: Result<(), std::convert::Infallible> = match direction {
            Direction::LocalToRemote => {
                pattern.for_each(|lo, ro| -> Result<(), std::convert::Infallible> {
                    copy(
                        local.wrapping_add(lo as usize),
                        remote.wrapping_add(ro as usize),
                    );
                    Ok(())
                })
            }
            Direction::RemoteToLocal => {
                pattern.for_each(|lo, ro| -> Result<(), std::convert::Infallible> {
                    copy(
                        remote.wrapping_add(ro as usize),
                        (local as *mut u8).wrapping_add(lo as usize),
                    );
                    Ok(())
                })
            }
        };
        let Ok(()) = moved;
    }
    let ends = (local, remote);
    let (from, to) = match direction {
        Direction::LocalToRemote => (l, r),
        Direction::RemoteToLocal => (r, l),
    };
    // SAFETY: (every arm) each chunk is inside both extents (caller's contract); the
    // routines other than `copy_bytes` need disjoint ranges, checked just above.
    unsafe {
        if !disjoint {
            return each(pattern, ends, direction, |s, d| copy_bytes(s, d, chunk));
        }
        if chunk <= 64 {
            // The common widths with their length known to the compiler (straight moves,
            // as a C loop of memcpy(d, s, 64) gets), the others through `copy_small`.
            match chunk {
                8 => each(pattern, ends, direction, |s, d| copy_fixed::<8>(s, d)),
                16 => each(pattern, ends, direction, |s, d| copy_fixed::<16>(s, d)),
                32 => each(pattern, ends, direction, |s, d| copy_fixed::<32>(s, d)),
                64 => each(pattern, ends, direction, |s, d| copy_fixed::<64>(s, d)),
                _ => each(pattern, ends, direction, |s, d| copy_small(s, d, chunk)),
            }
            // No load of the pattern is hoisted out of a caller's polling loop.
            compiler_fence(Ordering::SeqCst);
            return;
        }
        // One choice for the whole loop: the table's for patterns (its strided column
        // unless the first chunk's placement decides).
        let method = table::pattern_method_for(chunk, from, to);
        match method {
            Method::Inline16 => inline_chunks(pattern, ends, direction, chunk),
            // One arm per method, so that each loop has its routine inlined.
            Method::Memcpy => each(pattern, ends, direction, |s, d| {
                Method::Memcpy.copy(s, d, chunk)
            }),
            Method::Pieces2K => each(pattern, ends, direction, |s, d| {
                Method::Pieces2K.copy(s, d, chunk)
            }),
            Method::RepMovsb => each(pattern, ends, direction, |s, d| {
                Method::RepMovsb.copy(s, d, chunk)
            }),
            Method::NonTemporal => each(pattern, ends, direction, |s, d| {
                Method::NonTemporal.copy(s, d, chunk)
            }),
        }
    }
}

/// The loops of [`move_pattern`] for chunks copied with [`Method::Inline16`] (rows of
/// 3-D sections, say), each in a function of its own: their speed moved by half with
/// where unrelated changes put the code (3-D sections of 256-byte rows, gathered in
/// 6.7-7.0 us or 9.5-11 us).
///
/// # Safety
/// As [`move_pattern`], with disjoint extents and chunks of 16 bytes or more.
unsafe fn inline_chunks(
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
            unsafe { copy_inline16(remote_at(ro), local_at(lo), chunk) }
        }),
        Direction::LocalToRemote => run(pattern, |lo, ro| {
            // SAFETY: as above.
            unsafe { copy_inline16(local_at(lo), remote_at(ro), chunk) }
        }),
    }
}

/// Copies `src` into `dst` (of the same length) with the copy engine: what packing and
/// unpacking buffers of strided transfers use, one contiguous copy each, so that they
/// copy as contiguous puts and gets do.
#[inline]
pub(crate) fn copy_slice(dst: &mut [u8], src: &[u8]) {
    let len = dst.len().min(src.len());
    debug_assert_eq!(dst.len(), src.len(), "copy_slice of unequal lengths");
    // SAFETY: `len` bytes are readable in `src` and writable in `dst`; the borrows make
    // the two disjoint.
    unsafe { copy_bytes(src.as_ptr(), dst.as_mut_ptr(), len) }
}

/// Copies `len` bytes: memmove when the ranges overlap, the small inline routine up to
/// 64 bytes, otherwise the installed table's method for the size and placement (memcpy,
/// called from here, where that is the method at every placement).
///
/// # Safety
/// `src..src+len` must be readable and `dst..dst+len` writable.
#[inline(always)]
pub(crate) unsafe fn copy_bytes(src: *const u8, dst: *mut u8, len: usize) {
    let (s, d) = (src as usize, dst as usize);
    if s.abs_diff(d) < len {
        // SAFETY: readable/writable by the caller's contract; memmove allows overlap.
        return unsafe { std::ptr::copy(src, dst, len) };
    }
    if len <= 64 {
        // SAFETY: disjoint (just checked), readable and writable for `len` bytes.
        return unsafe { copy_small(src, dst, len) };
    }
    if table::memcpy_everywhere(len) {
        // SAFETY: disjoint (just checked), readable and writable for `len` bytes.
        return unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
    }
    // SAFETY: disjoint (just checked), readable and writable for `len` > 64 bytes.
    unsafe { copy_with(table::method_for(len, s, d), src, dst, len) }
}

/// Copies `len` (> 64) bytes with `method` as [`copy_bytes`] does: memcpy called from
/// here, every other method out of line (their code stays out of every caller). The
/// calibration times each method through this very path, so that what it picks is the
/// fastest as called (a 16-byte-move loop timed inlined into the calibration's loop won
/// at 128 bytes, and reached through this path took 6.9 ns where memcpy took 3.0).
///
/// # Safety
/// As [`Method::copy`].
#[inline(always)]
pub(crate) unsafe fn copy_with(method: Method, src: *const u8, dst: *mut u8, len: usize) {
    match method {
        // SAFETY: the caller's contract.
        Method::Memcpy => unsafe { std::ptr::copy_nonoverlapping(src, dst, len) },
        // The choice of mid sizes on many processors: its own routine, called directly.
        // SAFETY: the caller's contract.
        Method::Pieces2K => unsafe { copy_in_pieces(src, dst, len) },
        // SAFETY: the caller's contract.
        other => unsafe { copy_other(other, src, dst, len) },
    }
}

/// [`copy_with`] for the methods other than memcpy.
///
/// # Safety
/// As [`Method::copy`].
#[inline(never)]
unsafe fn copy_other(method: Method, src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: the caller's contract.
    unsafe { method.copy(src, dst, len) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_bytes_copies_disjoint_and_overlapping_ranges() {
        for len in [0usize, 1, 8, 63, 64, 65, 200, 4095, 4096, 70_000] {
            let src: Vec<u8> = (0..len + 3).map(|i| (i * 13) as u8).collect();
            let mut dst = vec![0u8; len + 3];
            // SAFETY: in bounds of two distinct vectors.
            unsafe { copy_bytes(src.as_ptr().add(3), dst.as_mut_ptr().add(1), len) };
            assert_eq!(&dst[1..1 + len], &src[3..]);
            // Overlapping: shift a buffer by 5 bytes within itself (memmove).
            let mut both: Vec<u8> = (0..len + 5).map(|i| i as u8).collect();
            let expected: Vec<u8> = both[..len].to_vec();
            let base = both.as_mut_ptr();
            // SAFETY: both ranges are inside `both`; `copy_bytes` allows overlap.
            unsafe { copy_bytes(base, base.add(5), len) };
            assert_eq!(&both[5..], &expected[..]);
        }
    }
}
