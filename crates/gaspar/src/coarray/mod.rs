//! Fortran coarrays: the engine under the gfortran ABI (`libcaf_gaspar`).
//!
//! The engine ([`Coarrays`]) works in Fortran's terms: images numbered from 1 in the
//! current team, symmetric allocations ([`Token`]s) of bytes, transfers described by a
//! byte offset and [`Section`]s (byte strides, up to 15 dimensions, possibly negative)
//! with element types ([`Elem`]) converted as assignment converts them, and image control
//! statements. Puts are nonblocking: they complete at the next image control statement
//! (sync all/images/memory, lock, unlock, event post/wait, allocate, deallocate), and a get
//! from an image this image has outstanding puts to sees them (XcalableMP's flow and anti
//! dependencies). It never dereferences a raw pointer: the C ABI turns descriptors into
//! slices and sections.
//!
//! ```no_run
//! use gaspar::coarray::{Coarrays, Dim, Elem, ElemType, Section};
//! let mut co = Coarrays::init()?;
//! let token = co.allocate(8 * 10)?; // real(8) :: a(10)[*]
//! let me = co.this_image();
//! let right = me % co.num_images() + 1;
//! let r8 = Elem::new(ElemType::Real, 8);
//! let dims = [Dim { extent: 5, stride: 16 }];
//! let values: Vec<u8> = (0..5).flat_map(|k| f64::from(k).to_ne_bytes()).collect();
//! // a(1:10:2)[right] = values
//! let dense = [Dim { extent: 5, stride: 8 }];
//! co.put(&token, 0, right, &Section { elem_len: 8, start: 0, dims: &dims }, r8,
//!        &values, &Section { elem_len: 8, start: 0, dims: &dense }, r8)?;
//! co.sync_all()?;
//! co.deallocate(token)?;
//! co.finalize()?;
//! # Ok::<(), gaspar::coarray::CoError>(())
//! ```

mod atomics;
mod collectives;
mod convert;
mod error;
mod events;
mod locks;
mod section;
mod sync;
mod team;
mod termination;
mod transfer;

use crate::gmem::{GlobalAddr, SymmetricAlloc};
use crate::transport::{AtomicOp as WordOp, Width};
use crate::{Handle, Runtime};

pub use self::atomics::AtomicOp;
pub use self::convert::{Elem, ElemType};
pub use self::error::{stat, CoError, CoResult};
pub use self::section::{Dim, Section, MAX_RANK};
use self::team::Team;

/// An image number: 1-based, relative to the current team.
pub type Image = u32;

/// Bytes every allocation is aligned to (at least).
pub const ALIGN: usize = 16;

/// What a token's memory holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purpose {
    Data,
    Locks,
    Events,
}

/// A symmetric allocation: the same bytes on every image of the team that allocated it.
/// Freed (collectively) by [`Coarrays::deallocate`].
#[derive(Debug)]
pub struct Token {
    block: SymmetricAlloc,
    bytes: usize,
    purpose: Purpose,
}

impl Token {
    /// Bytes on each image, as allocated.
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// Whether the allocation has no bytes.
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// The address of byte `offset` of `rank`'s part.
    fn ga(&self, rank: u32, offset: usize) -> CoResult<GlobalAddr> {
        let base = self.block.ga(rank)?;
        base.offset(offset as u64)
            .ok_or_else(|| CoError::invalid("coarray access", format!("offset {offset} overflows")))
    }

    /// Bytes of the part after `offset` (an error when `offset` lies past the end).
    fn after(&self, call: &'static str, offset: usize) -> CoResult<usize> {
        self.bytes.checked_sub(offset).ok_or_else(|| {
            CoError::invalid(
                call,
                format!("offset {offset} lies past the {}-byte coarray", self.bytes),
            )
        })
    }

    /// The byte offset of word `index` of a lock or event token.
    fn word(&self, call: &'static str, purpose: Purpose, index: usize) -> CoResult<usize> {
        if self.purpose != purpose {
            return Err(CoError::invalid(
                call,
                format!("the token holds {:?}, not {purpose:?}", self.purpose),
            ));
        }
        let count = self.bytes / 8;
        if index >= count {
            return Err(CoError::invalid(
                call,
                format!("index {index} is out of range: the token holds {count} variables"),
            ));
        }
        Ok(index * 8)
    }
}

/// The coarray engine of one image: owns the runtime.
pub struct Coarrays {
    rt: Runtime,
    team: Team,
    /// Per image, `2 * procs` words: the status each rank announced (stopped, failed) and
    /// the sync-images signals received from each rank.
    control: SymmetricAlloc,
    /// Sync-images signals consumed, per rank.
    signals_seen: Vec<u64>,
    /// Ranks this image has puts to that may be incomplete.
    pending: Vec<bool>,
    any_pending: bool,
}

/// A word of the control block.
#[derive(Debug, Clone, Copy)]
enum ControlWord {
    /// The status rank `r` announced.
    Status(u32),
    /// Sync-images signals received from rank `r`.
    Signals(u32),
}

