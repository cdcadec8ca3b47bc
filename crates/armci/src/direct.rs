//! I/O vectors moved with plain loads and stores, when the target's heap is mapped in this
//! process (the shm transport): one pass over ARMCI's pointer arrays that checks and moves
//! each segment, no intermediate lists, which is what makes thousands of small segments
//! cheap.

use std::ffi::c_void;

/// A peer's heap as this process sees it.
#[derive(Clone, Copy)]
pub(crate) struct MappedHeap {
    /// The heap's base address in its owner's process (what ARMCI pointers are relative to).
    pub(crate) owner_base: usize,
    /// The heap's address in this process.
    pub(crate) here: usize,
    /// Its length in bytes.
    pub(crate) len: u64,
}

/// A segment that failed its check: its index. Segments before it have been moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BadSegment(pub(crate) usize);

impl MappedHeap {
    /// Copies `bytes` from each local `src[k]` to the heap at remote address `dst[k]`,
    /// in order, stopping at the first `dst[k]` whose bytes are not inside the heap or
    /// null `src[k]`.
    ///
    /// # Safety
    /// Each non-null `src[k]` has `bytes` readable bytes; the arrays have equal lengths.
    pub(crate) unsafe fn put(
        &self,
        src: &[*mut c_void],
        dst: &[*mut c_void],
        bytes: usize,
    ) -> Result<(), BadSegment> {
        // SAFETY: `moves` checks each remote address against the mapped heap and each
        // local pointer for null; readability is the caller's contract.
        unsafe {
            self.moves(dst, src, bytes, |remote, local| {
                (local as *const u8, remote)
            })
        }
    }

    /// Copies `bytes` from the heap at each remote address `src[k]` to local `dst[k]`, in
    /// order, stopping at the first bad segment (as [`put`](Self::put)).
    ///
    /// # Safety
    /// Each non-null `dst[k]` has `bytes` writable bytes; the arrays have equal lengths.
    pub(crate) unsafe fn get(
        &self,
        src: &[*mut c_void],
        dst: &[*mut c_void],
        bytes: usize,
    ) -> Result<(), BadSegment> {
        // SAFETY: as in `put`, with writability the caller's contract.
        unsafe {
            self.moves(src, dst, bytes, |remote, local| {
                (remote as *const u8, local)
            })
        }
    }

    /// Checks segment k (remote address inside the heap for `bytes`, local pointer not
    /// null) and moves it between `pair(remote here, local)` = (source, destination).
    ///
    /// # Safety
    /// The local pointers that are not null are valid for `bytes` as `pair` uses them.
    #[inline(always)]
    unsafe fn moves(
        &self,
        remote: &[*mut c_void],
        local: &[*mut c_void],
        bytes: usize,
        pair: impl Fn(*mut u8, *mut u8) -> (*const u8, *mut u8),
    ) -> Result<(), BadSegment> {
        let Some(last_start) = (self.len as usize).checked_sub(bytes) else {
            return if remote.is_empty() {
                Ok(())
            } else {
                Err(BadSegment(0))
            };
        };
        let (base, here) = (self.owner_base, self.here);
        let segments = remote.iter().zip(local).map(|(&r, &l)| {
            let offset = (r as usize).wrapping_sub(base);
            if offset > last_start || l.is_null() {
                return None;
            }
            Some(pair((here + offset) as *mut u8, l as *mut u8))
        });
        // SAFETY: only segments whose heap address has `bytes` inside the mapping and
        // whose local pointer is not null are moved; those are valid by the caller's
        // contract.
        unsafe {
            match bytes {
                4 => copy_fixed::<4>(segments),
                8 => copy_fixed::<8>(segments),
                16 => copy_fixed::<16>(segments),
                _ => {
                    for (k, segment) in segments.enumerate() {
                        let (s, d) = segment.ok_or(BadSegment(k))?;
                        std::ptr::copy(s, d, bytes);
                    }
                    Ok(())
                }
            }
        }
    }
}

/// Moves N bytes for each (source, destination) pair as one unaligned load and store (no
/// call per segment; the whole source is read before the destination is written, so
/// overlapping pairs end up as memmove would leave them). `None` is a bad segment: the
/// moves stop there.
///
/// # Safety
/// Every pair is readable / writable for N bytes.
#[inline(always)]
unsafe fn copy_fixed<const N: usize>(
    segments: impl Iterator<Item = Option<(*const u8, *mut u8)>>,
) -> Result<(), BadSegment> {
    for (k, segment) in segments.enumerate() {
        let (s, d) = segment.ok_or(BadSegment(k))?;
        // SAFETY: `s` readable and `d` writable for N bytes (caller's contract).
        unsafe {
            d.cast::<[u8; N]>()
                .write_unaligned(s.cast::<[u8; N]>().read_unaligned())
        };
    }
    Ok(())
}
