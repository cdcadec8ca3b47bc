//! The accessor transfers: `get_from_remote`, `send_to_remote`, `transfer_between_remotes`,
//! `is_present_on_remote`. Each finds where the accessor runs ([`Where`]) and runs it
//! there.

use std::ffi::{c_int, c_void};

use gaspar::coarray::{TeamId, TeamLevel};

use super::fast;
use super::owner::{self, Call, DescBuf, Fetched, Into, Sent, Target};
use super::peers;
use super::reach;
use super::service;
use super::wire::{Op, PartAt, Reply, Request};
use crate::descriptor::{self, Descriptor};
use crate::error::CafError;
use crate::routes::Route;
use crate::runtime::{self, State};
use crate::stat::StatArgs;
use crate::teams;
use crate::token::{self, Holds};

/// Where an accessor call runs.
enum Where {
    /// In this process: the part is this image's, or mapped here and of a type without
    /// pointers.
    Here(Target),
    /// In the owner's service thread.
    Owner {
        rank: u32,
        part: PartAt,
        coarray_desc: Option<Vec<u8>>,
    },
}

/// Where the accessor for `image`'s part of `token` runs; `coarray_desc` is the coarray's
/// descriptor (null for coarrays without one).
///
/// # Safety
/// `token` is a token `register` made (or null); `coarray_desc` null or a descriptor.
unsafe fn locate(
    state: &State,
    token: *mut c_void,
    image: c_int,
    coarray_desc: *const c_void,
    team: CoindexTeam,
) -> Result<Where, CafError> {
    let desc = if coarray_desc.is_null() {
        None
    } else {
        // SAFETY: a descriptor (this function's contract).
        Some(Box::new(unsafe { DescBuf::copy_of(coarray_desc)? }))
    };
    if matches!(team, CoindexTeam::Current) {
        // A part an accessor ran against before: no engine lookup (the fast path's route).
        // SAFETY: this function's contract.
        if let Some(base) = unsafe { fast::route(token, image) } {
            return Ok(Where::Here(Target { base, desc }));
        }
    }
    let engine = &state.engine;
    let image_index = image;
    let team_id = team.resolve(state)?;
    // SAFETY: this function's contract.
    let caf = unsafe { token::borrow(token)? };
    caf.check_holds(Holds::Data)?;
    let (memory, offset) = caf.memory_at()?;
    let image = token::image(image)?;
    let part = engine.part_in(memory, image, team_id)?;
    let len = engine.len(memory).saturating_sub(offset);
    let procs = engine.runtime().procs() as usize;
    let current = matches!(team, CoindexTeam::Current);
    let here = if part.rank == engine.runtime().rank() {
        Some(engine.local_addr(memory)? + offset)
    } else if caf.plain {
        part.mapped.map(|base| base + offset)
    } else {
        part.mapped
            .filter(|_| part.at_home)
            .map(|base| base + offset)
            // Judged to run in the owner earlier in this segment.
            .filter(|&base| !current || caf.owner_routes.base(image_index) != Some(base))
            .filter(|&base| {
                // SAFETY: `base` is the part's address here, `len` bytes to its end.
                let runs_here =
                    unsafe { derived_runs_here(state, base, len, part.rank, image, team_id) };
                if !runs_here && current {
                    let route = Route {
                        base,
                        len,
                        rank: part.rank,
                    };
                    caf.owner_routes.record(image_index, procs, route);
                }
                runs_here
            })
    };
    match here {
        Some(base) => {
            if current {
                let route = Route {
                    base,
                    len,
                    rank: part.rank,
                };
                caf.accessor_routes.record(image_index, procs, route);
            }
            Ok(Where::Here(Target { base, desc }))
        }
        None => Ok(Where::Owner {
            rank: part.rank,
            part: PartAt {
                ga_bits: part.ga_bits,
                offset: offset as u64,
            },
            coarray_desc: desc.map(|d| d.bytes().to_vec()),
        }),
    }
}

/// True when an accessor may run here against `len` bytes at `base`, part of a
/// derived-type coarray that job rank `rank` (image `image` of team `team`) maps at the
/// same address ([`reach`]).
///
/// # Safety
/// `base..base + len` is mapped in this process.
unsafe fn derived_runs_here(
    state: &State,
    base: usize,
    len: usize,
    rank: u32,
    image: gaspar::coarray::Image,
    team: TeamId,
) -> bool {
    let Some(owner) = peers::pid_on_this_node(rank) else {
        return false;
    };
    let arena = state
        .components()
        .and_then(|heap| heap.pointer_free(&state.engine, image, team));
    // SAFETY: this function's contract.
    unsafe { reach::runs_here(base, len, owner, arena.as_slice()) }
}

/// Runs a coindexed read or write on the fast path when it can ([`fast`]): `on_route`
/// moves the data on the route of `image`; true when done.
///
/// # Safety
/// The arguments are as gfortran 15/16 pass them to `get_from_remote`/`send_to_remote`;
/// `on_route` is safe to call with a route of this coarray.
#[inline(always)]
unsafe fn fast_path<const GCC16: bool>(
    token: *mut c_void,
    image: c_int,
    stat: *mut c_int,
    team: *mut c_void,
    team_number: *mut c_int,
    on_route: impl FnOnce(usize) -> bool,
) -> bool {
    if !matches!(
        team_of_args::<GCC16>(team, team_number),
        CoindexTeam::Current
    ) {
        return false;
    }
    // SAFETY: this function's contract.
    let Some(base) = (unsafe { fast::route(token, image) }) else {
        return false;
    };
    let done = on_route(base);
    if done {
        // SAFETY: as above.
        unsafe { StatArgs::stat_only(stat) }.success();
    }
    done
}

