//! `register` and `deregister`: coarrays, lock and event variables, CRITICAL locks.
//! Every registration but a component's is collective (the engine allocates the same size
//! on every image); `deregister` synchronizes, as gfortran emits no SYNC around it.
//! Allocatable components (ALLOC_REGISTER_ONLY, then ALLOC_ALLOCATE_ONLY on each image
//! alone) live in the component arena. gfortran 12 also allocates an unallocated component
//! in an assignment (`b%vals = [1, 2]`) with COARRAY_ALLOC on the component's token: a
//! COARRAY_ALLOC on a token registered as a component's is that.

use std::ffi::{c_char, c_int, c_void};

use gaspar::coarray::Coarrays;

use crate::abi::{RegisterType, DEREGISTER_DEALLOCATE_ONLY};
use crate::descriptor::Descriptor;
use crate::error::CafError;
use crate::runtime;
use crate::stat::StatArgs;
use crate::token::{self, CafToken, Holds, Memory};

/// Registers `size` bytes (locks and events: `size` variables) of type `regtype`; stores
/// the token in `*token` and this image's address in the descriptor's `base_addr`.
///
/// # Safety
/// `token` is writable (and for `ALLOC_ALLOCATE_ONLY` holds a token registered before);
/// `desc` is null or a descriptor gfortran built; STAT=/ERRMSG= null or writable.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_register(
    size: usize,
    regtype: c_int,
    token: *mut *mut c_void,
    desc: *mut Descriptor,
    stat: *mut c_int,
    errmsg: *mut c_char,
    errmsg_len: usize,
) {
    // SAFETY: this function's contract.
    let stat = unsafe { StatArgs::new(stat, errmsg, errmsg_len) };
    runtime::statement_with_state("ALLOCATE", stat, |state| {
        if token.is_null() {
            return Err(CafError::Argument("null token address".into()));
        }
        let mut kind = RegisterType::from_raw(regtype)
            .ok_or_else(|| CafError::Argument(format!("registration type {regtype}")))?;
        // SAFETY: `token` is readable (checked non-null); its value is only compared.
        let current = unsafe { *token } as usize;
        if kind == RegisterType::CoarrayAlloc && state.is_component_token(current) {
            kind = RegisterType::AllocAllocateOnly;
        }
        let local = match kind {
            RegisterType::AllocRegisterOnly => {
                // The arena is created with the first component, on every image.
                let (_, heap) = state.with_components()?;
                let fresh = CafToken {
                    memory: Memory::Unallocated,
                    holds: Holds::Data,
                    desc: std::ptr::null(),
                }
                .into_raw();
                heap.add_token(fresh as usize);
                // SAFETY: `token` is writable (checked non-null; this function's contract).
                unsafe { *token = fresh };
                std::ptr::null_mut()
            }
            RegisterType::AllocAllocateOnly => {
                // SAFETY: `*token` is the component's token from ALLOC_REGISTER_ONLY.
                let caf = unsafe { token::borrow_mut(*token)? };
                if !matches!(caf.memory, Memory::Unallocated) {
                    return Err(CafError::Argument("component is already allocated".into()));
                }
                let (_, heap) = state.with_components()?;
                let offset = heap.allocate(size)?;
                caf.memory = Memory::Component(offset);
                heap.local_addr(offset) as *mut c_void
            }
            _ => {
                let engine = &mut state.engine;
                let (memory, holds) = allocate(engine, kind, size)?;
                let local = engine.local_addr(&memory)? as *mut c_void;
                // Only an allocatable coarray's descriptor outlives this call (a static
                // coarray is registered with a temporary one).
                let keep = kind == RegisterType::CoarrayAlloc;
                let fresh = CafToken {
                    memory: Memory::Symmetric(memory),
                    holds,
                    desc: if keep { desc } else { std::ptr::null_mut() },
                };
                // SAFETY: `token` is writable (checked non-null; this function's contract).
                unsafe { *token = fresh.into_raw() };
                local
            }
        };
        if !desc.is_null() {
            // SAFETY: a descriptor gfortran built, writable (this function's contract).
            unsafe { (*desc).base_addr = local };
        }
        Ok(())
    });
}

/// The engine allocation for one registration type.
fn allocate(
    engine: &mut Coarrays,
    kind: RegisterType,
    size: usize,
) -> Result<(gaspar::coarray::Token, Holds), CafError> {
    Ok(match kind {
        RegisterType::LockStatic | RegisterType::LockAlloc | RegisterType::Critical => {
            (engine.allocate_locks(size)?, Holds::Locks)
        }
        RegisterType::EventStatic | RegisterType::EventAlloc => {
            (engine.allocate_events(size)?, Holds::Events)
        }
        _ => (engine.allocate(size)?, Holds::Data),
    })
}

/// `deallocate(a)`: frees the coarray on every image (collective) and the token;
/// `DEALLOCATE_ONLY` (a component) frees only the memory.
///
/// # Safety
/// `token` points to a token `register` stored; STAT=/ERRMSG= null or writable.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_deregister(
    token: *mut *mut c_void,
    dereg_type: c_int,
    stat: *mut c_int,
    errmsg: *mut c_char,
    errmsg_len: usize,
) {
    // SAFETY: this function's contract.
    let stat = unsafe { StatArgs::new(stat, errmsg, errmsg_len) };
    runtime::statement_with_state("DEALLOCATE", stat, |state| {
        if token.is_null() {
            return Err(CafError::Argument("null token address".into()));
        }
        // SAFETY: `token` is readable (checked non-null; this function's contract).
        let raw = unsafe { *token };
        // SAFETY: a token `register` stored, not shared during the call.
        let caf = unsafe { token::borrow_mut(raw)? };
        if let Memory::Component(offset) = caf.memory {
            let (_, heap) = state.with_components()?;
            heap.free(offset)?;
            caf.memory = Memory::Unallocated;
        }
        if dereg_type == DEREGISTER_DEALLOCATE_ONLY {
            return match caf.memory {
                Memory::Symmetric(_) => Err(CafError::Unsupported(
                    "deallocating the memory of a coarray but keeping its token".into(),
                )),
                Memory::Component(_) | Memory::Unallocated => Ok(()),
            };
        }
        if let (_, Some(heap)) = state.existing_components() {
            heap.remove_token(raw as usize);
        }
        // SAFETY: `raw` is a registered token; gfortran forgets it (set to null below).
        let caf = unsafe { token::from_raw(raw) };
        // SAFETY: `token` is writable (this function's contract).
        unsafe { *token = std::ptr::null_mut() };
        match caf.memory {
            Memory::Symmetric(memory) => Ok(state.engine.deallocate(memory)?),
            Memory::Component(_) | Memory::Unallocated => Ok(()),
        }
    });
}
