//! `caf_token_t`: what gfortran keeps per coarray and hands back on every access. A boxed
//! [`CafToken`] behind the opaque pointer.

use std::ffi::{c_int, c_void};

use gaspar::coarray::{Image, Token};

use crate::descriptor::Descriptor;
use crate::error::CafError;
use crate::routes::Routes;

/// What one registration holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holds {
    /// Coarray data.
    Data,
    /// Lock variables (also a CRITICAL construct's lock).
    Locks,
    /// Event variables.
    Events,
}

/// Where a registration's memory is.
#[derive(Debug)]
pub(crate) enum Memory {
    /// A coarray, lock or event allocation of the engine (collective).
    Symmetric(Token),
    /// An allocated allocatable component: its offset in this image's part of the
    /// component arena.
    Component(usize),
    /// A component registered without memory, or deallocated.
    Unallocated,
    /// GCC 16's view of an existing coarray's memory (an associate name, a dummy): the
    /// coarray's token and the view's byte offset in it.
    View {
        /// The coarray's token (outlives the view, as the coarray outlives its names).
        of: *mut c_void,
        /// Bytes from the coarray's start to the view's.
        offset: usize,
    },
}

/// The first word of every coarray token ([`CafToken`]).
pub(crate) const COARRAY_TOKEN: u64 = u64::from_be_bytes(*b"gaspCAF\0");
/// The first word of every accessor's callback token
/// ([`crate::accessor::owner::CallbackToken`]).
pub(crate) const CALLBACK_TOKEN: u64 = u64::from_be_bytes(*b"gaspCBK\0");

/// The first word of the token behind gfortran's pointer: [`COARRAY_TOKEN`] or
/// [`CALLBACK_TOKEN`].
///
/// # Safety
/// `token` is non-null and points to a coarray token or a callback token (gfortran passes
/// no other), both `repr(C)` with this word first.
#[inline]
pub(crate) unsafe fn kind(token: *const c_void) -> u64 {
    // SAFETY: this function's contract.
    unsafe { *token.cast::<u64>() }
}

/// One registered coarray, lock or event array, or allocatable component.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct CafToken {
    /// Always [`COARRAY_TOKEN`]: first, as it tells this token from an accessor's callback
    /// token.
    kind: u64,
    /// Where accessors for each image's part ran before (the fast path of coindexed
    /// reads and writes).
    pub(crate) accessor_routes: Routes,
    /// The parts of a derived-type coarray whose accessors must run in their owner in this
    /// segment (a part holding a pointer into the owner's ordinary memory): kept so that
    /// the part is not looked at again before the next image control statement.
    pub(crate) owner_routes: Routes,
    /// Where the atomic and lock words of each image's part are mapped here (the fast
    /// path of the atomic subroutines, LOCK and UNLOCK).
    pub(crate) word_routes: Routes,
    /// The memory.
    pub(crate) memory: Memory,
    /// What the memory holds.
    pub(crate) holds: Holds,
    /// The descriptor gfortran registered an array coarray with (null for scalars): its
    /// bounds, the same on every image, are what a reference chain's first array
    /// reference indexes.
    pub(crate) desc: *const Descriptor,
    /// Whether the elements are of an intrinsic type (no pointer an accessor could follow
    /// into the owner's ordinary memory): an accessor may then run against the owner's
    /// part where it is mapped in this process.
    pub(crate) plain: bool,
}

impl CafToken {
    /// A token of `memory` holding `holds`, without routes yet.
    pub(crate) fn new(
        memory: Memory,
        holds: Holds,
        desc: *const Descriptor,
        plain: bool,
    ) -> CafToken {
        CafToken {
            kind: COARRAY_TOKEN,
            // Whether a derived type's accessors may run against a mapped part depends on
            // the pointers the part holds now (see `accessor::reach`).
            accessor_routes: if plain {
                Routes::default()
            } else {
                Routes::per_segment()
            },
            owner_routes: Routes::per_segment(),
            word_routes: Routes::default(),
            memory,
            holds,
            desc,
            plain,
        }
    }

    /// Boxes a token and returns the pointer gfortran keeps.
    pub(crate) fn into_raw(self) -> *mut c_void {
        Box::into_raw(Box::new(self)).cast()
    }

