//! The runtime behind the C interface, address translation, and error reporting.

use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};

use crate::direct::{CArray, MappedHeap};
use crate::msg::Channel;
use gaspar::gmem::Segment;
use gaspar::strided::Strided;
use gaspar::strided::{Descriptor, Side};
use gaspar::{GlobalAddr, SymmetricAlloc};

/// `armci_hdl_t`: two ints holding gaspar's 64-bit operation handle.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Handle {
    /// Low 32 bits of the gaspar handle.
    pub target: c_int,
    /// High 32 bits of the gaspar handle.
    pub aggregate: c_int,
}

impl Handle {
    pub(crate) fn set(&mut self, h: gaspar::Handle) {
        let bits = h.to_bits();
        self.target = bits as u32 as c_int;
        self.aggregate = (bits >> 32) as u32 as c_int;
    }

    pub(crate) fn get(&self) -> gaspar::Handle {
        gaspar::Handle::from_bits(
            u64::from(self.target as u32) | (u64::from(self.aggregate as u32) << 32),
        )
    }
}

/// Everything ARMCI keeps between calls.
pub(crate) struct State {
    pub(crate) rt: Strided,
    /// Each rank's heap base address, in its own process.
    heap_bases: Vec<usize>,
    /// Where each rank's heap is mapped in this process, when plain loads and stores reach
    /// it (every rank's on the shm transport, only this one's on mpi).
    heap_mapped: Vec<Option<usize>>,
    /// Whether every transfer is complete when its call returns (the shm transport): then
    /// plain loads and stores to a mapped heap need not wait for earlier transfers.
    complete_at_issue: bool,
    heap_len: u64,
    /// The heaps as mapped here: memory other processes may write.
    shared: SharedRanges,
    /// Live `ARMCI_Malloc` blocks, in allocation order.
    pub(crate) blocks: Mutex<Vec<SymmetricAlloc>>,
    /// The ARMCI memory of every rank (world and group blocks alike): per rank, heap
    /// offset -> bytes that rank asked for. Remote addresses are checked against it.
    live_blocks: RwLock<Vec<BTreeMap<u64, u64>>>,
    /// Per rank, the live block the last address translation ([`State::heap_offsets`])
    /// found, packed by [`pack_block`] (0: none); all cleared when a block is freed. A
    /// program that puts to the same patch call after call is checked without a lock.
    last_block: Vec<AtomicU64>,
    /// The world group's communicator (see `group_comm`).
    pub(crate) world_comm: crate::group_comm::Comm,
    /// Mutexes from `ARMCI_Create_mutexes`.
    pub(crate) mutexes: Mutex<Option<std::sync::Arc<crate::mutex::MutexSet>>>,
    /// Mailboxes of `armci_msg_snd`/`rcv`.
    pub(crate) messages: Channel,
}

static STATE: AtomicPtr<State> = AtomicPtr::new(std::ptr::null_mut());

/// The state, or a one-line message and exit when ARMCI is not initialized.
pub(crate) fn state(call: &str) -> &'static State {
    let ptr = STATE.load(Ordering::Acquire);
    if ptr.is_null() {
        eprintln!("gaspar armci: {call} called before ARMCI_Init (or after ARMCI_Finalize)");
        std::process::exit(1);
    }
    // SAFETY: the pointer comes from Box::into_raw in `initialize` and is freed only by
    // `finalize`, which ARMCI programs call last (calls after it see null above).
    unsafe { &*ptr }
}

pub(crate) fn is_initialized() -> bool {
    !STATE.load(Ordering::Acquire).is_null()
}

