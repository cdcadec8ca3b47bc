//! Collectives over ARMCI groups, run by the group's team (the world group's is the
//! world's; every other group carries the team split for it, see `group`): gaspar's
//! collectives, with no mailboxes of ARMCI's own.

use gaspar::world::Team;

use crate::state::State;

/// Every member's `mine`, in group-rank order, on every member. Members pass parts of the
/// same length and call it in the same order; otherwise the job ends with the mismatch.
pub(crate) fn allgather(s: &State, call: &str, team: &Team, mine: &[u8]) -> Vec<Vec<u8>> {
    let mut all = vec![0u8; mine.len() * team.size() as usize];
    s.check(call, team.allgather(&s.rt, mine, &mut all));
    if mine.is_empty() {
        return vec![Vec::new(); team.size() as usize];
    }
    all.chunks_exact(mine.len()).map(<[u8]>::to_vec).collect()
}