/// The additional data gfortran packed, as a mutable slice.
///
/// # Safety
/// `add_data` is null or `size` writable bytes.
unsafe fn add_data<'a>(add_data: *mut c_void, size: usize) -> &'a mut [u8] {
    if add_data.is_null() || size == 0 {
        &mut []
    } else {
        // SAFETY: caller's contract.
        unsafe { std::slice::from_raw_parts_mut(add_data.cast::<u8>(), size) }
    }
}

/// An optional length gfortran passes by address.
///
/// # Safety
/// `p` is null or readable.
unsafe fn opt(p: *const usize) -> Option<usize> {
    // SAFETY: caller's contract.
    (!p.is_null()).then(|| unsafe { *p })
}

/// The team a coindex numbers its image in (TEAM= or TEAM_NUMBER=).
#[derive(Clone, Copy)]
enum CoindexTeam {
    /// The current team.
    Current,
    /// TEAM=: the address of a team variable.
    Variable(*const *mut c_void),
    /// TEAM_NUMBER=: an active team's number (-1: the initial team).
    Number(c_int),
}

/// The coindex's team: GCC 16's arguments, or the current team.
fn team_of_args<const GCC16: bool>(team: *mut c_void, team_number: *mut c_int) -> CoindexTeam {
    if GCC16 {
        // SAFETY: GCC 16 passes a null or readable team number.
        unsafe { CoindexTeam::of_gcc16(team, team_number) }
    } else {
        CoindexTeam::Current
    }
}

impl CoindexTeam {
    /// GCC 16's arguments (`caf_team_t *team`, `int *team_number`, either null). gfortran
    /// 15 cannot write a team in a coindex and leaves these argument slots undefined: its
    /// programs reach the functions taking them only through GCC 16's names (see
    /// `crate::gcc16`), so they are read for GCC 16 alone.
    ///
    /// # Safety
    /// `team_number` is null or readable.
    unsafe fn of_gcc16(team: *mut c_void, team_number: *mut c_int) -> CoindexTeam {
        if !team.is_null() {
            CoindexTeam::Variable(team.cast_const().cast())
        } else if !team_number.is_null() {
            // SAFETY: readable (caller's contract).
            CoindexTeam::Number(unsafe { *team_number })
        } else {
            CoindexTeam::Current
        }
    }

    /// The engine's team, checked active.
    fn resolve(self, state: &State) -> Result<TeamId, CafError> {
        let id = match self {
            CoindexTeam::Current => return Ok(state.engine.get_team(TeamLevel::Current)),
            // SAFETY: a team variable's address (GCC 16 passes one for TEAM=).
            CoindexTeam::Variable(team) => unsafe { teams::team_of(state, team)? },
            CoindexTeam::Number(number) => state
                .engine
                .active_team_numbered(i64::from(number))
                .ok_or_else(|| {
                    CafError::NoActiveTeam(format!("no active team has the number {number}"))
                })?,
        };
        if state.engine.is_active(id) {
            Ok(id)
        } else {
            Err(CafError::NoActiveTeam(
                "TEAM= names a team that is not active".into(),
            ))
        }
    }
}

/// `x = a(...)[image]` and every coindexed read: runs getter `getter_index` on the image
/// owning the data and leaves the result where gfortran asked (`*dst_data` for a scalar,
/// `opt_dst_desc` for an array, reallocated when `may_realloc_dst`).
///
/// # Safety
/// The arguments are as gfortran 15/16 pass them.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_get_from_remote(
    token: *mut c_void,
    opt_src_desc: *const c_void,
    opt_src_charlen: *const usize,
    image_index: c_int,
    dst_size: usize,
    dst_data: *mut *mut c_void,
    opt_dst_charlen: *mut usize,
    opt_dst_desc: *mut Descriptor,
    may_realloc_dst: bool,
    getter_index: c_int,
    add_data_ptr: *mut c_void,
    add_data_size: usize,
    stat: *mut c_int,
    team: *mut c_void,
    team_number: *mut c_int,
) {
    // SAFETY: this function's contract.
    unsafe {
        get_entry::<false>(
            token,
            opt_src_desc,
            opt_src_charlen,
            image_index,
            dst_size,
            dst_data,
            opt_dst_charlen,
            opt_dst_desc,
            may_realloc_dst,
            getter_index,
            add_data_ptr,
            add_data_size,
            stat,
            team,
            team_number,
        )
    }
}

/// GCC 16's form of [`_gfortran_caf_get_from_remote`]: the coindex's TEAM= / TEAM_NUMBER= are read.
///
/// # Safety
/// As [`_gfortran_caf_get_from_remote`].
#[no_mangle]
pub unsafe extern "C" fn _gaspar_caf16_get_from_remote(
    token: *mut c_void,
    opt_src_desc: *const c_void,
    opt_src_charlen: *const usize,
    image_index: c_int,
    dst_size: usize,
    dst_data: *mut *mut c_void,
    opt_dst_charlen: *mut usize,
    opt_dst_desc: *mut Descriptor,
    may_realloc_dst: bool,
    getter_index: c_int,
    add_data_ptr: *mut c_void,
    add_data_size: usize,
    stat: *mut c_int,
    team: *mut c_void,
    team_number: *mut c_int,
) {
    // SAFETY: this function's contract.
    unsafe {
        get_entry::<true>(
            token,
            opt_src_desc,
            opt_src_charlen,
            image_index,
            dst_size,
            dst_data,
            opt_dst_charlen,
            opt_dst_desc,
            may_realloc_dst,
            getter_index,
            add_data_ptr,
            add_data_size,
            stat,
            team,
            team_number,
        )
    }
}