pub(crate) fn initialize() -> Result<(), String> {
    if is_initialized() {
        return Ok(());
    }
    let rt = gaspar::init().map_err(|e| e.to_string())?.into_acp();
    #[cfg(not(feature = "mpi"))]
    if let Some(what) = crate::mpi_guard::mismatch(rt.procs()) {
        rt.abort(&format!("ARMCI_Init: {what}"));
    }
    let procs = rt.procs() as usize;
    let my_base = rt
        .local_address(GlobalAddr::new(rt.rank(), 0, Segment::Heap, 0).expect("rank fits"))
        .map_err(|e| e.to_string())?;
    let mut heap_bases = vec![0u64; procs];
    rt.exchange_u64(crate::setup::tag::INIT, my_base as u64, &mut heap_bases)
        .map_err(|e| e.to_string())?;
    let messages = Channel::open(&rt).map_err(|e| e.to_string())?;
    let heap_mapped = (0..procs as u32)
        .map(|r| {
            let start = GlobalAddr::new(r, 0, Segment::Heap, 0).expect("rank fits");
            rt.mapped_address(start, rt.heap_len())
        })
        .collect::<gaspar::Result<Vec<_>>>()
        .map_err(|e| e.to_string())?;
    let shared = SharedRanges::new(
        (0..procs as u32)
            .filter_map(|r| heap_mapped[r as usize].map(|here| (here, rt.heap_len(), r))),
    );
    let state = State {
        shared,
        heap_mapped,
        complete_at_issue: rt.transport_name() == "shm",
        heap_len: rt.heap_len(),
        heap_bases: heap_bases.into_iter().map(|b| b as usize).collect(),
        rt,
        blocks: Mutex::new(Vec::new()),
        live_blocks: RwLock::new(vec![BTreeMap::new(); procs]),
        last_block: (0..procs).map(|_| AtomicU64::new(0)).collect(),
        mutexes: Mutex::new(None),
        world_comm: crate::group_comm::world(),
        messages,
    };
    STATE.store(Box::into_raw(Box::new(state)), Ordering::Release);
    Ok(())
}

pub(crate) fn finalize() -> Result<(), String> {
    let ptr = STATE.swap(std::ptr::null_mut(), Ordering::AcqRel);
    if ptr.is_null() {
        return Ok(());
    }
    // SAFETY: `ptr` came from Box::into_raw in `initialize`, and the swap above made this
    // the only owner.
    let state = unsafe { Box::from_raw(ptr) };
    crate::group_comm::free(state.world_comm);
    state.rt.finalize().map_err(|e| e.to_string())
}

/// Copies `len` bytes at `src` into a new private buffer through raw pointers: no
/// reference ever covers the memory, which other processes may be writing.
///
/// # Safety
/// `len` bytes at `src` are readable.
unsafe fn copy_out(src: *const u8, len: usize) -> Vec<u8> {
    let mut copy = Vec::with_capacity(len);
    // SAFETY: `len` readable bytes at `src` (caller's contract) go into the spare capacity
    // of `copy`, a different allocation; the length then covers exactly those bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(src, copy.as_mut_ptr(), len);
        copy.set_len(len);
    }
    copy
}

/// How a local buffer lies with respect to the memory of this process that other
/// processes may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Overlap {
    /// Private memory (or no bytes at all).
    None,
    /// Wholly inside rank `rank`'s heap, `offset` bytes into it.
    Inside { rank: u32, offset: u64 },
    /// Partly inside a heap, or across more than one.
    Partial,
}

/// The memory of this process that other processes may write: where the heaps are
/// mapped here — this rank's own, which peers write through transfers (on mpi, through
/// the window), and on the shm transport every rank's, which their processes store to
/// directly. ARMCI hands out no other such memory (`ARMCI_Malloc` and `ARMCI_Malloc_group`
/// take the heap; gaspar's starter memory is not reachable through ARMCI).
#[derive(Debug)]
pub(crate) struct SharedRanges {
    /// Disjoint, sorted by start.
    ranges: Vec<SharedRange>,
    /// The first range's start and the last one's end (`usize::MAX` and 0 when there
    /// are none): one test of both keeps private buffers at two comparisons.
    start: usize,
    end: usize,
}

#[derive(Debug, Clone, Copy)]
struct SharedRange {
    start: usize,
    end: usize,
    rank: u32,
}

impl SharedRanges {
    /// The ranges from `(address here, length, rank)` triples; empty ones are left out.
    pub(crate) fn new(mapped: impl IntoIterator<Item = (usize, u64, u32)>) -> Self {
        let mut ranges: Vec<SharedRange> = mapped
            .into_iter()
            .filter(|&(_, len, _)| len > 0)
            .map(|(start, len, rank)| SharedRange {
                start,
                end: start.saturating_add(len as usize),
                rank,
            })
            .collect();
        ranges.sort_by_key(|r| r.start);
        Self {
            start: ranges.first().map_or(usize::MAX, |r| r.start),
            end: ranges.last().map_or(0, |r| r.end),
            ranges,
        }
    }

    /// How the `len` bytes at address `ptr` lie (see [`Overlap`]).
    #[inline]
    pub(crate) fn overlap(&self, ptr: usize, len: u64) -> Overlap {
        let end = ptr.saturating_add(usize::try_from(len).unwrap_or(usize::MAX));
        if ptr >= self.end || end <= self.start || len == 0 {
            return Overlap::None;
        }
        self.overlap_slow(ptr, end)
    }

