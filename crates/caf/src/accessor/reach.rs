//! Whether an accessor of a derived-type coarray may run in this process against another
//! image's part that is mapped here at the address its owner uses (the shm transport's
//! placement). The accessor follows whatever pointers the part holds. Those into memory
//! mapped at the same address in both processes and holding no pointer themselves (the
//! part itself, the owner's allocatable components while the arena holds only intrinsic
//! ones) are valid here; a pointer into the owner's ordinary memory (a pointer component,
//! a polymorphic component's type information) is not, and then the accessor runs in the
//! owner's service thread. gfortran says nothing of a type's layout, so every word of the
//! part is looked at:
//!
//! - a word that cannot be a user-space address (below `vm.mmap_min_addr`, or at 2^57 and
//!   above: no Linux process is given such addresses), or that lies in memory valid here,
//!   is harmless;
//! - any other word is looked up in the owner's address space (`process_vm_readv` of its
//!   first bytes, once per page): unmapped there, it is data no accessor follows (a bound,
//!   a descriptor's type word, two packed integers); mapped, it may be a pointer — unless
//!   what it points at starts with [`COARRAY_TOKEN`]: one of the owner's coarray tokens,
//!   which gfortran keeps beside an allocatable component's descriptor and accessors never
//!   follow.
//!
//! A verdict holds for one segment of this image (the routes of derived-type coarrays last
//! that long): within a segment a conforming program does not change what another image's
//! part points to.

use std::io::IoSliceMut;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use nix::errno::Errno;
use nix::sys::uio::{process_vm_readv, RemoteIoVec};
use nix::unistd::Pid;

use crate::token::COARRAY_TOKEN;

/// The largest part looked at: a larger one's accessors run in the owner.
const LARGEST_PART: usize = 1 << 20;
/// The most pages looked up in the owner for one part.
const MOST_LOOKUPS: usize = 64;
/// No Linux process is given addresses from here up (x86-64 with five-level page tables
/// stops at 2^56, AArch64 at 2^52).
const ADDRESS_END: u64 = 1 << 57;
const PAGE: u64 = 4096;

/// What an address is in the owner's process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InOwner {
    /// Not mapped: the word holding it is data.
    Unmapped,
    /// The start of one of the owner's coarray tokens.
    Token,
    /// Mapped (or not known): the word may be a pointer there.
    Mapped,
}

/// The lowest address a process may map (`vm.mmap_min_addr`; one page when unreadable).
fn lowest_address() -> u64 {
    static LOWEST: OnceLock<u64> = OnceLock::new();
    *LOWEST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/vm/mmap_min_addr")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(PAGE)
            .max(1)
    })
}

/// Looks `address` up in process `pid`.
fn look_up(pid: Pid, address: u64) -> InOwner {
    let mut first = [0u8; 8];
    let remote = [RemoteIoVec {
        base: address as usize,
        len: first.len(),
    }];
    match process_vm_readv(pid, &mut [IoSliceMut::new(&mut first)], &remote) {
        Ok(8) if u64::from_ne_bytes(first) == COARRAY_TOKEN => InOwner::Token,
        Err(Errno::EFAULT) => InOwner::Unmapped,
        // Read (a pointer's target), partly read, or not allowed to look: a pointer, maybe.
        _ => InOwner::Mapped,
    }
}

/// True when an accessor may run here against the `len` bytes at `base`, part of a
/// derived-type coarray of process `owner` mapped here at the owner's address; `valid`
/// lists memory mapped at the same address in both processes that holds no pointer.
///
/// # Safety
/// `base..base + len` is mapped in this process (other processes may write it).
pub(crate) unsafe fn runs_here(
    base: usize,
    len: usize,
    owner: i32,
    valid: &[Range<usize>],
) -> bool {
    if len > LARGEST_PART {
        return false;
    }
    let words = part_words(base, len);
    let mut verdict = Verdict::new(Pid::from_raw(owner), base..base + len, valid);
    words.into_iter().all(|w| {
        // SAFETY: an aligned word of the part (this function's contract); the owner may
        // write it meanwhile, so it is read atomically.
        let word = unsafe { &*(w as *const AtomicU64) }.load(Ordering::Acquire);
        verdict.harmless(word, look_up)
    })
}