/// The body of both forms of `get_from_remote`: the lean path ([`fast::lean_get`]) for a
/// call without character lengths in the current team, else the general path.
///
/// # Safety
/// As [`_gfortran_caf_get_from_remote`].
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn get_entry<const GCC16: bool>(
    token: *mut c_void,
    opt_src_desc: *const c_void,
    opt_src_charlen: *const usize,
    image_index: c_int,
    dst_size: usize,
    dst_data: *mut *mut c_void,
    opt_dst_charlen: *mut usize,
    opt_dst_desc: *mut Descriptor,
    may_realloc_dst: bool,
    getter_index: c_int,
    add_data_ptr: *mut c_void,
    add_data_size: usize,
    stat: *mut c_int,
    team: *mut c_void,
    team_number: *mut c_int,
) {
    let lean = (opt_src_charlen as usize | opt_dst_charlen as usize) == 0
        && (!GCC16 || (team as usize | team_number as usize) == 0);
    // SAFETY: this function's contract, for both calls.
    unsafe {
        if lean
            && fast::lean_get(
                token,
                opt_src_desc,
                image_index,
                dst_data,
                opt_dst_desc,
                may_realloc_dst,
                getter_index,
                add_data_ptr,
            )
        {
            StatArgs::stat_only(stat).success();
            return;
        }
        get_from_remote::<GCC16>(
            token,
            opt_src_desc,
            opt_src_charlen,
            image_index,
            dst_size,
            dst_data,
            opt_dst_charlen,
            opt_dst_desc,
            may_realloc_dst,
            getter_index,
            add_data_ptr,
            add_data_size,
            stat,
            team,
            team_number,
        )
    }
}

/// [`_gfortran_caf_get_from_remote`] with a coindex's team read as GCC 16 passes it or not.
///
/// Out of line, with the entry points' C signature, so that their call to it is a jump:
/// the entry points then keep only the lean path's few registers and no frame for
/// the rest. A one-element get on the fast path runs ~110 instructions in all (program,
/// library, getter) at about four a cycle, so each instruction counts (17 fewer took the
/// 8-byte get from 1.10x to 0.84x caf_shmem's time, bench/probes/README.md).
///
/// # Safety
/// As [`_gfortran_caf_get_from_remote`].
#[allow(clippy::too_many_arguments)]
#[inline(never)]
unsafe extern "C" fn get_from_remote<const GCC16: bool>(
    token: *mut c_void,
    opt_src_desc: *const c_void,
    opt_src_charlen: *const usize,
    image_index: c_int,
    dst_size: usize,
    dst_data: *mut *mut c_void,
    opt_dst_charlen: *mut usize,
    opt_dst_desc: *mut Descriptor,
    may_realloc_dst: bool,
    getter_index: c_int,
    add_data_ptr: *mut c_void,
    add_data_size: usize,
    stat: *mut c_int,
    team: *mut c_void,
    team_number: *mut c_int,
) {
    let get = fast::Get {
        src_desc: opt_src_desc,
        src_charlen: opt_src_charlen,
        image: image_index,
        dst_data,
        dst_charlen: opt_dst_charlen,
        dst_desc: opt_dst_desc,
        may_realloc: may_realloc_dst,
        getter: getter_index,
        add_data: add_data_ptr,
    };
    // SAFETY: this function's contract; `fast::get` runs on a route of this coarray.
    if unsafe {
        fast_path::<GCC16>(token, get.image, stat, team, team_number, |base| {
            fast::get(base, &get)
        })
    } {
        return;
    }
    let coindex = team_of_args::<GCC16>(team, team_number);
    // SAFETY: STAT= as gfortran passes it.
    let stat = unsafe { StatArgs::stat_only(stat) };
    // SAFETY: this function's contract.
    if let Some(callback) = unsafe { owner::callback(token) } {
        // SAFETY: this function's contract.
        let done = unsafe {
            get_back(
                callback,
                opt_src_desc,
                opt_src_charlen,
                image_index,
                dst_size,
                dst_data,
                opt_dst_charlen,
                opt_dst_desc,
                may_realloc_dst,
                getter_index,
                add_data(add_data_ptr, add_data_size),
            )
        };
        return match done {
            Ok(()) => stat.success(),
            Err(e) => {
                crate::error::say(&format!("gaspar caf: coindexed read, called back: {e}"));
                std::process::exit(1)
            }
        };
    }
    runtime::statement_with_state("coindexed read", stat, |state| {
        // SAFETY: this function's contract, for every block below.
        let place = unsafe { locate(state, token, image_index, opt_src_desc, coindex)? };
        let mut call = Call {
            index: getter_index,
            // SAFETY: as above.
            add_data: unsafe { add_data(add_data_ptr, add_data_size) },
            image: image_index,
            // SAFETY: as above.
            dst_charlen: unsafe { opt(opt_dst_charlen) },
            // SAFETY: as above.
            src_charlen: unsafe { opt(opt_src_charlen) },
            origin: None,
        };
        match place {
            // SAFETY: as above.
            Where::Here(mut target) => unsafe {
                get_here(
                    &mut call,
                    &mut target,
                    dst_data,
                    opt_dst_desc,
                    may_realloc_dst,
                    opt_dst_charlen,
                    opt_src_charlen,
                )
            },
            Where::Owner {
                rank,
                part,
                coarray_desc,
            } => {
                let dst_desc = if opt_dst_desc.is_null() {
                    None
                } else {
                    // SAFETY: as above.
                    Some(
                        unsafe { DescBuf::copy_of(opt_dst_desc.cast())? }
                            .bytes()
                            .to_vec(),
                    )
                };
                let request = Request {
                    index: getter_index,
                    image: image_index,
                    part,
                    coarray_desc,
                    add_data: call.add_data.to_vec(),
                    origin: (state.engine.runtime().rank(), call.add_data.as_ptr() as u64),
                    dst_charlen: call.dst_charlen.map(|v| v as u64),
                    src_charlen: call.src_charlen.map(|v| v as u64),
                    op: Op::Get {
                        scalar_bytes: dst_size as u64,
                        dst_desc,
                    },
                };
                let fetched = fetched(service::call(rank, &request)?)?;
                // SAFETY: as above.
                unsafe {
                    deliver(
                        fetched,
                        dst_data,
                        opt_dst_desc,
                        may_realloc_dst,
                        opt_dst_charlen,
                    )
                }
            }
        }
    });
}