    #[inline(never)]
    fn overlap_slow(&self, ptr: usize, end: usize) -> Overlap {
        let i = self.ranges.partition_point(|r| r.end <= ptr);
        match self.ranges.get(i) {
            Some(r) if r.start < end => {
                if r.start <= ptr && end <= r.end {
                    Overlap::Inside {
                        rank: r.rank,
                        offset: (ptr - r.start) as u64,
                    }
                } else {
                    Overlap::Partial
                }
            }
            _ => Overlap::None,
        }
    }
}

/// Bytes the caller lent to one ARMCI call, to read.
pub(crate) enum LocalBytes<'a> {
    /// Private memory, borrowed in place.
    Borrowed(&'a [u8]),
    /// Memory other processes may write, copied out when the call began.
    Copied(Vec<u8>),
}

impl std::ops::Deref for LocalBytes<'_> {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            LocalBytes::Borrowed(bytes) => bytes,
            LocalBytes::Copied(bytes) => bytes,
        }
    }
}

/// Bytes the caller lent to one ARMCI call, to write (and read).
///
/// Memory other processes may write is never borrowed: the call works on a private copy
/// (a bounce buffer) and [`write_back`](Self::write_back) stores it with raw copies. The
/// write-back is an explicit call, not `Drop`, so that a call that stops part-way (an
/// error ends the job; a panic unwinds to the hook that ends it) never stores a partial
/// result.
pub(crate) enum LocalBytesMut<'a> {
    /// Private memory, borrowed in place: writes land directly.
    Borrowed(&'a mut [u8]),
    /// Memory other processes may write: a private copy, and where it goes back.
    Bounced {
        buffer: Vec<u8>,
        dst: *mut u8,
        lent: std::marker::PhantomData<&'a mut [u8]>,
    },
}

impl LocalBytesMut<'_> {
    /// Stores every byte in the caller's memory (nothing to do when borrowed).
    #[inline]
    pub(crate) fn write_back(self) {
        let LocalBytesMut::Bounced { buffer, dst, .. } = self else {
            return;
        };
        // SAFETY: `buffer` mirrors the caller's bytes at `dst` one for one, so as many are
        // writable there (the contract under which `lend_mut` made this guard, for the
        // call's duration); a raw copy, so no reference covers the shared memory.
        unsafe { std::ptr::copy_nonoverlapping(buffer.as_ptr(), dst, buffer.len()) };
    }
}

impl std::ops::Deref for LocalBytesMut<'_> {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            LocalBytesMut::Borrowed(bytes) => bytes,
            LocalBytesMut::Bounced { buffer, .. } => buffer,
        }
    }
}

impl std::ops::DerefMut for LocalBytesMut<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            LocalBytesMut::Borrowed(bytes) => bytes,
            LocalBytesMut::Bounced { buffer, .. } => buffer,
        }
    }
}

impl State {
    /// Ends the job with a one-line message naming the call.
    pub(crate) fn fail(&self, call: &str, what: impl std::fmt::Display) -> ! {
        self.rt.abort(&format!("{call}: {what}"))
    }

    /// Unwraps a gaspar result or ends the job.
    pub(crate) fn check<T>(&self, call: &str, result: gaspar::Result<T>) -> T {
        result.unwrap_or_else(|e| self.fail(call, e))
    }

    /// The global address of the `len` bytes at `ptr`, which must lie inside one live
    /// block of rank `proc`'s ARMCI memory.
    pub(crate) fn remote(
        &self,
        call: &str,
        ptr: *const c_void,
        len: u64,
        proc: c_int,
    ) -> GlobalAddr {
        // `heap_offsets` checked the rank.
        let offset = self.heap_offsets(call, proc)(ptr, len);
        GlobalAddr::new(proc as u32, 0, Segment::Heap, offset)
            .unwrap_or_else(|| self.fail(call, "address does not fit"))
    }

