//! I/O vectors moved with plain loads and stores, when the target's heap is mapped in this
//! process (the shm transport): one pass over ARMCI's pointer arrays that checks and moves
//! each segment, no intermediate lists, which is what makes thousands of small segments
//! cheap. And how every array a C caller passes (strides, counts, pointers) is read:
//! [`CArray`].

use std::ffi::c_void;

/// An array a C caller passed, as a pointer and a count that were checked (not null, not
/// negative): read element by element with unaligned raw reads, never as a Rust slice,
/// which would assume alignment, and that no other process writes the memory (it may lie
/// in ARMCI memory) while the slice lives.
#[derive(Clone, Copy)]
pub(crate) struct CArray<T> {
    ptr: *const T,
    len: usize,
}

impl<T: Copy> CArray<T> {
    /// The `len` elements at `ptr`; `None` when `ptr` is null and `len` is not 0.
    ///
    /// # Safety
    /// A non-null `ptr` has `len` readable elements (the C caller's contract) for as long
    /// as the array is used.
    pub(crate) unsafe fn new(ptr: *const T, len: usize) -> Option<CArray<T>> {
        (len == 0 || !ptr.is_null()).then_some(CArray { ptr, len })
    }

    /// The number of elements.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Element `k` (panics past the end, which the callers never ask for).
    #[inline(always)]
    pub(crate) fn get(&self, k: usize) -> T {
        assert!(k < self.len, "C array index {k} out of {}", self.len);
        // SAFETY: `k < len` elements are readable (`new`'s contract); an unaligned read
        // makes no assumption about the caller's alignment.
        unsafe { self.ptr.add(k).read_unaligned() }
    }

    /// The elements in order.
    pub(crate) fn iter(self) -> impl Iterator<Item = T> {
        (0..self.len).map(move |k| self.get(k))
    }

    /// Where the array lies: its first byte and its length in bytes.
    pub(crate) fn bytes(&self) -> (*const c_void, u64) {
        (
            self.ptr.cast(),
            (self.len * std::mem::size_of::<T>()) as u64,
        )
    }
}

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
    /// The `len` bytes of this heap from `offset` on, as a heap of their own: transfers
    /// through it check their segments against that window.
    pub(crate) fn within(&self, offset: u64, len: u64) -> MappedHeap {
        MappedHeap {
            owner_base: self.owner_base + offset as usize,
            here: self.here + offset as usize,
            len: len.min(self.len.saturating_sub(offset)),
        }
    }

    /// Copies `bytes` from each local `src[k]` to the heap at remote address `dst[k]`,
    /// in order, stopping at the first `dst[k]` whose bytes are not inside the heap or
    /// null `src[k]`.
    ///
    /// # Safety
    /// Each non-null `src[k]` has `bytes` readable bytes; the arrays have equal lengths.
    pub(crate) unsafe fn put(
        &self,
        src: CArray<*mut c_void>,
        dst: CArray<*mut c_void>,
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
        src: CArray<*mut c_void>,
        dst: CArray<*mut c_void>,
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
        remote: CArray<*mut c_void>,
        local: CArray<*mut c_void>,
        bytes: usize,
        pair: impl Fn(*mut u8, *mut u8) -> (*const u8, *mut u8),
    ) -> Result<(), BadSegment> {
        let Some(last_start) = (self.len as usize).checked_sub(bytes) else {
            return if remote.len() == 0 {
                Ok(())
            } else {
                Err(BadSegment(0))
            };
        };
        // SAFETY: forwarded contract; each size is its own loop with its copy inlined.
        unsafe {
            match bytes {
                4 => self.moves_sized::<4>(remote, local, bytes, last_start, pair),
                8 => self.moves_sized::<8>(remote, local, bytes, last_start, pair),
                16 => self.moves_sized::<16>(remote, local, bytes, last_start, pair),
                _ => self.moves_sized::<0>(remote, local, bytes, last_start, pair),
            }
        }
    }

    /// [`moves`](Self::moves) for segments of N bytes (N = 0: of `bytes`, any size), four
    /// at a time: the four are checked together without branching, then moved; a block
    /// with a bad segment is finished one by one, up to the bad one.
    ///
    /// # Safety
    /// As [`moves`](Self::moves); `last_start = heap length - bytes`.
    #[inline(always)]
    unsafe fn moves_sized<const N: usize>(
        &self,
        remote: CArray<*mut c_void>,
        local: CArray<*mut c_void>,
        bytes: usize,
        last_start: usize,
        pair: impl Fn(*mut u8, *mut u8) -> (*const u8, *mut u8),
    ) -> Result<(), BadSegment> {
        let n = remote.len().min(local.len());
        let (base, here) = (self.owner_base, self.here);
        let bad = |r: *mut c_void, l: *mut c_void| {
            ((r as usize).wrapping_sub(base) > last_start) | l.is_null()
        };
        let move_one = |r: *mut c_void, l: *mut c_void| {
            let (s, d) = pair((here + (r as usize - base)) as *mut u8, l as *mut u8);
            // SAFETY: only called for segments that passed `bad`: the heap side has
            // `bytes` inside the mapping, the local side is valid (caller's contract).
            // A fixed-size move reads the whole source before writing, so overlapping
            // pairs end up as memmove would leave them.
            unsafe {
                if N == 0 {
                    std::ptr::copy(s, d, bytes)
                } else {
                    d.cast::<[u8; N]>()
                        .write_unaligned(s.cast::<[u8; N]>().read_unaligned())
                }
            }
        };
        const BLOCK: usize = 4;
        let mut k = 0;
        while k + BLOCK <= n {
            let r: [*mut c_void; BLOCK] = std::array::from_fn(|j| remote.get(k + j));
            let l: [*mut c_void; BLOCK] = std::array::from_fn(|j| local.get(k + j));
            if (0..BLOCK).fold(false, |any, j| any | bad(r[j], l[j])) {
                break;
            }
            for j in 0..BLOCK {
                move_one(r[j], l[j]);
            }
            k += BLOCK;
        }
        while k < n {
            let (r, l) = (remote.get(k), local.get(k));
            if bad(r, l) {
                return Err(BadSegment(k));
            }
            move_one(r, l);
            k += 1;
        }
        Ok(())
    }
}