/// An accessor's call back for data of the image that made the access (its additional
/// data): run here when the accessor runs here, else by that image's service thread
/// against its own additional data. Needs no engine (the image's thread may hold it).
///
/// # Safety
/// As [`_gfortran_caf_get_from_remote`].
#[allow(clippy::too_many_arguments)]
unsafe fn get_back(
    callback: &owner::CallbackToken,
    src_desc: *const c_void,
    src_charlen: *const usize,
    image: c_int,
    dst_size: usize,
    dst_data: *mut *mut c_void,
    dst_charlen: *mut usize,
    dst_desc: *mut Descriptor,
    may_realloc: bool,
    index: c_int,
    add_data: &mut [u8],
) -> Result<(), CafError> {
    let desc = if src_desc.is_null() {
        None
    } else {
        // SAFETY: a descriptor (caller's contract).
        Some(Box::new(unsafe { DescBuf::copy_of(src_desc)? }))
    };
    let mut call = Call {
        index,
        add_data,
        image,
        // SAFETY: caller's contract.
        dst_charlen: unsafe { opt(dst_charlen) },
        // SAFETY: caller's contract.
        src_charlen: unsafe { opt(src_charlen) },
        origin: None,
    };
    match callback.origin {
        None => {
            let mut target = Target {
                base: callback.memptr() as usize,
                desc,
            };
            // SAFETY: caller's contract; the additional data is in this process.
            unsafe {
                get_here(
                    &mut call,
                    &mut target,
                    dst_data,
                    dst_desc,
                    may_realloc,
                    dst_charlen,
                    src_charlen,
                )
            }
        }
        Some((rank, address)) => {
            let dst = if dst_desc.is_null() {
                None
            } else {
                // SAFETY: a descriptor (caller's contract).
                Some(
                    unsafe { DescBuf::copy_of(dst_desc.cast())? }
                        .bytes()
                        .to_vec(),
                )
            };
            let request = Request {
                index,
                image,
                part: PartAt {
                    ga_bits: 0,
                    offset: address,
                },
                coarray_desc: desc.map(|d| d.bytes().to_vec()),
                add_data: call.add_data.to_vec(),
                origin: (rank, 0),
                dst_charlen: call.dst_charlen.map(|v| v as u64),
                src_charlen: call.src_charlen.map(|v| v as u64),
                op: Op::Get {
                    scalar_bytes: dst_size as u64,
                    dst_desc: dst,
                },
            };
            let fetched = fetched(service::call(rank, &request)?)?;
            // SAFETY: caller's contract.
            unsafe { deliver(fetched, dst_data, dst_desc, may_realloc, dst_charlen) }
        }
    }
}

/// A getter run here, into the caller's destination ([`owner::into_destination`]).
///
/// # Safety
/// As [`_gfortran_caf_get_from_remote`].
unsafe fn get_here(
    call: &mut Call<'_>,
    target: &mut Target,
    dst_data: *mut *mut c_void,
    dst_desc: *mut Descriptor,
    may_realloc: bool,
    dst_charlen: *mut usize,
    src_charlen: *const usize,
) -> Result<(), CafError> {
    let coarray = target.desc.as_deref().map(DescBuf::dtype);
    // SAFETY: caller's contract.
    let run =
        |dst| unsafe { owner::get_in_place(call, target, dst, dst_charlen, src_charlen) }.map(drop);
    // SAFETY: caller's contract.
    unsafe {
        owner::into_destination(
            coarray,
            dst_data,
            dst_desc,
            may_realloc,
            dst_charlen,
            src_charlen,
            run,
        )
    }
}

fn fetched(reply: Reply) -> Result<Fetched, CafError> {
    match reply {
        Reply::Fetched {
            data,
            desc,
            dst_charlen,
        } => Ok(Fetched {
            data,
            desc: desc
                .as_deref()
                .map(|bytes| DescBuf::from_bytes(bytes).map(Box::new))
                .transpose()?,
            dst_charlen: dst_charlen.map(|v| v as usize),
        }),
        other => Err(CafError::Argument(format!(
            "the owner answered a read with {other:?}"
        ))),
    }
}

/// Puts what the owner read where gfortran asked for it.
///
/// # Safety
/// As [`_gfortran_caf_get_from_remote`].
unsafe fn deliver(
    fetched: Fetched,
    dst_data: *mut *mut c_void,
    dst_desc: *mut Descriptor,
    may_realloc: bool,
    dst_charlen: *mut usize,
) -> Result<(), CafError> {
    if let (Some(len), false) = (fetched.dst_charlen, dst_charlen.is_null()) {
        // SAFETY: writable (caller's contract).
        unsafe { *dst_charlen = len };
    }
    let data = &fetched.data;
    match (dst_desc.is_null(), fetched.desc) {
        (true, _) => {
            if dst_data.is_null() {
                return Err(CafError::Argument(
                    "no destination for a coindexed read".into(),
                ));
            }
            // SAFETY: `dst_data` holds the address of the destination scalar (gfortran
            // points it at its result variable), or null: then a buffer is allocated.
            unsafe {
                if (*dst_data).is_null() {
                    *dst_data = libc::malloc(data.len().max(1));
                }
                std::ptr::copy_nonoverlapping(data.as_ptr(), (*dst_data).cast::<u8>(), data.len());
            }
            Ok(())
        }
        (false, Some(result)) => {
            // SAFETY: a descriptor gfortran built (caller's contract).
            let live = unsafe { DescBuf::copy_of(dst_desc.cast())? };
            let base = live.base();
            let fits = !base.is_null() && (!may_realloc || live.count() == result.count());
            // SAFETY: the destination holds `count` contiguous elements when it fits (as
            // single.c assumes); otherwise it is reallocated to hold the result.
            unsafe {
                if fits {
                    let len = data.len().min(live.elem_len() * live.count());
                    std::ptr::copy_nonoverlapping(data.as_ptr(), base.cast::<u8>(), len);
                } else {
                    let fresh = libc::realloc(base, data.len().max(1));
                    std::ptr::copy_nonoverlapping(data.as_ptr(), fresh.cast::<u8>(), data.len());
                    let header = result.bytes();
                    std::ptr::copy_nonoverlapping(
                        header.as_ptr(),
                        dst_desc.cast::<u8>(),
                        header.len(),
                    );
                    (*dst_desc).base_addr = fresh;
                }
            }
            Ok(())
        }
        (false, None) => Err(CafError::Argument(
            "the owner returned a scalar for an array read".into(),
        )),
    }
}

