//! Shared-memory segments: anonymous memory files (memfd) that the launcher creates and
//! its ranks inherit by file descriptor. A segment has no name in /dev/shm or anywhere
//! else, so no ending of a job — not even kill -9 of the launcher during start-up — can
//! leave one behind: the memory goes when the last process that maps it exits.

use std::ffi::CString;
use std::fs::File;
use std::num::NonZeroUsize;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;

use nix::sys::memfd::{memfd_create, MemFdCreateFlag};
use nix::sys::mman::{mmap, mmap_anonymous, munmap, MapFlags, ProtFlags};

use super::layout::{Header, Layout, MAGIC};
use crate::error::{Error, Result};

/// A fresh job id: 128 random bits (it names the job in messages and logs).
pub(crate) fn new_job_id() -> Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes)
        .map_err(|e| Error::os("getrandom", std::io::Error::other(e.to_string())))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// One rank's shared-memory object (laid out as `layout.rs` says), mapped into this
/// process: a POSIX shm object, or anonymous memory for a rank alone. Not to be confused
/// with [`Segment`](crate::addr::Segment), which names a kind of memory of a rank.
pub(crate) struct Mapping {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: a `Mapping` owns its pages (unmapped once, on drop); it hands out only the
// address and the header, whose fields are atomics, so threads may share and move it.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base..base + len` is the mapping this value made and owns; nothing
        // borrows it past the value's life.
        let _ = unsafe { munmap(self.base.cast(), self.len) };
    }
}

/// Where every process of a job maps the segments when it can: the same address in all,
/// so that a pointer a rank stores into its own segment (a Fortran component allocated
/// there) is valid in the others. Rank `r`'s segment of `len` bytes (each rank's the
/// same length) lies at `start + r * stride`; the start is one of 16 terabytes from
/// 16 TiB up, chosen by the job id. Linux hands out addresses there only on request: it
/// places executables, the heap and libraries above 32 TiB (at 0x55.., 0x7f.., or from
/// 0x2aaa.. in the legacy layout an unlimited stack selects, which grows upward, away
/// from the plan). `None` when the plan does not fit below 64 TiB or pointers are not 64
/// bits.
pub(crate) fn planned_address(job: &str, rank: u32, len: u64) -> Option<usize> {
    const TIB: u64 = 1 << 40;
    const HUGE_PAGE: u64 = 2 << 20;
    if usize::BITS < 64 {
        return None;
    }
    let choice = job.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    }) % 16;
    let stride = len.checked_next_multiple_of(HUGE_PAGE)?;
    let at = (16 + choice) * TIB + u64::from(rank).checked_mul(stride)?;
    (at.checked_add(stride)? <= 64 * TIB).then_some(at as usize)
}

impl Mapping {
    /// Creates rank `rank`'s segment of job `job` sized for `layout` and writes its header.
    /// Returns the mapping and the file descriptor the ranks inherit (close-on-exec is
    /// cleared only in the ranks, just before they exec).
    pub(crate) fn create(
        job: &str,
        rank: u32,
        procs: u32,
        layout: &Layout,
    ) -> Result<(Mapping, OwnedFd)> {
        // The name only labels the file in /proc/<pid>/fd; it is not a path.
        let label = CString::new(format!("gaspar-{job}-{rank}")).expect("no NUL in a hex id");
        let fd = memfd_create(&label, MemFdCreateFlag::MFD_CLOEXEC)
            .map_err(|e| Error::os("memfd_create", e))?;
        let file = File::from(fd);
        file.set_len(layout.total())
            .map_err(|e| Error::os("ftruncate of shared segment", e))?;
        let segment = Self::map(&file, None)?;
        segment.header().initialize(rank, procs, layout);
        Ok((segment, OwnedFd::from(file)))
    }

    /// Maps a segment inherited from the launcher, at `at` when that address range is
    /// free (else anywhere), and closes its descriptor (a mapped segment needs none: a
    /// process the rank starts later inherits neither).
    pub(crate) fn inherited(fd: CheckedFd, at: Option<usize>) -> Result<Mapping> {
        // SAFETY: `check_inherited` made sure the descriptor is open and is the gaspar
        // segment the launcher created for this process; nothing else in the process owns
        // it (it is only named in GASPAR_SEGMENT_FDS, whose descriptors are taken once, at
        // init); the `File` closes it after mapping.
        let file = unsafe { File::from_raw_fd(fd.0) };
        match at {
            Some(_) => Self::map(&file, at).or_else(|_| Self::map(&file, None)),
            None => Self::map(&file, None),
        }
    }

