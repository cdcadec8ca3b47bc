//! ARMCI-MPI's message layer (`message.h`): rank queries, point-to-point messages through
//! per-sender mailboxes in the symmetric heap, and broadcast, selection and reductions on
//! the groups' teams (gaspar's collectives).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;
use std::time::Instant;

use bytemuck::Pod;
use gaspar::strided::Strided;
use gaspar::world::Team;
use gaspar::{GlobalAddr, GlobalPtr, Handle, SymmetricAlloc};

use crate::collective;
use crate::group::Group;
use crate::state::{state, State};

/// Payload bytes per mailbox slot; longer messages go in several rounds.
const MAILBOX_DATA: u64 = 16 * 1024;
/// Header (flag, total length, chunk length) plus payload.
const HEADER: u64 = 64;
/// Bytes of one mailbox slot (one per sender on every rank).
const MAILBOX_BYTES: u64 = HEADER + MAILBOX_DATA;

/// Point-to-point messages through mailboxes in the symmetric heap: on every rank one slot
/// per sender, whose flag word says whether it holds an unread chunk. Messages from one
/// sender to one receiver arrive in order. They carry the program's armci_msg_snd/rcv
/// only: collectives run on teams.
pub(crate) struct Channel {
    block: SymmetricAlloc,
}

impl Channel {
    /// Collective: allocates and empties the mailboxes of every rank.
    pub(crate) fn open(rt: &Strided) -> gaspar::Result<Channel> {
        let block = rt.alloc(MAILBOX_BYTES * u64::from(rt.procs()))?;
        let zeros = vec![0u8; block.len() as usize];
        rt.put(block.ga(rt.rank())?, &zeros, Handle::NULL)?;
        rt.all_fence()?;
        rt.barrier()?;
        Ok(Channel { block })
    }

    fn slot(&self, s: &State, call: &str, owner: u32, sender: u32) -> GlobalAddr {
        let base = s.check(call, self.block.ga(owner));
        base.offset(u64::from(sender) * MAILBOX_BYTES)
            .unwrap_or_else(|| s.fail(call, "mailbox address"))
    }

    /// Sends `data` to rank `to`, a slot-full at a time.
    pub(crate) fn send(&self, s: &State, call: &str, to: u32, data: &[u8]) {
        let total = data.len() as u64;
        let at = self.slot(s, call, to, s.rt.rank());
        let flag = GlobalPtr::<u64>::new(at);
        let mut sent = 0u64;
        loop {
            // Until the receiver has emptied the slot.
            wait_flag(s, call, flag, 0, to, to);
            let chunk = (total - sent).min(MAILBOX_DATA);
            let header = [total, chunk];
            let header_at = at.offset(8).expect("in slot");
            let data_at = at.offset(HEADER).expect("in slot");
            s.check(
                call,
                s.rt.put(header_at, bytemuck::cast_slice(&header), Handle::NULL),
            );
            s.check(
                call,
                s.rt.put(
                    data_at,
                    &data[sent as usize..(sent + chunk) as usize],
                    Handle::NULL,
                ),
            );
            s.check(call, s.rt.all_fence());
            s.check(call, flag.atomic_store(&s.rt, 1));
            sent += chunk;
            if sent >= total {
                break;
            }
        }
    }

    /// Waits until some rank's message is waiting for this rank and returns that rank
    /// (the lowest-numbered one when several are).
    pub(crate) fn any_sender(&self, s: &State, call: &str) -> u32 {
        let me = s.rt.rank();
        let mut sender = 0;
        s.check(
            call,
            s.rt.wait(me, None, || {
                for from in 0..s.rt.procs() {
                    let flag = GlobalPtr::<u64>::new(self.slot(s, call, me, from));
                    if flag.atomic_load(&s.rt)? == 1 {
                        sender = from;
                        return Ok(true);
                    }
                }
                Ok(false)
            }),
        );
        sender
    }

