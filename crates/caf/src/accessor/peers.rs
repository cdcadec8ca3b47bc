//! Where every image's accessor service listens, learned in one exchange at start: a Unix
//! socket (Linux abstract namespace, named by the process id) for images of the same node,
//! a TCP port for the others. A node is a kernel boot and network namespace (what an
//! abstract socket name is unique within). Each service also draws a random key at start;
//! a caller opens every connection with the owner's key, so only the job's images reach a
//! service (the key travels through the job's own transport, never on the connection
//! first).
//!
//! `GASPAR_CAF_ACCESSORS=tcp` makes every image use TCP, even to images of its own node
//! (and listen on no Unix socket): the path to other nodes, tested on one host.

use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::sync::OnceLock;

use gaspar::coarray::Coarrays;

use crate::error::CafError;

/// Bytes of a service's key.
pub(crate) const KEY_BYTES: usize = 16;

/// The environment variable that forces TCP between images of one node.
const FORCE_VARIABLE: &str = "GASPAR_CAF_ACCESSORS";

/// One image's service, as every image learns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Service {
    pid: u64,
    node: u64,
    ip: Ipv4Addr,
    port: u16,
    key: [u8; KEY_BYTES],
}

/// Words one image contributes to the exchange.
const WORDS: usize = 6;

impl Service {
    fn words(&self) -> [u64; WORDS] {
        let (low, high) = self.key.split_at(8);
        [
            self.pid,
            self.node,
            u64::from(u32::from(self.ip)),
            u64::from(self.port),
            u64::from_ne_bytes(low.try_into().expect("8 bytes")),
            u64::from_ne_bytes(high.try_into().expect("8 bytes")),
        ]
    }

    fn from_words(w: &[u64]) -> Service {
        let mut key = [0u8; KEY_BYTES];
        key[..8].copy_from_slice(&w[4].to_ne_bytes());
        key[8..].copy_from_slice(&w[5].to_ne_bytes());
        Service {
            pid: w[0],
            node: w[1],
            ip: Ipv4Addr::from(w[2] as u32),
            port: w[3] as u16,
            key,
        }
    }
}

/// Every image's service by job rank, and this image's own.
struct Peers {
    all: Vec<Service>,
    mine: Service,
    tcp_only: bool,
}

static PEERS: OnceLock<Peers> = OnceLock::new();

/// A connection to another image's service.
pub(crate) trait Channel: Read + Write + AsFd + Send {}
impl<T: Read + Write + AsFd + Send> Channel for T {}

/// The listeners of this image's service, to be served by the caller's threads.
pub(crate) struct Listeners {
    /// For images of this node (none when TCP is forced).
    pub(crate) unix: Option<UnixListener>,
    /// For images of other nodes.
    pub(crate) tcp: TcpListener,
}

fn io_error(e: std::io::Error) -> CafError {
    CafError::Argument(format!("accessor service: {e}"))
}

fn unix_address(pid: u64) -> std::io::Result<SocketAddr> {
    SocketAddr::from_abstract_name(format!("gaspar-caf-accessors-{pid}"))
}

/// This node: the kernel's boot id and this process's network namespace.
fn node_id() -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .unwrap_or_default()
        .hash(&mut hasher);
    std::fs::metadata("/proc/self/ns/net")
        .map(|m| (m.dev(), m.ino()))
        .unwrap_or_default()
        .hash(&mut hasher);
    hasher.finish()
}

/// The address other nodes reach this one at: its first IPv4 address that is up and not
/// loopback (loopback when it has none: a one-node job).
///
/// Asked with `SIOCGIFCONF` into a buffer on the stack, not with `getifaddrs`: glibc's
/// getifaddrs allocates and frees about 11 KB of the program's malloc heap while blocks
/// that stay are allocated above it, and the hole it left was where gfortran's temporary
/// of every section transfer was then carved from, each statement's malloc and free
/// splitting and merging it again (a 4 KiB section put 60 ns against caf_shmem's 50 in
/// the same program; `bench/probes/heapwalk.c` shows the heap).
fn reachable_ip() -> Ipv4Addr {
    use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType};
    // Only the first 64 addresses the kernel lists are looked at.
    const MOST: usize = 64;
    // A socket to ask the kernel through, bound to nothing.
    let Ok(socket) = socket(
        AddressFamily::Inet,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        None,
    ) else {
        return Ipv4Addr::LOCALHOST;
    };
    let fd = socket.as_raw_fd();
    // SAFETY: ifreq is plain data (names, a union of addresses and numbers); all zeros is
    // a valid value.
    let mut requests: [libc::ifreq; MOST] = unsafe { std::mem::zeroed() };
    let mut conf = libc::ifconf {
        ifc_len: std::mem::size_of_val(&requests) as libc::c_int,
        ifc_ifcu: libc::__c_anonymous_ifc_ifcu {
            ifcu_req: requests.as_mut_ptr(),
        },
    };
    // SAFETY: `conf` describes `requests`, which outlives the call; the kernel writes at
    // most `ifc_len` bytes there and sets `ifc_len` to what it wrote.
    if unsafe { libc::ioctl(fd, libc::SIOCGIFCONF, &mut conf) } != 0 {
        return Ipv4Addr::LOCALHOST;
    }
    let filled = usize::try_from(conf.ifc_len).unwrap_or(0) / std::mem::size_of::<libc::ifreq>();
    for request in &requests[..filled.min(MOST)] {
        // SAFETY: SIOCGIFCONF fills each entry's name and address.
        let address = unsafe { request.ifr_ifru.ifru_addr };
        if i32::from(address.sa_family) != libc::AF_INET {
            continue;
        }
        let mut flags = *request;
        // SAFETY: `flags` names an interface; SIOCGIFFLAGS writes its flags into it.
        if unsafe { libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut flags) } != 0 {
            continue;
        }
        // SAFETY: SIOCGIFFLAGS set the flags member.
        let flags = i32::from(unsafe { flags.ifr_ifru.ifru_flags });
        if flags & libc::IFF_UP != 0 && flags & libc::IFF_LOOPBACK == 0 {
            // SAFETY: an AF_INET address is a sockaddr_in (both 16 bytes).
            let sin: libc::sockaddr_in = unsafe { std::mem::transmute(address) };
            return Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
        }
    }
    Ipv4Addr::LOCALHOST
}

