//! Fortran coarrays: the engine under the gfortran ABI (`libcaf_gaspar`) and, as
//! [`Images`] and [`Coarray`], the typed Rust API above it.
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
mod cobounds;
mod collectives;
mod convert;
mod error;
mod events;
mod locks;
mod memory;
mod section;
mod sync;
mod team;
mod teams;
mod termination;
mod transfer;
mod typed;

use crate::gmem::{GlobalAddr, LocalAlloc, OwnedRegistration, Segment, SymmetricAlloc};
use crate::strided::Strided;
use crate::transport::{AtomicOp as WordOp, Location, Transport, Width};
use crate::{Handle, Runtime};

pub use self::atomics::FetchOp;
pub use self::cobounds::Cobounds;
pub use self::convert::{Elem, ElemType};
pub use self::error::{stat, CoError, CoResult};
pub use self::locks::LOCK_WAITERS;
use self::memory::Lifetime;
pub use self::memory::MemoryMethod;
pub use self::section::{Dim, Section, MAX_RANK};
use self::team::Team;
use self::teams::Formed;
pub use self::teams::{TeamId, TeamLevel};
pub use self::typed::{CoElement, Coarray, Images, Remote, Slice};

/// An image number: 1-based, relative to the current team.
///
/// ```
/// use gaspar::coarray::{Coarrays, Image};
/// let co = Coarrays::init()?;
/// let first: Image = 1; // images count from 1
/// assert!(co.this_image() >= first);
/// co.finalize()?;
/// # Ok::<(), gaspar::coarray::CoError>(())
/// ```
pub type Image = u32;

/// Bytes every allocation is aligned to (at least).
///
/// ```
/// use gaspar::coarray::{Coarrays, ALIGN};
/// let mut co = Coarrays::init()?;
/// let a = co.allocate(3)?;
/// assert_eq!(co.local_addr(&a)? % ALIGN, 0);
/// co.deallocate(a)?;
/// co.finalize()?;
/// # Ok::<(), gaspar::coarray::CoError>(())
/// ```
pub const ALIGN: usize = 16;

/// What a token's memory holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purpose {
    Data,
    Locks,
    Events,
}

/// Job ranks that are not in the team of an allocation made inside a team.
const NOT_MEMBER: u64 = u64::MAX;

/// Where a token's memory lies.
#[derive(Debug)]
enum Placement {
    /// A block of the symmetric heap (allocated in the initial team): one offset everywhere.
    Symmetric(SymmetricAlloc),
    /// Allocated inside `change team`: a block of each member's own heap.
    Team {
        /// Names the allocation among the engine's live team allocations.
        id: u64,
        /// Heap offset of the block by job rank ([`NOT_MEMBER`] for non-members).
        offsets: Box<[u64]>,
    },
    /// Registered memory outside the pool (the RA and CA methods): each image's part
    /// has its own address.
    Registered {
        /// Names the registration among the engine's live ones.
        id: u64,
        /// The address of each job rank's part.
        parts: Box<[GlobalAddr]>,
    },
}

/// A coarray allocation: the same bytes on every image of the team that allocated it.
/// Freed (collectively) by [`Coarrays::deallocate`], or at `end team` when allocated
/// inside the team.
///
/// ```
/// use gaspar::coarray::Coarrays;
/// let mut co = Coarrays::init()?;
/// let token = co.allocate(40)?; // integer(4) :: a(10)[*]
/// assert_eq!((token.len(), token.is_empty()), (40, false));
/// co.deallocate(token)?;
/// co.finalize()?;
/// # Ok::<(), gaspar::coarray::CoError>(())
/// ```
#[derive(Debug)]
pub struct Token {
    placement: Placement,
    bytes: usize,
    purpose: Purpose,
}