impl Coarrays {
    /// Joins the job (as `gaspar::init` does; one image alone when not launched) and sets
    /// up the engine: a collective over every image.
    pub fn init() -> CoResult<Coarrays> {
        let rt = crate::init()?;
        Coarrays::with_runtime(rt)
    }

    /// The engine on a runtime already started (collective).
    pub fn with_runtime(rt: Runtime) -> CoResult<Coarrays> {
        let (rank, procs) = (rt.rank(), rt.procs());
        let control = rt.alloc(16 * u64::from(procs))?;
        let co = Coarrays {
            team: Team::initial(rank, procs),
            control,
            signals_seen: vec![0; procs as usize],
            pending: vec![false; procs as usize],
            any_pending: false,
            rt,
        };
        co.zero_own_part(&co.control, 16 * procs as usize)?;
        co.rt.barrier()?;
        Ok(co)
    }

    /// This image's number in the current team.
    pub fn this_image(&self) -> Image {
        self.team.this_image()
    }

    /// Images in the current team.
    pub fn num_images(&self) -> u32 {
        self.team.num_images()
    }

    /// Collective over the current team, an image control statement: `bytes` on every
    /// image (a different size on some image is an error on every image and allocates
    /// nothing), zero-filled, aligned to [`ALIGN`]. `bytes == 0` is legal.
    pub fn allocate(&mut self, bytes: usize) -> CoResult<Token> {
        self.allocate_for(bytes, Purpose::Data)
    }

    fn allocate_for(&mut self, bytes: usize, purpose: Purpose) -> CoResult<Token> {
        self.complete_puts()?;
        let block = self.rt.alloc(bytes.max(1) as u64)?;
        self.zero_own_part(&block, bytes)?;
        self.rt.barrier()?;
        Ok(Token {
            block,
            bytes,
            purpose,
        })
    }

    /// Collective over the current team, an image control statement: frees `token` on
    /// every image once every image is done with it.
    pub fn deallocate(&mut self, token: Token) -> CoResult<()> {
        self.complete_puts()?;
        Ok(self.rt.free(token.block)?)
    }

    /// This process's address of this image's part of `token` (for the descriptor
    /// gfortran keeps); reading and writing through it is the caller's business.
    pub fn local_addr(&self, token: &Token) -> CoResult<usize> {
        Ok(self.rt.local_address(token.block.ga(self.rt.rank())?)?)
    }

    /// Bytes of each image's part of `token`.
    pub fn len(&self, token: &Token) -> usize {
        token.bytes
    }

    /// Leaves the job at the normal end of the program: completes every put and waits
    /// for every image to finish (the termination barrier), without ending the process.
    pub fn finalize(mut self) -> CoResult<()> {
        self.complete_puts()?;
        Ok(self.rt.finalize()?)
    }

    /// Writes zeros over this image's first `bytes` of `block`.
    fn zero_own_part(&self, block: &SymmetricAlloc, bytes: usize) -> CoResult<()> {
        const ZEROS: [u8; 4096] = [0; 4096];
        let base = block.ga(self.rt.rank())?;
        let mut at = 0usize;
        while at < bytes {
            let n = (bytes - at).min(ZEROS.len());
            let ga = base.offset(at as u64).ok_or_else(|| {
                CoError::invalid("allocate", format!("{bytes} bytes overflow the heap"))
            })?;
            self.rt.put(ga, &ZEROS[..n], Handle::NULL)?;
            at += n;
        }
        self.rt.complete(Handle::ALL)?;
        Ok(())
    }

    /// Completes every outstanding put (the part of every image control statement).
    fn complete_puts(&mut self) -> CoResult<()> {
        if self.any_pending {
            self.rt.complete(Handle::ALL)?;
            self.pending.iter_mut().for_each(|p| *p = false);
            self.any_pending = false;
        }
        Ok(())
    }

    /// Records a put to `rank` that may still be in flight.
    fn put_issued(&mut self, rank: u32) {
        self.pending[rank as usize] = true;
        self.any_pending = true;
    }

    /// Completes the puts to `rank` before this image reads memory there.
    fn before_read(&mut self, rank: u32) -> CoResult<()> {
        if self.pending[rank as usize] {
            self.rt.fence(rank)?;
            self.pending[rank as usize] = false;
        }
        Ok(())
    }

    /// The address of a word of `rank`'s control block.
    fn control_ga(&self, rank: u32, word: ControlWord) -> CoResult<GlobalAddr> {
        let index = match word {
            ControlWord::Status(r) => r,
            ControlWord::Signals(r) => self.rt.procs() + r,
        };
        let base = self.control.ga(rank)?;
        base.offset(8 * u64::from(index))
            .ok_or_else(|| CoError::invalid("control block", "offset overflows"))
    }

    /// An 8-byte atomic on `ga`, complete on return.
    fn word_op(&self, ga: GlobalAddr, op: WordOp) -> CoResult<u64> {
        Ok(self.rt.atomic_blocking(ga, Width::W8, op)?)
    }
}
