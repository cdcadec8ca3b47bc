//! Every environment setting of gaspar, in one table (`gaspar info` prints it).

use crate::error::{Error, Result};

/// One environment setting: its name, its default and what it does.
///
/// ```
/// use gaspar::config::SETTINGS;
/// for s in SETTINGS {
///     println!("{}={} (default {}): {}", s.name, s.raw(), s.default, s.description);
/// }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    /// Environment variable name.
    pub name: &'static str,
    /// Value used when the variable is not set.
    pub default: &'static str,
    /// What the setting controls.
    pub description: &'static str,
}

/// Size of each rank's symmetric heap.
///
/// ```
/// use gaspar::config::HEAP_SIZE;
/// assert_eq!(HEAP_SIZE.name, "GASPAR_HEAP_SIZE");
/// assert_eq!(HEAP_SIZE.default, "auto"); // chosen by transport at start-up
/// ```
pub const HEAP_SIZE: Setting = Setting {
    name: "GASPAR_HEAP_SIZE",
    default: "auto",
    description: "bytes of symmetric heap per rank (suffix K, M or G; at most 256G); pages are \
                  touched lazily. auto: 4G on shm, and under OpenMPI on one node with osc/sm \
                  (less where the node's ranks would take over half of /dev/shm, which backs \
                  the windows); 256M elsewhere (MPICH's MPI_Win_allocate visits every page)",
};
/// Size of each rank's starter memory.
///
/// ```
/// use gaspar::config::STARTER_SIZE;
/// if std::env::var_os(STARTER_SIZE.name).is_none() {
///     assert_eq!(STARTER_SIZE.bytes()?, 64 << 10);
/// }
/// # Ok::<(), gaspar::Error>(())
/// ```
pub const STARTER_SIZE: Setting = Setting {
    name: "GASPAR_STARTER_SIZE",
    default: "64K",
    description: "bytes of starter memory per rank, whose global address every rank knows",
};
/// How long a wait polls before it sleeps.
///
/// ```
/// use gaspar::config::SPIN_LIMIT;
/// assert_eq!(SPIN_LIMIT.name, "GASPAR_SPIN_LIMIT");
/// ```
pub const SPIN_LIMIT: Setting = Setting {
    name: "GASPAR_SPIN_LIMIT",
    default: "auto",
    description: "nanoseconds a wait (barrier, lock, wait_until, a coarray accessor call, ...) polls before it sleeps; \
                  auto = what one sleep and wake-up across two cores costs here, measured once per job (by gaspar run, else at start-up), \
                  and on past it while the job's ranks fit their cores (fewer under a CPU quota) and no thread of the machine waits for a core",
};
/// Grace period between SIGTERM and SIGKILL when the launcher stops a job.
///
/// ```
/// use gaspar::config::KILL_GRACE_MS;
/// assert_eq!(KILL_GRACE_MS.default, "300");
/// ```
pub const KILL_GRACE_MS: Setting = Setting {
    name: "GASPAR_KILL_GRACE_MS",
    default: "300",
    description:
        "milliseconds the launcher waits after SIGTERM before it SIGKILLs the remaining ranks",
};
/// How strided transfers move their bytes.
///
/// ```
/// use gaspar::config::STRIDED_METHOD;
/// assert!(["auto", "direct", "buffered"].contains(&STRIDED_METHOD.default));
/// ```
pub const STRIDED_METHOD: Setting = Setting {
    name: "GASPAR_STRIDED_METHOD",
    default: "auto",
    description:
        "strided/vector transfers: auto (per transfer), direct, or buffered (XMP's four cases)",
};
/// Size of the packing buffer of strided transfers.
///
/// ```
/// use gaspar::config::STRIDED_BUFFER;
/// if std::env::var_os(STRIDED_BUFFER.name).is_none() {
///     assert_eq!(STRIDED_BUFFER.bytes()?, 400 << 10);
/// }
/// # Ok::<(), gaspar::Error>(())
/// ```
pub const STRIDED_BUFFER: Setting = Setting {
    name: "GASPAR_STRIDED_BUFFER",
    default: "400K",
    description: "bytes of the packing buffer B of strided transfers",
};
/// Where coarrays' memory comes from (the XcalableMP paper's three methods).
///
/// ```
/// use gaspar::config::COARRAY_MEMORY;
/// use gaspar::coarray::MemoryMethod;
/// assert!(MemoryMethod::parse(COARRAY_MEMORY.default).is_some());
/// ```
pub const COARRAY_MEMORY: Setting = Setting {
    name: "GASPAR_COARRAY_MEMORY",
    default: "rs",
    description: "coarray memory: rs (every coarray in the symmetric heap, registered once at \
                  start), ra (static coarrays in the heap, each allocatable one allocated and \
                  registered on its own), ca (every data coarray is memory the caller \
                  allocated, registered; locks and events stay in the heap)",
};
/// How the mpi transport drives MPI's progress while a rank computes (a thread; see the
/// README's mpi section).
///
/// ```
/// assert_eq!(gaspar::config::MPI_PROGRESS.default, "auto");
/// ```
pub const MPI_PROGRESS: Setting = Setting {
    name: "GASPAR_MPI_PROGRESS",
    default: "auto",
    description: "mpi transport: a thread that makes MPI progress every N microseconds, so \
                  that one-sided operations on a computing rank's memory complete (osc/ucx \
                  across hosts and MPICH need it); auto = every 100 us when the job spans \
                  hosts or runs on MPICH (unless MPIR_CVAR_ASYNC_PROGRESS switches MPICH's \
                  own thread on; on one host with GASPAR_MPI_DIRECT, from the rank's first \
                  registration of memory: only a dynamic window needs it there), off, or N",
};
/// Which strided gets the mpi transport reads as one contiguous span (data sieving).
///
/// ```
/// assert_eq!(gaspar::config::MPI_SIEVE.default, "auto");
/// ```
pub const MPI_SIEVE: Setting = Setting {
    name: "GASPAR_MPI_SIEVE",
    default: "auto",
    description: "mpi transport, where strided gets are MPI calls (across hosts, or \
                  GASPAR_MPI_DIRECT=off): strided and I/O-vector gets read as one span from \
                  their first to their last chunk and picked out locally (data sieving); auto = \
                  where measured faster, per target rank; always (spans up to 4 MiB); never",
};
/// Whether the mpi transport moves puts and gets to ranks whose memory it maps (every
/// rank, when the job runs on one host) with loads and stores, does atomics there with
/// the processor's atomic instructions and accumulates in place under the target's lock,
/// instead of MPI calls.
///
/// ```
/// assert_eq!(gaspar::config::MPI_DIRECT.default, "on");
/// ```
pub const MPI_DIRECT: Setting = Setting {
    name: "GASPAR_MPI_DIRECT",
    default: "on",
    description: "mpi transport: on = when every rank of the job runs on this host, puts \
                  and gets (contiguous, strided, vector) are copies through the shared \
                  window, atomics the processor's own on it (as OSHMPI does), accumulates \
                  updates in place under the target's lock; off (on any rank) = every \
                  transfer, atomic and accumulate is an MPI call",
};
/// Where the shm transport maps the segments.
///
/// ```
/// assert_eq!(gaspar::config::SHM_PLACEMENT.default, "same");
/// ```
pub const SHM_PLACEMENT: Setting = Setting {
    name: "GASPAR_SHM_PLACEMENT",
    default: "same",
    description: "shm transport: same = every rank's segment at one address in every process \
                  when that range is free (so pointers into segments, such as Fortran \
                  allocatable components, are valid in every rank: their accessors run in \
                  the caller), else where the kernel picks; anywhere = always where the \
                  kernel picks",
};
/// Log filter.
///
/// ```
/// use gaspar::config::LOG;
/// assert_eq!((LOG.name, LOG.default), ("GASPAR_LOG", "warn"));
/// ```
pub const LOG: Setting = Setting {
    name: "GASPAR_LOG",
    default: "warn",
    description: "tracing filter for gaspar's own log (e.g. debug, gaspar::transport=trace)",
};