impl Token {
    /// Bytes on each image, as allocated.
    ///
    /// ```
    /// use gaspar::coarray::Coarrays;
    /// let mut co = Coarrays::init()?;
    /// let token = co.allocate(24)?;
    /// assert_eq!(token.len(), 24);
    /// co.deallocate(token)?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// Whether the allocation has no bytes.
    ///
    /// ```
    /// use gaspar::coarray::Coarrays;
    /// let mut co = Coarrays::init()?;
    /// let token = co.allocate(0)?; // legal
    /// assert!(token.is_empty());
    /// co.deallocate(token)?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// The address of byte `offset` of `rank`'s part.
    ///
    /// Built from the block's heap offset without asking the allocator: a token lives
    /// until `deallocate` consumes it, and every transfer through the address is checked
    /// against the live allocations by the memory layer anyway.
    #[inline]
    fn ga(&self, rank: u32, offset: usize) -> CoResult<GlobalAddr> {
        match &self.placement {
            Placement::Symmetric(block) => heap_ga(rank, block.heap_offset(), offset),
            Placement::Team { offsets, .. } => match offsets.get(rank as usize) {
                Some(&block) if block != NOT_MEMBER => heap_ga(rank, block, offset),
                _ => Err(not_member(rank)),
            },
            Placement::Registered { parts, .. } => parts
                .get(rank as usize)
                .and_then(|part| part.offset(offset as u64))
                .ok_or_else(|| {
                    CoError::invalid("coarray access", format!("offset {offset} overflows"))
                }),
        }
    }

    /// The place of byte `offset` of `rank`'s part, resolved for the transport without
    /// the memory layer's look-up of the live allocation, which the token makes
    /// redundant: the caller has checked that the token is usable (a token lives until
    /// `deallocate` consumes it, a team's until its END TEAM) and the bytes it moves
    /// against the token's size. The transport still checks them against the segment.
    #[inline]
    fn location(&self, rt: &Strided, rank: u32, offset: usize) -> CoResult<Location> {
        if let Placement::Symmetric(block) = &self.placement {
            let at = (offset as u64).checked_add(block.heap_offset());
            if let Some(location) = at.and_then(|at| heap_location(rt, rank, at)) {
                return Ok(location);
            }
        }
        self.location_otherwise(rt, rank, offset)
    }