    /// Receives the next message from rank `from` into `out` (cleared first); a message
    /// longer than `capacity` bytes ends the job.
    pub(crate) fn recv(&self, s: &State, call: &str, from: u32, out: &mut Vec<u8>, capacity: u64) {
        out.clear();
        let at = self.slot(s, call, s.rt.rank(), from);
        let flag = GlobalPtr::<u64>::new(at);
        loop {
            // Until the sender has filled the slot.
            wait_flag(s, call, flag, 1, s.rt.rank(), from);
            let mut header = [0u64; 2];
            s.check(
                call,
                s.rt.get(
                    bytemuck::cast_slice_mut(&mut header),
                    at.offset(8).expect("in slot"),
                    Handle::NULL,
                ),
            );
            let [total, chunk] = header;
            if total > capacity {
                s.fail(
                    call,
                    format!(
                        "message of {total} bytes from rank {from} does not fit a \
                         {capacity}-byte buffer"
                    ),
                );
            }
            let done = out.len();
            out.resize(done + chunk as usize, 0);
            s.check(
                call,
                s.rt.get(
                    &mut out[done..],
                    at.offset(HEADER).expect("in slot"),
                    Handle::NULL,
                ),
            );
            s.check(call, flag.atomic_store(&s.rt, 0));
            if out.len() as u64 >= total {
                break;
            }
        }
    }
}

/// armci_msg_me.
#[no_mangle]
pub extern "C" fn armci_msg_me() -> c_int {
    state("armci_msg_me").rt.rank() as c_int
}

/// armci_msg_nproc.
#[no_mangle]
pub extern "C" fn armci_msg_nproc() -> c_int {
    state("armci_msg_nproc").rt.procs() as c_int
}

/// armci_msg_abort: ends the job.
#[no_mangle]
pub extern "C" fn armci_msg_abort(code: c_int) {
    state("armci_msg_abort").fail("armci_msg_abort", format!("code {code}"))
}

/// armci_timer: seconds since the first call.
#[no_mangle]
pub extern "C" fn armci_timer() -> f64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64()
}

/// armci_msg_barrier.
#[no_mangle]
pub extern "C" fn armci_msg_barrier() {
    crate::setup::ARMCI_Barrier();
}

/// Waits until `flag`, a word of rank `owner`, holds `want`, which rank `awaited` writes.
fn wait_flag(s: &State, call: &str, flag: GlobalPtr<u64>, want: u64, owner: u32, awaited: u32) {
    s.check(
        call,
        s.rt.wait(
            owner,
            Some(awaited),
            || Ok(flag.atomic_load(&s.rt)? == want),
        ),
    );
}

/// armci_msg_snd: sends `len` bytes to rank `to` (messages from one sender arrive in
/// order; the tag is not matched).
///
/// # Safety
/// `buffer` points to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn armci_msg_snd(_tag: c_int, buffer: *mut c_void, len: c_int, to: c_int) {
    let call = "armci_msg_snd";
    let s = state(call);
    let total = s.len(call, len);
    let to = s.rank_of(call, to);
    // SAFETY: ARMCI's contract for the buffer.
    let data = unsafe { s.local(call, buffer, total) };
    s.messages.send(s, call, to, &data);
}

/// armci_msg_rcv: receives the next message from rank `from` into `buffer`.
///
/// # Safety
/// `buffer` points to `buflen` writable bytes; `msglen` is null or valid.
#[no_mangle]
pub unsafe extern "C" fn armci_msg_rcv(
    _tag: c_int,
    buffer: *mut c_void,
    buflen: c_int,
    msglen: *mut c_int,
    from: c_int,
) {
    let call = "armci_msg_rcv";
    let s = state(call);
    let capacity = s.len(call, buflen);
    let from = s.rank_of(call, from);
    let mut message = Vec::new();
    s.messages.recv(s, call, from, &mut message, capacity);
    // SAFETY: ARMCI's contract for the buffer; the message fits (checked by `recv`).
    let mut out = unsafe { s.local_mut(call, buffer, message.len() as u64) };
    out.copy_from_slice(&message);
    out.write_back();
    if !msglen.is_null() {
        // SAFETY: non-null pointer of the caller.
        unsafe { *msglen = message.len() as c_int };
    }
}