/// The elements of the caller's source (a descriptor's, in array element order, or the
/// scalar at `data`: `size` bytes, or `size` bytes per character of a character scalar of
/// `charlen`), to ship to the owner.
///
/// # Safety
/// `desc` null or a descriptor; `data` readable for the scalar's bytes when `desc` is null.
unsafe fn source(
    desc: *const c_void,
    data: *const c_void,
    size: usize,
    charlen: Option<usize>,
) -> Result<Sent, CafError> {
    if desc.is_null() {
        let size = size * charlen.unwrap_or(1);
        let bytes = if data.is_null() || size == 0 {
            Vec::new()
        } else {
            // SAFETY: caller's contract.
            unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) }.to_vec()
        };
        return Ok(Sent {
            data: bytes,
            desc: None,
        });
    }
    // SAFETY: caller's contract.
    let layout = unsafe { descriptor::read(desc.cast())? };
    // SAFETY: as above.
    let mut copy = unsafe { DescBuf::copy_of(desc)? };
    let base = copy.base().cast::<u8>();
    let mut bytes = Vec::with_capacity(layout.count() * layout.elem_len);
    for offset in layout.offsets() {
        // SAFETY: each element the descriptor describes is readable.
        bytes.extend_from_slice(unsafe {
            std::slice::from_raw_parts(base.offset(offset), layout.elem_len)
        });
    }
    copy.make_contiguous();
    Ok(Sent {
        data: bytes,
        desc: Some(Box::new(copy)),
    })
}

/// `a(...)[image] = x` and every coindexed write: runs receiver `accessor_index` on the
/// image owning the data.
///
/// # Safety
/// The arguments are as gfortran 15/16 pass them.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_send_to_remote(
    token: *mut c_void,
    opt_dst_desc: *const c_void,
    opt_dst_charlen: *const usize,
    image_index: c_int,
    src_size: usize,
    src_data: *const c_void,
    opt_src_charlen: *const usize,
    opt_src_desc: *const c_void,
    accessor_index: c_int,
    add_data_ptr: *mut c_void,
    add_data_size: usize,
    stat: *mut c_int,
    team: *mut c_void,
    team_number: *mut c_int,
) {
    // SAFETY: this function's contract.
    unsafe {
        send_entry::<false>(
            token,
            opt_dst_desc,
            opt_dst_charlen,
            image_index,
            src_size,
            src_data,
            opt_src_charlen,
            opt_src_desc,
            accessor_index,
            add_data_ptr,
            add_data_size,
            stat,
            team,
            team_number,
        )
    }
}

/// GCC 16's form of [`_gfortran_caf_send_to_remote`]: the coindex's TEAM= / TEAM_NUMBER= are read.
///
/// # Safety
/// As [`_gfortran_caf_send_to_remote`].
#[no_mangle]
pub unsafe extern "C" fn _gaspar_caf16_send_to_remote(
    token: *mut c_void,
    opt_dst_desc: *const c_void,
    opt_dst_charlen: *const usize,
    image_index: c_int,
    src_size: usize,
    src_data: *const c_void,
    opt_src_charlen: *const usize,
    opt_src_desc: *const c_void,
    accessor_index: c_int,
    add_data_ptr: *mut c_void,
    add_data_size: usize,
    stat: *mut c_int,
    team: *mut c_void,
    team_number: *mut c_int,
) {
    // SAFETY: this function's contract.
    unsafe {
        send_entry::<true>(
            token,
            opt_dst_desc,
            opt_dst_charlen,
            image_index,
            src_size,
            src_data,
            opt_src_charlen,
            opt_src_desc,
            accessor_index,
            add_data_ptr,
            add_data_size,
            stat,
            team,
            team_number,
        )
    }
}

/// The body of both forms of `send_to_remote`: the lean path ([`fast::lean_send`]) for a
/// call without character lengths in the current team, else the general path.
///
/// # Safety
/// As [`_gfortran_caf_send_to_remote`].
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn send_entry<const GCC16: bool>(
    token: *mut c_void,
    opt_dst_desc: *const c_void,
    opt_dst_charlen: *const usize,
    image_index: c_int,
    src_size: usize,
    src_data: *const c_void,
    opt_src_charlen: *const usize,
    opt_src_desc: *const c_void,
    accessor_index: c_int,
    add_data_ptr: *mut c_void,
    add_data_size: usize,
    stat: *mut c_int,
    team: *mut c_void,
    team_number: *mut c_int,
) {
    let lean = (opt_dst_charlen as usize | opt_src_charlen as usize) == 0
        && (!GCC16 || (team as usize | team_number as usize) == 0);
    // SAFETY: this function's contract, for both calls.
    unsafe {
        if lean
            && fast::lean_send(
                token,
                opt_dst_desc,
                image_index,
                if opt_src_desc.is_null() {
                    src_data
                } else {
                    opt_src_desc
                },
                accessor_index,
                add_data_ptr,
            )
        {
            StatArgs::stat_only(stat).success();
            return;
        }
        send_to_remote::<GCC16>(
            token,
            opt_dst_desc,
            opt_dst_charlen,
            image_index,
            src_size,
            src_data,
            opt_src_charlen,
            opt_src_desc,
            accessor_index,
            add_data_ptr,
            add_data_size,
            stat,
            team,
            team_number,
        )
    }
}