    /// [`location`](Self::location) of a team's or registered coarray, or the error.
    #[inline(never)]
    fn location_otherwise(&self, rt: &Strided, rank: u32, offset: usize) -> CoResult<Location> {
        let block = match &self.placement {
            Placement::Symmetric(block) => block.heap_offset(),
            Placement::Team { offsets, .. } => match offsets.get(rank as usize) {
                Some(&block) if block != NOT_MEMBER => block,
                _ => return Err(not_member(rank)),
            },
            Placement::Registered { .. } => return Ok(rt.locate(self.ga(rank, offset)?)?),
        };
        (offset as u64)
            .checked_add(block)
            .and_then(|at| heap_location(rt, rank, at))
            .ok_or_else(|| {
                CoError::invalid(
                    "coarray access",
                    format!("offset {offset} of rank {rank}'s part has no address"),
                )
            })
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

/// The error for an access to job rank `rank`'s part of a coarray that a team without
/// it allocated.
#[cold]
fn not_member(rank: u32) -> CoError {
    CoError::invalid(
        "coarray access",
        format!("rank {rank} is not in the team that allocated the coarray"),
    )
}

/// Where one image's part of a coarray is: see [`Coarrays::part`].
///
/// ```
/// use gaspar::coarray::Coarrays;
/// let mut co = Coarrays::init()?;
/// let token = co.allocate(16)?;
/// let part = co.part(&token, co.this_image())?;
/// assert_eq!(part.rank, co.runtime().rank());
/// assert_ne!(part.ga_bits, 0);
/// co.deallocate(token)?;
/// co.finalize()?;
/// # Ok::<(), gaspar::coarray::CoError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    /// The job rank (world numbering) owning the part.
    pub rank: u32,
    /// The part's global address, as bits: the same number on every image.
    pub ga_bits: u64,
    /// This process's address of the part when plain loads and stores reach it.
    pub mapped: Option<usize>,
    /// True when `mapped` is also the owning image's own address of the part: pointers
    /// the owner stores into coarray memory (a derived type's allocatable components)
    /// are then valid here.
    pub at_home: bool,
    /// True when the runtime's atomics on this part (atomic subroutines, locks, events)
    /// are the processor's atomic instructions at `mapped`, so that a caller's own atomic
    /// there is atomic with them (`shm`; `mpi` with every image on one host).
    pub processor_atomics: bool,
}

/// The address of byte `offset` after heap offset `block` on `rank`.
#[inline]
fn heap_ga(rank: u32, block: u64, offset: usize) -> CoResult<GlobalAddr> {
    (offset as u64)
        .checked_add(block)
        .and_then(|at| GlobalAddr::new(rank, 0, Segment::Heap, at))
        .ok_or_else(|| CoError::invalid("coarray access", format!("offset {offset} overflows")))
}

/// The place of byte `at` of job rank `rank`'s heap, built directly (see
/// [`Token::location`]); `None` for a rank or offset no address has. Always inlined:
/// returned through memory, the location was stored in 8-byte pieces and read back in
/// 16-byte ones, which cannot be forwarded from those stores (a stall on every
/// coarray transfer that took its path, +14 ns on a get of 1 KiB on a Zen 4).
#[inline(always)]
fn heap_location(rt: &Strided, rank: u32, at: u64) -> Option<Location> {
    Some(Location::new(
        rt.physical(rank).ok()?,
        Segment::Heap,
        at,
        GlobalAddr::new(rank, 0, Segment::Heap, at)?,
    ))
}

/// An 8-byte atomic on a resolved control word (see [`Coarrays::control_word`]).
#[inline]
fn control_atomic(rt: &Strided, word: Location, op: WordOp) -> crate::Result<u64> {
    atomic_at(rt, word, Width::W8, op)
}

/// An atomic on the `width`-byte word at a resolved place, complete on return.
#[inline(always)]
fn atomic_at(rt: &Strided, word: Location, width: Width, op: WordOp) -> crate::Result<u64> {
    Ok(rt.transport().atomic(word, width, op)?)
}

/// [`atomic_at`] for a change no wait watches for (see
/// [`Transport::atomic_unwatched`](crate::transport::Transport::atomic_unwatched)).
#[inline(always)]
fn atomic_unwatched_at(rt: &Strided, word: Location, op: WordOp) -> crate::Result<u64> {
    Ok(rt.transport().atomic_unwatched(word, Width::W8, op)?)
}

/// The coarray engine of one image: owns the runtime's layers.
///
/// ```
/// use gaspar::coarray::Coarrays;
/// let mut co = Coarrays::init()?;
/// let a = co.allocate(8)?;
/// co.sync_all()?;
/// co.deallocate(a)?;
/// co.finalize()?;
/// # Ok::<(), gaspar::coarray::CoError>(())
/// ```
pub struct Coarrays {
    rt: Strided,
    /// The current team's images (a copy of the top of `stack`'s).
    team: Team,
    /// Every team this image formed, the initial team first.
    formed: Vec<Formed>,
    /// The current team and the ones `change team` left, as indices into `formed`.
    stack: Vec<usize>,
    /// Coarrays allocated inside teams and not freed yet: (id, team, this image's block).
    team_blocks: Vec<(u64, usize, LocalAlloc)>,
    /// The id of the next allocation inside a team.
    next_team_block: u64,
    /// Per image, `2 * procs + 1` words: the status each rank announced (stopped, failed),
    /// the sync-images signals received from each rank, and how many announcements came.
    control: SymmetricAlloc,
    /// This image's [`ControlWord::Announcements`], resolved once: every collective
    /// looks at it.
    announcements: Location,
    /// Sync-images signals consumed, per rank.
    signals_seen: Vec<u64>,
    /// Per rank, where the signals between it and this image are counted, resolved once:
    /// a sync's time is mostly what runs between seeing a signal and sending the next
    /// one, and resolving two words there made a 2-image `sync images` 1.3-1.6x the raw
    /// atomics (AMD EPYC family 25 model 17).
    signal_words: Vec<SignalWords>,
    /// Ranks this image has puts to that may be incomplete.
    pending: Vec<bool>,
    /// How many of `pending` are set.
    pending_ranks: u32,
    /// The rank of the last put recorded.
    last_put: u32,
    /// Where data coarrays' memory comes from.
    memory: MemoryMethod,
    /// Live registered coarrays (RA, CA): id and this image's registration.
    registrations: Vec<(u64, OwnedRegistration)>,
    /// The id of the next registered coarray.
    next_registration: u64,
}

/// Words of the control block per rank of the job (a status and a signal count).
const CONTROL_WORDS_PER_RANK: u64 = 2;

/// The bit of a [`ControlWord::Signals`] word that says its rank announced that it
/// stopped or failed (the status word says which).
const GONE: u64 = 1 << 63;

/// The two [`ControlWord::Signals`] words between this image and one rank.
#[derive(Debug, Clone, Copy)]
struct SignalWords {
    /// The rank's count of this image's signals (this image adds to it).
    outgoing: Location,
    /// This image's count of the rank's signals (this image waits on it).
    incoming: Location,
}

/// A word of the control block.
#[derive(Debug, Clone, Copy)]
enum ControlWord {
    /// The status rank `r` announced.
    Status(u32),
    /// Sync-images signals received from rank `r` (the count, below [`GONE`]), and the
    /// [`GONE`] bit once `r` announced that it stopped or failed: a sync waiting for `r`
    /// looks at this one word.
    Signals(u32),
    /// How many announcements (stopped, failed) this image received, from any rank: 0
    /// while every image runs, so that a collective checks one word, not one per member.
    Announcements,
}

impl Coarrays {
    /// Joins the job (as `gaspar::init` does; one image alone when not launched) and sets
    /// up the engine: a collective over every image.
    ///
    /// ```
    /// let co = gaspar::coarray::Coarrays::init()?; // alone: one image
    /// assert_eq!((co.this_image(), co.num_images()), (1, 1));
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn init() -> CoResult<Coarrays> {
        let rt = crate::init()?;
        Coarrays::with_runtime(rt)
    }