    /// A private segment for a job of one rank started without the launcher.
    pub(crate) fn anonymous(layout: &Layout) -> Result<Mapping> {
        let len = usize::try_from(layout.total())
            .ok()
            .and_then(NonZeroUsize::new)
            .ok_or(Error::LengthOverflow {
                what: "segment size",
            })?;
        // SAFETY: a fresh private mapping at an address the kernel picks: it aliases no
        // memory of this process.
        let base = unsafe {
            mmap_anonymous(
                None,
                len,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_PRIVATE,
            )
        }
        .map_err(|e| Error::os("mmap (anonymous segment)", e))?;
        let segment = Mapping {
            base: base.cast(),
            len: len.get(),
        };
        segment.header().initialize(0, 1, layout);
        Ok(segment)
    }

    /// Maps all of `file`, shared, at `at` exactly (failing when something is mapped
    /// there) or wherever the kernel picks.
    fn map(file: &File, at: Option<usize>) -> Result<Mapping> {
        let len = file
            .metadata()
            .map_err(|e| Error::os("fstat of shared segment", e))?
            .len();
        if len < std::mem::size_of::<Header>() as u64 {
            return Err(Error::Environment("shared segment is too small".into()));
        }
        let len = usize::try_from(len)
            .ok()
            .and_then(NonZeroUsize::new)
            .ok_or(Error::LengthOverflow {
                what: "segment size",
            })?;
        let mut flags = MapFlags::MAP_SHARED;
        if at.is_some() {
            flags |= MapFlags::MAP_FIXED_NOREPLACE;
        }
        // SAFETY: a shared mapping of the segment file; MAP_FIXED_NOREPLACE never replaces
        // an existing mapping (it fails with EEXIST instead), so no memory of this process
        // is aliased or dropped. The segment's bytes are only reached through atomics and
        // the transport's copies, which allow other processes to write them concurrently.
        let base = unsafe {
            mmap(
                at.and_then(NonZeroUsize::new),
                len,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                flags,
                file,
                0,
            )
        }
        .map_err(|e| Error::os("mmap of shared segment", e))?;
        let mapping = Mapping {
            base: base.cast(),
            len: len.get(),
        };
        // A kernel older than 4.17 takes MAP_FIXED_NOREPLACE as a hint: elsewhere is no
        // error, only not the plan.
        if at.is_some_and(|at| at != mapping.base.as_ptr() as usize) {
            return Err(Error::Environment(
                "the planned address of a segment is taken".into(),
            ));
        }
        Ok(mapping)
    }

    /// Start of the mapping.
    pub(crate) fn base(&self) -> *mut u8 {
        self.base.as_ptr()
    }

    /// Length of the mapping.
    pub(crate) fn len(&self) -> u64 {
        self.len as u64
    }

    /// The control header at the start of the segment.
    pub(crate) fn header(&self) -> &Header {
        // SAFETY: the mapping is page aligned and at least size_of::<Header>() long
        // (checked in `map`, and `Layout` puts the header first), lives as long as `self`,
        // and Header consists of atomics only, for which every bit pattern is valid and
        // shared access from several processes is sound.
        unsafe { &*(self.base.as_ptr() as *const Header) }
    }
}

/// The descriptors named by `GASPAR_SEGMENT_FDS`: one per rank, each a different one.
pub(crate) fn fd_list(list: &str, procs: u32) -> Result<Vec<RawFd>> {
    let fds: Vec<RawFd> = list
        .split(',')
        .map(|fd| {
            fd.trim().parse().map_err(|_| {
                Error::Environment(format!("bad {} entry {fd:?}", super::env::SEGMENT_FDS))
            })
        })
        .collect::<Result<_>>()?;
    if fds.len() != procs as usize {
        return Err(Error::Environment(format!(
            "{} names {} segments for {procs} ranks",
            super::env::SEGMENT_FDS,
            fds.len()
        )));
    }
    for (k, fd) in fds.iter().enumerate() {
        if fds[..k].contains(fd) {
            return Err(Error::Environment(format!(
                "{} names descriptor {fd} twice",
                super::env::SEGMENT_FDS
            )));
        }
    }
    Ok(fds)
}

/// A descriptor checked to be rank `rank`'s segment of this job, not yet owned, and the
/// segment's length.
pub(crate) struct CheckedFd(RawFd, u64);