/// All settings, in the order `gaspar info` prints them.
///
/// ```
/// use gaspar::config::{SETTINGS, STARTER_SIZE};
/// assert!(SETTINGS.iter().any(|s| s.name == STARTER_SIZE.name));
/// ```
pub const SETTINGS: &[Setting] = &[
    HEAP_SIZE,
    STARTER_SIZE,
    SPIN_LIMIT,
    KILL_GRACE_MS,
    STRIDED_METHOD,
    STRIDED_BUFFER,
    COARRAY_MEMORY,
    MPI_PROGRESS,
    MPI_SIEVE,
    MPI_DIRECT,
    SHM_PLACEMENT,
    LOG,
];

impl Setting {
    /// The raw value: the environment's, else the default.
    ///
    /// ```
    /// use gaspar::config::LOG;
    /// let filter = LOG.raw(); // $GASPAR_LOG, or "warn"
    /// assert!(!filter.is_empty() || std::env::var_os(LOG.name).is_some());
    /// ```
    pub fn raw(&self) -> String {
        std::env::var(self.name).unwrap_or_else(|_| self.default.to_string())
    }

    /// The value as a byte size (`4096`, `64K`, `256M`, `1G`).
    ///
    /// ```
    /// use gaspar::config::Setting;
    /// let tiny = Setting { name: "GASPAR_DOC_EXAMPLE_UNSET", default: "2K", description: "" };
    /// assert_eq!(tiny.bytes()?, 2048);
    /// let bad = Setting { name: "GASPAR_DOC_EXAMPLE_UNSET", default: "lots", description: "" };
    /// assert!(bad.bytes().is_err());
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn bytes(&self) -> Result<u64> {
        parse_size(&self.raw()).ok_or_else(|| {
            Error::Environment(format!("{}={:?} is not a size", self.name, self.raw()))
        })
    }

