//! Sets of mutexes over a group: ARMCI_Create_mutexes (the world's one set) and
//! ARMCIX_Create_mutexes_hdl (any number, on any group). As in ARMCI and ARMCI-MPI the
//! count is per process (`ARMCI_Create_mutexes(rank == 0 ? 1 : 0)` is legal): the counts
//! are shared at creation, and a lock names a (mutex, rank) pair that must exist on that
//! rank. A mutex is one 64-bit word in its owner's heap: 0 when free, holder's rank + 1.

use std::ffi::c_int;

use gaspar::gmem::LocalAlloc;
use gaspar::world::Team;
use gaspar::{GlobalAddr, GlobalPtr};

use crate::collective;
use crate::group::Members;
use crate::state::State;

/// One member's mutexes: where its words start and how many it created.
struct MemberMutexes {
    rank: u32,
    first: GlobalAddr,
    count: u32,
}

/// A set of mutexes created collectively over a group.
pub(crate) struct MutexSet {
    members: Vec<MemberMutexes>,
    team: &'static Team,
    /// This rank's words.
    own: LocalAlloc,
}

/// Bytes of one mutex word.
const WORD: u64 = 8;

impl MutexSet {
    /// Collective over `group`: `count` mutexes on this rank, zeroed before any member
    /// can reach them.
    pub(crate) fn create(s: &State, call: &str, group: &Members, count: c_int) -> MutexSet {
        group.my_index(s, call);
        let count = u32::try_from(count)
            .unwrap_or_else(|_| s.fail(call, format!("negative mutex count {count}")));
        let bytes = WORD * u64::from(count.max(1));
        let own = s.check(call, s.rt.alloc_local(bytes));
        let me = s.rt.rank();
        s.check(
            call,
            s.rt.put(
                s.heap_address(call, me, own.heap_offset()),
                &vec![0u8; bytes as usize],
                gaspar::Handle::NULL,
            ),
        );
        s.check(call, s.rt.all_fence());
        let mine: Vec<u8> = [own.heap_offset(), u64::from(count)]
            .iter()
            .flat_map(|w| w.to_ne_bytes())
            .collect();
        let members = collective::allgather(s, call, group.team, &mine)
            .iter()
            .zip(&group.ranks)
            .map(|(words, &rank)| {
                let word = |k: usize| {
                    u64::from_ne_bytes(words[8 * k..8 * k + 8].try_into().expect("16 bytes"))
                };
                MemberMutexes {
                    rank,
                    first: s.heap_address(call, rank, word(0)),
                    count: u32::try_from(word(1)).expect("a count sent as u32"),
                }
            })
            .collect();
        MutexSet {
            members,
            team: group.team,
            own,
        }
    }

    /// Collective over the set's group: every member is done with every mutex before its
    /// words go.
    pub(crate) fn destroy(self, s: &State, call: &str) {
        s.check(call, self.team.barrier(&s.rt));
        s.check(call, s.rt.free_local(self.own));
    }

    /// The word of mutex `mutex` on world rank `proc`, checked against the count that rank
    /// created.
    fn word(&self, s: &State, call: &str, mutex: c_int, proc: c_int) -> GlobalPtr<u64> {
        let rank = s.rank_of(call, proc);
        let Some(member) = self.members.iter().find(|m| m.rank == rank) else {
            s.fail(
                call,
                format!("rank {proc} is not in the group of these mutexes"),
            );
        };
        let index = u32::try_from(mutex)
            .ok()
            .filter(|&m| m < member.count)
            .unwrap_or_else(|| {
                s.fail(
                    call,
                    format!(
                        "mutex {mutex} does not exist on rank {proc} ({} were created there)",
                        member.count
                    ),
                )
            });
        let ga = member
            .first
            .offset(WORD * u64::from(index))
            .unwrap_or_else(|| s.fail(call, "mutex address"));
        GlobalPtr::new(ga)
    }

    /// Takes mutex `mutex` on `proc` if it is free; whether it was taken.
    pub(crate) fn try_lock(&self, s: &State, call: &str, mutex: c_int, proc: c_int) -> bool {
        let word = self.word(s, call, mutex, proc);
        s.check(call, word.compare_swap(&s.rt, 0, holder_id(s))) == 0
    }

    /// Waits for mutex `mutex` on `proc`.
    pub(crate) fn lock(&self, s: &State, call: &str, mutex: c_int, proc: c_int) {
        let word = self.word(s, call, mutex, proc);
        let me = holder_id(s);
        let owner = s.rank_of(call, proc);
        loop {
            let holder = s.check(call, word.compare_swap(&s.rt, 0, me));
            if holder == 0 {
                return;
            }
            // Until the holder (rank holder - 1) unlocks, or leaves the job.
            let holder_rank = u32::try_from(holder - 1).unwrap_or(u32::MAX);
            s.check(
                call,
                s.rt.wait(owner, Some(holder_rank), || {
                    Ok(word.atomic_load(&s.rt)? != holder)
                }),
            );
        }
    }

    /// Releases mutex `mutex` on `proc`, held by this rank, once this rank's operations
    /// are complete.
    pub(crate) fn unlock(&self, s: &State, call: &str, mutex: c_int, proc: c_int) {
        let word = self.word(s, call, mutex, proc);
        let me = holder_id(s);
        s.check(call, s.rt.all_fence());
        if s.check(call, word.compare_swap(&s.rt, me, 0)) != me {
            s.fail(
                call,
                format!("mutex {mutex} on rank {proc} is not held by this rank"),
            );
        }
    }
}

/// What a mutex word holds while this rank has it.
fn holder_id(s: &State) -> u64 {
    u64::from(s.rt.rank()) + 1
}