fn random_key() -> Result<[u8; KEY_BYTES], CafError> {
    let mut key = [0u8; KEY_BYTES];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut key))
        .map_err(io_error)?;
    Ok(key)
}

/// Opens this image's listeners and learns every image's (collective over every image).
pub(crate) fn exchange(engine: &Coarrays) -> Result<Listeners, CafError> {
    let tcp_only = std::env::var(FORCE_VARIABLE).is_ok_and(|v| v == "tcp");
    let pid = u64::from(std::process::id());
    let unix = if tcp_only {
        None
    } else {
        Some(UnixListener::bind_addr(&unix_address(pid).map_err(io_error)?).map_err(io_error)?)
    };
    let tcp = TcpListener::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0)).map_err(io_error)?;
    let mine = Service {
        pid,
        node: node_id(),
        ip: reachable_ip(),
        port: tcp.local_addr().map_err(io_error)?.port(),
        key: random_key()?,
    };
    let rt = engine.runtime();
    let mut words = vec![0u64; WORDS * rt.procs() as usize];
    rt.team()
        .allgather(rt, &mine.words(), &mut words)
        .map_err(|e| CafError::Engine(e.into()))?;
    let all = words.chunks(WORDS).map(Service::from_words).collect();
    let _ = PEERS.set(Peers {
        all,
        mine,
        tcp_only,
    });
    Ok(Listeners { unix, tcp })
}

/// The process id of rank `rank`'s image when it runs on this node.
pub(crate) fn pid_on_this_node(rank: u32) -> Option<i32> {
    let peers = PEERS.get()?;
    let owner = peers.all.get(rank as usize)?;
    (owner.node == peers.mine.node)
        .then(|| i32::try_from(owner.pid).ok())
        .flatten()
}

/// Whether a connection opened with `key`: the first bytes a caller sends.
pub(crate) fn admitted(stream: &mut impl Read) -> bool {
    let mut key = [0u8; KEY_BYTES];
    let Some(peers) = PEERS.get() else {
        return false;
    };
    stream.read_exact(&mut key).is_ok() && key == peers.mine.key
}

/// A connection to rank `rank`'s service, opened with its key.
pub(crate) fn connect(rank: u32) -> Result<Box<dyn Channel>, CafError> {
    let peers = PEERS.get().ok_or_else(|| {
        CafError::Argument("the accessor service did not start (no accessor was registered)".into())
    })?;
    let owner = *peers
        .all
        .get(rank as usize)
        .ok_or_else(|| CafError::Argument(format!("no image has rank {rank}")))?;
    let unreachable = |how: &str, e: std::io::Error| {
        CafError::Argument(format!(
            "cannot reach the accessor service of rank {rank} ({how}): {e}"
        ))
    };
    let mut channel: Box<dyn Channel> = if !peers.tcp_only && owner.node == peers.mine.node {
        let address = unix_address(owner.pid).map_err(io_error)?;
        Box::new(
            UnixStream::connect_addr(&address)
                .map_err(|e| unreachable(&format!("process {}", owner.pid), e))?,
        )
    } else {
        let address = SocketAddrV4::new(owner.ip, owner.port);
        let stream =
            TcpStream::connect(address).map_err(|e| unreachable(&format!("TCP {address}"), e))?;
        stream.set_nodelay(true).map_err(io_error)?;
        Box::new(stream)
    };
    channel.write_all(&owner.key).map_err(io_error)?;
    Ok(channel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reachable_address_is_an_up_ipv4_address_that_is_not_loopback() {
        use nix::net::if_::InterfaceFlags;
        // getifaddrs lists by interface index, SIOCGIFCONF in the kernel's device order,
        // which may differ on a host with several: any of them will do, and loopback
        // only when there is none.
        let candidates: Vec<Ipv4Addr> = nix::ifaddrs::getifaddrs()
            .expect("getifaddrs")
            .filter(|i| {
                i.flags.contains(InterfaceFlags::IFF_UP)
                    && !i.flags.contains(InterfaceFlags::IFF_LOOPBACK)
            })
            .filter_map(|i| i.address?.as_sockaddr_in().map(|a| a.ip()))
            .collect();
        let found = reachable_ip();
        if candidates.is_empty() {
            assert_eq!(found, Ipv4Addr::LOCALHOST);
        } else {
            assert!(candidates.contains(&found), "{found} not in {candidates:?}");
        }
    }

    #[test]
    fn a_service_survives_the_exchange_words() {
        let service = Service {
            pid: 4242,
            node: u64::MAX - 7,
            ip: Ipv4Addr::new(10, 1, 2, 3),
            port: 40000,
            key: *b"0123456789abcdef",
        };
        assert_eq!(Service::from_words(&service.words()), service);
    }

    #[test]
    fn the_node_is_the_same_for_one_process_and_an_address_is_found() {
        assert_eq!(node_id(), node_id());
        let ip = reachable_ip();
        assert!(!ip.is_unspecified(), "{ip}");
    }
}
