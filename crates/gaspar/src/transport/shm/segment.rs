//! Shared-memory segments: anonymous memory files (memfd) that the launcher creates and
//! its ranks inherit by file descriptor. A segment has no name in /dev/shm or anywhere
//! else, so no ending of a job — not even kill -9 of the launcher during start-up — can
//! leave one behind: the memory goes when the last process that maps it exits.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use memmap2::{MmapOptions, MmapRaw};
use nix::sys::memfd::{memfd_create, MemFdCreateFlag};

use super::layout::{Header, Layout};
use crate::error::{Error, Result};

/// A fresh job id: 128 random bits (it names the job in messages and logs).
pub(crate) fn new_job_id() -> Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes)
        .map_err(|e| Error::os("getrandom", std::io::Error::other(e.to_string())))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A mapped segment.
pub(crate) struct Segment {
    map: MmapRaw,
}

impl Segment {
    /// Creates rank `rank`'s segment of job `job` sized for `layout` and writes its header.
    /// Returns the mapping and the file descriptor the ranks inherit (close-on-exec is
    /// cleared only in the ranks, just before they exec).
    pub(crate) fn create(
        job: &str,
        rank: u32,
        procs: u32,
        layout: &Layout,
    ) -> Result<(Segment, OwnedFd)> {
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

    /// Maps a segment inherited from the launcher as descriptor `fd`, and closes `fd`.
    pub(crate) fn inherited(fd: RawFd) -> Result<Segment> {
        // Only descriptors the launcher named in GASPAR_SEGMENT_FDS get here; fstat tells
        // a closed or foreign descriptor apart before we take ownership of it.
        let stat = nix::sys::stat::fstat(fd)
            .map_err(|e| Error::Environment(format!("segment descriptor {fd}: {e}")))?;
        if stat.st_mode & libc_s_ifmt() != libc_s_ifreg() {
            return Err(Error::Environment(format!(
                "descriptor {fd} is not a gaspar segment"
            )));
        }
        // SAFETY: the launcher opened this descriptor for this process and nothing else in
        // the process owns it (it is only named in GASPAR_SEGMENT_FDS, read once at init);
        // the `File` closes it after mapping.
        let file = unsafe { File::from_raw_fd(fd) };
        Self::map(&file)
    }

    /// A private segment for a job of one rank started without the launcher.
    pub(crate) fn anonymous(layout: &Layout) -> Result<Segment> {
        let len = usize::try_from(layout.total()).map_err(|_| Error::LengthOverflow {
            what: "segment size",
        })?;
        let map = MmapOptions::new()
            .len(len)
            .map_anon()
            .map_err(|e| Error::os("mmap (anonymous segment)", e))?;
        let segment = Segment { map: map.into() };
        segment.header().initialize(0, 1, layout);
        Ok(segment)
    }

    fn map(file: &File) -> Result<Segment> {
        let map = MmapOptions::new()
            .map_raw(file)
            .map_err(|e| Error::os("mmap of shared segment", e))?;
        if map.len() < std::mem::size_of::<Header>() {
            return Err(Error::Environment("shared segment is too small".into()));
        }
        Ok(Segment { map })
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

fn libc_s_ifmt() -> u32 {
    nix::libc::S_IFMT
}

fn libc_s_ifreg() -> u32 {
    nix::libc::S_IFREG
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