/// armci_msg_rcvany: receives the next message from whichever rank sent one into
/// `buffer`; returns the sender's rank.
///
/// # Safety
/// `buffer` points to `buflen` writable bytes; `msglen` is null or valid.
#[no_mangle]
pub unsafe extern "C" fn armci_msg_rcvany(
    tag: c_int,
    buffer: *mut c_void,
    buflen: c_int,
    msglen: *mut c_int,
) -> c_int {
    let call = "armci_msg_rcvany";
    let s = state(call);
    let from = s.messages.any_sender(s, call);
    // SAFETY: forwarded contract.
    unsafe { armci_msg_rcv(tag, buffer, buflen, msglen, from as c_int) };
    from as c_int
}

/// armci_msg_bintree: this rank's place in the binary tree of all ranks rooted at 0
/// (-1 where there is no such rank).
///
/// # Safety
/// The four pointers are valid.
#[no_mangle]
pub unsafe extern "C" fn armci_msg_bintree(
    _scope: c_int,
    root: *mut c_int,
    up: *mut c_int,
    left: *mut c_int,
    right: *mut c_int,
) {
    let call = "armci_msg_bintree";
    let s = state(call);
    if [root, up, left, right].iter().any(|p| p.is_null()) {
        s.fail(call, "null argument");
    }
    let (me, n) = (s.rt.rank() as c_int, s.rt.procs() as c_int);
    let child = |k: c_int| if k < n { k } else { -1 };
    // SAFETY: four non-null pointers of the caller.
    unsafe {
        *root = 0;
        *up = if me == 0 { -1 } else { (me - 1) / 2 };
        *left = child(2 * me + 1);
        *right = child(2 * me + 2);
    }
}

/// The first element of `bytes` as `kind` (ARMCI_INT ... ARMCI_DOUBLE), for comparing.
fn key(s: &State, call: &str, kind: c_int, bytes: &[u8]) -> f64 {
    let take = |n: usize| -> [u8; 8] {
        let mut out = [0u8; 8];
        match bytes.get(..n) {
            Some(b) => out[..n].copy_from_slice(b),
            None => s.fail(
                call,
                format!("a {n}-byte element does not fit {} bytes", bytes.len()),
            ),
        }
        out
    };
    match kind {
        0 => i32::from_ne_bytes(take(4)[..4].try_into().expect("4 bytes")) as f64,
        1 | 2 => i64::from_ne_bytes(take(8)) as f64,
        3 => f32::from_ne_bytes(take(4)[..4].try_into().expect("4 bytes")) as f64,
        4 => f64::from_ne_bytes(take(8)),
        other => s.fail(call, format!("unknown type {other}")),
    }
}

/// armci_msg_sel_scope: among the ranks that `contribute`, the one whose `x` starts with
/// the smallest ("min") or largest ("max") element of `type` (the lowest rank on a tie);
/// its `n` bytes of `x` go to every rank. Collective; every scope is all ranks.
///
/// # Safety
/// `x` points to `n` bytes; `op` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn armci_msg_sel_scope(
    _scope: c_int,
    x: *mut c_void,
    n: c_int,
    op: *mut c_char,
    kind: c_int,
    contribute: c_int,
) {
    let call = "armci_msg_sel_scope";
    let s = state(call);
    if op.is_null() {
        s.fail(call, "null operator");
    }
    // SAFETY: the caller passes a NUL-terminated string.
    let want_max = match unsafe { CStr::from_ptr(op) }.to_bytes() {
        b"max" => true,
        b"min" => false,
        other => s.fail(
            call,
            format!("operator {:?}: min or max", String::from_utf8_lossy(other)),
        ),
    };
    let len = s.len(call, n);
    // SAFETY: `x` points to `n` bytes (caller's contract).
    let mut mine = unsafe { s.local_mut(call, x, len) };
    let mut part = vec![u8::from(contribute != 0)];
    part.extend_from_slice(&mine);
    let parts = collective::allgather(s, call, s.rt.team(), &part);
    let mut best: Option<(f64, &[u8])> = None;
    for p in &parts {
        if p.first() != Some(&1) {
            continue;
        }
        let k = key(s, call, kind, &p[1..]);
        let better = match best {
            None => true,
            Some((b, _)) => (want_max && k > b) || (!want_max && k < b),
        };
        if better {
            best = Some((k, &p[1..]));
        }
    }
    if let Some((_, winner)) = best {
        if winner.len() == mine.len() {
            mine.copy_from_slice(winner);
            mine.write_back();
        } else {
            s.fail(call, "ranks passed buffers of different lengths");
        }
    }
}