    /// Translates the `len` bytes at an address of rank `proc`'s ARMCI memory to a heap
    /// offset, checking that they lie inside one live `ARMCI_Malloc` block of that rank
    /// (a lock and an O(log n) lookup each, unless the rank's last block holds them; the
    /// rank is checked once), before anything moves.
    pub(crate) fn heap_offsets<'a>(
        &'a self,
        call: &'a str,
        proc: c_int,
    ) -> impl Fn(*const c_void, u64) -> u64 + 'a {
        let rank = self.rank_of(call, proc) as usize;
        let base = self.heap_bases[rank];
        // The block the last translation to this rank found: a vector's segments mostly
        // lie in one block, and a program puts to the same patch call after call; the lock
        // and the tree lookup cost more than the copy of a small segment.
        let cached = &self.last_block[rank];
        move |ptr, len| {
            let offset = (ptr as usize).wrapping_sub(base) as u64;
            if in_cached_block(cached, offset, len) {
                return offset;
            }
            self.find_block(call, proc, rank, (ptr, len), offset)
        }
    }

    /// The rest of [`heap_offsets`](Self::heap_offsets) when the cached block does not
    /// hold the bytes: out of line, so that the cached case stays small.
    #[inline(never)]
    fn find_block(
        &self,
        call: &str,
        proc: c_int,
        rank: usize,
        (ptr, len): (*const c_void, u64),
        offset: u64,
    ) -> u64 {
        if let Err(block) = self.look_up_block(rank, offset, len) {
            let why = match block {
                Some((start, block_len)) => format!(
                    "runs past the end of the block of {block_len} bytes at {:p}",
                    (self.heap_bases[rank] + start as usize) as *const c_void
                ),
                None => "no live block is there".to_string(),
            };
            self.fail(
                call,
                format!(
                    "address {ptr:p} + {len} bytes is not inside ARMCI_Malloc memory of \
                     rank {proc}: {why}"
                ),
            );
        }
        offset
    }

    /// Whether the `len` bytes at heap offset `offset` of `rank` lie inside one live
    /// block, looked up under the lock (and then cached as the rank's last block); on
    /// failure, the block that holds `offset`, if any.
    fn look_up_block(&self, rank: usize, offset: u64, len: u64) -> Result<(), Option<(u64, u64)>> {
        let live = self.live_blocks.read().unwrap_or_else(|p| p.into_inner());
        let block = live[rank]
            .range(..=offset)
            .next_back()
            .filter(|(&start, &block_len)| offset - start < block_len.max(1))
            .map(|(&start, &block_len)| (start, block_len));
        match block {
            Some((start, block_len))
                if offset
                    .checked_add(len)
                    .is_some_and(|end| end <= start + block_len) =>
            {
                self.last_block[rank].store(pack_block(start, block_len), Ordering::Release);
                Ok(())
            }
            _ => Err(block),
        }
    }

    /// Checks that the `bytes` at each of `remotes` (addresses of rank `proc`'s ARMCI
    /// memory) lie inside a live block, ending the job at the first that does not: first
    /// the span from the lowest to the end of the highest against one block (an I/O
    /// vector mostly lies in one array: one lookup then covers every segment, where a
    /// check per segment cost a quarter of a vector of 8-byte segments), then, when no
    /// block holds the span, each segment on its own (they may lie in several blocks).
    /// Returns the span (heap offset, length) when one block holds it, `None` when the
    /// segments were checked one by one.
    pub(crate) fn check_remote_segments(
        &self,
        call: &str,
        proc: c_int,
        remotes: CArray<*mut c_void>,
        bytes: u64,
    ) -> Option<(u64, u64)> {
        let offset_of = self.heap_offsets(call, proc);
        let (mut lowest, mut highest) = (usize::MAX, 0usize);
        for k in 0..remotes.len() {
            let p = remotes.get(k) as usize;
            lowest = lowest.min(p);
            highest = highest.max(p);
        }
        if remotes.len() == 0 {
            return Some((0, 0));
        }
        let rank = self.rank_of(call, proc) as usize;
        let start = (lowest.wrapping_sub(self.heap_bases[rank])) as u64;
        let span = ((highest - lowest) as u64).checked_add(bytes);
        if let Some(span) = span.filter(|&span| self.look_up_span(rank, start, span)) {
            return Some((start, span));
        }
        for k in 0..remotes.len() {
            offset_of(remotes.get(k), bytes);
        }
        None
    }

    /// Whether the `len` bytes at heap offset `offset` of `rank` lie inside one live block
    /// (the cached one first), without ending the job.
    fn look_up_span(&self, rank: usize, offset: u64, len: u64) -> bool {
        in_cached_block(&self.last_block[rank], offset, len)
            || self.look_up_block(rank, offset, len).is_ok()
    }

    /// Records a live block of `len` bytes at heap offset `offset` of `rank` (ARMCI_Malloc
    /// and ARMCI_Malloc_group, for every rank that got a block).
    pub(crate) fn add_block(&self, rank: u32, offset: u64, len: u64) {
        let mut live = self.live_blocks.write().unwrap_or_else(|p| p.into_inner());
        live[rank as usize].insert(offset, len);
    }

    /// Forgets the block at heap offset `offset` of `rank` (ARMCI_Free, ARMCI_Free_group).
    pub(crate) fn remove_block(&self, rank: u32, offset: u64) {
        let mut live = self.live_blocks.write().unwrap_or_else(|p| p.into_inner());
        live[rank as usize].remove(&offset);
        // Under the write lock: a translation that missed cannot store the freed block
        // back after this (it looks up and stores under the read lock).
        for last in &self.last_block {
            last.store(0, Ordering::Release);
        }
    }

    /// The heap offset of `address` in rank `rank`'s process.
    pub(crate) fn heap_offset_of(&self, rank: u32, address: usize) -> u64 {
        address.wrapping_sub(self.heap_bases[rank as usize]) as u64
    }

    /// Whether a strided transfer to a mapped heap may move with plain loads and stores:
    /// every transfer is complete when its call returns (the shm transport, so none can be
    /// overtaken), and the buffered method is not forced.
    pub(crate) fn loads_and_stores_suffice(&self) -> bool {
        self.complete_at_issue && self.rt.policy() != gaspar::strided::Policy::Buffered
    }

    /// For a strided transfer between the `local_len` bytes at `local` and the
    /// `remote_len` bytes at `remote` (rank `proc`'s ARMCI memory) that may move with
    /// plain loads and stores ([`loads_and_stores_suffice`](Self::loads_and_stores_suffice),
    /// the target's heap mapped here, `local` not null and private to this process): the
    /// address here of the remote bytes, checked against the target's live blocks (a bad
    /// one ends the job). `None`: the transfer takes gaspar's path.
    pub(crate) fn mapped_target(
        &self,
        call: &str,
        proc: c_int,
        (local, local_len): (*const c_void, u64),
        (remote, remote_len): (*const c_void, u64),
    ) -> Option<usize> {
        if !self.loads_and_stores_suffice() {
            return None;
        }
        let here = self.heap_mapped[self.rank_of(call, proc) as usize]?;
        if local.is_null() || self.sharing(local, local_len) != Overlap::None {
            return None;
        }
        Some(here + self.heap_offsets(call, proc)(remote, remote_len) as usize)
    }

    /// Rank `proc`'s heap, when this process can load and store it directly.
    pub(crate) fn mapped_heap(&self, call: &str, proc: c_int) -> Option<MappedHeap> {
        let rank = self.rank_of(call, proc) as usize;
        self.heap_mapped[rank].map(|here| MappedHeap {
            owner_base: self.heap_bases[rank],
            here,
            len: self.heap_len,
        })
    }

    /// The start of rank `proc`'s heap.
    pub(crate) fn heap_start(&self, call: &str, proc: c_int) -> GlobalAddr {
        let rank = self.rank_of(call, proc);
        GlobalAddr::new(rank, 0, Segment::Heap, 0).unwrap_or_else(|| self.fail(call, "rank"))
    }

    /// Rank `proc`, checked.
    pub(crate) fn rank_of(&self, call: &str, proc: c_int) -> u32 {
        match u32::try_from(proc) {
            Ok(r) if r < self.rt.procs() => r,
            _ => self.fail(
                call,
                format!(
                    "rank {proc} is out of range: the job has {} ranks",
                    self.rt.procs()
                ),
            ),
        }
    }

    /// This process's address of byte `offset` of its own heap.
    pub(crate) fn own_heap_address(&self, offset: u64) -> usize {
        self.heap_bases[self.rt.rank() as usize] + offset as usize
    }

    /// This rank's address of `block` on `rank`.
    pub(crate) fn address_of(&self, block: &SymmetricAlloc, rank: u32) -> *mut c_void {
        (self.heap_bases[rank as usize] + block.heap_offset() as usize) as *mut c_void
    }

    /// Byte count from a C int, checked.
    pub(crate) fn len(&self, call: &str, n: c_int) -> u64 {
        u64::try_from(n).unwrap_or_else(|_| self.fail(call, format!("negative size {n}")))
    }

    /// Where `len` bytes at `ptr` lie: in private memory, or (partly) in memory that other
    /// processes may write. Two comparisons for a buffer outside every mapped heap.
    #[inline]
    pub(crate) fn sharing(&self, ptr: *const c_void, len: u64) -> Overlap {
        self.shared.overlap(ptr as usize, len)
    }

    /// The global address of `offset` in rank `rank`'s heap, for a local buffer that lies
    /// inside that heap as mapped here (see [`Overlap::Inside`]).
    pub(crate) fn heap_address(&self, call: &str, rank: u32, offset: u64) -> GlobalAddr {
        GlobalAddr::new(rank, 0, Segment::Heap, offset)
            .unwrap_or_else(|| self.fail(call, "heap address does not fit"))
    }

    /// `len` bytes at `ptr` in this process, to read during the call: borrowed in place
    /// when private, copied out when other processes may write them.
    ///
    /// # Safety
    /// ARMCI's contract: `ptr` points to `len` readable bytes that stay valid for the call.
    #[inline]
    pub(crate) unsafe fn local<'a>(
        &self,
        call: &str,
        ptr: *const c_void,
        len: u64,
    ) -> LocalBytes<'a> {
        // SAFETY: forwarded contract.
        unsafe { self.lend(call, ptr, len, self.sharing(ptr, len)) }
    }

    /// [`local`](Self::local) when the caller has already asked [`sharing`](Self::sharing).
    ///
    /// # Safety
    /// As [`local`](Self::local); `overlap` is `self.sharing(ptr, len)`.
    #[inline]
    pub(crate) unsafe fn lend<'a>(
        &self,
        call: &str,
        ptr: *const c_void,
        len: u64,
        overlap: Overlap,
    ) -> LocalBytes<'a> {
        if len == 0 {
            return LocalBytes::Borrowed(&[]);
        }
        if ptr.is_null() {
            self.fail(call, "null local buffer");
        }
        if overlap == Overlap::None {
            // SAFETY: the caller's contract; non-null checked; no other process writes
            // these bytes (they lie outside every mapped heap).
            return LocalBytes::Borrowed(unsafe {
                std::slice::from_raw_parts(ptr as *const u8, len as usize)
            });
        }
        // SAFETY: forwarded contract (`len` readable bytes at `ptr`).
        LocalBytes::Copied(unsafe { copy_out(ptr as *const u8, len as usize) })
    }

    /// `len` writable bytes at `ptr` in this process: borrowed in place when private; when
    /// other processes may write them, a private copy that
    /// [`LocalBytesMut::write_back`] stores there once the call's data is complete.
    ///
    /// # Safety
    /// ARMCI's contract: `ptr` points to `len` writable bytes, not aliased during the call.
    #[inline]
    pub(crate) unsafe fn local_mut<'a>(
        &self,
        call: &str,
        ptr: *mut c_void,
        len: u64,
    ) -> LocalBytesMut<'a> {
        // SAFETY: forwarded contract.
        unsafe { self.lend_mut(call, ptr, len, self.sharing(ptr, len)) }
    }

    /// [`local_mut`](Self::local_mut) when the caller has already asked
    /// [`sharing`](Self::sharing).
    ///
    /// # Safety
    /// As [`local_mut`](Self::local_mut); `overlap` is `self.sharing(ptr, len)`.
    #[inline]
    pub(crate) unsafe fn lend_mut<'a>(
        &self,
        call: &str,
        ptr: *mut c_void,
        len: u64,
        overlap: Overlap,
    ) -> LocalBytesMut<'a> {
        if len == 0 {
            return LocalBytesMut::Borrowed(&mut []);
        }
        if ptr.is_null() {
            self.fail(call, "null local buffer");
        }
        if overlap == Overlap::None {
            // SAFETY: the caller's contract; non-null checked; no other process writes
            // these bytes (they lie outside every mapped heap).
            return LocalBytesMut::Borrowed(unsafe {
                std::slice::from_raw_parts_mut(ptr as *mut u8, len as usize)
            });
        }
        LocalBytesMut::Bounced {
            // SAFETY: the caller's contract (`len` readable bytes at `ptr`).
            buffer: unsafe { copy_out(ptr as *const u8, len as usize) },
            dst: ptr as *mut u8,
            lent: std::marker::PhantomData,
        }
    }

    /// Runs `f` on the strided descriptor of ARMCI's C arrays: one of the two this thread
    /// keeps for its most recent shapes when it holds them, else the older of the two
    /// refilled in place (a descriptor is ~400 bytes, and building, moving and unwrapping
    /// a new one per call cost half of a small strided transfer).
    ///
    /// # Safety
    /// `count` has `levels + 1` entries and each stride array `levels` (may be null when
    /// `levels` is 0).
    pub(crate) unsafe fn with_descriptor<R>(
        &self,
        call: &str,
        (src_strides, dst_strides, count): (*const c_int, *const c_int, *const c_int),
        levels: c_int,
        f: impl FnOnce(&Descriptor) -> R,
    ) -> R {
        let levels = usize::try_from(levels)
            .unwrap_or_else(|_| self.fail(call, format!("negative stride_levels {levels}")));
        if levels > gaspar::strided::MAX_STRIDE_LEVELS {
            self.fail(
                call,
                format!(
                    "{levels} stride levels; at most {} are supported",
                    gaspar::strided::MAX_STRIDE_LEVELS
                ),
            );
        }
        /// The shapes of this thread's last strided calls: two, because a program that
        /// gets a patch and puts it back alternates two (the strides swap sides).
        struct RecentShapes {
            descriptors: [Descriptor; 2],
            /// The one a new shape replaces.
            next: usize,
        }
        thread_local! {
            static RECENT: std::cell::RefCell<RecentShapes> = const {
                std::cell::RefCell::new(RecentShapes {
                    descriptors: [Descriptor::ONE_BYTE, Descriptor::ONE_BYTE],
                    next: 0,
                })
            };
        }
        RECENT.with(|cell| {
            let recent = &mut *cell.borrow_mut();
            // Programs repeat their shapes (an ARMCI code puts the same patch call after
            // call): the C arrays are compared with the recent descriptors in place, and
            // read, checked and stored only when neither holds them.
            let arrays = (src_strides, dst_strides, count);
            let found = recent.descriptors.iter().position(|desc| {
                // SAFETY: forwarded contract.
                unsafe { holds(desc, arrays, levels) }
            });
            let k = found.unwrap_or_else(|| {
                let k = recent.next;
                recent.next = 1 - k;
                // SAFETY: forwarded contract; `levels` was checked against the maximum.
                unsafe { self.refill(call, &mut recent.descriptors[k], arrays, levels) };
                k
            });
            f(&recent.descriptors[k])
        })
    }

    /// Reads ARMCI's C arrays into `desc`, ending the job over a null array, a negative
    /// entry or a shape `Descriptor::set` refuses.
    ///
    /// # Safety
    /// As [`with_descriptor`](Self::with_descriptor); `levels` at most
    /// `MAX_STRIDE_LEVELS`.
    #[inline(never)]
    unsafe fn refill(
        &self,
        call: &str,
        desc: &mut Descriptor,
        (src_strides, dst_strides, count): (*const c_int, *const c_int, *const c_int),
        levels: usize,
    ) {
        const MAX: usize = gaspar::strided::MAX_STRIDE_LEVELS + 1;
        let read = |ptr: *const c_int, n: usize, what: &str, out: &mut [u64; MAX]| {
            if n > 0 && ptr.is_null() {
                self.fail(call, format!("null {what} array"));
            }
            for (k, o) in out[..n].iter_mut().enumerate() {
                // SAFETY: the caller's contract: `n` readable ints at a non-null `ptr`
                // (checked above); an unaligned read assumes nothing of their alignment.
                let v = unsafe { ptr.add(k).read_unaligned() };
                *o = u64::try_from(v)
                    .unwrap_or_else(|_| self.fail(call, format!("negative {what} entry {v}")));
            }
        };
        let (mut c, mut src, mut dst) = ([0u64; MAX], [0u64; MAX], [0u64; MAX]);
        read(count, levels + 1, "count", &mut c);
        read(src_strides, levels, "source stride", &mut src);
        read(dst_strides, levels, "destination stride", &mut dst);
        self.check(
            call,
            desc.set(&c[..=levels], &src[..levels], &dst[..levels]),
        );
    }
}

