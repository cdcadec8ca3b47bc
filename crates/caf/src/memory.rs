//! `register` and `deregister`: coarrays, lock and event variables, CRITICAL locks, and the
//! allocatable components of derived-type coarrays. Every registration but a component's is
//! collective (the engine allocates the same size on every image; the first one also
//! creates the component arena); `deregister` synchronizes, as gfortran emits no SYNC
//! around it.
//!
//! A component is allocated on each image alone, in the component arena. gfortran 12 names
//! a component's allocation in three ways: ALLOC_REGISTER_ONLY then ALLOC_ALLOCATE_ONLY,
//! ALLOC_ALLOCATE_ONLY on a token never registered (components of nested derived types),
//! and COARRAY_ALLOC (an unallocated component allocated by an assignment). What tells the
//! last from an allocatable coarray is where its token slot is: inside coarray memory (the
//! derived-type coarray's own part, or the arena), where an allocatable coarray's
//! descriptor never is. (ALLOC_REGISTER_ONLY's slot may be a temporary whose contents
//! gfortran then copies into the coarray.)

use std::ffi::{c_char, c_int, c_void};

use gaspar::coarray::{Coarrays, TeamLevel};

use crate::abi::{RegisterType, DEREGISTER_DEALLOCATE_ONLY};
use crate::accessor;
use crate::component::ComponentHeap;
use crate::descriptor::Descriptor;
use crate::error::CafError;
use crate::runtime::{self, State};
use crate::stat::StatArgs;
use crate::token::{self, CafToken, Holds, Memory};

/// Registers `size` bytes (locks and events: `size` variables) of type `regtype`; stores
/// the token in `*token` and this image's address in the descriptor's `base_addr`.
///
/// # Safety
/// `token` is writable; `desc` is null or a descriptor gfortran built; STAT=/ERRMSG= null
/// or writable.
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
    runtime::control_statement_with_state("ALLOCATE", stat, |state| {
        if token.is_null() {
            return Err(CafError::Argument("null token address".into()));
        }
        let kind = RegisterType::from_raw(regtype)
            .ok_or_else(|| CafError::Argument(format!("registration type {regtype}")))?;
        let local = match kind {
            RegisterType::AllocRegisterOnly | RegisterType::AllocAllocateOnly => {
                // SAFETY: `token` is a component's token slot, readable and writable;
                // `desc` null or a descriptor gfortran built.
                unsafe { register_component(state, kind, size, token, intrinsic_elements(desc))? }
            }
            RegisterType::MapExisting => {
                // SAFETY: `token` holds the existing coarray's token, `desc` the view's
                // descriptor (this function's contract).
                unsafe { register_view(state, token, desc)? };
                return Ok(());
            }
            RegisterType::CoarrayAlloc if is_component_slot(state, token) => {
                // SAFETY: as above.
                unsafe { register_component(state, kind, size, token, intrinsic_elements(desc))? }
            }
            _ => {
                let (engine, heap) = state.with_components()?;
                let (memory, holds) = allocate(engine, kind, size)?;
                let local = engine.local_addr(&memory)?;
                if holds == Holds::Data {
                    heap.add_data(local, size);
                    let part = engine.part(&memory, engine.this_image())?;
                    accessor::parts::insert(part.ga_bits, local);
                    // Accessors that may have to run in the owner: a derived type's, and
                    // any whose part is not mapped here (memory registered on its own,
                    // GASPAR_COARRAY_MEMORY=ra/ca; other hosts). Every image sees the same.
                    // SAFETY: null or a descriptor gfortran built (this function's contract).
                    let derived = !unsafe { intrinsic_elements(desc) };
                    let unmapped = (1..=engine.num_images()).any(|image| {
                        engine
                            .part(&memory, image)
                            .is_ok_and(|p| p.mapped.is_none())
                    });
                    if derived || unmapped {
                        accessor::service::wanted()?;
                        // Every image's part is in its `parts` before any image goes on:
                        // a request that reaches an owner's service about this coarray
                        // right after the allocation finds it there.
                        engine.sync_all()?;
                    }
                }
                // Only an allocatable coarray's descriptor outlives this call (a static
                // coarray is registered with a temporary one).
                let keep = kind == RegisterType::CoarrayAlloc;
                let fresh = CafToken::new(
                    Memory::Symmetric(memory),
                    holds,
                    if keep { desc } else { std::ptr::null_mut() },
                    // SAFETY: null or a descriptor gfortran built (this function's contract).
                    unsafe { intrinsic_elements(desc) },
                );
                // SAFETY: `token` is writable (checked non-null; this function's contract).
                unsafe { *token = fresh.into_raw() };
                if keep {
                    let team = state.engine.get_team(TeamLevel::Current);
                    state.team_allocations.push((team, token));
                }
                local as *mut c_void
            }
        };
        if !desc.is_null() {
            // SAFETY: a descriptor gfortran built, writable (this function's contract).
            unsafe { (*desc).base_addr = local };
        }
        Ok(())
    });
}