impl CheckedFd {
    /// Bytes of the segment.
    pub(crate) fn len(&self) -> u64 {
        self.1
    }
}

/// Checks, without taking it, that descriptor `fd` (named in GASPAR_SEGMENT_FDS) is rank
/// `rank`'s segment of job `job`: an open memory file labelled `gaspar-JOB-RANK` whose
/// header carries gaspar's magic. Anything else is refused and left open, as it was.
pub(crate) fn check_inherited(fd: RawFd, job: &str, rank: u32) -> Result<CheckedFd> {
    let refuse = |what: String| {
        Error::Environment(format!(
            "descriptor {fd} (GASPAR_SEGMENT_FDS) is not a gaspar segment: {what}"
        ))
    };
    let stat = nix::sys::stat::fstat(fd).map_err(|e| refuse(e.desc().to_string()))?;
    if stat.st_mode & nix::libc::S_IFMT != nix::libc::S_IFREG {
        return Err(refuse("not a memory file".into()));
    }
    let link = std::fs::read_link(format!("/proc/self/fd/{fd}"))
        .map_err(|e| refuse(format!("/proc/self/fd/{fd}: {e}")))?;
    let expected = format!("/memfd:gaspar-{job}-{rank} (deleted)");
    if link.as_os_str() != expected.as_str() {
        return Err(refuse(format!(
            "it is {}, not rank {rank}'s segment of this job",
            link.display()
        )));
    }
    let mut magic = [0u8; 8];
    // SAFETY: `fd` is open (fstat succeeded); it is only borrowed for this read.
    let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
    match nix::sys::uio::pread(borrowed, &mut magic, 0) {
        Ok(8) if u64::from_le_bytes(magic) == MAGIC => Ok(CheckedFd(fd, stat.st_size as u64)),
        _ => Err(refuse("its header has no gaspar magic".into())),
    }
}

/// Clears close-on-exec on `fds`, in a forked child before exec (async-signal-safe).
pub(crate) fn keep_across_exec(fds: &[RawFd]) -> std::io::Result<()> {
    for &fd in fds {
        nix::fcntl::fcntl(
            fd,
            nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()),
        )?;
    }
    Ok(())
}

/// The raw numbers of `fds`, as the ranks will see them.
pub(crate) fn raw(fds: &[OwnedFd]) -> Vec<RawFd> {
    fds.iter().map(AsRawFd::as_raw_fd).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fd_lists_name_one_distinct_descriptor_per_rank() {
        assert_eq!(fd_list("5,6,7", 3).unwrap(), vec![5, 6, 7]);
        assert!(fd_list("5,6", 3).is_err());
        assert!(fd_list("5,x", 2).is_err());
        let twice = fd_list("5,5", 2).unwrap_err().to_string();
        assert!(twice.contains("descriptor 5 twice"), "{twice}");
    }

    /// Only rank `rank`'s segment of job `job` is accepted; anything refused stays open.
    #[test]
    fn only_this_jobs_segment_of_this_rank_is_taken() {
        let layout = Layout::new(2, 4096, 65536).unwrap();
        let (_segment, fd) = Mapping::create("feed", 1, 2, &layout).unwrap();
        let raw = fd.as_raw_fd();
        assert!(check_inherited(raw, "feed", 1).is_ok());
        for (job, rank) in [("feed", 0), ("beef", 1)] {
            let refused = check_inherited(raw, job, rank).err().unwrap().to_string();
            assert!(refused.contains("not rank"), "{refused}");
        }
        // Named like a segment, but without a header.
        let label = CString::new("gaspar-feed-0").unwrap();
        let blank = File::from(memfd_create(&label, MemFdCreateFlag::MFD_CLOEXEC).unwrap());
        blank.set_len(65536).unwrap();
        let refused = check_inherited(blank.as_raw_fd(), "feed", 0)
            .err()
            .unwrap()
            .to_string();
        assert!(refused.contains("no gaspar magic"), "{refused}");
        // A regular file, and a descriptor that is not open.
        let file = File::open("/proc/self/stat").unwrap();
        let refused = check_inherited(file.as_raw_fd(), "feed", 0)
            .err()
            .unwrap()
            .to_string();
        assert!(refused.contains("is not a gaspar segment"), "{refused}");
        assert!(nix::sys::stat::fstat(file.as_raw_fd()).is_ok(), "closed");
        assert!(check_inherited(-1, "feed", 0).is_err());
    }
}
