//! The transport of this process as one value: an enum over the transports, dispatched with
//! a `match` instead of a vtable. A `match` lets each transport's small-transfer fast path
//! (marked `#[inline]`) inline into the caller, so that a blocking 8-byte put on the mpi
//! transport is a bounds check and two MPI calls in the program's own loop, with no call of
//! gaspar's in between. The [`Transport`] trait stays the contract every transport meets.

use super::team::{TeamCall, TransportTeam};
use super::{
    AccKind, AccShape, AtomicOp, Incoming, Location, Outgoing, SegmentSizes, Transport,
    TransportResult, Width,
};

/// One of the transports (see the module documentation).
pub enum AnyTransport {
    /// The shared-memory transport of a `gaspar run` job.
    Shm(super::shm::ShmTransport),
    /// The MPI-3 RMA transport of an mpirun job.
    #[cfg(feature = "mpi")]
    Mpi(super::mpi::MpiTransport),
}

/// Implements each listed method by calling the same method of the transport inside, with
/// the inline attribute given first.
macro_rules! delegate {
    ($inline:meta; $(fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {$(
        #[$inline]
        fn $name(&self $(, $arg: $ty)*) -> $ret {
            match self {
                AnyTransport::Shm(t) => t.$name($($arg),*),
                #[cfg(feature = "mpi")]
                AnyTransport::Mpi(t) => t.$name($($arg),*),
            }
        }
    )*};
}

impl Transport for AnyTransport {
    delegate! {
        inline;
        fn rank(&self) -> u32;
        fn procs(&self) -> u32;
        fn sizes(&self) -> SegmentSizes;
        fn put(&self, dst: Location, src: &[u8]) -> TransportResult<()>;
        fn put_flushed(&self, dst: Location, src: &[u8]) -> TransportResult<()>;
        fn get(&self, src: Location, dst: &mut [u8]) -> TransportResult<()>;
        fn put_pieces(&self, dst: Location, data: Outgoing<'_>) -> TransportResult<()>;
        fn get_pieces(&self, src: Location, data: Incoming<'_, '_>) -> TransportResult<()>;
        fn check_range(&self, loc: Location, len: u64) -> TransportResult<()>;
        fn copy(&self, dst: Location, src: Location, len: u64) -> TransportResult<()>;
        fn atomic(&self, target: Location, width: Width, op: AtomicOp) -> TransportResult<u64>;
        fn atomic_unwatched(&self, target: Location, width: Width, op: AtomicOp) -> TransportResult<u64>;
        fn atomic_heap(&self, rank: u32, offset: u64, ga: impl FnOnce() -> crate::addr::GlobalAddr, width: Width,
            op: AtomicOp) -> TransportResult<u64>;
        fn accumulate(&self, dst: Location, src: &[u8], shape: AccShape<'_>, kind: AccKind,
            scale: &[u8]) -> TransportResult<()>;
        fn accumulate_lock(&self, rank: u32, op: AtomicOp) -> TransportResult<u64>;
        fn flush(&self, rank: u32) -> TransportResult<()>;
        fn flush_all(&self) -> TransportResult<()>;
        fn test_all(&self) -> TransportResult<bool>;
        fn barrier(&self) -> TransportResult<()>;
        fn allgather_u64(&self, value: u64, out: &mut [u64]) -> TransportResult<()>;
        fn agree_u64(&self, value: u64) -> TransportResult<bool>;
        fn publish_region(&self, slot: u8, base: usize, len: u64, color: u32)
            -> TransportResult<()>;
        fn retract_region(&self, slot: u8) -> TransportResult<()>;
        fn mapped_address(&self, loc: Location, len: u64) -> Option<usize>;
        fn maps_at_home(&self, rank: u32) -> bool;
        fn processor_atomics_at(&self, loc: Location) -> bool;
        fn usable_cores(&self) -> usize;
        fn abort(&self, message: &str) -> !;
        fn end_job(&self, status: i32, line: Option<&str>) -> !;
        fn job_aborted(&self) -> bool;
        fn report_failure_instead_of_abort(&self, report: bool) -> bool;
        fn rank_failed(&self, rank: u32) -> bool;
        fn note_departure(&self) -> ();
        fn departures(&self) -> Option<u64>;
        fn sent_messages_taken(&self, rank: u32) -> bool;
        fn broadcasts_one_way(&self, team: &TransportTeam, len: usize) -> bool;
        fn wait(&self, watched: u32, awaited: Option<u32>, writers: super::Writers,
            ready: &mut dyn FnMut() -> crate::error::Result<bool>) -> TransportResult<()>;
        fn split_team(&self, parent: &TransportTeam, color: Option<u32>, key: u32,
            team: Option<TransportTeam>) -> TransportResult<Option<TransportTeam>>;
        fn team_call(&self, team: &TransportTeam, word: u64, call: &mut TeamCall<'_, '_>)
            -> TransportResult<bool>;
        fn finalize(&self) -> TransportResult<()>;
        fn finalize_alone(&self) -> TransportResult<()>;
    }
    // The heap paths of the 8-byte transfers, inlined whatever the caller's size: the
    // address API's `put_blocking`/`get_blocking` otherwise call them out of line (73 / 76
    // instructions per put / get on the mpi transport against 52 / 55 inlined, counted
    // with bench/probes/count_instructions.sh addr-put, addr-get).
    delegate! {
        inline(always);
        fn put_heap(&self, rank: u32, offset: u64, ga: impl FnOnce() -> crate::addr::GlobalAddr, src: &[u8])
            -> TransportResult<()>;
        fn get_heap(&self, rank: u32, offset: u64, ga: impl FnOnce() -> crate::addr::GlobalAddr, dst: &mut [u8])
            -> TransportResult<()>;
    }
}