    /// The engine allocation, or an error naming what is missing (a view that does not
    /// start where its coarray does is reached through [`CafToken::memory_at`] only).
    pub(crate) fn memory(&self) -> Result<&Token, CafError> {
        match self.memory_at()? {
            (token, 0) => Ok(token),
            _ => Err(CafError::Unsupported(
                "this statement on part of a coarray seen through another name".into(),
            )),
        }
    }

    /// The engine allocation and the byte offset where this token's memory starts in it.
    pub(crate) fn memory_at(&self) -> Result<(&Token, usize), CafError> {
        match &self.memory {
            Memory::Symmetric(token) => Ok((token, 0)),
            Memory::View { of, offset } => {
                // SAFETY: a view's coarray token outlives it (see `Memory::View`).
                let coarray = unsafe { borrow(*of)? };
                let (token, start) = coarray.memory_at()?;
                Ok((token, start + offset))
            }
            Memory::Component(_) | Memory::Unallocated => Err(CafError::Argument(
                "an allocatable component is not a coarray of its own".into(),
            )),
        }
    }

    /// The engine allocation, checked to hold `holds`.
    pub(crate) fn memory_of(&self, holds: Holds) -> Result<&Token, CafError> {
        self.check_holds(holds)?;
        self.memory()
    }

    /// Lock or event variables: the engine allocation and the index of this token's first
    /// variable in it (a view of part of an array starts past 0; a variable is 8 bytes).
    pub(crate) fn variables(&self, holds: Holds) -> Result<(&Token, usize), CafError> {
        self.check_holds(holds)?;
        let (token, offset) = self.memory_at()?;
        Ok((token, offset / 8))
    }

    /// The engine allocation of a data coarray that starts where its allocation does,
    /// `None` for anything else (the hot paths; [`CafToken::memory_of`] names the error).
    #[inline(always)]
    pub(crate) fn data(&self) -> Option<&Token> {
        match (&self.memory, self.holds) {
            (Memory::Symmetric(token), Holds::Data) => Some(token),
            _ => None,
        }
    }

    /// Checks that the memory holds `holds`.
    pub(crate) fn check_holds(&self, holds: Holds) -> Result<(), CafError> {
        if self.holds != holds {
            return Err(CafError::Argument(format!(
                "coarray token holds {:?}, not {holds:?}",
                self.holds
            )));
        }
        Ok(())
    }
}

/// The token behind gfortran's pointer.
///
/// # Safety
/// `token` is null or a pointer [`CafToken::into_raw`] returned and not yet freed.
pub(crate) unsafe fn borrow<'a>(token: *mut c_void) -> Result<&'a CafToken, CafError> {
    if token.is_null() {
        return Err(CafError::Argument("coarray is not registered".into()));
    }
    // SAFETY: non-null tokens come from `CafToken::into_raw` (caller's contract).
    Ok(unsafe { &*token.cast::<CafToken>() })
}

/// The token behind gfortran's pointer, mutable (registration of component memory).
///
/// # Safety
/// As [`borrow`], and no other reference to the token is live.
pub(crate) unsafe fn borrow_mut<'a>(token: *mut c_void) -> Result<&'a mut CafToken, CafError> {
    if token.is_null() {
        return Err(CafError::Argument("coarray is not registered".into()));
    }
    // SAFETY: non-null tokens come from `CafToken::into_raw`; unique (caller's contract).
    Ok(unsafe { &mut *token.cast::<CafToken>() })
}

/// Takes back ownership of a token to free it.
///
/// # Safety
/// `token` is a non-null pointer [`CafToken::into_raw`] returned and not yet freed; it is
/// not used again.
pub(crate) unsafe fn from_raw(token: *mut c_void) -> CafToken {
    // SAFETY: caller's contract.
    *unsafe { Box::from_raw(token.cast::<CafToken>()) }
}

/// An image index where gfortran passes 0 for "this image" (atomics, locks, events on a
/// variable without a coindex).
pub(crate) fn image_or_this(raw: c_int, this_image: Image) -> Result<Image, CafError> {
    if raw == 0 {
        Ok(this_image)
    } else {
        image(raw)
    }
}

/// An image index from gfortran, checked positive.
pub(crate) fn image(raw: c_int) -> Result<Image, CafError> {
    Image::try_from(raw)
        .ok()
        .filter(|&i| i >= 1)
        .ok_or_else(|| CafError::Argument(format!("image index {raw} out of range")))
}
