//! Global memory (ACP's table 2): global addresses, registration of user memory, starter
//! memory, and the symmetric heap. Sits on the world layer and derefs to it.

pub(crate) mod heap;
mod local_table;
pub(crate) mod registry;

use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use self::heap::{Allocation, HeapAllocator, Reach};
use self::local_table::{Found, LocalTables};
pub use self::registry::Key;
use self::registry::{Publication, Registry};
pub use crate::addr::{
    Decoded, GlobalAddr, Segment, COLORS, MAX_RANKS, MAX_SEGMENT_LEN, REGISTRATION_SLOTS,
};
pub use crate::error::{Collective, ExchangeTag};
use crate::error::{Error, Result};
use crate::transport::{Location, Transport, FINALIZE_AGREEMENT};
use crate::world::World;

/// A rank's heap allocator, shared by the memory layer and the handles it gave out (so
/// that a handle can tell whether its allocation is still live).
type SharedHeap = Arc<Mutex<HeapAllocator>>;

/// A block of the symmetric heap: the same offset and length on every rank. Every use of
/// the handle checks that its allocation is still live: after a free (or a reset) it
/// yields [`Error::FreedAllocation`], even when a newer block lies at the same offset.
///
/// ```no_run
/// # let rt = gaspar::init()?;
/// let acp = rt.acp();
/// let block = acp.alloc(4096)?;
/// acp.put_blocking(block.ga(0)?, &[1; 16])?;
/// acp.free(block)?;
/// # Ok::<(), gaspar::Error>(())
/// ```
#[derive(Clone)]
pub struct SymmetricAlloc {
    allocation: Allocation,
    procs: u32,
    heap: SharedHeap,
}

impl std::fmt::Debug for SymmetricAlloc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SymmetricAlloc")
            .field("heap_offset", &self.allocation.offset)
            .field("len", &self.allocation.len)
            .field("generation", &self.allocation.generation)
            .finish()
    }
}

impl PartialEq for SymmetricAlloc {
    fn eq(&self, other: &Self) -> bool {
        self.allocation == other.allocation && Arc::ptr_eq(&self.heap, &other.heap)
    }
}

impl Eq for SymmetricAlloc {}

impl SymmetricAlloc {
    /// The block's address on `rank`; an error once the block was freed.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let block = acp.alloc(64)?;
    /// let on_last = block.ga(rt.procs() - 1)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn ga(&self, rank: u32) -> Result<GlobalAddr> {
        if rank >= self.procs {
            return Err(Error::RankOutOfRange {
                rank,
                procs: self.procs,
            });
        }
        lock(&self.heap).live(&self.allocation)?;
        GlobalAddr::new(rank, 0, Segment::Heap, self.allocation.offset).ok_or(
            Error::LengthOverflow {
                what: "heap offset",
            },
        )
    }

    /// Length in bytes: transfers through [`ga`](Self::ga) may touch this many bytes.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let block = acp.alloc(100)?;
    /// assert_eq!(block.len(), 100);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn len(&self) -> u64 {
        self.allocation.len
    }

    /// Whether the block is empty (an allocation of 0 bytes).
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// assert!(acp.alloc(0)?.is_empty());
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.allocation.len == 0
    }

    /// Where the block starts: bytes from the start of the heap (the same on every rank).
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let block = acp.alloc(64)?;
    /// assert_eq!(block.heap_offset() % 64, 0);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn heap_offset(&self) -> u64 {
        self.allocation.offset
    }
}

/// Memory registered by [`GlobalMemory::register_owned`], which owns it while it is
/// registered. Dropped without [`GlobalMemory::unregister_owned`], it stays registered
/// and its memory is leaked (never freed under other ranks' transfers).
#[derive(Debug)]
pub(crate) struct OwnedRegistration {
    memory: std::mem::ManuallyDrop<Box<[u128]>>,
    key: Key,
    ga: GlobalAddr,
}

impl OwnedRegistration {
    /// The global address of the memory's first byte.
    pub(crate) fn ga(&self) -> GlobalAddr {
        self.ga
    }
}

/// A block of one rank's heap from [`GlobalMemory::alloc_local`].
///
/// ```no_run
/// # let rt = gaspar::init()?;
/// let acp = rt.acp();
/// let mine = acp.alloc_local(256)?;
/// let address = mine.ga(); // tell the others, e.g. through starter memory
/// acp.free_local(mine)?;
/// # Ok::<(), gaspar::Error>(())
/// ```
#[derive(Debug)]
pub struct LocalAlloc {
    ga: GlobalAddr,
    allocation: Allocation,
}

impl LocalAlloc {
    /// The block's global address.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let mine = acp.alloc_local(64)?;
    /// assert_eq!(mine.ga().rank(), rt.rank());
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn ga(&self) -> GlobalAddr {
        self.ga
    }

