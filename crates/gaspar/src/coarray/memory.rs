//! Where coarrays' memory comes from: the three methods of the XcalableMP coarray paper
//! (section 3.2), chosen by `GASPAR_COARRAY_MEMORY` ([`crate::config::COARRAY_MEMORY`]).
//!
//! - RS, runtime sharing: one pool registered at start (the symmetric heap) holds every
//!   coarray; allocation cuts blocks out of it.
//! - RA, runtime allocation: the pool holds static coarrays only; each allocatable coarray
//!   is memory the runtime allocates and registers on its own, freed by `deallocate`.
//! - CA, compiler allocation: every data coarray is memory the caller allocated and the
//!   runtime registers ([`Coarrays::register`]); `allocate` stands in for the caller.
//!
//! Registered memory lies outside the transport's segments: on shm other images reach it
//! by cross-memory attach, on mpi through the dynamic window (a one-sided component with
//! dynamic windows: OpenMPI's osc/ucx, MPICH). Lock and event variables and the engine's
//! own control words need atomics, which reach only the pool on shm: they stay in the
//! pool under every method, as do coarrays allocated inside `change team`. Atomic
//! subroutines on a registered data coarray are refused on both transports (an error
//! naming the cause): a program that uses them keeps RS, the default.

use crate::config;
use crate::gmem::GlobalAddr;
use crate::Error;

use super::{CoError, CoResult, Coarrays, Placement, Purpose, Token};

/// How coarray memory is allocated and registered (the paper's RS, RA and CA methods).
///
/// ```
/// use gaspar::coarray::{Coarrays, MemoryMethod};
/// let mut co = Coarrays::init()?;
/// co.set_memory_method(MemoryMethod::RuntimeAllocation);
/// let a = co.allocate(1024)?; // allocated and registered on its own
/// co.deallocate(a)?;
/// co.finalize()?;
/// # Ok::<(), gaspar::coarray::CoError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryMethod {
    /// RS: every coarray is a block of the pool registered at start.
    RuntimeSharing,
    /// RA: static coarrays in the pool; each allocatable one allocated and registered.
    RuntimeAllocation,
    /// CA: every data coarray is caller memory, registered.
    CompilerAllocation,
}

impl MemoryMethod {
    /// The method `GASPAR_COARRAY_MEMORY` names (`rs`, `ra` or `ca`).
    ///
    /// ```
    /// use gaspar::coarray::MemoryMethod;
    /// // GASPAR_COARRAY_MEMORY, `rs` when unset.
    /// let method = MemoryMethod::from_environment()?;
    /// assert!(["RS", "RA", "CA"].contains(&method.abbreviation()));
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn from_environment() -> CoResult<MemoryMethod> {
        let raw = config::COARRAY_MEMORY.raw();
        MemoryMethod::parse(&raw).ok_or_else(|| {
            CoError::Runtime(Error::Environment(format!(
                "{}={raw:?} is not rs, ra or ca",
                config::COARRAY_MEMORY.name
            )))
        })
    }

    /// `rs`, `ra` or `ca` (any case).
    ///
    /// ```
    /// use gaspar::coarray::MemoryMethod;
    /// assert_eq!(MemoryMethod::parse("CA"), Some(MemoryMethod::CompilerAllocation));
    /// assert_eq!(MemoryMethod::parse(" rs "), Some(MemoryMethod::RuntimeSharing));
    /// assert_eq!(MemoryMethod::parse("heap"), None);
    /// ```
    pub fn parse(text: &str) -> Option<MemoryMethod> {
        match text.trim().to_ascii_lowercase().as_str() {
            "rs" => Some(MemoryMethod::RuntimeSharing),
            "ra" => Some(MemoryMethod::RuntimeAllocation),
            "ca" => Some(MemoryMethod::CompilerAllocation),
            _ => None,
        }
    }

    /// The paper's abbreviation.
    ///
    /// ```
    /// use gaspar::coarray::MemoryMethod;
    /// assert_eq!(MemoryMethod::RuntimeAllocation.abbreviation(), "RA");
    /// ```
    pub fn abbreviation(self) -> &'static str {
        match self {
            MemoryMethod::RuntimeSharing => "RS",
            MemoryMethod::RuntimeAllocation => "RA",
            MemoryMethod::CompilerAllocation => "CA",
        }
    }

    /// Whether a data coarray of this lifetime is registered memory (else a pool block).
    pub(super) fn registers(self, lifetime: Lifetime) -> bool {
        match self {
            MemoryMethod::RuntimeSharing => false,
            MemoryMethod::RuntimeAllocation => lifetime == Lifetime::Allocatable,
            MemoryMethod::CompilerAllocation => true,
        }
    }
}

