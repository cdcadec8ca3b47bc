//! Teams on the mpi transport: each team is a communicator split from its parent's
//! (`MPI_Comm_split`, which numbers the members as the world layer does: by key, then by
//! parent rank), and its collectives are MPI's: `MPI_Bcast`, `MPI_Reduce` and
//! `MPI_Allreduce` (with MPI's builtin operator when the reduction is one, else with an
//! operator made for the call, declared non-commutative so that MPI combines in rank
//! order), `MPI_Allgather`, `MPI_Alltoall`, each after the agreement on the call (an
//! `MPI_Allreduce` of its word, see [`agree`]). When the job runs on one host, the world
//! team agrees in the host's shared window instead, and its broadcasts and reductions of
//! up to [`host::PAYLOAD_BYTES`] run there whole, their data carried by the agreeing
//! barrier.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};

use mpi::ffi;

use super::{check, constant, host, Datatype, MpiTransport, COLLECTIVES};
use crate::error::{Error, Result};
use crate::transport::team::{ReduceOp, Reduction, Scalar, TeamCall, TransportTeam};
use crate::transport::Transport;

/// A communicator a team owns, freed when the team is dropped (unless MPI was finalized
/// first, which freed it).
pub(crate) struct Communicator(ffi::MPI_Comm);

// SAFETY: a handle that MPI lets any thread use at MPI_THREAD_MULTIPLE; below it, every
// collective on it checks the calling thread (`on_mpi_thread`) first.
unsafe impl Send for Communicator {}
// SAFETY: as above; the handle itself is never written after the split.
unsafe impl Sync for Communicator {}

impl Drop for Communicator {
    fn drop(&mut self) {
        let mut finalized: c_int = 0;
        // SAFETY: MPI_Finalized may be called at any time; the communicator is this
        // value's own and is not used after this.
        unsafe {
            ffi::MPI_Finalized(&mut finalized);
            if finalized == 0 {
                ffi::MPI_Comm_free(&mut self.0);
            }
        }
    }
}

/// MPI counts are ints.
fn count(len: usize) -> Result<c_int> {
    c_int::try_from(len).map_err(|_| Error::LengthOverflow {
        what: "team collective of more than i32::MAX elements on mpi",
    })
}

fn datatype(scalar: Scalar) -> ffi::MPI_Datatype {
    // SAFETY: the RSMPI_* statics are constants the MPI bindings' C shim initializes at
    // load time and never changes.
    unsafe {
        match scalar {
            Scalar::I8 => ffi::RSMPI_INT8_T,
            Scalar::I16 => ffi::RSMPI_INT16_T,
            Scalar::I32 => ffi::RSMPI_INT32_T,
            Scalar::I64 => ffi::RSMPI_INT64_T,
            Scalar::U8 => ffi::RSMPI_UINT8_T,
            Scalar::U16 => ffi::RSMPI_UINT16_T,
            Scalar::U32 => ffi::RSMPI_UINT32_T,
            Scalar::U64 => ffi::RSMPI_UINT64_T,
            Scalar::F32 => ffi::RSMPI_FLOAT,
            Scalar::F64 => ffi::RSMPI_DOUBLE,
        }
    }
}

fn operator(op: ReduceOp) -> ffi::MPI_Op {
    // SAFETY: as in `datatype`.
    unsafe {
        match op {
            ReduceOp::Sum => ffi::RSMPI_SUM,
            ReduceOp::Min => ffi::RSMPI_MIN,
            ReduceOp::Max => ffi::RSMPI_MAX,
            ReduceOp::And => ffi::RSMPI_BAND,
            ReduceOp::Or => ffi::RSMPI_BOR,
            ReduceOp::Xor => ffi::RSMPI_BXOR,
        }
    }
}

/// The reduction of the collective in progress, for [`combine_in_rank_order`]: MPI's user
/// functions take no context argument. Collectives of this process run one at a time
/// (under [`COLLECTIVES`]), so one slot suffices; a static rather than a thread-local,
/// since an MPI progress thread may run the operator.
static CURRENT: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// What [`CURRENT`] points to.
struct Current<'a, 'r> {
    reduction: &'a mut Reduction<'r>,
}