/// armci_msg_sel: armci_msg_sel_scope over all ranks.
///
/// # Safety
/// As armci_msg_sel_scope.
#[no_mangle]
pub unsafe extern "C" fn armci_msg_sel(
    x: *mut c_void,
    n: c_int,
    op: *mut c_char,
    kind: c_int,
    contribute: c_int,
) {
    // SAFETY: forwarded contract.
    unsafe { armci_msg_sel_scope(0, x, n, op, kind, contribute) }
}

/// armci_msg_bcast: `len` bytes of `root`'s buffer to every rank.
///
/// # Safety
/// `buffer` points to `len` bytes on every rank.
#[no_mangle]
pub unsafe extern "C" fn armci_msg_bcast(buffer: *mut c_void, len: c_int, root: c_int) {
    let call = "armci_msg_bcast";
    let s = state(call);
    let root = s.rank_of(call, root);
    // SAFETY: forwarded contract.
    unsafe { broadcast(s, call, s.rt.team(), buffer, len, root) }
}

/// `len` bytes of team rank `root`'s buffer to every member of `team`.
///
/// # Safety
/// `buffer` points to `len` bytes on every member.
unsafe fn broadcast(
    s: &State,
    call: &str,
    team: &Team,
    buffer: *mut c_void,
    len: c_int,
    root: u32,
) {
    let n = s.len(call, len);
    // SAFETY: ARMCI's contract for the buffer.
    let mut data = unsafe { s.local_mut(call, buffer, n) };
    s.check(call, team.broadcast_bytes(&s.rt, &mut data, root));
    if team.rank() != root {
        data.write_back();
    }
}

/// armci_msg_brdcst: as armci_msg_bcast.
///
/// # Safety
/// As armci_msg_bcast.
#[no_mangle]
pub unsafe extern "C" fn armci_msg_brdcst(buffer: *mut c_void, len: c_int, root: c_int) {
    // SAFETY: forwarded contract.
    unsafe { armci_msg_bcast(buffer, len, root) }
}

/// armci_msg_bcast_scope: every scope is all ranks on one node.
///
/// # Safety
/// As armci_msg_bcast.
#[no_mangle]
pub unsafe extern "C" fn armci_msg_bcast_scope(
    _scope: c_int,
    buffer: *mut c_void,
    len: c_int,
    root: c_int,
) {
    // SAFETY: forwarded contract.
    unsafe { armci_msg_bcast(buffer, len, root) }
}

/// The reduction operators of the gop family.
#[derive(Clone, Copy)]
enum Op {
    Sum,
    Product,
    Max,
    Min,
    AbsMax,
    AbsMin,
    /// `&&` / `land`, `||` / `lor`: 1 when all / any operand is non-zero, else 0.
    LogicalAnd,
    LogicalOr,
    /// `&` / `band`, `|` / `bor` / `or`: bitwise.
    BitAnd,
    BitOr,
}

trait Element: Pod + PartialOrd {
    /// Whether the logical and bitwise operators apply (integers only, as in MPI).
    const INTEGER: bool;
    fn sum(self, other: Self) -> Self;
    fn product(self, other: Self) -> Self;
    fn magnitude(self) -> Self;
    /// Bitwise and / or; the identity on types that are not integers (never called there).
    fn bit_and(self, other: Self) -> Self;
    fn bit_or(self, other: Self) -> Self;
    fn is_true(self) -> bool;
    fn truth(value: bool) -> Self;
}