/// [`_gfortran_caf_send_to_remote`] with a coindex's team read as GCC 16 passes it or not.
///
/// Out of line, with the entry points' C signature, as [`get_from_remote`].
///
/// # Safety
/// As [`_gfortran_caf_send_to_remote`].
#[allow(clippy::too_many_arguments)]
#[inline(never)]
unsafe extern "C" fn send_to_remote<const GCC16: bool>(
    token: *mut c_void,
    opt_dst_desc: *const c_void,
    opt_dst_charlen: *const usize,
    image_index: c_int,
    src_size: usize,
    src_data: *const c_void,
    opt_src_charlen: *const usize,
    opt_src_desc: *const c_void,
    accessor_index: c_int,
    add_data_ptr: *mut c_void,
    add_data_size: usize,
    stat: *mut c_int,
    team: *mut c_void,
    team_number: *mut c_int,
) {
    let send = fast::Send {
        dst_desc: opt_dst_desc,
        dst_charlen: opt_dst_charlen,
        image: image_index,
        src: if opt_src_desc.is_null() {
            src_data
        } else {
            opt_src_desc
        },
        src_charlen: opt_src_charlen,
        receiver: accessor_index,
        add_data: add_data_ptr,
    };
    // SAFETY: this function's contract; `fast::send` runs on a route of this coarray.
    if unsafe {
        fast_path::<GCC16>(token, send.image, stat, team, team_number, |base| {
            fast::send(base, &send)
        })
    } {
        return;
    }
    let coindex = team_of_args::<GCC16>(team, team_number);
    // SAFETY: STAT= as gfortran passes it.
    let stat = unsafe { StatArgs::stat_only(stat) };
    let src = if opt_src_desc.is_null() {
        src_data
    } else {
        opt_src_desc
    };
    runtime::statement_with_state("coindexed write", stat, |state| {
        // SAFETY: this function's contract, for every block below.
        let place = unsafe { locate(state, token, image_index, opt_dst_desc, coindex)? };
        let mut call = Call {
            index: accessor_index,
            // SAFETY: as above.
            add_data: unsafe { add_data(add_data_ptr, add_data_size) },
            image: image_index,
            // SAFETY: as above.
            dst_charlen: unsafe { opt(opt_dst_charlen) },
            // SAFETY: as above.
            src_charlen: unsafe { opt(opt_src_charlen) },
            origin: None,
        };
        match place {
            Where::Here(mut target) => {
                // SAFETY: as above.
                unsafe {
                    owner::send_in_place(
                        &mut call,
                        &mut target,
                        src,
                        opt_dst_charlen,
                        opt_src_charlen,
                    )
                }
            }
            Where::Owner {
                rank,
                part,
                coarray_desc,
            } => {
                // SAFETY: as above.
                let sent = unsafe { source(opt_src_desc, src_data, src_size, call.src_charlen)? };
                let request = Request {
                    index: accessor_index,
                    image: image_index,
                    part,
                    coarray_desc,
                    add_data: call.add_data.to_vec(),
                    origin: (state.engine.runtime().rank(), call.add_data.as_ptr() as u64),
                    dst_charlen: call.dst_charlen.map(|v| v as u64),
                    src_charlen: call.src_charlen.map(|v| v as u64),
                    op: Op::Send {
                        data: sent.data,
                        src_desc: sent.desc.map(|d| d.bytes().to_vec()),
                    },
                };
                match service::call(rank, &request)? {
                    Reply::Sent => Ok(()),
                    other => Err(CafError::Argument(format!(
                        "the owner answered a write with {other:?}"
                    ))),
                }
            }
        }
    });
}

/// `a(...)[i] = b(...)[j]`: reads with the source's getter on image `src_image_index`,
/// writes with the destination's receiver on `dst_image_index`.
///
/// # Safety
/// The arguments are as gfortran 15/16 pass them.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_transfer_between_remotes(
    dst_token: *mut c_void,
    opt_dst_desc: *mut c_void,
    opt_dst_charlen: *mut usize,
    dst_image_index: c_int,
    dst_access_index: c_int,
    dst_add_data: *mut c_void,
    dst_add_data_size: usize,
    src_token: *mut c_void,
    opt_src_desc: *const c_void,
    opt_src_charlen: *const usize,
    src_image_index: c_int,
    src_access_index: c_int,
    src_add_data: *mut c_void,
    src_add_data_size: usize,
    src_size: usize,
    scalar_transfer: bool,
    dst_stat: *mut c_int,
    src_stat: *mut c_int,
    dst_team: *mut c_void,
    dst_team_number: *mut c_int,
    src_team: *mut c_void,
    src_team_number: *mut c_int,
) {
    // SAFETY: this function's contract.
    unsafe {
        transfer_between_remotes::<false>(
            dst_token,
            opt_dst_desc,
            opt_dst_charlen,
            dst_image_index,
            dst_access_index,
            dst_add_data,
            dst_add_data_size,
            src_token,
            opt_src_desc,
            opt_src_charlen,
            src_image_index,
            src_access_index,
            src_add_data,
            src_add_data_size,
            src_size,
            scalar_transfer,
            dst_stat,
            src_stat,
            dst_team,
            dst_team_number,
            src_team,
            src_team_number,
        )
    }
}