/// Whether `desc` was set from C arrays equal to these (false for a null array or a
/// negative entry, which [`State::refill`] then reports).
///
/// # Safety
/// As [`State::with_descriptor`].
unsafe fn holds(
    desc: &Descriptor,
    (src_strides, dst_strides, count): (*const c_int, *const c_int, *const c_int),
    levels: usize,
) -> bool {
    let same = |ptr: *const c_int, stored: &[u64]| {
        stored.is_empty()
            || (!ptr.is_null()
                && stored.iter().enumerate().all(|(k, &x)| {
                    // SAFETY: the caller's contract: `stored.len()` (`levels` or
                    // `levels + 1`) readable ints at a non-null `ptr`.
                    let v = unsafe { ptr.add(k).read_unaligned() };
                    u64::try_from(v) == Ok(x)
                }))
    };
    desc.levels() == levels
        && same(count, desc.count())
        && same(src_strides, desc.strides(Side::Src))
        && same(dst_strides, desc.strides(Side::Dst))
}

/// A live block (heap offset, length) as one word for [`State::last_block`]: the offset in
/// 64-byte units above, the length below; 0 when it does not fit (never cached).
fn pack_block(start: u64, len: u64) -> u64 {
    match (
        start % 64 == 0,
        u32::try_from(start / 64),
        u32::try_from(len),
    ) {
        (true, Ok(units), Ok(len)) if len > 0 => (u64::from(units) << 32) | u64::from(len),
        _ => 0,
    }
}

