//! Registered user memory on the dynamic window: attaching and detaching this rank's
//! regions, its registration table (slot -> base, length, color), and reading another
//! rank's entry consistently.

use mpi::ffi;

use super::{check, constant, MpiTransport, Span, ENTRY_BYTES};
use crate::addr::REGISTRATION_SLOTS;
use crate::error::{Error, Result};
use crate::transport::seqlock::RegionEntry;
use crate::transport::{Location, TransportResult};

impl MpiTransport {
    /// `span` of registered memory: the owner's table entry, read consistently.
    #[inline(never)]
    pub(super) fn registered_span(&self, loc: Location, slot: u8) -> Result<Span> {
        if self.wakes_registered_targets {
            self.host.wake(loc.rank());
        }
        let entry = (self.table_offset + ENTRY_BYTES * u64::from(slot)) as ffi::MPI_Aint;
        let (base, len) = loop {
            let mut fields = [0u64; 4];
            self.get_bytes(
                self.win,
                loc.rank(),
                entry,
                bytemuck::cast_slice_mut(&mut fields),
            )?;
            self.flush_local(loc.rank())?;
            let mut again = [0u64; 1];
            self.get_bytes(
                self.win,
                loc.rank(),
                entry,
                bytemuck::cast_slice_mut(&mut again),
            )?;
            self.flush_local(loc.rank())?;
            // A consistent snapshot: no rewrite in progress (odd) or in between.
            if fields[0] % 2 == 0 && again[0] == fields[0] {
                break (fields[1], fields[2]);
            }
        };
        if len == 0 {
            return Err(Error::NotRegistered { ga: loc.ga });
        }
        Ok(Span {
            win: self.dynamic,
            start: base,
            len,
        })
    }

    /// Whether the dynamic window exists (see `start`).
    #[inline]
    pub(super) fn has_dynamic(&self) -> bool {
        self.dynamic != constant::win_null()
    }

    /// This rank's registration-table entry for `slot`, in its own window memory.
    fn own_entry(&self, slot: u8) -> &RegionEntry {
        // SAFETY: the table lies inside this rank's window memory (allocated with room for
        // every slot), which lives until finalize; RegionEntry is four atomics, valid for
        // any bits, and 8-byte aligned (the table offset is a multiple of 64).
        unsafe {
            &*(self
                .base
                .add((self.table_offset + ENTRY_BYTES * u64::from(slot)) as usize)
                as *const RegionEntry)
        }
    }

    pub(super) fn attach_region(
        &self,
        slot: u8,
        base: usize,
        len: u64,
        color: u32,
    ) -> TransportResult<()> {
        self.on_mpi_thread()?;
        if slot as usize >= REGISTRATION_SLOTS || len == 0 {
            return Err(Box::new(Error::invalid(
                "publish_region",
                "bad slot or empty region",
            )));
        }
        if !self.has_dynamic() {
            return Err(Box::new(Error::invalid(
                "register",
                "this MPI's one-sided component has no dynamic windows (OpenMPI's osc/sm has none; osc/ucx or osc/rdma do)",
            )));
        }
        let size = ffi::MPI_Aint::try_from(len).map_err(|_| Error::LengthOverflow {
            what: "registered length",
        })?;
        let mut attached = self.attached.lock().unwrap_or_else(|p| p.into_inner());
        // A region that grew is attached again at its new length.
        if let Some(old) = attached[slot as usize].take() {
            // SAFETY: `old` was attached to the dynamic window by this rank.
            check("MPI_Win_detach", unsafe {
                ffi::MPI_Win_detach(self.dynamic, old as *const std::ffi::c_void)
            })?;
        }
        // SAFETY: `register`'s contract keeps `base..base+len` allocated until it is
        // unregistered (retract_region detaches it first).
        check("MPI_Win_attach", unsafe {
            ffi::MPI_Win_attach(self.dynamic, base as *mut std::ffi::c_void, size)
        })?;
        attached[slot as usize] = Some(base);
        self.own_entry(slot)
            .write(base as u64, len, u64::from(color));
        // SAFETY: the window lives until finalize; this orders the table update with RMA.
        Ok(check("MPI_Win_sync", unsafe {
            ffi::MPI_Win_sync(self.win)
        })?)
    }

    pub(super) fn detach_region(&self, slot: u8) -> TransportResult<()> {
        self.on_mpi_thread()?;
        if slot as usize >= REGISTRATION_SLOTS {
            return Err(Box::new(Error::invalid("retract_region", "bad slot")));
        }
        self.own_entry(slot).write(0, 0, 0);
        // SAFETY: as in `publish_region`.
        check("MPI_Win_sync", unsafe { ffi::MPI_Win_sync(self.win) })?;
        let mut attached = self.attached.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(old) = attached[slot as usize].take() {
            // SAFETY: `old` was attached to the dynamic window by this rank.
            check("MPI_Win_detach", unsafe {
                ffi::MPI_Win_detach(self.dynamic, old as *const std::ffi::c_void)
            })?;
        }
        Ok(())
    }
}