/// GCC 16's form of [`_gfortran_caf_transfer_between_remotes`]: the coindex's TEAM= / TEAM_NUMBER= are read.
///
/// # Safety
/// As [`_gfortran_caf_transfer_between_remotes`].
#[no_mangle]
pub unsafe extern "C" fn _gaspar_caf16_transfer_between_remotes(
    dst_token: *mut c_void,
    opt_dst_desc: *mut c_void,
    opt_dst_charlen: *mut usize,
    dst_image_index: c_int,
    dst_access_index: c_int,
    dst_add_data: *mut c_void,
    dst_add_data_size: usize,
    src_token: *mut c_void,
    opt_src_desc: *const c_void,
    opt_src_charlen: *const usize,
    src_image_index: c_int,
    src_access_index: c_int,
    src_add_data: *mut c_void,
    src_add_data_size: usize,
    src_size: usize,
    scalar_transfer: bool,
    dst_stat: *mut c_int,
    src_stat: *mut c_int,
    dst_team: *mut c_void,
    dst_team_number: *mut c_int,
    src_team: *mut c_void,
    src_team_number: *mut c_int,
) {
    // SAFETY: this function's contract.
    unsafe {
        transfer_between_remotes::<true>(
            dst_token,
            opt_dst_desc,
            opt_dst_charlen,
            dst_image_index,
            dst_access_index,
            dst_add_data,
            dst_add_data_size,
            src_token,
            opt_src_desc,
            opt_src_charlen,
            src_image_index,
            src_access_index,
            src_add_data,
            src_add_data_size,
            src_size,
            scalar_transfer,
            dst_stat,
            src_stat,
            dst_team,
            dst_team_number,
            src_team,
            src_team_number,
        )
    }
}

/// [`_gfortran_caf_transfer_between_remotes`] with a coindex's team read as GCC 16 passes it or not.
///
/// # Safety
/// As [`_gfortran_caf_transfer_between_remotes`].
#[allow(clippy::too_many_arguments)]
unsafe fn transfer_between_remotes<const GCC16: bool>(
    dst_token: *mut c_void,
    opt_dst_desc: *mut c_void,
    opt_dst_charlen: *mut usize,
    dst_image_index: c_int,
    dst_access_index: c_int,
    dst_add_data: *mut c_void,
    dst_add_data_size: usize,
    src_token: *mut c_void,
    opt_src_desc: *const c_void,
    opt_src_charlen: *const usize,
    src_image_index: c_int,
    src_access_index: c_int,
    src_add_data: *mut c_void,
    src_add_data_size: usize,
    src_size: usize,
    scalar_transfer: bool,
    dst_stat: *mut c_int,
    src_stat: *mut c_int,
    dst_team: *mut c_void,
    dst_team_number: *mut c_int,
    src_team: *mut c_void,
    src_team_number: *mut c_int,
) {
    let src_coindex = team_of_args::<GCC16>(src_team, src_team_number);
    let dst_coindex = team_of_args::<GCC16>(dst_team, dst_team_number);
    // Both parts routed (accessors ran on them before, in the current team) and no
    // character lengths: the getter and the receiver run here, as caf_shmem runs them.
    if matches!(
        (&src_coindex, &dst_coindex),
        (CoindexTeam::Current, CoindexTeam::Current)
    ) && opt_dst_charlen.is_null()
        && opt_src_charlen.is_null()
    {
        // SAFETY: this function's contract.
        let routes = unsafe {
            (
                fast::route(src_token, src_image_index),
                fast::route(dst_token, dst_image_index),
            )
        };
        if let (Some(src_base), Some(dst_base)) = routes {
            let between = fast::Between {
                src_desc: opt_src_desc,
                src_image: src_image_index,
                getter: src_access_index,
                src_add_data,
                dst_desc: opt_dst_desc.cast_const(),
                dst_image: dst_image_index,
                receiver: dst_access_index,
                dst_add_data,
                scalar: scalar_transfer,
            };
            // SAFETY: routes of the two coarrays; the arguments as gfortran passes them.
            if unsafe { fast::between(src_base, dst_base, &between) } {
                // SAFETY: this function's contract.
                unsafe {
                    StatArgs::stat_only(src_stat).success();
                    StatArgs::stat_only(dst_stat).success();
                }
                return;
            }
        }
    }
    // SAFETY: this function's contract, for every block below.
    let dst_charlen = unsafe { opt(opt_dst_charlen) };
    // SAFETY: as above.
    let src_charlen = unsafe { opt(opt_src_charlen) };
    // SAFETY: as above.
    let read_stat = unsafe { StatArgs::stat_only(src_stat) };
    let Some(fetched) = runtime::statement_with_state("coindexed read", read_stat, |state| {
        // SAFETY: as above.
        let place =
            unsafe { locate(state, src_token, src_image_index, opt_src_desc, src_coindex)? };
        let mut call = Call {
            index: src_access_index,
            // SAFETY: as above.
            add_data: unsafe { add_data(src_add_data, src_add_data_size) },
            image: src_image_index,
            dst_charlen,
            src_charlen,
            origin: None,
        };
        let into = if scalar_transfer {
            Into::Scalar(src_size * dst_charlen.unwrap_or(1))
        } else {
            Into::Array(Box::new(DescBuf::zeroed()))
        };
        match place {
            // SAFETY: as above.
            Where::Here(mut target) => unsafe { owner::get(&mut call, &mut target, into) },
            Where::Owner {
                rank,
                part,
                coarray_desc,
            } => {
                let (scalar_bytes, dst_desc) = match into {
                    Into::Scalar(bytes) => (bytes as u64, None),
                    Into::Array(desc) => (0, Some(desc.bytes().to_vec())),
                };
                let request = Request {
                    index: src_access_index,
                    image: src_image_index,
                    part,
                    coarray_desc,
                    add_data: call.add_data.to_vec(),
                    origin: (state.engine.runtime().rank(), call.add_data.as_ptr() as u64),
                    dst_charlen: dst_charlen.map(|v| v as u64),
                    src_charlen: src_charlen.map(|v| v as u64),
                    op: Op::Get {
                        scalar_bytes,
                        dst_desc,
                    },
                };
                fetched(service::call(rank, &request)?)
            }
        }
    }) else {
        return;
    };
    // SAFETY: as above.
    let write_stat = unsafe { StatArgs::stat_only(dst_stat) };
    runtime::statement_with_state("coindexed write", write_stat, |state| {
        // SAFETY: as above.
        let place =
            unsafe { locate(state, dst_token, dst_image_index, opt_dst_desc, dst_coindex)? };
        let mut call = Call {
            index: dst_access_index,
            // SAFETY: as above.
            add_data: unsafe { add_data(dst_add_data, dst_add_data_size) },
            image: dst_image_index,
            dst_charlen: fetched.dst_charlen.or(dst_charlen),
            src_charlen,
            origin: None,
        };
        let mut sent = Sent {
            data: fetched.data,
            desc: fetched.desc,
        };
        match place {
            // SAFETY: as above.
            Where::Here(mut target) => unsafe { owner::send(&mut call, &mut target, &mut sent) },
            Where::Owner {
                rank,
                part,
                coarray_desc,
            } => {
                let request = Request {
                    index: dst_access_index,
                    image: dst_image_index,
                    part,
                    coarray_desc,
                    add_data: call.add_data.to_vec(),
                    origin: (state.engine.runtime().rank(), call.add_data.as_ptr() as u64),
                    dst_charlen: call.dst_charlen.map(|v| v as u64),
                    src_charlen: src_charlen.map(|v| v as u64),
                    op: Op::Send {
                        data: sent.data,
                        src_desc: sent.desc.map(|d| d.bytes().to_vec()),
                    },
                };
                match service::call(rank, &request)? {
                    Reply::Sent => Ok(()),
                    other => Err(CafError::Argument(format!(
                        "the owner answered a write with {other:?}"
                    ))),
                }
            }
        }
    });
}