/// True when the descriptor a coarray is registered with names an intrinsic element type
/// (integer, logical, real, complex, character).
///
/// # Safety
/// `desc` is null or a descriptor gfortran built.
unsafe fn intrinsic_elements(desc: *const Descriptor) -> bool {
    // SAFETY: caller's contract.
    !desc.is_null() && matches!(unsafe { (*desc).dtype.type_code }, 1..=4 | 6)
}

/// GCC 16's MAP_EXISTING: replaces the coarray token in `slot` by a new token for the
/// memory `desc` addresses inside that coarray (the descriptor keeps its address).
///
/// # Safety
/// `slot` holds a token `register` made; `desc` is a descriptor gfortran built.
unsafe fn register_view(
    state: &mut State,
    slot: *mut *mut c_void,
    desc: *mut Descriptor,
) -> Result<(), CafError> {
    if desc.is_null() {
        return Err(CafError::Argument(
            "no descriptor for a coarray view".into(),
        ));
    }
    // SAFETY: caller's contract.
    let of = unsafe { *slot };
    // SAFETY: as above.
    let coarray = unsafe { token::borrow(of)? };
    let (memory, start) = coarray.memory_at()?;
    let base = state.engine.local_addr(memory)? + start;
    // SAFETY: a descriptor (caller's contract).
    let (data, rank) = unsafe { ((*desc).base_addr as usize, (*desc).dtype.rank) };
    let offset = start
        + data
            .checked_sub(base)
            .filter(|&o| o <= state.engine.len(memory))
            .ok_or_else(|| {
                CafError::Argument("a coarray view outside the coarray's memory".into())
            })?;
    let view = CafToken::new(
        Memory::View {
            of,
            offset: offset - start,
        },
        coarray.holds,
        if rank > 0 { desc } else { std::ptr::null_mut() },
        coarray.plain,
    );
    // SAFETY: writable (caller's contract).
    unsafe { *slot = view.into_raw() };
    Ok(())
}

/// True when `slot` (where gfortran keeps a token) lies in coarray memory: a component's.
fn is_component_slot(state: &mut State, slot: *mut *mut c_void) -> bool {
    match state.existing_components() {
        (_, Some(heap)) => heap.in_coarray_memory(slot as usize),
        (_, None) => false,
    }
}

/// The component token in `slot`, creating it when the slot holds none of ours or when
/// `fresh` (ALLOC_REGISTER_ONLY registers a new token whatever the slot holds: gfortran 16
/// reuses a stack slot that still holds the token of an earlier registration, now another
/// component's).
///
/// # Safety
/// `slot` is a component's token slot, readable and writable.
unsafe fn component_token<'a>(
    heap: &mut ComponentHeap,
    slot: *mut *mut c_void,
    fresh: bool,
) -> Result<&'a mut CafToken, CafError> {
    // SAFETY: readable (caller's contract); the value is only compared before use.
    let current = unsafe { *slot };
    let raw = if !fresh && heap.has_token(current as usize) {
        current
    } else {
        let fresh =
            CafToken::new(Memory::Unallocated, Holds::Data, std::ptr::null(), false).into_raw();
        heap.add_token(fresh as usize);
        // SAFETY: writable (caller's contract).
        unsafe { *slot = fresh };
        fresh
    };
    // SAFETY: a live component token of ours (checked or just made); gfortran does not
    // use it during the call.
    unsafe { token::borrow_mut(raw) }
}

/// Registers a component: a token without memory (ALLOC_REGISTER_ONLY), or memory in the
/// arena for elements of an intrinsic type or not; returns the address for the descriptor.
///
/// # Safety
/// `slot` is a component's token slot, readable and writable.
unsafe fn register_component(
    state: &mut State,
    kind: RegisterType,
    size: usize,
    slot: *mut *mut c_void,
    intrinsic: bool,
) -> Result<*mut c_void, CafError> {
    let (_, heap) = state.with_components()?;
    // SAFETY: caller's contract.
    let caf = unsafe { component_token(heap, slot, kind == RegisterType::AllocRegisterOnly)? };
    if kind == RegisterType::AllocRegisterOnly {
        return Ok(std::ptr::null_mut());
    }
    if let Memory::Component(old) = caf.memory {
        heap.free(old)?;
    }
    let offset = heap.allocate(size, intrinsic)?;
    caf.memory = Memory::Component(offset);
    Ok(heap.local_addr(offset) as *mut c_void)
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
/// a component's memory is freed on this image alone (`DEALLOCATE_ONLY` keeps its token).
///
/// # Safety
/// `token` points to a token slot `register` filled (a component's may hold none);
/// STAT=/ERRMSG= null or writable.
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
    runtime::control_statement_with_state("DEALLOCATE", stat, |state| {
        if token.is_null() {
            return Err(CafError::Argument("null token address".into()));
        }
        // SAFETY: `token` is readable (checked non-null; this function's contract).
        let raw = unsafe { *token };
        if is_component_slot(state, token) {
            // SAFETY: a component's token slot (checked above), readable and writable.
            return unsafe { deregister_component(state, token, raw, dereg_type) };
        }
        // SAFETY: `token` is a coarray's token slot (checked above).
        unsafe { deregister_coarray(state, token, raw) }
    });
}

