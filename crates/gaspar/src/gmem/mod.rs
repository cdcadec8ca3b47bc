//! Global memory (ACP's table 2): global addresses, registration of user memory, starter
//! memory, and the symmetric heap. Sits on the world layer and derefs to it.

mod addr;
pub(crate) mod heap;
pub(crate) mod registry;

use std::ops::Deref;
use std::sync::{Mutex, MutexGuard};

pub use self::addr::{
    Decoded, GlobalAddr, Segment, COLORS, MAX_RANKS, MAX_SEGMENT_LEN, REGISTRATION_SLOTS,
};
use self::heap::HeapAllocator;
pub use self::registry::Key;
use self::registry::{Publication, Registry};
use crate::error::{Error, Result};
use crate::transport::{Location, Transport};
use crate::world::World;

/// A block of the symmetric heap: the same offset and length on every rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SymmetricAlloc {
    offset: u64,
    len: u64,
    procs: u32,
}

impl SymmetricAlloc {
    /// The block's address on `rank`.
    pub fn ga(&self, rank: u32) -> Result<GlobalAddr> {
        if rank >= self.procs {
            return Err(Error::RankOutOfRange {
                rank: rank.into(),
                procs: self.procs,
            });
        }
        GlobalAddr::new(rank, 0, Segment::Heap, self.offset).ok_or(Error::LengthOverflow {
            what: "heap offset",
        })
    }

    /// Length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the block is empty (never: allocations are at least one byte).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Offset in the heap (the same on every rank).
    pub fn offset(&self) -> u64 {
        self.offset
    }
}

/// A block of one rank's heap from [`GlobalMemory::alloc_local`].
#[derive(Debug)]
pub struct LocalAlloc {
    ga: GlobalAddr,
    offset: u64,
    len: u64,
}

impl LocalAlloc {
    /// The block's global address.
    pub fn ga(&self) -> GlobalAddr {
        self.ga
    }

    /// Offset in the owner's heap.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the block is empty (never: allocations are at least one byte).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The global-memory layer of one rank.
pub struct GlobalMemory {
    world: World,
    heap: Mutex<HeapAllocator>,
    registry: Mutex<Registry>,
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
    /// The global-memory layer on top of `world`.
    pub fn new(world: World) -> GlobalMemory {
        let heap_len = world.transport().sizes().heap;
        GlobalMemory {
            world,
            heap: Mutex::new(HeapAllocator::new(heap_len)),
            registry: Mutex::new(Registry::default()),
        }
    }

    /// Resolves a global address to a transport location (checks the rank; the transport
    /// checks the offset against the segment).
    #[inline]
    pub(crate) fn locate(&self, ga: GlobalAddr) -> Result<Location> {
        // Not `ok_or`: an eagerly built error is dropped (a call) on every success.
        let Some(d) = ga.decode() else {
            return Err(Error::NotRegistered { ga });
        };
        Ok(Location {
            rank: self.world.physical(d.rank.into())?,
            segment: d.segment,
            offset: d.offset,
            ga,
        })
    }

    /// The address of `rank`'s starter memory (ACP's `acp_query_starter_ga`), known
    /// without communication.
    pub fn starter_ga(&self, rank: u32) -> Result<GlobalAddr> {
        self.world.physical(rank.into())?;
        GlobalAddr::new(rank, 0, Segment::Starter, 0).ok_or_else(|| Error::RankOutOfRange {
            rank: rank.into(),
            procs: self.world.procs(),
        })
    }

    /// Bytes of starter memory per rank.
    pub fn starter_len(&self) -> u64 {
        self.world.transport().sizes().starter
    }

    /// Bytes of symmetric heap per rank.
    pub fn heap_len(&self) -> u64 {
        self.world.transport().sizes().heap
    }

    /// Checks that every rank made the same collective call with the same `value`. The
    /// call's tag goes into the top byte of the exchanged word, so that one rank's `free`
    /// meeting another's `alloc` is caught too. Every rank sees the same words, so every
    /// rank reaches the same verdict.
    fn agree(&self, call: &'static str, tag: u64, value: u64) -> Result<()> {
        const VALUE_BITS: u32 = 56;
        let word = (tag << VALUE_BITS) | value.min((1 << VALUE_BITS) - 1);
        let mut all = vec![0u64; self.world.procs() as usize];
        self.world.transport().allgather_u64(word, &mut all)?;
        if let Some((other, &other_word)) = all.iter().enumerate().find(|(_, &w)| w != word) {
            let other_call = match other_word >> VALUE_BITS {
                t if t == tag => call,
                1 => "alloc",
                2 => "free",
                _ => "another collective",
            };
            return Err(Error::MismatchedCollective {
                call,
                rank: self.world.rank(),
                value,
                other_call,
                other_rank: other as u32,
                other_value: other_word & ((1 << VALUE_BITS) - 1),
            });
        }
        Ok(())
    }