macro_rules! element {
    (int $($t:ty),*) => {$(
        impl Element for $t {
            const INTEGER: bool = true;
            fn sum(self, o: Self) -> Self { self.wrapping_add(o) }
            fn product(self, o: Self) -> Self { self.wrapping_mul(o) }
            fn magnitude(self) -> Self { self.wrapping_abs() }
            fn bit_and(self, o: Self) -> Self { self & o }
            fn bit_or(self, o: Self) -> Self { self | o }
            fn is_true(self) -> bool { self != 0 }
            fn truth(value: bool) -> Self { Self::from(value) }
        }
    )*};
    (float $($t:ty),*) => {$(
        impl Element for $t {
            const INTEGER: bool = false;
            fn sum(self, o: Self) -> Self { self + o }
            fn product(self, o: Self) -> Self { self * o }
            fn magnitude(self) -> Self { self.abs() }
            fn bit_and(self, _: Self) -> Self { self }
            fn bit_or(self, _: Self) -> Self { self }
            fn is_true(self) -> bool { self != 0.0 }
            fn truth(value: bool) -> Self { Self::from(u8::from(value)) }
        }
    )*};
}
element!(int i32, i64);
element!(float f32, f64);

impl Op {
    fn combine<T: Element>(self, a: T, b: T) -> T {
        let pick = |keep_a: bool, a: T, b: T| if keep_a { a } else { b };
        match self {
            Op::Sum => a.sum(b),
            Op::Product => a.product(b),
            Op::Max => pick(a >= b, a, b),
            Op::Min => pick(a <= b, a, b),
            Op::AbsMax => {
                let (a, b) = (a.magnitude(), b.magnitude());
                pick(a >= b, a, b)
            }
            Op::AbsMin => {
                let (a, b) = (a.magnitude(), b.magnitude());
                pick(a <= b, a, b)
            }
            Op::LogicalAnd => T::truth(a.is_true() && b.is_true()),
            Op::LogicalOr => T::truth(a.is_true() || b.is_true()),
            Op::BitAnd => a.bit_and(b),
            Op::BitOr => a.bit_or(b),
        }
    }

    /// Whether the operator applies to integers only (as in MPI).
    fn integers_only(self) -> bool {
        matches!(
            self,
            Op::LogicalAnd | Op::LogicalOr | Op::BitAnd | Op::BitOr
        )
    }
}

impl Op {
    /// What is left after combining: the abs operators give magnitudes even where no
    /// other operand was combined (a team of one).
    fn finish<T: Element>(self, result: &mut [T]) {
        for r in result.iter_mut() {
            match self {
                Op::AbsMax | Op::AbsMin => *r = r.magnitude(),
                // Likewise 0 or 1 for the logical ones.
                Op::LogicalAnd | Op::LogicalOr => *r = T::truth(r.is_true()),
                _ => return,
            }
        }
    }
}

/// # Safety
/// `op` is a NUL-terminated string.
unsafe fn parse_op(s: &State, call: &str, op: *const c_char) -> Op {
    if op.is_null() {
        s.fail(call, "null operator");
    }
    // SAFETY: the caller passes a NUL-terminated string.
    let text = unsafe { CStr::from_ptr(op) }.to_string_lossy();
    match text.as_ref() {
        "+" | "sum" => Op::Sum,
        "*" | "mult" => Op::Product,
        "max" => Op::Max,
        "min" => Op::Min,
        "absmax" => Op::AbsMax,
        "absmin" => Op::AbsMin,
        "&&" | "land" => Op::LogicalAnd,
        "||" | "lor" => Op::LogicalOr,
        "&" | "band" => Op::BitAnd,
        "|" | "bor" | "or" => Op::BitOr,
        other => s.fail(
            call,
            format!("unknown operator {other:?} (+, *, max, min, absmax, absmin, &&, ||, &, |)"),
        ),
    }
}

/// All-reduce of `n` elements at `x` over every rank (collective).
///
/// # Safety
/// `x` points to `n` elements; `op` is a NUL-terminated string.
unsafe fn gop<T: Element>(call: &str, x: *mut T, n: c_int, op: *const c_char) {
    let s = state(call);
    // SAFETY: forwarded contract.
    unsafe { reduce(s, call, s.rt.team(), x, n, op) }
}