    /// Where the block starts: bytes from the start of the owner's heap.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let mine = acp.alloc_local(64)?;
    /// assert!(mine.heap_offset() + 64 <= acp.heap_len());
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn heap_offset(&self) -> u64 {
        self.allocation.offset
    }

    /// Length in bytes.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// assert_eq!(acp.alloc_local(64)?.len(), 64);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn len(&self) -> u64 {
        self.allocation.len
    }

    /// Whether the block is empty (an allocation of 0 bytes).
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// assert!(!acp.alloc_local(64)?.is_empty());
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.allocation.len == 0
    }
}

impl Collective {
    const KIND_SHIFT: u32 = 60;
    const SEQUENCE_SHIFT: u32 = 48;
    const SEQUENCE_MASK: u64 = (1 << (Self::KIND_SHIFT - Self::SEQUENCE_SHIFT)) - 1;
    const VALUE_MASK: u64 = (1 << Self::SEQUENCE_SHIFT) - 1;

    /// The word a rank contributes for its `sequence`-th collective call: the kind, the
    /// low bits of the sequence number (so that a word left over from an earlier call is
    /// not taken for this one), the argument (saturated to 48 bits).
    fn encode(self, sequence: u64) -> u64 {
        let (kind, value) = match self {
            // One word for every finalize: it ends the job's sequence of calls.
            Collective::Finalize => return FINALIZE_AGREEMENT,
            Collective::Barrier => (1, 0),
            Collective::Alloc { len } => (2, len),
            Collective::Free { heap_offset } => (3, heap_offset),
            Collective::Reset { rank } => (4, u64::from(rank)),
            Collective::Exchange { tag } => (6, tag.bits()),
            _ => (0, 0),
        };
        (kind << Self::KIND_SHIFT)
            | ((sequence & Self::SEQUENCE_MASK) << Self::SEQUENCE_SHIFT)
            | value.min(Self::VALUE_MASK)
    }

    /// The call another rank made, from the word it contributed to call `sequence`.
    fn decode(word: u64, sequence: u64) -> Collective {
        if word == FINALIZE_AGREEMENT {
            return Collective::Finalize;
        }
        if (word >> Self::SEQUENCE_SHIFT) & Self::SEQUENCE_MASK != sequence & Self::SEQUENCE_MASK {
            return Collective::Other;
        }
        let value = word & Self::VALUE_MASK;
        match word >> Self::KIND_SHIFT {
            1 => Collective::Barrier,
            2 => Collective::Alloc { len: value },
            3 => Collective::Free { heap_offset: value },
            // A rank is a u32: the low bits are all of it.
            4 => Collective::Reset { rank: value as u32 },
            6 => ExchangeTag::from_bits(value)
                .map_or(Collective::Other, |tag| Collective::Exchange { tag }),
            _ => Collective::Other,
        }
    }

    /// The word ranks compare first, equal for two calls exactly when they
    /// [agree](Self::agrees_with): the call's word without the rank a reset asks for.
    fn agreement_key(self, sequence: u64) -> u64 {
        match self {
            Collective::Reset { .. } => Collective::Reset { rank: 0 }.encode(sequence),
            _ => self.encode(sequence),
        }
    }

    /// Whether ranks making these two calls made the same collective call: the same kind,
    /// and for allocations the same argument (each rank asks for its own rank in a reset).
    fn agrees_with(self, other: Collective) -> bool {
        match (self, other) {
            (Collective::Barrier, Collective::Barrier) => true,
            (Collective::Reset { .. }, Collective::Reset { .. }) => true,
            (Collective::Finalize, Collective::Finalize) => true,
            (
                Collective::Alloc { .. } | Collective::Free { .. } | Collective::Exchange { .. },
                _,
            ) => self == other,
            _ => false,
        }
    }
}

/// Allocations [`GlobalMemory`] remembers for its heap check's hot path.
const REACH_SLOTS: usize = 4;

/// The global-memory layer of one rank.
///
/// ```no_run
/// # let rt = gaspar::init()?;
/// let acp = rt.acp();
/// let gmem: &gaspar::gmem::GlobalMemory = rt.acp();
/// println!("{} bytes of heap per rank", gmem.heap_len());
/// # Ok::<(), gaspar::Error>(())
/// ```
pub struct GlobalMemory {
    world: World,
    heap: SharedHeap,
    /// The last live symmetric allocations heap accesses were found inside, each as one
    /// word (length in the high 32 bits, heap offset / [`heap::ALIGN`] in the low 32; 0
    /// for none), in the slot its offset picks: an access inside one skips the allocator's
    /// lookup (the 8-byte hot path), also when a loop alternates between a few arrays.
    /// Emptied, under the heap's lock, whenever a block stops being live.
    last_reach: [AtomicU64; REACH_SLOTS],
    /// Collective calls made so far (see [`Collective::encode`]). Held for the whole of
    /// a collective, so that collectives called by several threads of this rank run one
    /// after another, each with its own sequence number.
    collectives: Mutex<u64>,
    registry: Mutex<Registry>,
    /// This rank's local allocations as other ranks see them, and its copies of theirs.
    local_tables: LocalTables,
}

