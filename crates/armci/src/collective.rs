//! Collectives over a group of ranks (a list of world ranks, in group-rank order), through
//! the collectives' mailbox channel: every member sends its part to the first member,
//! which sends the whole set back to each. Linear in the group size, which is what
//! ARMCI programs' occasional group collectives need; world collectives use the
//! runtime's own barrier and exchanges instead.

use crate::state::State;

/// Every member's `mine`, in group-rank order, on every member. Members must call it in
/// the same order; a rank outside `members` ends the job.
pub(crate) fn allgather(s: &State, call: &str, members: &[u32], mine: &[u8]) -> Vec<Vec<u8>> {
    let me = s.rt.rank();
    let Some(&root) = members.first() else {
        return Vec::new();
    };
    if !members.contains(&me) {
        s.fail(call, "this rank is not a member of the group");
    }
    let channel = &s.collectives;
    let mut message = Vec::new();
    if me != root {
        channel.send(s, call, root, mine);
        channel.recv(s, call, root, &mut message, u64::MAX);
        return decode(s, call, &message, members.len());
    }
    let mut parts = Vec::with_capacity(members.len());
    parts.push(mine.to_vec());
    for &member in &members[1..] {
        channel.recv(s, call, member, &mut message, u64::MAX);
        parts.push(message.clone());
    }
    let whole = encode(&parts);
    for &member in &members[1..] {
        channel.send(s, call, member, &whole);
    }
    parts
}

/// Waits until every member has called it.
pub(crate) fn barrier(s: &State, call: &str, members: &[u32]) {
    allgather(s, call, members, &[]);
}

/// Parts as: count, each length (u64), then the bytes of each.
fn encode(parts: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(parts.len() as u64).to_ne_bytes());
    for p in parts {
        out.extend_from_slice(&(p.len() as u64).to_ne_bytes());
    }
    for p in parts {
        out.extend_from_slice(p);
    }
    out
}

fn decode(s: &State, call: &str, message: &[u8], expected: usize) -> Vec<Vec<u8>> {
    let word = |k: usize| -> u64 {
        message
            .get(8 * k..8 * k + 8)
            .map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
            .unwrap_or_else(|| s.fail(call, "malformed group message"))
    };
    let count = word(0) as usize;
    if count != expected {
        s.fail(
            call,
            format!(
                "group collective of {count} members met one of {expected}: the members disagree"
            ),
        );
    }
    let mut at = 8 * (count + 1);
    (0..count)
        .map(|k| {
            let len = word(k + 1) as usize;
            let part = message
                .get(at..at + len)
                .unwrap_or_else(|| s.fail(call, "malformed group message"));
            at += len;
            part.to_vec()
        })
        .collect()
}