/// All-reduce of `n` elements at `x` over the members of `team`, combined in team rank
/// order along gaspar's tree (so every member gets the same result).
///
/// # Safety
/// `x` points to `n` elements; `op` is a NUL-terminated string.
unsafe fn reduce<T: Element>(
    s: &State,
    call: &str,
    team: &Team,
    x: *mut T,
    n: c_int,
    op: *const c_char,
) {
    // SAFETY: forwarded contract.
    let op = unsafe { parse_op(s, call, op) };
    if op.integers_only() && !T::INTEGER {
        s.fail(
            call,
            "the logical and bitwise operators apply to integers only",
        );
    }
    let count = s.len(call, n) as usize;
    let bytes = (count * std::mem::size_of::<T>()) as u64;
    // SAFETY: `x` points to `n` elements (caller's contract).
    let mut mine = unsafe { s.local_mut(call, x as *mut c_void, bytes) };
    let mut result = vec![T::zeroed(); count];
    bytemuck::cast_slice_mut(&mut result).copy_from_slice(&mine);
    s.check(
        call,
        team.reduce_with(&s.rt, &mut result, None, |a: &mut T, b: &T| {
            *a = op.combine(*a, *b)
        }),
    );
    op.finish(&mut result);
    mine.copy_from_slice(bytemuck::cast_slice(&result));
    mine.write_back();
}

/// armci_msg_igop: all-reduce of ints.
///
/// # Safety
/// `x` points to `n` ints; `op` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn armci_msg_igop(x: *mut c_int, n: c_int, op: *mut c_char) {
    // SAFETY: forwarded contract.
    unsafe { gop::<i32>("armci_msg_igop", x, n, op) }
}

/// armci_msg_lgop: all-reduce of longs.
///
/// # Safety
/// `x` points to `n` longs; `op` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn armci_msg_lgop(x: *mut libc::c_long, n: c_int, op: *mut c_char) {
    // SAFETY: forwarded contract (long is 64-bit on every target gaspar builds for).
    unsafe { gop::<i64>("armci_msg_lgop", x, n, op) }
}

/// armci_msg_llgop: all-reduce of long longs.
///
/// # Safety
/// `x` points to `n` long longs; `op` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn armci_msg_llgop(x: *mut libc::c_longlong, n: c_int, op: *mut c_char) {
    // SAFETY: forwarded contract.
    unsafe { gop::<i64>("armci_msg_llgop", x, n, op) }
}

/// armci_msg_fgop: all-reduce of floats.
///
/// # Safety
/// `x` points to `n` floats; `op` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn armci_msg_fgop(x: *mut f32, n: c_int, op: *mut c_char) {
    // SAFETY: forwarded contract.
    unsafe { gop::<f32>("armci_msg_fgop", x, n, op) }
}

/// armci_msg_dgop: all-reduce of doubles.
///
/// # Safety
/// `x` points to `n` doubles; `op` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn armci_msg_dgop(x: *mut f64, n: c_int, op: *mut c_char) {
    // SAFETY: forwarded contract.
    unsafe { gop::<f64>("armci_msg_dgop", x, n, op) }
}

/// armci_msg_gop_scope: the gop of `type` (ARMCI_INT ... ARMCI_DOUBLE); every scope is
/// all ranks.
///
/// # Safety
/// `x` points to `n` elements of `type`; `op` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn armci_msg_gop_scope(
    _scope: c_int,
    x: *mut c_void,
    n: c_int,
    op: *mut c_char,
    kind: c_int,
) {
    // SAFETY: forwarded contract, by element type.
    unsafe {
        match kind {
            0 => gop::<i32>("armci_msg_gop_scope", x as *mut i32, n, op),
            1 | 2 => gop::<i64>("armci_msg_gop_scope", x as *mut i64, n, op),
            3 => gop::<f32>("armci_msg_gop_scope", x as *mut f32, n, op),
            4 => gop::<f64>("armci_msg_gop_scope", x as *mut f64, n, op),
            other => state("armci_msg_gop_scope")
                .fail("armci_msg_gop_scope", format!("unknown type {other}")),
        }
    }
}