/// Whether the `len` bytes at heap offset `offset` lie inside the block `cached` holds
/// (one of [`State::last_block`]).
#[inline]
fn in_cached_block(cached: &AtomicU64, offset: u64, len: u64) -> bool {
    unpack_block(cached.load(Ordering::Acquire)).is_some_and(|(start, block_len)| {
        let into = offset.wrapping_sub(start);
        into < block_len && len <= block_len - into
    })
}

/// The block [`pack_block`] packed, if any.
fn unpack_block(packed: u64) -> Option<(u64, u64)> {
    (packed != 0).then(|| ((packed >> 32) * 64, packed & u64::from(u32::MAX)))
}

#[cfg(test)]
mod tests {
    use super::{Overlap, SharedRanges};

    /// Two heaps of 0x1000 bytes, given out of order, with a gap between them.
    fn two_heaps() -> SharedRanges {
        SharedRanges::new([(0x30_000, 0x1000, 1), (0x10_000, 0x1000, 0)])
    }

    #[test]
    fn buffers_outside_every_heap_are_private() {
        let heaps = two_heaps();
        assert_eq!(heaps.overlap(0x1000, 64), Overlap::None);
        assert_eq!(heaps.overlap(0x10_000 - 64, 64), Overlap::None);
        assert_eq!(heaps.overlap(0x11_000, 64), Overlap::None);
        assert_eq!(heaps.overlap(0x20_000, 0x1000), Overlap::None);
        assert_eq!(heaps.overlap(0x31_000, 1), Overlap::None);
        assert_eq!(heaps.overlap(0x30_800, 0), Overlap::None);
        assert_eq!(SharedRanges::new([]).overlap(0x10_000, 8), Overlap::None);
    }