    /// The engine on a runtime already started (collective).
    ///
    /// ```
    /// let rt = gaspar::init()?;
    /// let co = gaspar::coarray::Coarrays::with_runtime(rt)?;
    /// assert_eq!(co.num_images(), co.runtime().procs());
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn with_runtime(rt: Runtime) -> CoResult<Coarrays> {
        let rt = rt.into_acp();
        let (rank, procs) = (rt.rank(), rt.procs());
        // A setting every image reads the same: a bad one ends the job, naming it.
        let memory = match MemoryMethod::from_environment() {
            Ok(method) => method,
            Err(e) => rt.abort(&e.to_string()),
        };
        let control = rt.alloc(CONTROL_WORDS_PER_RANK * 8 * u64::from(procs) + 8)?;
        let announcements = rt.locate(heap_ga(
            rank,
            control.heap_offset(),
            8 * (CONTROL_WORDS_PER_RANK * u64::from(procs)) as usize,
        )?)?;
        let mut co = Coarrays {
            team: Team::initial(rank, procs),
            formed: vec![Formed::initial(rank, procs)],
            stack: vec![0],
            team_blocks: Vec::new(),
            next_team_block: 0,
            control,
            announcements,
            signals_seen: vec![0; procs as usize],
            signal_words: Vec::new(),
            pending: vec![false; procs as usize],
            pending_ranks: 0,
            last_put: 0,
            memory,
            registrations: Vec::new(),
            next_registration: 0,
            rt,
        };
        co.signal_words = (0..procs)
            .map(|other| {
                Ok(SignalWords {
                    outgoing: co.control_word(other, ControlWord::Signals(rank))?,
                    incoming: co.control_word(rank, ControlWord::Signals(other))?,
                })
            })
            .collect::<CoResult<_>>()?;
        co.zero_own_part(
            co.control.ga(rank)?,
            (CONTROL_WORDS_PER_RANK as usize * procs as usize + 1) * 8,
        )?;
        // A failed image is reported to the others, which go on (on `gaspar run`).
        co.rt.report_failure_instead_of_abort(true);
        co.rt.barrier()?;
        Ok(co)
    }

    /// The runtime's layers under the engine (ACP's interface, as [`Runtime::acp`] gives
    /// it), for gaspar's other calls on the same job: the world's teams, raw transfers to
    /// compare against.
    ///
    /// ```
    /// let co = gaspar::coarray::Coarrays::init()?;
    /// assert_eq!(co.this_image(), co.runtime().rank() + 1); // in the initial team
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn runtime(&self) -> &Strided {
        &self.rt
    }

    /// This image's number in the current team.
    ///
    /// ```
    /// let co = gaspar::coarray::Coarrays::init()?;
    /// assert!((1..=co.num_images()).contains(&co.this_image()));
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn this_image(&self) -> Image {
        self.team.this_image()
    }

    /// Images in the current team.
    ///
    /// ```
    /// let co = gaspar::coarray::Coarrays::init()?;
    /// assert_eq!(co.num_images(), 1);
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn num_images(&self) -> u32 {
        self.team.num_images()
    }