impl Deref for GlobalMemory {
    type Target = World;
    fn deref(&self) -> &World {
        &self.world
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The protected data stays consistent even if a holder panicked: every mutation is
    // completed before any call that could fail.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl GlobalMemory {
    /// The global-memory layer on top of `world`: publishes this rank's (empty) list of
    /// local allocations, which the transport may have left as it found the memory.
    ///
    /// ```no_run
    /// use gaspar::{gmem::GlobalMemory, world::World};
    /// let gmem = GlobalMemory::new(World::init()?)?;
    /// gmem.into_world().finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn new(world: World) -> Result<GlobalMemory> {
        let local_tables = LocalTables::new(world.transport().sizes().heap);
        local_tables.publish(world.transport(), std::iter::empty())?;
        Ok(GlobalMemory {
            heap: Arc::new(Mutex::new(HeapAllocator::new(local_tables.heap_len()))),
            world,
            last_reach: Default::default(),
            collectives: Mutex::new(0),
            registry: Mutex::new(Registry::default()),
            local_tables,
        })
    }

    /// Resolves a global address to a transport location (checks the rank; the transport
    /// checks the offset against the segment).
    #[inline(always)]
    pub(crate) fn locate(&self, ga: GlobalAddr) -> Result<Location> {
        // Not `ok_or`: an eagerly built error is dropped (a call) on every success.
        let Some(d) = ga.decode() else {
            return Err(Error::NotRegistered { ga });
        };
        Ok(Location::new(
            self.world.physical(d.rank)?,
            d.segment,
            d.offset,
            ga,
        ))
    }

    /// [`locate_range`](Self::locate_range) for a symmetric-heap address: the owner's
    /// physical rank and the offset in its heap, checked as `locate_range` checks them;
    /// `Ok(None)` for an address in another segment.
    #[inline(always)]
    pub(crate) fn locate_heap_range(&self, ga: GlobalAddr, len: u64) -> Result<Option<(u32, u64)>> {
        let Some((rank, offset)) = ga.heap_place() else {
            return Ok(None);
        };
        let owner = self.world.physical(rank)?;
        self.check_heap(ga, owner, offset, len)?;
        Ok(Some((owner, offset)))
    }

    /// Resolves the `len` bytes at `ga` that a transfer is about to touch: as
    /// `locate`, and on the heap they must lie inside one live allocation
    /// ([`Error::OutsideAllocation`]), checked before anything moves.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// assert!(acp.locate_range(acp.starter_ga(0)?, 8).is_ok());
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn locate_range(&self, ga: GlobalAddr, len: u64) -> Result<Location> {
        self.locate_extent(ga, || Ok(len))
    }