    /// Collective: allocates `len` bytes of symmetric heap on every rank. Every rank must
    /// pass the same length; a mismatch is reported on every rank and allocates nothing.
    ///
    /// The block lands at one offset on every rank, which a second exchange confirms:
    /// [local allocations](Self::alloc_local) of some ranks can leave the heaps shaped
    /// differently, and then the allocation fails on every rank rather than diverge.
    pub fn alloc(&self, len: u64) -> Result<SymmetricAlloc> {
        self.agree("alloc", 1, len)?;
        let placed = lock(&self.heap).alloc(len);
        // One past the offset, or 0 where it failed.
        let word = placed.as_ref().map_or(0, |&o| o + 1);
        let mut all = vec![0u64; self.world.procs() as usize];
        self.world.transport().allgather_u64(word, &mut all)?;
        if let Some((other_rank, &other)) = all.iter().enumerate().find(|(_, &w)| w != word) {
            if let Ok(offset) = placed {
                lock(&self.heap).free(offset)?;
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
            offset: placed?,
            len,
            procs: self.world.procs(),
        })
    }

    /// Collective: frees a block from [`alloc`](Self::alloc) on every rank.
    pub fn free(&self, block: SymmetricAlloc) -> Result<()> {
        self.agree("free", 2, block.offset)?;
        lock(&self.heap).free_kind(block.offset, false)
    }

    /// Allocates `len` bytes of this rank's heap only (not collective): memory that other
    /// ranks reach once they are told its address, as for ARMCI's group allocations.
    /// Carved from the top of the heap, away from the symmetric blocks.
    pub fn alloc_local(&self, len: u64) -> Result<LocalAlloc> {
        let offset = lock(&self.heap).alloc_top(len)?;
        Ok(LocalAlloc {
            ga: GlobalAddr::new(self.world.rank(), 0, Segment::Heap, offset).ok_or(
                Error::LengthOverflow {
                    what: "heap offset",
                },
            )?,
            offset,
            len,
        })
    }

    /// Frees a block from [`alloc_local`](Self::alloc_local).
    pub fn free_local(&self, block: LocalAlloc) -> Result<()> {
        lock(&self.heap).free_kind(block.offset, true)
    }

    /// Registers `len` bytes at `addr` for remote access with color hint `color` (ACP's
    /// `acp_register_memory`). Touching registrations of one color share one key.
    ///
    /// # Safety
    /// The memory must stay allocated until the key is unregistered, and other ranks may
    /// read and write it at any time while it is registered: the caller must not hold
    /// Rust references into it across such accesses (use it as raw memory, or only between
    /// barriers that order the remote accesses).
    // An unsafe *contract*, not an unsafe operation: the body does nothing unsafe.
    #[allow(unsafe_code)]
    pub unsafe fn register(&self, addr: *mut u8, len: u64, color: u32) -> Result<Key> {
        let mut registry = lock(&self.registry);
        let (key, publication) = registry.register(addr as usize, len, color)?;
        self.apply(publication)?;
        Ok(key)
    }

    /// Drops one registration of `key` (ACP's `acp_unregister_memory`); the memory stops
    /// being reachable when the last one goes.
    pub fn unregister(&self, key: Key) -> Result<()> {
        let mut registry = lock(&self.registry);
        let publication = registry.unregister(key)?;
        self.apply(publication)
    }

    /// The global address of `addr` inside `key`'s region (ACP's `acp_query_ga`).
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
    /// them (OpenSHMEM's `shmem_ptr`): memory this rank owns, and on the `shm` transport
    /// the starter memory and heap of every rank. `None` when only transfers reach it.
    ///
    /// Stores through the address are ordered like puts: visible to the owner after a
    /// fence to it and a barrier (or its own synchronization on a flag written with an
    /// atomic). Using the address is the caller's `unsafe` business.
    pub fn mapped_address(&self, ga: GlobalAddr, len: u64) -> Result<Option<usize>> {
        let loc = self.locate(ga)?;
        if let Segment::Registered(slot) = loc.segment {
            if loc.rank != self.world.transport().rank() {
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
        Ok(self.world.transport().mapped_address(loc, len))
    }

    /// Collective (ACP's `acp_reset`): forgets every allocation and registration, then
    /// this process becomes rank `new_rank`.
    pub fn reset(&mut self, new_rank: u32) -> Result<()> {
        self.world.barrier()?;
        lock(&self.heap).clear();
        let published = lock(&self.registry).clear();
        for slot in published {
            self.world.transport().retract_region(slot)?;
        }
        self.world.remap(new_rank)
    }

    /// The world under this layer, by value (to finalize it).
    pub fn into_world(self) -> World {
        self.world
    }
}