    /// Collective over the current team, an image control statement: `bytes` on every
    /// image (a different size on some image is an error on every image and allocates
    /// nothing), zero-filled, aligned to [`ALIGN`]. `bytes == 0` is legal.
    /// Where the memory comes from depends on the [`MemoryMethod`].
    ///
    /// ```
    /// let mut co = gaspar::coarray::Coarrays::init()?;
    /// let a = co.allocate(8 * 1000)?; // real(8), allocatable :: a(:)[:]; allocate(a(1000)[*])
    /// assert_eq!(co.len(&a), 8000);
    /// co.deallocate(a)?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn allocate(&mut self, bytes: usize) -> CoResult<Token> {
        self.allocate_data(bytes, Lifetime::Allocatable)
    }

    /// A coarray in the pool (the symmetric heap, or inside a team each member's heap).
    fn allocate_for(&mut self, bytes: usize, purpose: Purpose) -> CoResult<Token> {
        self.complete_puts()?;
        self.all_images_running()?;
        if self.in_team() {
            return self.allocate_in_team(bytes, purpose);
        }
        let block = self.rt.alloc(bytes.max(1) as u64)?;
        self.zero_own_part(block.ga(self.rt.rank())?, bytes)?;
        self.rt.barrier()?;
        Ok(Token {
            placement: Placement::Symmetric(block),
            bytes,
            purpose,
        })
    }

    /// Collective over the current team, an image control statement: frees `token` on
    /// every image once every image is done with it.
    ///
    /// ```
    /// let mut co = gaspar::coarray::Coarrays::init()?;
    /// let a = co.allocate(64)?;
    /// co.deallocate(a)?; // collective
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn deallocate(&mut self, token: Token) -> CoResult<()> {
        self.complete_puts()?;
        self.all_images_running()?;
        match token.placement {
            Placement::Symmetric(block) => {
                if self.in_team() {
                    return Err(CoError::invalid(
                        "deallocate",
                        "a coarray of the initial team inside CHANGE TEAM",
                    ));
                }
                Ok(self.rt.free(block)?)
            }
            Placement::Team { id, .. } => self.deallocate_in_team(id),
            Placement::Registered { id, .. } => self.release_registered(id).map(drop),
        }
    }