/// MPI's user function: `inout = in ⊕ inout`, where `in` holds the lower ranks'
/// contributions (MPI's order for a non-commutative operator).
unsafe extern "C" fn combine_in_rank_order(
    lower: *mut c_void,
    inout: *mut c_void,
    len: *mut c_int,
    _datatype: *mut ffi::MPI_Datatype,
) {
    // SAFETY: MPI calls this only inside the reduction that set `CURRENT` (which outlives
    // the call), with `*len` elements of the reduction's element length at both pointers.
    unsafe {
        let current = &mut *(CURRENT.load(Ordering::Acquire) as *mut Current<'_, '_>);
        let bytes = (*len).max(0) as usize * current.reduction.elem_len;
        let lower = std::slice::from_raw_parts(lower as *const u8, bytes);
        let inout = std::slice::from_raw_parts_mut(inout as *mut u8, bytes);
        let mut acc = lower.to_vec();
        (current.reduction.combine)(&mut acc, inout);
        inout.copy_from_slice(&acc);
    }
}

/// An MPI datatype and operator made for one reduction with a closure, freed on drop.
struct UserOperator {
    datatype: Datatype,
    op: ffi::MPI_Op,
}

impl UserOperator {
    fn new(elem_len: usize) -> Result<UserOperator> {
        let mut datatype = constant::byte();
        // SAFETY: an out-pointer to a local; the committed type is owned by `Datatype`.
        let datatype = unsafe {
            check(
                "MPI_Type_contiguous",
                ffi::MPI_Type_contiguous(count(elem_len)?, constant::byte(), &mut datatype),
            )?;
            check("MPI_Type_commit", ffi::MPI_Type_commit(&mut datatype))?;
            Datatype(datatype)
        };
        // A handle to be overwritten by MPI_Op_create.
        let mut op = operator(ReduceOp::Sum);
        // SAFETY: an out-pointer to a local; the function has MPI's signature.
        check("MPI_Op_create", unsafe {
            ffi::MPI_Op_create(Some(combine_in_rank_order), 0, &mut op)
        })?;
        Ok(UserOperator { datatype, op })
    }
}

impl Drop for UserOperator {
    fn drop(&mut self) {
        // SAFETY: the operator this value made; the collective using it has returned.
        unsafe { ffi::MPI_Op_free(&mut self.op) };
    }
}

impl MpiTransport {
    /// The communicator of `team`.
    fn comm_of(&self, team: &TransportTeam) -> ffi::MPI_Comm {
        team.comm.as_ref().map_or(self.comm, |c| c.0)
    }

    /// Runs `collective` as a synchronization point of the windows: every earlier put is
    /// complete at its target before it, and visible to plain loads there after it
    /// (flush_all + Win_sync, the collective, Win_sync; seed 001's question).
    pub(super) fn synchronizing(&self, collective: impl FnOnce() -> Result<()>) -> Result<()> {
        self.flush_all()?;
        // SAFETY: the windows live until finalize.
        unsafe {
            check("MPI_Win_sync", ffi::MPI_Win_sync(self.win))?;
            if self.has_dynamic() {
                check("MPI_Win_sync", ffi::MPI_Win_sync(self.dynamic))?;
            }
            collective()?;
            if self.has_dynamic() {
                check("MPI_Win_sync", ffi::MPI_Win_sync(self.dynamic))?;
            }
            check("MPI_Win_sync", ffi::MPI_Win_sync(self.win))
        }
    }