    /// [`locate_range`](Self::locate_range) for a noncontiguous transfer whose bytes
    /// after `ga` span `extent()` (computed only for heap addresses).
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// assert!(acp.locate_extent(acp.starter_ga(0)?, || Ok(8)).is_ok());
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline(always)]
    pub fn locate_extent(
        &self,
        ga: GlobalAddr,
        extent: impl FnOnce() -> Result<u64>,
    ) -> Result<Location> {
        let loc = self.locate(ga)?;
        if matches!(loc.segment(), Segment::Heap) {
            self.check_heap(ga, loc.rank(), loc.offset, extent()?)?;
        }
        Ok(loc)
    }

    /// [`locate_range`](Self::locate_range) for a transfer in pieces (I/O vectors, run
    /// lists): each `(offset, len)` is `len` bytes at `offset` after `ga`, and on the heap
    /// each must lie inside a live allocation — not necessarily the same one, since a
    /// vector may gather from several. The transport checks the pieces against the
    /// segment.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let pieces = [(0, 8), (64, 8)].into_iter();
    /// assert!(acp.locate_pieces(acp.starter_ga(0)?, pieces).is_ok());
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn locate_pieces(
        &self,
        ga: GlobalAddr,
        pieces: impl Iterator<Item = (u64, u64)>,
    ) -> Result<Location> {
        let loc = self.locate(ga)?;
        if matches!(loc.segment(), Segment::Heap) {
            for (offset, len) in pieces {
                let at = ga.offset(offset).ok_or(Error::LengthOverflow {
                    what: "offset of a piece",
                })?;
                self.check_heap(at, loc.rank(), loc.offset + offset, len)?;
            }
        }
        Ok(loc)
    }

    /// The heap part of [`locate_range`](Self::locate_range): a hit in the last
    /// allocation found costs one load and a few compares; anything else asks the
    /// allocator.
    #[inline(always)]
    fn check_heap(&self, ga: GlobalAddr, owner: u32, offset: u64, len: u64) -> Result<()> {
        // A slot's start (a u32 of ALIGN units) plus its length (a u32) cannot overflow.
        if let Some(end) = offset.checked_add(len) {
            for slot in &self.last_reach {
                let last = slot.load(Ordering::Relaxed);
                let start = (last & u64::from(u32::MAX)) * heap::ALIGN;
                let allocation_end = start + (last >> 32);
                if offset >= start && end <= allocation_end {
                    return Ok(());
                }
            }
        }
        self.check_heap_slow(ga, owner, offset, len)
    }

    /// The rest of [`check_heap`](Self::check_heap); `owner` is the physical rank.
    #[inline(never)]
    fn check_heap_slow(&self, ga: GlobalAddr, owner: u32, offset: u64, len: u64) -> Result<()> {
        let heap_len = self.heap_len();
        if offset.checked_add(len).is_none_or(|end| end > heap_len) {
            // Past the heap itself: the error the transport would give.
            return Err(Error::OutOfBounds {
                ga,
                len,
                segment_len: heap_len,
            });
        }
        let own = ga.rank() == self.world.rank();
        let transport = self.world.transport();
        if !own
            && self
                .local_tables
                .in_last_hit(transport, owner, offset, len)?
        {
            // Inside another rank's live local block: never a symmetric one.
            return Ok(());
        }
        let heap = lock(&self.heap);
        let reach = heap.reach(offset, len, own);
        match reach {
            Ok(Reach::Within(a)) => {
                if let (false, Ok(span)) = (a.local, u32::try_from(a.len)) {
                    // Under the heap's lock, so that a free cannot slip in between.
                    let start = a.offset / heap::ALIGN;
                    self.last_reach[start as usize % REACH_SLOTS]
                        .store((u64::from(span) << 32) | start, Ordering::Relaxed);
                }
                Ok(())
            }
            Ok(Reach::ForeignLocal) => {
                // Not under the heap's lock: the owner's list is read with transfers.
                drop(heap);
                match self.local_tables.check(transport, owner, offset, len)? {
                    Found::Inside(..) => Ok(()),
                    Found::Outside(allocation) => Err(Error::OutsideAllocation {
                        ga,
                        len,
                        allocation,
                    }),
                }
            }
            Err(allocation) => Err(Error::OutsideAllocation {
                ga,
                len,
                allocation: allocation.map(|a| (a.offset, a.len)),
            }),
        }
    }

    /// Runs `f` on the allocator where it may end allocations (free, clear), emptying
    /// the last allocation found under the same lock: no check passes on a block that
    /// is gone.
    fn release<R>(&self, f: impl FnOnce(&mut HeapAllocator) -> R) -> R {
        let mut heap = lock(&self.heap);
        let result = f(&mut heap);
        for slot in &self.last_reach {
            slot.store(0, Ordering::Relaxed);
        }
        result
    }

    /// The address of `rank`'s starter memory (ACP's `acp_query_starter_ga`), known
    /// without communication.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let of_rank_0 = acp.starter_ga(0)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn starter_ga(&self, rank: u32) -> Result<GlobalAddr> {
        self.world.physical(rank)?;
        GlobalAddr::new(rank, 0, Segment::Starter, 0).ok_or_else(|| Error::RankOutOfRange {
            rank,
            procs: self.world.procs(),
        })
    }

    /// Bytes of starter memory per rank.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// assert!(acp.starter_len() >= 8);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn starter_len(&self) -> u64 {
        self.world.transport().sizes().starter
    }

    /// Bytes of symmetric heap per rank.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let block = acp.alloc(acp.heap_len() / 2)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn heap_len(&self) -> u64 {
        self.local_tables.heap_len()
    }

    /// Checks that every rank made the same collective call, in a barrier that tells
    /// every rank whether all passed the same [agreement key](Collective::agreement_key)
    /// (the key holds the call's kind, argument, and the rank's count of collective
    /// calls). Only when they differ do the ranks exchange their calls, so that each
    /// names one that differs from its own: every rank then sees one, since every rank
    /// learned that not all keys equal its own.
    ///
    /// Returns the guard that serializes this rank's collectives: the caller holds it until
    /// its collective is over.
    fn agree(&self, call: Collective) -> Result<MutexGuard<'_, u64>> {
        let mut calls = lock(&self.collectives);
        let sequence = *calls;
        *calls += 1;
        if self
            .world
            .transport()
            .agree_u64(call.agreement_key(sequence))?
        {
            return Ok(calls);
        }
        let procs = self.world.procs() as usize;
        let mut all = vec![0u64; procs];
        let word = call.encode(sequence);
        self.world.transport().allgather_u64(word, &mut all)?;
        if all
            .iter()
            .any(|&w| Collective::decode(w, sequence) == Collective::Finalize)
        {
            // A rank that finalizes takes part in this exchange too, then fails (`mpi`).
            return Err(Error::finalized_during(call.name()));
        }
        // Compared as exchanged (arguments saturated to what a word carries).
        let mine = Collective::decode(word, sequence);
        for (other_rank, &word) in all.iter().enumerate() {
            let other_call = Collective::decode(word, sequence);
            if !mine.agrees_with(other_call) {
                return Err(Error::MismatchedCollective {
                    rank: self.world.rank(),
                    call,
                    other_rank: other_rank as u32,
                    other_call,
                });
            }
        }
        Ok(calls)
    }

    /// Collective: waits until every rank has reached the barrier (ACP's `acp_sync`);
    /// every put issued before it is visible everywhere after it. A rank that makes
    /// another collective call meanwhile is reported on every rank
    /// ([`Error::MismatchedCollective`]).
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// acp.barrier()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn barrier(&self) -> Result<()> {
        self.agree(Collective::Barrier).map(drop)
    }

    /// Collective: every rank contributes one word; `out[r]` receives rank r's (as
    /// [`World::allgather_u64`]), once the ranks agreed that they all make this exchange
    /// with the same `tag`: a rank in another collective call, or in an exchange with
    /// another tag, is reported on every rank ([`Error::MismatchedCollective`], naming the
    /// tags). `out` must hold one word per rank.
    ///
    /// ```
    /// use gaspar::gmem::ExchangeTag;
    /// let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let mut lens = vec![0u64; rt.procs() as usize];
    /// let tag = ExchangeTag::new("lens").expect("a valid tag");
    /// acp.exchange_u64(tag, 100 + u64::from(rt.rank()), &mut lens)?;
    /// assert_eq!(lens[0], 100);
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn exchange_u64(&self, tag: ExchangeTag, value: u64, out: &mut [u64]) -> Result<()> {
        let _serialized = self.agree(Collective::Exchange { tag })?;
        self.world.allgather_u64(value, out)
    }

    /// Collective: allocates `len` bytes of symmetric heap on every rank. Every rank must
    /// pass the same length; a mismatch is reported on every rank and allocates nothing.
    ///
    /// The block lands at one offset on every rank, which a second exchange confirms:
    /// [local allocations](Self::alloc_local) of some ranks can leave the heaps shaped
    /// differently, and then the allocation fails on every rank rather than diverge.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let block = acp.alloc(1 << 20)?; // 1 MiB on every rank
    /// acp.free(block)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn alloc(&self, len: u64) -> Result<SymmetricAlloc> {
        let _serialized = self.agree(Collective::Alloc { len })?;
        let placed = lock(&self.heap).alloc(len);
        // One past the offset, or 0 where it failed.
        let word = placed.as_ref().map_or(0, |a| a.offset + 1);
        let mut all = vec![0u64; self.world.procs() as usize];
        self.world.transport().allgather_u64(word, &mut all)?;
        if let Some((other_rank, &other)) = all.iter().enumerate().find(|&(_, &w)| w != word) {
            if let Ok(allocation) = &placed {
                self.release(|heap| heap.free(allocation))?;
            }
            placed?;
            return Err(Error::HeapDiverged {
                len,
                offset: word - 1,
                other_rank: other_rank as u32,
                other_offset: other.checked_sub(1),
            });
        }
        Ok(SymmetricAlloc {
            allocation: placed?,
            procs: self.world.procs(),
            heap: Arc::clone(&self.heap),
        })
    }

    /// Checks that `allocation` (from a handle) is live in this layer's heap.
    fn check_live(&self, heap: &SharedHeap, allocation: &Allocation) -> Result<()> {
        if !Arc::ptr_eq(heap, &self.heap) {
            // A handle from an earlier runtime of this process.
            return Err(Error::FreedAllocation {
                offset: allocation.offset,
                len: allocation.len,
            });
        }
        lock(&self.heap).live(allocation)
    }

    /// Collective: frees a block from [`alloc`](Self::alloc) on every rank. A handle of a
    /// block that was already freed is refused ([`Error::FreedAllocation`]) and frees
    /// nothing, even when a newer block lies at the same offset.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let block = acp.alloc(64)?;
    /// acp.free(block.clone())?;
    /// assert!(acp.free(block).is_err()); // freed already
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn free(&self, block: SymmetricAlloc) -> Result<()> {
        self.check_live(&block.heap, &block.allocation)?;
        self.agree(Collective::Free {
            heap_offset: block.allocation.offset,
        })
        .map(drop)?;
        self.release(|heap| heap.free(&block.allocation))
    }

    /// Allocates `len` bytes of this rank's heap only (not collective): memory that other
    /// ranks reach once they are told its address, as for ARMCI's group allocations.
    /// Carved from the top of the heap, away from the symmetric blocks.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let scratch = acp.alloc_local(4096)?;
    /// acp.free_local(scratch)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn alloc_local(&self, len: u64) -> Result<LocalAlloc> {
        let mut heap = lock(&self.heap);
        let capacity = self.local_tables.capacity();
        if heap.locals().count() >= capacity {
            return Err(Error::invalid(
                "alloc_local",
                format!(
                    "this rank has {capacity} local allocations live, as many as other ranks \
                     can check their accesses against: free one first"
                ),
            ));
        }
        let allocation = heap.alloc_top(len)?;
        let ga = GlobalAddr::new(self.world.rank(), 0, Segment::Heap, allocation.offset).ok_or(
            Error::LengthOverflow {
                what: "heap offset",
            },
        );
        let published = ga.and_then(|ga| {
            self.local_tables
                .publish(self.world.transport(), heap.locals())
                .map(|()| ga)
        });
        match published {
            Ok(ga) => Ok(LocalAlloc { ga, allocation }),
            Err(e) => {
                heap.free(&allocation)?;
                Err(e)
            }
        }
    }

    /// Frees a block from [`alloc_local`](Self::alloc_local); a block a reset forgot is
    /// refused ([`Error::FreedAllocation`]).
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let scratch = acp.alloc_local(64)?;
    /// acp.free_local(scratch)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn free_local(&self, block: LocalAlloc) -> Result<()> {
        let transport = self.world.transport();
        self.release(|heap| {
            heap.free(&block.allocation)?;
            self.local_tables.publish(transport, heap.locals())
        })?;
        self.local_tables.announce_free(transport)
    }

    /// Registers `len` bytes at `addr` for remote access with color hint `color` (ACP's
    /// `acp_register_memory`). Touching registrations of one color share one key.
    ///
    /// # Safety
    /// The memory must stay allocated until the key is unregistered, and other ranks may
    /// read and write it at any time while it is registered: the caller must not hold
    /// Rust references into it across such accesses (use it as raw memory, or only between
    /// barriers that order the remote accesses).
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let mut buffer = vec![0u8; 4096];
    /// // SAFETY: the buffer outlives the registration, and no reference into it is held
    /// // while other ranks may write it.
    /// let key = unsafe { acp.register(buffer.as_mut_ptr(), 4096, 0)? };
    /// let ga = acp.ga(key, buffer.as_ptr())?; // tell the others
    /// acp.unregister(key)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    // An unsafe *contract*, not an unsafe operation: the body does nothing unsafe.
    #[allow(unsafe_code)]
    pub unsafe fn register(&self, addr: *mut u8, len: u64, color: u32) -> Result<Key> {
        let mut registry = lock(&self.registry);
        let (key, publication) = registry.register(addr as usize, len, color)?;
        self.apply(publication)?;
        Ok(key)
    }

    /// Registers memory the caller allocated and hands over for as long as it is
    /// registered (the safe form of [`register`](Self::register)): the registration owns
    /// it, so it stays allocated, and no Rust reference into it exists while other ranks
    /// may write it. [`unregister_owned`](Self::unregister_owned) gives it back.
    pub(crate) fn register_owned(&self, mut memory: Box<[u128]>) -> Result<OwnedRegistration> {
        let len = std::mem::size_of_val(&*memory) as u64;
        let addr = memory.as_mut_ptr().cast::<u8>();
        // SAFETY: the registration keeps `memory` (a heap block that moving the box does
        // not move) until `unregister_owned`, and lends no reference into it meanwhile.
        #[allow(unsafe_code)]
        let key = unsafe { self.register(addr, len, 0) }?;
        let ga = match self.ga(key, addr) {
            Ok(ga) => ga,
            Err(e) => {
                self.unregister(key)?;
                return Err(e);
            }
        };
        Ok(OwnedRegistration {
            memory: std::mem::ManuallyDrop::new(memory),
            key,
            ga,
        })
    }

    /// Ends `registration` and gives its memory back.
    pub(crate) fn unregister_owned(&self, registration: OwnedRegistration) -> Result<Box<[u128]>> {
        self.unregister(registration.key)?;
        let mut registration = std::mem::ManuallyDrop::new(registration);
        Ok(std::mem::take(&mut *registration.memory))
    }

    /// Drops one registration of `key` (ACP's `acp_unregister_memory`); the memory stops
    /// being reachable when the last one goes.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let mut buffer = vec![0u8; 64];
    /// // SAFETY: as for `register`.
    /// let key = unsafe { acp.register(buffer.as_mut_ptr(), 64, 0)? };
    /// acp.unregister(key)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn unregister(&self, key: Key) -> Result<()> {
        let mut registry = lock(&self.registry);
        let publication = registry.unregister(key)?;
        self.apply(publication)
    }

    /// The global address of `addr` inside `key`'s region (ACP's `acp_query_ga`).
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let mut buffer = vec![0u8; 64];
    /// // SAFETY: as for `register`.
    /// let key = unsafe { acp.register(buffer.as_mut_ptr(), 64, 1)? };
    /// let ga = acp.ga(key, buffer[8..].as_ptr())?;
    /// assert_eq!(ga.color(), 1);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn ga(&self, key: Key, addr: *const u8) -> Result<GlobalAddr> {
        let mut registry = lock(&self.registry);
        let (slot, offset, color, publication) = registry.locate(key, addr as usize)?;
        self.apply(publication)?;
        GlobalAddr::new(self.world.rank(), color, Segment::Registered(slot), offset).ok_or(
            Error::LengthOverflow {
                what: "registered offset",
            },
        )
    }

    fn apply(&self, publication: Publication) -> Result<()> {
        let transport = self.world.transport();
        match publication {
            Publication::None => Ok(()),
            Publication::Publish {
                slot,
                base,
                len,
                color,
            } => Ok(transport.publish_region(slot, base, len, color)?),
            Publication::Retract { slot } => Ok(transport.retract_region(slot)?),
        }
    }

    /// This process's address for a global address it owns (ACP's `acp_query_address`).
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let address = acp.local_address(acp.starter_ga(rt.rank())?)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn local_address(&self, ga: GlobalAddr) -> Result<usize> {
        let d = ga.decode().ok_or(Error::NotRegistered { ga })?;
        if d.rank != self.world.rank() {
            return Err(Error::invalid(
                "query_address",
                format!("{ga} belongs to rank {}, not to this rank", d.rank),
            ));
        }
        let found = match d.segment {
            Segment::Registered(slot) => lock(&self.registry).local_address(slot, d.offset),
            _ => self.world.transport().mapped_address(self.locate(ga)?, 0),
        };
        found.ok_or(Error::NotRegistered { ga })
    }

    /// This process's address of the `len` bytes at `ga` when plain loads and stores reach
    /// them (OpenSHMEM's `shmem_ptr`): memory this rank owns, and the starter memory and
    /// heap of every rank on the `shm` transport, and on `mpi` when every rank of the job
    /// runs on this host (a shared window). `None` when only transfers reach it.
    ///
    /// Stores through the address are ordered like puts: visible to the owner after a
    /// fence to it and a barrier (or its own synchronization on a flag written with an
    /// atomic). Using the address is the caller's `unsafe` business.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// if let Some(address) = acp.mapped_address(acp.starter_ga(0)?, 8)? {
    ///     println!("rank 0's starter memory is at {address:#x} here");
    /// }
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn mapped_address(&self, ga: GlobalAddr, len: u64) -> Result<Option<usize>> {
        let loc = self.locate(ga)?;
        if let Segment::Registered(slot) = loc.segment() {
            if loc.rank() != self.world.transport().rank() {
                return Ok(None);
            }
            let end = loc.offset.checked_add(len).ok_or(Error::LengthOverflow {
                what: "offset + length",
            })?;
            let registry = lock(&self.registry);
            return Ok(registry
                .local_address(slot, end)
                .and_then(|_| registry.local_address(slot, loc.offset)));
        }
        if matches!(loc.segment(), Segment::Heap)
            && loc
                .offset
                .checked_add(len)
                .is_none_or(|end| end > self.heap_len())
        {
            // The top of the segment holds the list of local allocations.
            return Ok(None);
        }
        Ok(self.world.transport().mapped_address(loc, len))
    }

    /// True when the memory of rank `rank` that [`mapped_address`](Self::mapped_address)
    /// reaches is mapped here at the address `rank` itself uses, so that a pointer `rank`
    /// stores into its starter memory or heap, pointing there, is valid in this process
    /// too (the shm transport maps every segment at one address in every process when it
    /// can; see `GASPAR_SHM_PLACEMENT`). Always true of this rank.
    ///
    /// ```
    /// let rt = gaspar::init()?;
    /// assert!(rt.acp().maps_at_home(rt.rank()));
    /// rt.finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn maps_at_home(&self, rank: u32) -> bool {
        self.world.transport().maps_at_home(rank)
    }

    /// True when the runtime's atomics on the word at `ga` are the processor's atomic
    /// instructions on the memory [`mapped_address`](Self::mapped_address) gives for it,
    /// so that a program's own atomics through that address are atomic with the
    /// runtime's: starter memory and the heap on `shm`, and on `mpi` when every rank of
    /// the job runs on this host and shares its window.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// if acp.processor_atomics_at(acp.starter_ga(0)?)? {
    ///     println!("a CPU atomic on rank 0's mapped starter word is atomic with acp's");
    /// }
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn processor_atomics_at(&self, ga: GlobalAddr) -> Result<bool> {
        let loc = self.locate(ga)?;
        Ok(self.world.transport().processor_atomics_at(loc))
    }

    /// Collective (ACP's `acp_reset`): forgets every allocation and registration, then
    /// this process becomes rank `new_rank`. A reset that fails (ranks asking for an
    /// invalid renumbering) fails on every rank and changes nothing.
    ///
    /// ```no_run
    /// let mut rt = gaspar::init()?;
    /// let rank = rt.rank();
    /// rt.acp_mut().reset(rank)?; // same numbering, every allocation forgotten
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn reset(&mut self, new_rank: u32) -> Result<()> {
        self.agree(Collective::Reset { rank: new_rank }).map(drop)?;
        self.world.remap(new_rank)?;
        self.release(HeapAllocator::clear);
        self.local_tables
            .publish(self.world.transport(), std::iter::empty())?;
        self.local_tables.forget_copies();
        let published = lock(&self.registry).clear();
        for slot in published {
            self.world.transport().retract_region(slot)?;
        }
        Ok(())
    }

    /// The world under this layer, by value (to finalize it).
    ///
    /// ```no_run
    /// use gaspar::{gmem::GlobalMemory, world::World};
    /// let gmem = GlobalMemory::new(World::init()?)?;
    /// gmem.into_world().finalize()?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn into_world(self) -> World {
        self.world
    }
}