    #[test]
    fn buffers_inside_a_heap_name_its_rank_and_offset() {
        let heaps = two_heaps();
        assert_eq!(
            heaps.overlap(0x10_000, 0x1000),
            Overlap::Inside { rank: 0, offset: 0 }
        );
        assert_eq!(
            heaps.overlap(0x30_ff8, 8),
            Overlap::Inside {
                rank: 1,
                offset: 0xff8
            }
        );
    }

    #[test]
    fn buffers_partly_in_a_heap_are_shared() {
        let heaps = two_heaps();
        assert_eq!(heaps.overlap(0x10_000 - 8, 16), Overlap::Partial);
        assert_eq!(heaps.overlap(0x10_ff8, 16), Overlap::Partial);
        assert_eq!(heaps.overlap(0x0, 0x40_000), Overlap::Partial);
        assert_eq!(heaps.overlap(0x10_800, 0x20_000), Overlap::Partial);
        assert_eq!(heaps.overlap(0x2f_fff, 2), Overlap::Partial);
        assert_eq!(heaps.overlap(usize::MAX - 4, u64::MAX), Overlap::None);
        assert_eq!(heaps.overlap(0x30_fff, u64::MAX), Overlap::Partial);
    }
}

#[cfg(test)]
mod last_block_tests {
    use super::*;

    #[test]
    fn blocks_pack_when_they_fit_and_unpack_to_themselves() {
        assert_eq!(unpack_block(pack_block(64 * 5, 1000)), Some((320, 1000)));
        assert_eq!(unpack_block(pack_block(0, 8)), Some((0, 8)));
        // Not cached: an unaligned start, an empty block, a length over 32 bits.
        assert_eq!(pack_block(65, 8), 0);
        assert_eq!(pack_block(64, 0), 0);
        assert_eq!(pack_block(64, 1 << 33), 0);
        assert_eq!(unpack_block(0), None);
    }
}