    /// [`Transport::split_team`]: `MPI_Comm_split` of the parent's communicator.
    pub(super) fn split_communicator(
        &self,
        parent: &TransportTeam,
        color: Option<u32>,
        key: u32,
        team: Option<TransportTeam>,
    ) -> Result<Option<TransportTeam>> {
        self.on_mpi_thread()?;
        let _serialized = COLLECTIVES.lock().unwrap_or_else(|p| p.into_inner());
        let color = match color {
            // SAFETY: a constant (see `datatype`).
            None => unsafe { ffi::RSMPI_UNDEFINED },
            Some(c) => count(c as usize)?,
        };
        let mut comm = constant::comm_null();
        // SAFETY: the parent's communicator is live; `comm` is an out-pointer.
        check("MPI_Comm_split", unsafe {
            ffi::MPI_Comm_split(self.comm_of(parent), color, count(key as usize)?, &mut comm)
        })?;
        let owned = (comm != constant::comm_null()).then(|| Communicator(comm));
        Ok(team.zip(owned).map(|(mut team, comm)| {
            team.comm = Some(comm);
            team
        }))
    }

    /// [`Transport::team_call`] with MPI's collectives, after the agreement on `word`.
    pub(super) fn run_team_call(
        &self,
        team: &TransportTeam,
        word: u64,
        call: &mut TeamCall<'_, '_>,
    ) -> Result<bool> {
        self.on_mpi_thread()?;
        let _serialized = COLLECTIVES.lock().unwrap_or_else(|p| p.into_inner());
        if team.comm.is_none() {
            if let Some(same) = self.small_call_in_window(team, word, call)? {
                return Ok(same);
            }
        }
        let comm = self.comm_of(team);
        // The world team's agreement runs in the host's window when the job's barriers do
        // (one host): a barrier carrying the call word, without an MPI_Allreduce.
        let agreed = || -> Result<bool> {
            if team.comm.is_none() {
                let in_window = self
                    .host
                    .exchange(self.patience, word, None, &|| self.progress())?;
                if let Some(same) = in_window {
                    return Ok(same);
                }
            }
            let _blocking = super::progress::in_blocking_call();
            agree(comm, word)
        };
        let same = if let TeamCall::Agree { barrier: true } = call {
            let mut same = false;
            self.synchronizing(|| {
                same = agreed()?;
                Ok(())
            })?;
            same
        } else {
            agreed()?
        };
        if !same {
            return Ok(false);
        }
        let _blocking = super::progress::in_blocking_call();
        match call {
            TeamCall::Agree { .. } => Ok(()),
            TeamCall::Broadcast { buf, root, .. } => {
                // SAFETY: `buf.len()` bytes at `buf` on every member (agreed).
                check("MPI_Bcast", unsafe {
                    ffi::MPI_Bcast(
                        buf.as_mut_ptr().cast(),
                        count(buf.len())?,
                        constant::byte(),
                        *root as c_int,
                        comm,
                    )
                })
            }
            TeamCall::Reduce {
                buf,
                reduction,
                root,
            } => {
                let elements = count(buf.len() / reduction.elem_len)?;
                let user;
                let (datatype, op) = match reduction.builtin {
                    Some((op, scalar)) => (datatype(scalar), operator(op)),
                    None => {
                        user = UserOperator::new(reduction.elem_len)?;
                        (user.datatype.0, user.op)
                    }
                };
                let mut current = Current { reduction };
                CURRENT.store(
                    &mut current as *mut Current<'_, '_> as *mut c_void,
                    Ordering::Release,
                );
                // A member that receives the result contributes from the same buffer
                // (MPI_IN_PLACE); one that only contributes sends `buf` itself.
                let receives = root.is_none() || *root == Some(team.rank);
                let send = if receives {
                    constant::in_place()
                } else {
                    buf.as_ptr().cast()
                };
                // SAFETY: `elements` elements of `datatype` in `buf` on every member
                // (agreed); `current` lives until after the call.
                let code = unsafe {
                    match root {
                        Some(root) => ffi::MPI_Reduce(
                            send,
                            buf.as_mut_ptr().cast(),
                            elements,
                            datatype,
                            op,
                            *root as c_int,
                            comm,
                        ),
                        None => ffi::MPI_Allreduce(
                            send,
                            buf.as_mut_ptr().cast(),
                            elements,
                            datatype,
                            op,
                            comm,
                        ),
                    }
                };
                CURRENT.store(std::ptr::null_mut(), Ordering::Release);
                check(
                    if root.is_some() {
                        "MPI_Reduce"
                    } else {
                        "MPI_Allreduce"
                    },
                    code,
                )
            }
            TeamCall::Allgather { mine, out } => {
                // SAFETY: `mine.len()` bytes from every member into one block each of `out`.
                check("MPI_Allgather", unsafe {
                    ffi::MPI_Allgather(
                        mine.as_ptr().cast(),
                        count(mine.len())?,
                        constant::byte(),
                        out.as_mut_ptr().cast(),
                        count(mine.len())?,
                        constant::byte(),
                        comm,
                    )
                })
            }
            TeamCall::Alltoall { send, recv } => {
                let block = count(send.len() / team.size() as usize)?;
                // SAFETY: one block of `block` bytes per member on both sides.
                check("MPI_Alltoall", unsafe {
                    ffi::MPI_Alltoall(
                        send.as_ptr().cast(),
                        block,
                        constant::byte(),
                        recv.as_mut_ptr().cast(),
                        block,
                        constant::byte(),
                        comm,
                    )
                })
            }
        }?;
        Ok(true)
    }
}

