//! Put and get bandwidth at every size and at four placements of the two buffers, each
//! beside memcpy between the very same buffers (rank 0's buffer and its mapping of rank
//! 1's heap), so that a ratio compares the copy and nothing else.
//!
//! A placement is where the destination sits relative to the source within a 4 KiB page
//! (what decides which copy is fastest): `put_bw`/`get_bw` both page-aligned; `_ahead`
//! destination 256 bytes ahead (the 4K-aliasing case of `rep movsb`); `_behind` 256 bytes
//! behind; `_odd` one byte ahead (misaligned).

use gaspar::{GlobalAddr, Handle};

use super::{bw_iters, sizes, time_loop, Figures, MAX_SIZE};

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
    for (suffix, delta) in PLACEMENTS {
        let (src, dst) = offsets(delta);
        for size in sizes() {
            let n = size as usize;
            let iters = bw_iters(size);
            // put: local (source) to remote (destination).
            let target = at(dst);
            let put = time_loop(reps, iters, || {
                rt.put_blocking(target, &local[src..src + n]).expect("put");
            });
            figures.insert((format!("put_bw{suffix}"), size), put);
            // get: remote (source) to local (destination).
            let source = at(src);
            let get = time_loop(reps, iters, || {
                rt.get(&mut local[dst..dst + n], source, Handle::NULL)
                    .expect("get");
            });
            figures.insert((format!("get_bw{suffix}"), size), get);
            if let Some(mapped) = mapped {
                let local_at = local.as_mut_ptr() as usize;
                let memcpy = |from: usize, to: usize| {
                    time_loop(reps, iters, || {
                        // SAFETY: `from..from+n` and `to..to+n` are inside rank 0's buffer
                        // (`MAX_SIZE + SLACK` bytes) and rank 1's block mapped here
                        // (`mapped` covers `MAX_SIZE + SLACK / 2` bytes), one each, so
                        // disjoint; rank 1 does not touch its block while rank 0 measures
                        // (it waits in a barrier).
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                std::hint::black_box(from as *const u8),
                                std::hint::black_box(to as *mut u8),
                                n,
                            )
                        }
                    })
                };
                let memcpy_put = memcpy(local_at + src, mapped + dst);
                let memcpy_get = memcpy(mapped + src, local_at + dst);
                figures.insert((format!("memcpy_put_bw{suffix}"), size), memcpy_put);
                figures.insert((format!("memcpy_get_bw{suffix}"), size), memcpy_get);
            }
        }
    }
    Ok(())
}

/// Rank 0's page-aligned buffer inside `storage` (`MAX_SIZE + 2 * SLACK` bytes).
pub(super) fn page_aligned(storage: &mut [u8]) -> &mut [u8] {
    let start = storage.as_ptr().align_offset(4096);
    &mut storage[start..start + (MAX_SIZE + SLACK) as usize]
}