#[cfg(test)]
mod tests {
    use super::{Collective, ExchangeTag};

    /// A rank that finalizes contributes the transport's one finalize word, which knows no
    /// sequence number: every rank must read it as finalize.
    #[test]
    fn finalize_is_the_transports_word_in_every_call() {
        for sequence in [0, 1, 5, 4095, 4096] {
            assert_eq!(
                Collective::Finalize.encode(sequence),
                crate::transport::FINALIZE_AGREEMENT
            );
            assert_eq!(
                Collective::decode(crate::transport::FINALIZE_AGREEMENT, sequence),
                Collective::Finalize
            );
        }
    }

    #[test]
    fn exchange_tags_are_short_printable_names_carried_whole() {
        for name in ["a", "Free", "Malloc", "x~9_Z!"] {
            let tag = ExchangeTag::new(name).unwrap();
            assert_eq!(ExchangeTag::from_bits(tag.bits()), Some(tag));
            assert_eq!(tag.to_string(), name);
        }
        for bad in ["", "Malloc7", "a b", "\u{e9}"] {
            assert_eq!(ExchangeTag::new(bad), None, "{bad:?}");
        }
        assert_eq!(ExchangeTag::from_bits(0), None);
    }

    #[test]
    fn collective_calls_survive_the_exchange_and_stale_words_are_told_apart() {
        let calls = [
            Collective::Exchange {
                tag: ExchangeTag::new("Init").unwrap(),
            },
            Collective::Barrier,
            Collective::Alloc { len: 64 },
            Collective::Free { heap_offset: 0x40 },
            Collective::Reset { rank: 3 },
        ];
        for call in calls {
            assert_eq!(Collective::decode(call.encode(5), 5), call);
            // A word left from an earlier call (another sequence number) is no call.
            assert_eq!(Collective::decode(call.encode(3), 5), Collective::Other);
            assert!(!call.agrees_with(Collective::Other));
        }
        assert_eq!(
            Collective::decode(0, 0),
            Collective::Other,
            "an untagged word"
        );
        // Arguments too large for the word saturate: both sides compare the same value.
        let huge = Collective::decode(Collective::Alloc { len: u64::MAX }.encode(1), 1);
        assert_eq!(huge, Collective::Alloc { len: (1 << 48) - 1 });
        assert!(Collective::Reset { rank: 0 }.agrees_with(Collective::Reset { rank: 1 }));
        assert!(!Collective::Alloc { len: 64 }.agrees_with(Collective::Alloc { len: 128 }));
        assert!(!Collective::Barrier.agrees_with(Collective::Alloc { len: 64 }));
        assert_eq!(
            Collective::Free { heap_offset: 0x40 }.to_string(),
            "free(the block at heap offset 0x40)"
        );
    }