/// `allocated(a[i]%component)`: runs presence test `present_index` on image `image_index`;
/// 1 when present. An unregistered token is never present.
///
/// # Safety
/// The arguments are as gfortran 15/16 pass them.
#[no_mangle]
pub unsafe extern "C" fn _gfortran_caf_is_present_on_remote(
    token: *mut c_void,
    image_index: c_int,
    present_index: c_int,
    add_data_ptr: *mut c_void,
    add_data_size: usize,
) -> i32 {
    // SAFETY: this function's contract.
    unsafe {
        is_present_on_remote::<false>(
            token,
            image_index,
            present_index,
            add_data_ptr,
            add_data_size,
        )
    }
}

/// GCC 16's form of [`_gfortran_caf_is_present_on_remote`]: a coarray without descriptor
/// reaches the presence test by the address of its address.
///
/// # Safety
/// As [`_gfortran_caf_is_present_on_remote`].
#[no_mangle]
pub unsafe extern "C" fn _gaspar_caf16_is_present_on_remote(
    token: *mut c_void,
    image_index: c_int,
    present_index: c_int,
    add_data_ptr: *mut c_void,
    add_data_size: usize,
) -> i32 {
    // SAFETY: this function's contract.
    unsafe {
        is_present_on_remote::<true>(
            token,
            image_index,
            present_index,
            add_data_ptr,
            add_data_size,
        )
    }
}

/// [`_gfortran_caf_is_present_on_remote`] in gfortran 15's or GCC 16's form.
///
/// # Safety
/// As [`_gfortran_caf_is_present_on_remote`].
unsafe fn is_present_on_remote<const GCC16: bool>(
    token: *mut c_void,
    image_index: c_int,
    present_index: c_int,
    add_data_ptr: *mut c_void,
    add_data_size: usize,
) -> i32 {
    if token.is_null() {
        return 0;
    }
    // A scalar coarray (no descriptor) on a route: the test runs here without the engine.
    // SAFETY: a non-null token of this library (this function's contract).
    let scalar = unsafe { fast::coarray(token) }.filter(|caf| caf.desc.is_null());
    if let Some(base) = scalar.and_then(|caf| caf.accessor_routes.base(image_index)) {
        let add_data = add_data_ptr;
        // SAFETY: `base` is a route of this coarray; the arguments are gfortran's.
        let found = unsafe { fast::present(base, image_index, present_index, add_data, GCC16) };
        if let Some(present) = found {
            return present;
        }
    }
    // SAFETY: no STAT=: an error ends the job.
    let stat = unsafe { StatArgs::stat_only(std::ptr::null_mut()) };
    runtime::statement_with_state("ALLOCATED", stat, |state| {
        // SAFETY: this function's contract, for every block below.
        let desc = unsafe { token::borrow(token)? }.desc;
        // A scalar coarray's descriptor is not passed (as single.c: only arrays' are).
        // SAFETY: a registered descriptor lives as long as its token.
        let desc = if desc.is_null() || unsafe { (*desc).dtype.rank } == 0 {
            std::ptr::null()
        } else {
            desc.cast::<c_void>()
        };
        // SAFETY: as above.
        let place = unsafe { locate(state, token, image_index, desc, CoindexTeam::Current)? };
        let mut call = Call {
            index: present_index,
            // SAFETY: as above.
            add_data: unsafe { add_data(add_data_ptr, add_data_size) },
            image: image_index,
            dst_charlen: None,
            src_charlen: None,
            origin: None,
        };
        match place {
            // SAFETY: as above.
            Where::Here(mut target) => unsafe { owner::present(&mut call, &mut target, GCC16) },
            Where::Owner {
                rank,
                part,
                coarray_desc,
            } => {
                let request = Request {
                    index: present_index,
                    image: image_index,
                    part,
                    coarray_desc,
                    add_data: call.add_data.to_vec(),
                    origin: (state.engine.runtime().rank(), call.add_data.as_ptr() as u64),
                    dst_charlen: None,
                    src_charlen: None,
                    op: Op::Present {
                        by_reference: GCC16,
                    },
                };
                match service::call(rank, &request)? {
                    Reply::Present(v) => Ok(v),
                    other => Err(CafError::Argument(format!(
                        "the owner answered a presence test with {other:?}"
                    ))),
                }
            }
        }
    })
    .unwrap_or(0)
}