/// Frees an allocatable or static coarray's memory on every image (collective) and its
/// token, and empties the slot: DEALLOCATE, and END TEAM for the coarrays allocated in
/// the ending team.
///
/// # Safety
/// `token` is a coarray's token slot holding `raw`, a token `register` stored, writable.
pub(crate) unsafe fn deregister_coarray(
    state: &mut State,
    token: *mut *mut c_void,
    raw: *mut c_void,
) -> Result<(), CafError> {
    state.team_allocations.retain(|&(_, slot)| slot != token);
    // SAFETY: a coarray's token `register` stored; gfortran forgets it (set to null below).
    let caf = unsafe {
        token::borrow(raw)?;
        token::from_raw(raw)
    };
    // SAFETY: `token` is writable (this function's contract).
    unsafe { *token = std::ptr::null_mut() };
    match caf.memory {
        Memory::Symmetric(memory) => {
            if caf.holds == Holds::Data {
                let local = state.engine.local_addr(&memory)?;
                let part = state.engine.part(&memory, state.engine.this_image())?;
                accessor::parts::remove(part.ga_bits);
                if let (_, Some(heap)) = state.existing_components() {
                    heap.remove_data(local);
                }
            }
            Ok(state.engine.deallocate(memory)?)
        }
        Memory::Component(_) | Memory::Unallocated | Memory::View { .. } => Ok(()),
    }
}

/// END TEAM's deallocation of the allocatable coarrays allocated in the ending team that
/// the program did not deallocate itself (gfortran 12-14 leave it to the library), in the
/// order they were allocated (the same on every image of the team): each is freed as by
/// DEALLOCATE, and its descriptor marked unallocated, so that `allocated()` is false and
/// a later ALLOCATE works.
pub(crate) fn deallocate_team_coarrays(state: &mut State) -> Result<(), CafError> {
    let ending = state.engine.get_team(TeamLevel::Current);
    let slots: Vec<_> = state
        .team_allocations
        .iter()
        .filter(|&&(team, _)| team == ending)
        .map(|&(_, slot)| slot)
        .collect();
    for slot in slots {
        // SAFETY: a token slot `register` recorded and DEALLOCATE has not emptied (it
        // removes its record): a variable of the program, alive while its coarray is.
        let raw = unsafe { *slot };
        // SAFETY: the token `register` stored there.
        let desc = unsafe { token::borrow(raw)? }.desc;
        if !desc.is_null() {
            // SAFETY: the descriptor the program registered the coarray with, its own
            // writable variable (an allocatable coarray's descriptor outlives the call).
            unsafe { (*desc.cast_mut()).base_addr = std::ptr::null_mut() };
        }
        // SAFETY: a coarray's token slot holding `raw`.
        unsafe { deregister_coarray(state, slot, raw)? };
    }
    Ok(())
}

/// Frees a component's memory; with `DEREGISTER` its token too.
///
/// # Safety
/// `slot` is a component's token slot holding `raw`, writable.
unsafe fn deregister_component(
    state: &mut State,
    slot: *mut *mut c_void,
    raw: *mut c_void,
    dereg_type: c_int,
) -> Result<(), CafError> {
    let (_, heap) = state.with_components()?;
    if !heap.has_token(raw as usize) {
        // Never allocated: nothing to free.
        return Ok(());
    }
    // SAFETY: a live component token of ours (checked above).
    let caf = unsafe { token::borrow_mut(raw)? };
    if let Memory::Component(offset) = caf.memory {
        heap.free(offset)?;
        caf.memory = Memory::Unallocated;
    }
    if dereg_type != DEREGISTER_DEALLOCATE_ONLY {
        heap.remove_token(raw as usize);
        // SAFETY: a live component token, forgotten by gfortran (slot set to null).
        drop(unsafe { token::from_raw(raw) });
        // SAFETY: writable (caller's contract).
        unsafe { *slot = std::ptr::null_mut() };
    }
    Ok(())
}