/// The addresses of the aligned words inside `base..base + len` (a pointer a part holds
/// is aligned, as the part is).
fn part_words(base: usize, len: usize) -> impl IntoIterator<Item = usize> {
    let first = base.next_multiple_of(8);
    let end = (base + len) & !7;
    (first..end.max(first)).step_by(8)
}

/// What one part's words were found to be.
struct Verdict<'a> {
    owner: Pid,
    part: Range<usize>,
    valid: &'a [Range<usize>],
    /// Pages of the owner found unmapped.
    unmapped: Vec<u64>,
    lookups: usize,
}

impl<'a> Verdict<'a> {
    fn new(owner: Pid, part: Range<usize>, valid: &'a [Range<usize>]) -> Verdict<'a> {
        Verdict {
            owner,
            part,
            valid,
            unmapped: Vec::new(),
            lookups: 0,
        }
    }

    /// True when an accessor following `word` as a pointer, or ignoring it, is right
    /// here; `look_up` tells what an address is in the owner.
    fn harmless(&mut self, word: u64, look_up: impl Fn(Pid, u64) -> InOwner) -> bool {
        if word < lowest_address() || word >= ADDRESS_END {
            return true;
        }
        let at = word as usize;
        if self.part.contains(&at) || self.valid.iter().any(|r| r.contains(&at)) {
            return true;
        }
        let page = word & !(PAGE - 1);
        if self.unmapped.contains(&page) {
            return true;
        }
        if self.lookups == MOST_LOOKUPS {
            return false;
        }
        self.lookups += 1;
        match look_up(self.owner, word) {
            InOwner::Unmapped => {
                self.unmapped.push(page);
                true
            }
            InOwner::Token => true,
            InOwner::Mapped => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The owner's heap, in the tests.
    const HEAP: Range<u64> = 0x5555_0000_0000..0x5556_0000_0000;

    fn verdict_of(words: &[u64], owner_maps: &[Range<u64>], tokens: &[u64]) -> bool {
        let valid = 0x1000_0000usize..0x1001_0000;
        let mut verdict = Verdict::new(
            Pid::from_raw(1),
            0x2000_0000..0x2000_0100,
            std::slice::from_ref(&valid),
        );
        let look_up = |_: Pid, a: u64| {
            if tokens.contains(&a) {
                InOwner::Token
            } else if owner_maps.iter().any(|r| r.contains(&a)) {
                InOwner::Mapped
            } else {
                InOwner::Unmapped
            }
        };
        words.iter().all(|&w| verdict.harmless(w, look_up))
    }

    #[test]
    fn data_and_pointers_into_valid_memory_are_harmless() {
        // Null, small integers, negative ones, a double, a pointer into valid memory and
        // into the part, a descriptor's type word (unmapped in the owner).
        let words = [
            0,
            3,
            100_000,
            u64::MAX,
            1.5f64.to_bits(),
            0x1000_0040,
            0x2000_0008,
            3 << 40 | 1 << 32,
        ];
        assert!(verdict_of(&words, &[HEAP], &[]));
    }

    #[test]
    fn a_pointer_into_the_owners_memory_is_not_but_its_token_is() {
        assert!(!verdict_of(&[0, 0x5555_0000_1000], &[HEAP], &[]));
        assert!(verdict_of(
            &[0x5555_0000_1000],
            &[HEAP],
            &[0x5555_0000_1000]
        ));
    }

    #[test]
    fn lookups_are_bounded() {
        let words: Vec<u64> = (0..=MOST_LOOKUPS as u64).map(|k| (k + 1) << 32).collect();
        assert!(!verdict_of(&words, &[], &[]), "one lookup too many");
        assert!(verdict_of(&words[..MOST_LOOKUPS], &[], &[]));
    }

    #[test]
    fn an_unmapped_address_of_this_process_is_unmapped_and_a_mapped_one_mapped() {
        let me = Pid::this();
        let here = Box::new(7u64);
        assert_eq!(look_up(me, &*here as *const u64 as u64), InOwner::Mapped);
        assert_eq!(look_up(me, 3 << 40 | 1 << 32), InOwner::Unmapped);
        let token = Box::new(COARRAY_TOKEN);
        assert_eq!(look_up(me, &*token as *const u64 as u64), InOwner::Token);
    }
}
