//! POSIX shared-memory segments: naming, creation (launcher), opening (ranks), removal.

use std::fs::File;

use memmap2::{MmapOptions, MmapRaw};
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

use super::layout::{Header, Layout};
use crate::error::{Error, Result};

/// The name of rank `rank`'s segment in job `job` (`/dev/shm/gaspar-<job>-<rank>`).
pub(crate) fn name(job: &str, rank: u32) -> String {
    format!("/gaspar-{job}-{rank}")
}

/// A fresh job id: 128 random bits, so that no other user can guess a segment name.
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
    /// Creates segment `name` (mode 0600; fails if it exists), sized for `layout`, and
    /// writes its header.
    pub(crate) fn create(name: &str, rank: u32, procs: u32, layout: &Layout) -> Result<Segment> {
        let fd = nix::sys::mman::shm_open(
            name,
            OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_RDWR | OFlag::O_CLOEXEC,
            Mode::S_IRUSR | Mode::S_IWUSR,
        )
        .map_err(|e| Error::os("shm_open (create)", e))?;
        let file = File::from(fd);
        if let Err(e) = file.set_len(layout.total()) {
            let _ = unlink(name);
            return Err(Error::os("ftruncate of shared segment", e));
        }
        let segment = match Self::map(&file) {
            Ok(s) => s,
            Err(e) => {
                let _ = unlink(name);
                return Err(e);
            }
        };
        segment.header().initialize(rank, procs, layout);
        Ok(segment)
    }

    /// Opens and maps an existing segment.
    pub(crate) fn open(name: &str) -> Result<Segment> {
        let fd = nix::sys::mman::shm_open(name, OFlag::O_RDWR | OFlag::O_CLOEXEC, Mode::empty())
            .map_err(|e| Error::Environment(format!("cannot open shared segment {name}: {e}")))?;
        Self::map(&File::from(fd))
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

/// Removes a segment's name (mappings stay valid). A missing name is not an error.
pub(crate) fn unlink(name: &str) -> Result<()> {
    match nix::sys::mman::shm_unlink(name) {
        Ok(()) | Err(nix::errno::Errno::ENOENT) => Ok(()),
        Err(e) => Err(Error::os("shm_unlink", e)),
    }
}