    /// The value as one of `allowed` (lower case; the value's case and surrounding blanks
    /// do not matter), or an error naming them.
    ///
    /// ```
    /// use gaspar::config::Setting;
    /// let method = Setting { name: "GASPAR_DOC_EXAMPLE_UNSET", default: " Direct", description: "" };
    /// assert_eq!(method.choice(&["auto", "direct"])?, "direct");
    /// let bad = Setting { name: "GASPAR_DOC_EXAMPLE_UNSET", default: "fast", description: "" };
    /// assert!(bad.choice(&["auto", "direct"]).unwrap_err().to_string().contains("auto or direct"));
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn choice(&self, allowed: &[&'static str]) -> Result<&'static str> {
        let raw = self.raw();
        let value = raw.trim();
        allowed
            .iter()
            .find(|a| a.eq_ignore_ascii_case(value))
            .copied()
            .ok_or_else(|| {
                let names = match allowed {
                    [] => String::new(),
                    [one] => one.to_string(),
                    [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
                };
                Error::Environment(format!("{}={raw:?}: expected {names}", self.name))
            })
    }

    /// Whether the value is `auto` (any case, blanks around it allowed).
    pub(crate) fn is_auto(&self) -> bool {
        self.raw().trim().eq_ignore_ascii_case("auto")
    }

    /// The value as an unsigned integer.
    pub(crate) fn number(&self) -> Result<u64> {
        self.raw().trim().parse().map_err(|_| {
            Error::Environment(format!("{}={:?} is not a number", self.name, self.raw()))
        })
    }
}

/// The starter memory and heap sizes of each rank (`GASPAR_STARTER_SIZE`,
/// `GASPAR_HEAP_SIZE`), refused beyond the 256 GiB a global address's offset can reach,
/// and rounded up to whole pages (at least one): a segment is pages, and the heap's
/// tables need its length aligned (a heap of 1000001 or 1023 bytes failed in every rank).
pub(crate) fn segment_sizes() -> Result<(u64, u64)> {
    const PAGE: u64 = 4096;
    let within_reach = |setting: &Setting| {
        let bytes = setting.bytes()?.max(1).div_ceil(PAGE) * PAGE;
        if bytes > crate::gmem::MAX_SEGMENT_LEN {
            return Err(Error::Environment(format!(
                "{}={:?} is more than the {}G a global address can reach",
                setting.name,
                setting.raw(),
                crate::gmem::MAX_SEGMENT_LEN >> 30
            )));
        }
        Ok(bytes)
    };
    let heap = if HEAP_SIZE.is_auto() {
        auto_heap_size()
    } else {
        within_reach(&HEAP_SIZE)?
    };
    Ok((within_reach(&STARTER_SIZE)?, heap))
}

/// The heap `GASPAR_HEAP_SIZE=auto` gives, from what reserving it costs where the rank
/// runs (every rank of a job computes the same: it depends only on the launcher, its
/// settings and the node). Virtual reservations are free on shm (a memfd, touched lazily)
/// and under OpenMPI's osc/sm (the node's windows are one sparse /dev/shm file, refused
/// when it is larger than the space /dev/shm has left). Elsewhere the heap stays small:
/// MPICH's MPI_Win_allocate visits every page of the window's range (about 0.3 s per GiB
/// and rank), and OpenMPI's osc/ucx (across hosts, or chosen) registers the whole window.
fn auto_heap_size() -> u64 {
    const RESERVED: u64 = 4 << 30;
    const SMALL: u64 = 256 << 20;
    let env_number = |name: &str| std::env::var(name).ok()?.trim().parse::<u64>().ok();
    if let Some(local_ranks) = env_number("OMPI_COMM_WORLD_LOCAL_SIZE") {
        let one_node = env_number("OMPI_COMM_WORLD_SIZE") == Some(local_ranks);
        // Unset: Debian's parameter file excludes osc/ucx, and gaspar excludes osc/rdma.
        let osc_sm = std::env::var("OMPI_MCA_osc").map_or(true, |chosen| {
            let chosen = chosen.trim();
            chosen == "sm"
                || chosen
                    .strip_prefix('^')
                    .is_some_and(|excluded| excluded.split(',').any(|c| c.trim() == "ucx"))
        });
        if !(one_node && osc_sm) {
            return SMALL;
        }
        let shm_bytes = nix::sys::statvfs::statvfs("/dev/shm")
            .map_or(0, |fs| fs.blocks().saturating_mul(fs.fragment_size()));
        let share = shm_bytes / 2 / local_ranks.max(1);
        // A power of two: nodes whose /dev/shm differ a little still agree.
        let share = if share == 0 { 0 } else { 1 << share.ilog2() };
        return share.clamp(SMALL, RESERVED);
    }
    if env_number("MPI_LOCALNRANKS").is_some() || env_number("PMI_SIZE").is_some() {
        return SMALL;
    }
    RESERVED
}

/// Parses `123`, `64K`, `256M`, `2G` (binary multiples; an optional trailing `B`/`iB`).
pub(crate) fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let text = text
        .strip_suffix("iB")
        .or_else(|| text.strip_suffix('B'))
        .unwrap_or(text);
    let (digits, shift) = match text.chars().last()? {
        'k' | 'K' => (&text[..text.len() - 1], 10),
        'm' | 'M' => (&text[..text.len() - 1], 20),
        'g' | 'G' => (&text[..text.len() - 1], 30),
        _ => (text, 0),
    };
    let value: u64 = digits.trim().parse().ok()?;
    value.checked_mul(1u64 << shift)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("64K"), Some(65536));
        assert_eq!(parse_size("256M"), Some(256 << 20));
        assert_eq!(parse_size("2GiB"), Some(2 << 30));
        assert_eq!(parse_size("1kB"), Some(1024));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size(""), None);
        assert_eq!(parse_size("99999999999999999999G"), None);
        assert_eq!(parse_size("17179869184G"), None);
    }
}
