//! Shared-memory segments: anonymous memory files (memfd) that the launcher creates and
//! its ranks inherit by file descriptor. A segment has no name in /dev/shm or anywhere
//! else, so no ending of a job — not even kill -9 of the launcher during start-up — can
//! leave one behind: the memory goes when the last process that maps it exits.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use memmap2::{MmapOptions, MmapRaw};
use nix::sys::memfd::{memfd_create, MemFdCreateFlag};

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
    map: MmapRaw,
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
        let segment = Self::map(&file)?;
        segment.header().initialize(rank, procs, layout);
        Ok((segment, OwnedFd::from(file)))
    }

    /// Maps a segment inherited from the launcher, and closes its descriptor (a mapped
    /// segment needs none: a process the rank starts later inherits neither).
    pub(crate) fn inherited(fd: CheckedFd) -> Result<Mapping> {
        // SAFETY: `check_inherited` made sure the descriptor is open and is the gaspar
        // segment the launcher created for this process; nothing else in the process owns
        // it (it is only named in GASPAR_SEGMENT_FDS, whose descriptors are taken once, at
        // init); the `File` closes it after mapping.
        let file = unsafe { File::from_raw_fd(fd.0) };
        Self::map(&file)
    }

    /// A private segment for a job of one rank started without the launcher.
    pub(crate) fn anonymous(layout: &Layout) -> Result<Mapping> {
        let len = usize::try_from(layout.total()).map_err(|_| Error::LengthOverflow {
            what: "segment size",
        })?;
        let map = MmapOptions::new()
            .len(len)
            .map_anon()
            .map_err(|e| Error::os("mmap (anonymous segment)", e))?;
        let segment = Mapping { map: map.into() };
        segment.header().initialize(0, 1, layout);
        Ok(segment)
    }

    fn map(file: &File) -> Result<Mapping> {
        let map = MmapOptions::new()
            .map_raw(file)
            .map_err(|e| Error::os("mmap of shared segment", e))?;
        if map.len() < std::mem::size_of::<Header>() {
            return Err(Error::Environment("shared segment is too small".into()));
        }
        Ok(Mapping { map })
    }

    /// Start of the mapping.
    pub(crate) fn base(&self) -> *mut u8 {
        self.map.as_mut_ptr()
    }

    /// Length of the mapping.
    pub(crate) fn len(&self) -> u64 {
        self.map.len() as u64
    }

    /// The control header at the start of the segment.
    pub(crate) fn header(&self) -> &Header {
        // SAFETY: the mapping is page aligned and at least size_of::<Header>() long
        // (checked in `map`, and `Layout` puts the header first), lives as long as `self`,
        // and Header consists of atomics only, for which every bit pattern is valid and
        // shared access from several processes is sound.
        unsafe { &*(self.map.as_ptr() as *const Header) }
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

/// A descriptor checked to be rank `rank`'s segment of this job, not yet owned.
pub(crate) struct CheckedFd(RawFd);

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
        Ok(8) if u64::from_le_bytes(magic) == MAGIC => Ok(CheckedFd(fd)),
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