    /// The fast agreement compares keys, the slow one names calls that do not agree:
    /// they must give the same verdict, or a rank told of a mismatch would name none.
    #[test]
    fn agreement_keys_are_equal_exactly_when_calls_agree() {
        let calls = [
            Collective::Barrier,
            Collective::Alloc { len: 64 },
            Collective::Alloc { len: 128 },
            Collective::Alloc { len: u64::MAX },
            Collective::Alloc { len: u64::MAX - 1 },
            Collective::Free { heap_offset: 0x40 },
            Collective::Free { heap_offset: 64 },
            Collective::Reset { rank: 0 },
            Collective::Reset { rank: 3 },
            Collective::Finalize,
            Collective::Exchange {
                tag: ExchangeTag::new("Malloc").unwrap(),
            },
            Collective::Exchange {
                tag: ExchangeTag::new("Free").unwrap(),
            },
        ];
        for mine in calls {
            for (theirs, their_sequence) in calls.iter().flat_map(|&c| [(c, 7), (c, 8)]) {
                let same_key = mine.agreement_key(7) == theirs.agreement_key(their_sequence);
                let agree = Collective::decode(mine.encode(7), 7)
                    .agrees_with(Collective::decode(theirs.encode(their_sequence), 7));
                assert_eq!(
                    same_key, agree,
                    "{mine} vs {theirs} of call {their_sequence}"
                );
            }
        }
    }
}
