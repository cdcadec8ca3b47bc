//! Put and get bandwidth at every size and at four placements of the two buffers, each
//! beside memcpy between the very same buffers (rank 0's buffer and its mapping of rank
//! 1's heap), so that a ratio compares the copy and nothing else.
//!
//! A placement is where the destination sits relative to the source within a 4 KiB page
//! (what decides which copy is fastest): `put_bw`/`get_bw` both page-aligned; `_ahead`
//! destination 256 bytes ahead (the 4K-aliasing case of `rep movsb`); `_behind` 256 bytes
//! behind; `_odd` one byte ahead (misaligned).

use gaspar::{GlobalAddr, Handle};

use super::{bw_iters, sizes, time_loop, time_pair, Figures, MAX_SIZE};

/// Figure-name suffix and destination offset minus source offset.
const PLACEMENTS: [(&str, i64); 4] = [("", 0), ("_ahead", 256), ("_behind", -256), ("_odd", 1)];

/// Bytes each side needs beyond `MAX_SIZE`: page alignment plus the largest offset.
pub(super) const SLACK: u64 = 2 * 4096;

/// (source offset, destination offset) for a placement.
fn offsets(delta: i64) -> (usize, usize) {
    if delta >= 0 {
        (0, delta as usize)
    } else {
        (delta.unsigned_abs() as usize, 0)
    }
}

/// The buffers rank 0 measures with: its own page-aligned buffer and rank 1's heap block
/// from its first page boundary on.
pub(super) struct Buffers<'a> {
    /// Rank 0's buffer (`MAX_SIZE + SLACK` bytes from a page boundary).
    pub local: &'a mut [u8],
    /// Rank 1's block from a page boundary on (at least `MAX_SIZE + SLACK / 2` bytes).
    pub remote: GlobalAddr,
    /// This process's address of `remote`, where plain stores reach it (shm).
    pub mapped: Option<usize>,
}

/// Rank 0 times puts and gets (and memcpy where `mapped`) at every size and placement:
/// figures `put_bw{suffix}`, `get_bw{suffix}` and `memcpy_put_bw{suffix}`, ...
pub(super) fn measure(
    rt: &gaspar::strided::Strided,
    buffers: Buffers<'_>,
    reps: u32,
    figures: &mut Figures,
) -> gaspar::Result<()> {
    let Buffers {
        local,
        remote,
        mapped,
    } = buffers;
    let at = |offset: usize| remote.offset(offset as u64).expect("inside the block");
    // Every access to rank 0's buffer below goes through this pointer (the puts' and gets'
    // slices are made from it call by call), so that memcpy may write where a get's slice
    // was: `local` itself is not used again.
    let (base, len) = (local.as_mut_ptr(), local.len());
    let slice = |offset: usize, n: usize| -> &mut [u8] {
        assert!(offset + n <= len, "inside rank 0's buffer");
        // SAFETY: `offset + n <= len` bytes of `local`, which this function borrows
        // mutably throughout; each slice lives for one put or get, and none is alive while
        // another slice or a memcpy touches the buffer (one operation at a time).
        unsafe { std::slice::from_raw_parts_mut(base.add(offset), n) }
    };
    for (suffix, delta) in PLACEMENTS {
        let (src, dst) = offsets(delta);
        for size in sizes() {
            let n = size as usize;
            let iters = bw_iters(size);
            // put: local (source) to remote (destination); get: remote (source) to local
            // (destination).
            let (target, source) = (at(dst), at(src));
            let put = || rt.put_blocking(target, slice(src, n)).expect("put");
            let get = || {
                rt.get(slice(dst, n), source, Handle::NULL).expect("get");
            };
            let Some(mapped) = mapped else {
                figures.insert(
                    (format!("put_bw{suffix}"), size),
                    time_loop(reps, iters, put),
                );
                figures.insert(
                    (format!("get_bw{suffix}"), size),
                    time_loop(reps, iters, get),
                );
                continue;
            };
            // memcpy between the very same buffers, its repetitions alternated with
            // gaspar's, so that a slow spell of this noisy machine hits both.
            let memcpy = |from: usize, to: usize| {
                move || {
                    // SAFETY: `from..from+n` and `to..to+n` are inside rank 0's buffer
                    // (`MAX_SIZE + SLACK` bytes from `base`) and rank 1's block mapped here
                    // (`mapped` covers `MAX_SIZE + SLACK / 2` bytes), one each, so
                    // disjoint; rank 1 does not touch its block while rank 0 measures (it
                    // waits in a barrier), and no slice of the buffer is alive meanwhile.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            std::hint::black_box(from as *const u8),
                            std::hint::black_box(to as *mut u8),
                            n,
                        )
                    }
                }
            };
            let local_at = base as usize;
            let (put, memcpy_put) =
                time_pair(reps, iters, put, memcpy(local_at + src, mapped + dst));
            let (get, memcpy_get) =
                time_pair(reps, iters, get, memcpy(mapped + src, local_at + dst));
            figures.insert((format!("put_bw{suffix}"), size), put);
            figures.insert((format!("get_bw{suffix}"), size), get);
            figures.insert((format!("memcpy_put_bw{suffix}"), size), memcpy_put);
            figures.insert((format!("memcpy_get_bw{suffix}"), size), memcpy_get);
        }
    }
    Ok(())
}

/// Rank 0's page-aligned buffer inside `storage` (`MAX_SIZE + 2 * SLACK` bytes).
pub(super) fn page_aligned(storage: &mut [u8]) -> &mut [u8] {
    let start = storage.as_ptr().align_offset(4096);
    &mut storage[start..start + (MAX_SIZE + SLACK) as usize]
}
