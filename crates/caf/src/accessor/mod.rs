//! gfortran 15's accessor family: the compiler generates one function per coindexed access
//! (a getter, a receiver or a presence test), registers it by a hash from a constructor,
//! and a transfer names it by the index [`table`] gives the hash. The function runs
//! against the memory of the image that owns the data:
//!
//! - in this process when the owner is this image, or when the owner's part is mapped
//!   here (the shm pool) and either the coarray's type is intrinsic or the part is mapped
//!   at the owner's address and holds no pointer the accessor could follow into the
//!   owner's ordinary memory ([`reach`]): `local`. The first such access to an image
//!   is located by the engine; the address is kept in the coarray's token
//!   ([`crate::routes`]) and later ones run on it without the engine (`fast`);
//! - otherwise in the owning process, by its [`service`] threads, which answer requests
//!   (over a Unix socket on the same node, over TCP from other nodes: `peers`) without
//!   waiting for the owner to reach an image control statement (so pointer and
//!   allocatable components pointing at ordinary memory work): `remote`.
//!
//! `owner` runs an accessor against this process's memory (for both), `wire` encodes the
//! requests, `parts` maps a part's global address to its address here, `entry` holds the
//! entry points.

mod entry;
mod fast;
pub(crate) mod owner;
pub(crate) mod parts;
mod peers;
mod reach;
pub(crate) mod service;
mod spin;
pub(crate) mod table;
mod wire;