/// All-reduce of `n` elements at `x` over `group`.
///
/// # Safety
/// `x` points to `n` elements; `op` is a NUL-terminated string; `group` is valid.
unsafe fn group_gop<T: Element>(
    call: &str,
    x: *mut T,
    n: c_int,
    op: *const c_char,
    group: *const Group,
) {
    let s = state(call);
    // SAFETY: forwarded contract.
    let members = unsafe { crate::group::members(s, call, group) };
    members.my_index(s, call);
    // SAFETY: forwarded contract.
    unsafe { reduce(s, call, members.team, x, n, op) }
}

macro_rules! group_gops {
    ($($name:ident: $c:ty => $t:ty;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: all-reduce over a group.")]
        ///
        /// # Safety
        /// `x` points to `n` elements; `op` is a NUL-terminated string; `group` is valid.
        #[no_mangle]
        pub unsafe extern "C" fn $name(x: *mut $c, n: c_int, op: *mut c_char, group: *mut Group) {
            // SAFETY: forwarded contract ($c and $t have the same layout).
            unsafe { group_gop::<$t>(stringify!($name), x as *mut $t, n, op, group) }
        }
    )*};
}

group_gops! {
    armci_msg_group_igop: c_int => i32;
    armci_msg_group_lgop: libc::c_long => i64;
    armci_msg_group_llgop: libc::c_longlong => i64;
    armci_msg_group_fgop: f32 => f32;
    armci_msg_group_dgop: f64 => f64;
}

/// armci_msg_group_gop_scope: the group gop of `type` (ARMCI_INT ... ARMCI_DOUBLE).
///
/// # Safety
/// `x` points to `n` elements of `type`; `op` is a NUL-terminated string; `group` valid.
#[no_mangle]
pub unsafe extern "C" fn armci_msg_group_gop_scope(
    _scope: c_int,
    x: *mut c_void,
    n: c_int,
    op: *mut c_char,
    kind: c_int,
    group: *mut Group,
) {
    let call = "armci_msg_group_gop_scope";
    // SAFETY: forwarded contract, by element type.
    unsafe {
        match kind {
            0 => group_gop::<i32>(call, x as *mut i32, n, op, group),
            1 | 2 => group_gop::<i64>(call, x as *mut i64, n, op, group),
            3 => group_gop::<f32>(call, x as *mut f32, n, op, group),
            4 => group_gop::<f64>(call, x as *mut f64, n, op, group),
            other => state(call).fail(call, format!("unknown type {other}")),
        }
    }
}

/// armci_msg_group_barrier: waits for every member of `group`.
///
/// # Safety
/// `group` is null or points to a live group made by ARMCI.
#[no_mangle]
pub unsafe extern "C" fn armci_msg_group_barrier(group: *mut Group) {
    let call = "armci_msg_group_barrier";
    let s = state(call);
    // SAFETY: forwarded contract.
    let members = unsafe { crate::group::members(s, call, group) };
    members.my_index(s, call);
    s.check(call, s.rt.all_fence());
    s.check(call, members.team.barrier(&s.rt));
}

/// armci_msg_group_bcast_scope: `len` bytes of absolute rank `root`'s buffer to every member.
///
/// # Safety
/// `buffer` points to `len` bytes on every member; `group` is valid.
#[no_mangle]
pub unsafe extern "C" fn armci_msg_group_bcast_scope(
    _scope: c_int,
    buffer: *mut c_void,
    len: c_int,
    root: c_int,
    group: *mut Group,
) {
    let call = "armci_msg_group_bcast_scope";
    let s = state(call);
    // SAFETY: forwarded contract.
    let members = unsafe { crate::group::members(s, call, group) };
    // The root is an absolute (world) rank, as in ARMCI-MPI (GA's pgtest passes it so).
    let root = u32::try_from(root)
        .ok()
        .and_then(|r| members.ranks.iter().position(|&m| m == r))
        .unwrap_or_else(|| {
            s.fail(
                call,
                format!("root {root} (an absolute rank) is not a member of the group"),
            )
        }) as u32;
    members.my_index(s, call);
    // SAFETY: forwarded contract.
    unsafe { broadcast(s, call, members.team, buffer, len, root) }
}