/// Whether a coarray lives for the whole run or between allocate and deallocate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lifetime {
    Static,
    Allocatable,
}

/// Memory words for `bytes` bytes (at least one: registrations are never empty).
fn words(bytes: usize) -> usize {
    bytes.div_ceil(std::mem::size_of::<u128>()).max(1)
}

impl Coarrays {
    /// The memory method in use.
    ///
    /// ```
    /// use gaspar::coarray::{Coarrays, MemoryMethod};
    /// let mut co = Coarrays::init()?;
    /// co.set_memory_method(MemoryMethod::CompilerAllocation);
    /// assert_eq!(co.memory_method(), MemoryMethod::CompilerAllocation);
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn memory_method(&self) -> MemoryMethod {
        self.memory
    }

    /// Chooses the memory method of later allocations (the ones made so far keep theirs).
    /// Every image must choose the same before its next allocation.
    ///
    /// ```
    /// use gaspar::coarray::{Coarrays, MemoryMethod};
    /// let mut co = Coarrays::init()?;
    /// co.set_memory_method(MemoryMethod::RuntimeSharing); // every image the same
    /// let a = co.allocate(64)?; // a block of the pool
    /// co.deallocate(a)?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn set_memory_method(&mut self, method: MemoryMethod) {
        self.memory = method;
    }

    /// Collective over the current team, an image control statement: a coarray for the
    /// whole run (Fortran's static coarrays), `bytes` on every image, zero-filled. In the
    /// pool under RS and RA, registered under CA.
    ///
    /// ```
    /// use gaspar::coarray::Coarrays;
    /// let mut co = Coarrays::init()?;
    /// let x = co.allocate_static(8 * 100)?; // real(8), save :: x(100)[*]
    /// assert_eq!(x.len(), 800);
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn allocate_static(&mut self, bytes: usize) -> CoResult<Token> {
        self.allocate_data(bytes, Lifetime::Static)
    }

    /// A data coarray where the method puts one of `lifetime` (inside `change team`,
    /// always the pool).
    pub(super) fn allocate_data(&mut self, bytes: usize, lifetime: Lifetime) -> CoResult<Token> {
        if self.in_team() || !self.memory.registers(lifetime) {
            return self.allocate_for(bytes, Purpose::Data);
        }
        self.complete_puts()?;
        self.all_images_running()?;
        let memory = vec![0u128; words(bytes)].into_boxed_slice();
        self.register_parts(memory, bytes)
    }

    /// Collective, an image control statement (the CA method's entry): registers memory
    /// this image allocated as its part of a coarray of `memory`'s length, which must be
    /// the same on every image. The contents are kept. [`deregister`](Self::deregister)
    /// gives the memory back; [`deallocate`](Self::deallocate) frees it.
    ///
    /// ```
    /// use gaspar::coarray::Coarrays;
    /// let mut co = Coarrays::init()?;
    /// let mine: Box<[u128]> = vec![7u128; 4].into_boxed_slice();
    /// let token = co.register(mine)?; // 64 bytes on every image
    /// assert_eq!(co.len(&token), 64);
    /// let back = co.deregister(token)?;
    /// assert_eq!(back[0], 7);
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn register(&mut self, memory: Box<[u128]>) -> CoResult<Token> {
        self.complete_puts()?;
        self.all_images_running()?;
        if self.in_team() {
            return Err(CoError::invalid(
                "register",
                "registration inside CHANGE TEAM is not supported",
            ));
        }
        let bytes = std::mem::size_of_val(&*memory);
        self.register_parts(memory, bytes)
    }

    /// Collective, an image control statement: ends a registration once every image is
    /// done with it and gives this image's memory back (with what the images wrote).
    ///
    /// ```
    /// use gaspar::coarray::{Coarrays, Dim, Elem, ElemType, Section};
    /// let mut co = Coarrays::init()?;
    /// let token = co.register(vec![0u128; 1].into_boxed_slice())?;
    /// let i8 = Elem::new(ElemType::Integer, 8);
    /// let one = Section::scalar(8, 0);
    /// co.put(&token, 8, 1, &one, i8, &5i64.to_ne_bytes(), &one, i8)?;
    /// co.sync_all()?;
    /// let back = co.deregister(token)?; // with what the images wrote
    /// assert_eq!(back[0] >> 64, 5);
    /// # let _: Dim = Dim { extent: 1, stride: 8 };
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    pub fn deregister(&mut self, token: Token) -> CoResult<Box<[u128]>> {
        self.complete_puts()?;
        self.all_images_running()?;
        match token.placement {
            Placement::Registered { id, .. } => self.release_registered(id),
            _ => Err(CoError::invalid(
                "deregister",
                "the coarray is a block of the pool, not registered memory",
            )),
        }
    }

    /// Registers `memory` as this image's part of a `bytes`-byte coarray and learns every
    /// other image's part in one exchange. A size that differs on some image, or a
    /// registration that failed on one, is an error on every image, and nothing stays
    /// registered.
    fn register_parts(&mut self, memory: Box<[u128]>, bytes: usize) -> CoResult<Token> {
        let (registered, failure) = match self.rt.register_owned(memory) {
            Ok(registration) => (Some(registration), None),
            Err(e) => (None, Some(e)),
        };
        let ga_bits = registered.as_ref().map_or(0, |r| r.ga().to_bits());
        let procs = self.rt.procs() as usize;
        let mut all = vec![[0u64; 2]; procs];
        self.rt
            .team()
            .allgather(&self.rt, &[[bytes as u64, ga_bits]], &mut all)?;
        let mismatch = all.iter().position(|&[b, _]| b != bytes as u64);
        let unregistered = all.iter().position(|&[_, ga]| ga == 0);
        if failure.is_some() || mismatch.is_some() || unregistered.is_some() {
            if let Some(registration) = registered {
                self.rt.unregister_owned(registration)?;
            }
            if let Some(e) = failure {
                return Err(e.into());
            }
            return Err(match mismatch {
                Some(rank) => CoError::invalid(
                    "allocate",
                    format!(
                        "{bytes} bytes here, {} bytes on image {}",
                        all[rank][0],
                        rank + 1
                    ),
                ),
                None => CoError::invalid(
                    "allocate",
                    format!(
                        "image {} could not register its part",
                        unregistered.map_or(0, |r| r + 1)
                    ),
                ),
            });
        }
        let parts = all
            .iter()
            .map(|&[_, ga]| GlobalAddr::from_bits(ga))
            .collect();
        let id = self.next_registration;
        self.next_registration += 1;
        self.registrations
            .push((id, registered.expect("registered when nothing failed")));
        Ok(Token {
            placement: Placement::Registered { id, parts },
            bytes,
            purpose: Purpose::Data,
        })
    }

    /// Ends registration `id` once every image is done with it, and gives its memory back.
    pub(super) fn release_registered(&mut self, id: u64) -> CoResult<Box<[u128]>> {
        let index = self
            .registrations
            .iter()
            .position(|&(i, _)| i == id)
            .ok_or_else(|| CoError::invalid("deallocate", "the coarray was freed already"))?;
        self.rt.barrier()?;
        let (_, registration) = self.registrations.swap_remove(index);
        Ok(self.rt.unregister_owned(registration)?)
    }

    /// Whether registration `id` is live.
    pub(super) fn registered_live(&self, id: u64) -> bool {
        self.registrations.iter().any(|&(i, _)| i == id)
    }
}

#[cfg(test)]
mod tests {
    use super::{Lifetime, MemoryMethod};

    #[test]
    fn methods_parse_and_place_static_and_allocatable_coarrays() {
        assert_eq!(
            MemoryMethod::parse("RS"),
            Some(MemoryMethod::RuntimeSharing)
        );
        assert_eq!(
            MemoryMethod::parse(" ra "),
            Some(MemoryMethod::RuntimeAllocation)
        );
        assert_eq!(
            MemoryMethod::parse("ca"),
            Some(MemoryMethod::CompilerAllocation)
        );
        assert_eq!(MemoryMethod::parse("heap"), None);
        let rs = MemoryMethod::RuntimeSharing;
        let ra = MemoryMethod::RuntimeAllocation;
        let ca = MemoryMethod::CompilerAllocation;
        assert!(!rs.registers(Lifetime::Static) && !rs.registers(Lifetime::Allocatable));
        assert!(!ra.registers(Lifetime::Static) && ra.registers(Lifetime::Allocatable));
        assert!(ca.registers(Lifetime::Static) && ca.registers(Lifetime::Allocatable));
    }
}