impl MpiTransport {
    /// A small broadcast or reduction of the world team when the job's barriers run in the
    /// host's window: the data travels with the barrier that agrees on the call
    /// ([`host::Host::exchange_payload`]), one barrier in all instead of a barrier and an
    /// MPI collective; a reduction combines every member's contribution in rank order, as
    /// MPI does with the non-commutative operators of [`UserOperator`], so every member
    /// gets the same bits. `None` when the call is not such a call (or the window does
    /// not run the job's barriers): the caller runs it in MPI. The caller holds the
    /// collectives' lock.
    fn small_call_in_window(
        &self,
        team: &TransportTeam,
        word: u64,
        call: &mut TeamCall<'_, '_>,
    ) -> Result<Option<bool>> {
        let progress = || self.progress();
        match call {
            TeamCall::Broadcast { buf, root, .. } if buf.len() <= host::PAYLOAD_BYTES => {
                let payload: &[u8] = if *root == team.rank { buf } else { &[] };
                let Some(same) =
                    self.host
                        .exchange_payload(self.patience, word, payload, None, &progress)?
                else {
                    return Ok(None);
                };
                if same && *root != team.rank {
                    self.host.payload_of(*root, buf);
                }
                Ok(Some(same))
            }
            TeamCall::Reduce {
                buf,
                reduction,
                root,
            } if buf.len() <= host::PAYLOAD_BYTES => {
                let Some(same) =
                    self.host
                        .exchange_payload(self.patience, word, buf, None, &progress)?
                else {
                    return Ok(None);
                };
                if same && root.is_none_or(|root| root == team.rank) {
                    let mut other = [0u8; host::PAYLOAD_BYTES];
                    let other = &mut other[..buf.len()];
                    self.host.payload_of(0, buf);
                    for rank in 1..team.size() {
                        self.host.payload_of(rank, other);
                        (reduction.combine)(buf, other);
                    }
                }
                Ok(Some(same))
            }
            _ => Ok(None),
        }
    }
}

/// Whether every member of `comm` passed `word`: the maximum of the words and of their
/// complements are the word and its complement exactly when all are equal.
fn agree(comm: ffi::MPI_Comm, word: u64) -> Result<bool> {
    let mine = [word, !word];
    let mut most = [0u64; 2];
    // SAFETY: two words in, two out, on a live communicator.
    check("MPI_Allreduce", unsafe {
        ffi::MPI_Allreduce(
            mine.as_ptr().cast(),
            most.as_mut_ptr().cast(),
            2,
            constant::uint64(),
            ffi::RSMPI_MAX,
            comm,
        )
    })?;
    Ok(most == mine)
}
