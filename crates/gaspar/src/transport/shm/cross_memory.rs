//! Registered user memory of other processes, reached with cross-memory attach
//! (`process_vm_readv`/`process_vm_writev`), and the permission the job's ranks need
//! for it under Yama's restricted ptrace scope.

use nix::sys::uio::RemoteIoVec;
use nix::unistd::Pid;

use super::{check_bounds, ShmTransport};
use crate::addr::Segment;
use crate::error::{Error, Result};
use crate::transport::Location;

impl ShmTransport {
    /// Resolves registered memory to (owner pid, address in the owner's process).
    pub(super) fn registered(&self, loc: Location, len: u64) -> Result<(Pid, usize)> {
        let Segment::Registered(slot) = loc.segment() else {
            unreachable!("called for registered segments only")
        };
        let (base, region_len) = self.header(loc.rank()).regions[slot as usize].read();
        if region_len == 0 {
            return Err(Error::NotRegistered { ga: loc.ga });
        }
        check_bounds(loc, len, region_len)?;
        Ok((
            self.peers[loc.rank() as usize].pid,
            (base + loc.offset) as usize,
        ))
    }
}

/// Runs one `process_vm_*v` call and turns a short or failed transfer into an error.
pub(super) fn cross_memory(
    loc: Location,
    len: u64,
    call: impl FnOnce(&[RemoteIoVec]) -> nix::Result<usize>,
    addr: usize,
) -> Result<()> {
    let remote = [RemoteIoVec {
        base: addr,
        len: len as usize,
    }];
    match call(&remote) {
        Ok(n) if n as u64 == len => Ok(()),
        Ok(_) | Err(nix::errno::Errno::EFAULT) => Err(Error::NotRegistered { ga: loc.ga }),
        Err(e) => Err(Error::os("process_vm_readv/writev", e)),
    }
}

/// Moves an I/O vector of segments `lens` at `offsets` after registered memory at `addr`
/// in another process, in `process_vm_*v` calls of at most IOV_MAX segments;
/// `call(remote, first)` moves the local segments `first..first + remote.len()`.
pub(super) fn cross_memory_vector(
    loc: Location,
    lens: &[usize],
    offsets: &[u64],
    addr: usize,
    mut call: impl FnMut(&[RemoteIoVec], usize) -> nix::Result<usize>,
) -> Result<()> {
    const IOV_MAX: usize = 1024;
    let mut first = 0;
    for batch in offsets.chunks(IOV_MAX) {
        let remote: Vec<RemoteIoVec> = batch
            .iter()
            .zip(&lens[first..])
            .map(|(&o, &len)| RemoteIoVec {
                base: addr + o as usize,
                len,
            })
            .collect();
        let want: usize = remote.iter().map(|r| r.len).sum();
        match call(&remote, first) {
            Ok(n) if n == want => {}
            Ok(_) | Err(nix::errno::Errno::EFAULT) => {
                return Err(Error::NotRegistered { ga: loc.ga })
            }
            Err(e) => return Err(Error::os("process_vm_readv/writev", e)),
        }
        first += batch.len();
    }
    Ok(())
}

/// Lets the job's other ranks use process_vm_readv/writev on this process under Yama's
/// restricted ptrace scope (`kernel.yama.ptrace_scope = 1`), and nobody else: Yama lets
/// the named process and its descendants attach, and the ranks are the launcher's
/// descendants. (A no-op where Yama is absent; Yama keeps one such exception per process.)
pub(super) fn allow_cross_memory_attach(launcher: Pid) {
    // SAFETY: PR_SET_PTRACER takes integer arguments and touches no memory of ours.
    let _ = unsafe {
        nix::libc::prctl(
            nix::libc::PR_SET_PTRACER,
            launcher.as_raw() as nix::libc::c_ulong,
            0,
            0,
            0,
        )
    };
}
