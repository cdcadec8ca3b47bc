//! Strided transfers between a local buffer and memory of another rank mapped in this
//! process, for callers that located and checked the remote range themselves: the copy
//! engine's pattern loops ([`super::copy`]) without the transport's own checks.

use super::copy::{move_pattern, Direction};
use crate::error::{Error, Result};
use crate::strided::{Descriptor, Side};

/// Strided put into memory of another rank that is mapped in this process (its address
/// from [`Gma::mapped_address`](crate::gmem::GlobalMemory::mapped_address)): `desc`'s
/// source side in `src`, its destination side from `dst` on, every chunk copied directly
/// by the copy engine (the loops and the methods the shm transport's strided puts use),
/// complete on return. For a caller that has located and checked the remote range itself
/// (libarmci, which checks every address against its own blocks); everyone else calls
/// [`Strided::put_strided`](crate::strided::Strided::put_strided), which checks it and
/// orders the transfer after earlier ones. (In the transport, whose copy engine this is;
/// the strided layer re-exports it.)
///
/// ```
/// use gaspar::strided::{put_mapped, Descriptor};
/// let rt = gaspar::init()?;
/// let acp = rt.acp();
/// // Two rows of 4 bytes, dense here, 16 bytes apart at the target.
/// let desc = Descriptor::new(&[4, 2], &[4], &[16])?;
/// let start = acp.starter_ga(0)?;
/// let there = acp.mapped_address(start, desc.dst_extent())?.expect("this rank's memory is mapped");
/// // SAFETY: `there` is mapped for the destination's extent and overlaps no Rust reference.
/// unsafe { put_mapped(&desc, &[1, 1, 1, 1, 2, 2, 2, 2], there as *mut u8)? };
/// let mut row = [0u8; 4];
/// acp.get_blocking(&mut row, start.offset(16).expect("inside the segment"))?;
/// assert_eq!(row, [2; 4]);
/// rt.finalize()?;
/// # Ok::<(), gaspar::Error>(())
/// ```
///
/// # Safety
/// `dst` is valid for writes of `desc.dst_extent()` bytes for the call (memory mapped in
/// this process, which other processes may access as they may any rank's memory), and no
/// Rust reference (`src` included) covers any of those bytes. The caller orders the copy
/// after earlier transfers to the same memory that may still be in flight: on the shm
/// transport none are (every transfer completes when issued); on mpi, where this
/// process's own heap is mapped, a [`fence`](crate::strided::Strided::fence) of its rank
/// first.
pub unsafe fn put_mapped(desc: &Descriptor, src: &[u8], dst: *mut u8) -> Result<()> {
    if desc.src_extent() > src.len() as u64 {
        return Err(Error::invalid(
            "put_mapped",
            format!(
                "source spans {} bytes but the buffer has {}",
                desc.src_extent(),
                src.len()
            ),
        ));
    }
    // SAFETY: the source side lies in `src` (its extent checked above), the destination
    // side in `dst`'s valid range (this function's contract); every chunk is inside its
    // side's extent.
    unsafe {
        move_pattern(
            &desc.pattern(Side::Src),
            (src.as_ptr(), desc.src_extent()),
            (dst, desc.dst_extent()),
            Direction::LocalToRemote,
        )
    };
    Ok(())
}

/// Strided get from memory of another rank mapped in this process: the counterpart of
/// [`put_mapped`] (`desc`'s source side from `src` on, its destination side in `dst`),
/// every chunk copied directly by the copy engine.
///
/// ```
/// use gaspar::strided::{get_mapped, Descriptor};
/// let rt = gaspar::init()?;
/// let acp = rt.acp();
/// let start = acp.starter_ga(0)?;
/// acp.put_blocking(start, &[1, 2, 3, 4, 5, 6, 7, 8])?;
/// // Every other pair of bytes there, dense here.
/// let desc = Descriptor::new(&[2, 2], &[4], &[2])?;
/// let there = acp.mapped_address(start, desc.src_extent())?.expect("this rank's memory is mapped");
/// let mut out = [0u8; 4];
/// // SAFETY: `there` is mapped for the source's extent and overlaps no Rust reference.
/// unsafe { get_mapped(&desc, there as *const u8, &mut out)? };
/// assert_eq!(out, [1, 2, 5, 6]);
/// rt.finalize()?;
/// # Ok::<(), gaspar::Error>(())
/// ```
///
/// # Safety
/// `src` is valid for reads of `desc.src_extent()` bytes for the call (mapped memory, as
/// in [`put_mapped`]), and no Rust reference (`dst` included) covers any of those bytes;
/// earlier transfers to that memory are complete, as for [`put_mapped`].
pub unsafe fn get_mapped(desc: &Descriptor, src: *const u8, dst: &mut [u8]) -> Result<()> {
    if desc.dst_extent() > dst.len() as u64 {
        return Err(Error::invalid(
            "get_mapped",
            format!(
                "destination spans {} bytes but the buffer has {}",
                desc.dst_extent(),
                dst.len()
            ),
        ));
    }
    // SAFETY: as in `put_mapped`, with the roles of the sides swapped.
    unsafe {
        move_pattern(
            &desc.pattern(Side::Dst),
            (dst.as_mut_ptr(), desc.dst_extent()),
            (src.cast_mut(), desc.src_extent()),
            Direction::RemoteToLocal,
        )
    };
    Ok(())
}