    /// This process's address of this image's part of `token` (for the descriptor
    /// gfortran keeps); reading and writing through it is the caller's business.
    ///
    /// ```
    /// let mut co = gaspar::coarray::Coarrays::init()?;
    /// let a = co.allocate(64)?;
    /// assert_ne!(co.local_addr(&a)?, 0);
    /// co.deallocate(a)?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn local_addr(&self, token: &Token) -> CoResult<usize> {
        self.usable(token)?;
        Ok(self.rt.local_address(token.ga(self.rt.rank(), 0)?)?)
    }

    /// Where `image`'s part of `token` is (for libraries that run code against another
    /// image's memory, as gfortran 15's accessors): the job rank owning it, the part's
    /// global address as bits (the same number on every image, so it names the part to
    /// its owner), and this process's address of the part when plain loads
    /// and stores reach it (the pool on the shm transport).
    ///
    /// ```
    /// let mut co = gaspar::coarray::Coarrays::init()?;
    /// let a = co.allocate(64)?;
    /// let part = co.part(&a, 1)?;
    /// assert_eq!(part.rank, 0);
    /// assert!(co.part(&a, 2).is_err()); // one image
    /// co.deallocate(a)?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn part(&self, token: &Token, image: Image) -> CoResult<Part> {
        self.part_in(token, image, self.get_team(TeamLevel::Current))
    }

    /// As [`part`](Self::part), with `image` numbered in `team`, an active team (the
    /// current team or one a CHANGE TEAM construct around it left: a coindex's TEAM=).
    ///
    /// ```
    /// use gaspar::coarray::{Coarrays, TeamId};
    /// let mut co = Coarrays::init()?;
    /// let a = co.allocate(64)?;
    /// let team = co.form_team(1, None)?;
    /// co.change_team(team)?;
    /// // a[1, team=initial_team] while inside the new team.
    /// assert_eq!(co.part_in(&a, 1, TeamId::INITIAL)?.rank, 0);
    /// co.end_team()?;
    /// co.deallocate(a)?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn part_in(&self, token: &Token, image: Image, team: TeamId) -> CoResult<Part> {
        self.usable(token)?;
        let rank = self.rank_in(image, team)?;
        let ga = token.ga(rank, 0)?;
        let mapped = self.rt.mapped_address(ga, token.bytes as u64)?;
        Ok(Part {
            rank,
            ga_bits: ga.to_bits(),
            mapped,
            at_home: mapped.is_some() && self.rt.maps_at_home(rank),
            processor_atomics: mapped.is_some() && self.rt.processor_atomics_at(ga)?,
        })
    }

    /// Bytes of each image's part of `token`.
    ///
    /// ```
    /// let mut co = gaspar::coarray::Coarrays::init()?;
    /// let a = co.allocate(12)?;
    /// assert_eq!(co.len(&a), a.len());
    /// co.deallocate(a)?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn len(&self, token: &Token) -> usize {
        token.bytes
    }

    /// Leaves the job at the normal end of the program: completes every put, tells the
    /// other images that this one stopped (their syncs with it end with
    /// [`CoError::StoppedImage`]) and waits for every image to finish (the termination
    /// barrier), without ending the process.
    ///
    /// ```
    /// let co = gaspar::coarray::Coarrays::init()?;
    /// co.finalize()?; // waits for every image
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn finalize(mut self) -> CoResult<()> {
        self.complete_puts()?;
        self.announce_stopped();
        Ok(self.rt.finalize()?)
    }

    /// Writes zeros over the `bytes` at `base` (this image's memory).
    fn zero_own_part(&self, base: GlobalAddr, bytes: usize) -> CoResult<()> {
        const ZEROS: [u8; 4096] = [0; 4096];
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

    /// Completes every outstanding put (the part of every image control statement): a
    /// flush of the one rank they went to when there is one (the usual halo or
    /// neighbour put, as a blocking put completes it), else of every rank.
    #[inline]
    fn complete_puts(&mut self) -> CoResult<()> {
        if self.pending_ranks == 0 {
            return Ok(());
        }
        let last = self.last_put as usize;
        if self.pending_ranks == 1 && self.pending[last] {
            self.rt.fence(self.last_put)?;
            self.pending[last] = false;
            self.pending_ranks = 0;
            return Ok(());
        }
        self.complete_puts_to_every_rank()
    }

    /// [`complete_puts`](Self::complete_puts) when they went to several ranks.
    #[inline(never)]
    fn complete_puts_to_every_rank(&mut self) -> CoResult<()> {
        self.rt.complete(Handle::ALL)?;
        self.pending.iter_mut().for_each(|p| *p = false);
        self.pending_ranks = 0;
        Ok(())
    }

    /// Records a put to `rank` that may still be in flight.
    #[inline]
    fn put_issued(&mut self, rank: u32) {
        let pending = &mut self.pending[rank as usize];
        if !*pending {
            *pending = true;
            self.pending_ranks += 1;
        }
        self.last_put = rank;
    }

    /// Completes the puts to `rank` before this image reads memory there.
    #[inline]
    fn before_read(&mut self, rank: u32) -> CoResult<()> {
        if self.pending[rank as usize] {
            self.rt.fence(rank)?;
            self.pending[rank as usize] = false;
            self.pending_ranks -= 1;
        }
        Ok(())
    }

    /// The place of a word of `rank`'s control block, resolved for the transport.
    ///
    /// Without the memory layer's check that the word lies in a live allocation (on the
    /// heap, a look-up that cost more than the atomic itself): the control block is the
    /// engine's own, allocated at init and freed by nobody, and the word's index is below
    /// its size by construction.
    #[inline]
    fn control_word(&self, rank: u32, word: ControlWord) -> CoResult<Location> {
        let index = match word {
            ControlWord::Status(r) => r,
            ControlWord::Signals(r) => self.rt.procs() + r,
            ControlWord::Announcements => CONTROL_WORDS_PER_RANK as u32 * self.rt.procs(),
        };
        let ga = heap_ga(rank, self.control.heap_offset(), 8 * index as usize)?;
        Ok(self.rt.locate(ga)?)
    }

    /// An 8-byte atomic on a word of `rank`'s control block, complete on return.
    #[inline]
    fn control_op(&self, rank: u32, word: ControlWord, op: WordOp) -> CoResult<u64> {
        Ok(control_atomic(
            &self.rt,
            self.control_word(rank, word)?,
            op,
        )?)
    }

    /// An 8-byte atomic on a lock or event variable (see [`Token::location`]), complete
    /// on return.
    #[inline]
    fn word_op(&self, word: Location, op: WordOp) -> CoResult<u64> {
        Ok(control_atomic(&self.rt, word, op)?)
    }
}
