//! Distributed arrays with user-driven prefetching (LAPPS, see DESIGN.md's `darray`).
//!
//! A [`Darrays`] context owns the runtime's layers, the acquire counter that every
//! synchronization ([`Darrays::barrier`], [`Darrays::lock`]) bumps, and the account of the
//! rank's prefetch buffers (the bytes of every array's prefetched entries,
//! [`Darrays::prefetch_bytes`]). A [`DistArray`] is a `D`-dimensional
//! array (D = 1, 2, 3) of plain data, block-distributed over every rank on a [`Grid`]
//! (chosen as Chapel's `Block` chooses it, or given); it is built and freed collectively.
//! Its elements are read and written by global index, and a read is served from the
//! local block, from prefetched data, or by a get from the owner, without the caller
//! knowing which.
//!
//! Prefetching: the program says once what it will read (a pattern:
//! [`DistArray::stencil_prefetch`], row- or column-wise, transpose, all-to-all, custom;
//! or the low-level [`DistArray::request_prefetch`] of one slice of one rank's block), and
//! later reads of those elements cost a local read. With automatic consistency an entry
//! is stale after every synchronization and refilled on its first read after it (its first
//! fill is deferred to its first read); with manual consistency only
//! [`DistArray::update_prefetch`] refills it. Writes to prefetched elements go to the
//! owner and to the prefetched copy (write-through). Entries are filled with one-sided
//! strided gets; the owner takes no part. Reading a fresh prefetched element takes no
//! lock (an array's entries change only through `&mut`: request, evict), so threads of a
//! rank read concurrently; a stale entry is refilled by one of them.
//!
//! ```no_run
//! use gaspar::darray::{Darrays, DistArray, Prefetch};
//! let ctx = Darrays::init()?;
//! let mut a = DistArray::<f64, 2>::new(&ctx, [64, 64])?;
//! for index in a.local_domain().iter() {
//!     a.set(index, (index[0] + index[1]) as f64)?;
//! }
//! a.stencil_prefetch(1, false, Prefetch::AUTOMATIC)?;
//! ctx.barrier()?;
//! let [x, y] = [a.local_domain().lo[0], a.local_domain().lo[1]];
//! if x > 0 {
//!     // Read from the prefetched halo (refilled after the barrier), not from the owner.
//!     assert_eq!(a.get([x - 1, y])?, (x - 1 + y) as f64);
//! }
//! a.free()?;
//! ctx.finalize()?;
//! # Ok::<(), gaspar::Error>(())
//! ```

mod array;
mod distribution;
mod domain;
mod error;
mod patterns;
mod prefetch;
mod serial;
mod stencil;
mod sync;
mod table;
mod words;

pub use self::array::DistArray;
pub use self::distribution::{Block, Grid};
pub use self::domain::{Domain, DomainIter};
pub use self::error::DarrayError;
pub use self::prefetch::Prefetch;
pub use self::serial::{domain_words, words_domain, SerialLayout, METADATA_WORDS};
pub use self::sync::Darrays;
