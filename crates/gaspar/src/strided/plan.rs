//! The choice between a direct copy and packing through a bounded buffer (the XcalableMP
//! coarray runtime's Table 1). `N_L` and `N_R` are the local and remote contiguous lengths,
//! `B` the buffer size.
//!
//! | method | condition | unit (bytes per remote operation) |
//! |---|---|---|
//! | direct | - | min(N_L, N_R) |
//! | case 1 | N_R <= B and N_R <= N_L | N_R |
//! | case 2 | N_L < N_R <= B | N_R |
//! | case 3 | N_L < B < N_R | largest multiple of N_L <= B |
//! | case 4 | B < N_R and B <= N_L | B (less for the last piece) |

use crate::config;
use crate::error::Result;

/// How a strided transfer moves its bytes.
///
/// ```
/// use gaspar::strided::{Descriptor, Method, Side};
/// let rt = gaspar::init()?;
/// let contiguous = Descriptor::contiguous(4096)?;
/// assert_eq!(rt.acp().plan(&contiguous, Side::Src), Method::Direct { unit: 4096 });
/// rt.finalize()?;
/// # Ok::<(), gaspar::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// One remote operation per chunk contiguous on both sides.
    Direct {
        /// Bytes per remote operation.
        unit: u64,
    },
    /// Local pieces gathered into (or scattered from) the buffer, one remote operation per
    /// buffer-full.
    Buffered {
        /// The case of the table above (1 to 4).
        case: u8,
        /// Bytes per remote operation.
        unit: u64,
    },
}

/// Which methods may be used (`GASPAR_STRIDED_METHOD`).
///
/// ```
/// use gaspar::strided::Policy;
/// let mut rt = gaspar::init()?;
/// rt.acp_mut().set_policy(Policy::Auto, 64 << 10); // as GASPAR_STRIDED_METHOD=auto
/// rt.finalize()?;
/// # Ok::<(), gaspar::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Pick per transfer.
    Auto,
    /// Always copy directly.
    Direct,
    /// Always go through the buffer.
    Buffered,
}

impl Policy {
    /// The policy from the environment.
    pub(crate) fn from_env() -> Result<Policy> {
        Ok(
            match config::STRIDED_METHOD.choice(&["auto", "direct", "buffered"])? {
                "direct" => Policy::Direct,
                "buffered" => Policy::Buffered,
                _ => Policy::Auto,
            },
        )
    }
}

/// Below this many bytes a local piece costs more as its own remote operation than as a
/// copy into the buffer (a remote operation has fixed costs: address checks, a call into
/// the transport, on MPI a message).
pub(crate) const PACK_BELOW: u64 = 64;

/// The buffering case of the table for `n_l`, `n_r` and `b`.
pub(crate) fn buffered(n_l: u64, n_r: u64, b: u64) -> Method {
    let b = b.max(1);
    if n_r <= b && n_r <= n_l {
        Method::Buffered { case: 1, unit: n_r }
    } else if n_l < n_r && n_r <= b {
        Method::Buffered { case: 2, unit: n_r }
    } else if n_l < b && b < n_r {
        Method::Buffered {
            case: 3,
            unit: b / n_l * n_l,
        }
    } else {
        Method::Buffered { case: 4, unit: b }
    }
}

/// The method for a transfer with contiguous lengths `n_l` (local) and `n_r` (remote).
/// Automatic choice: packing pays only when it lengthens the remote unit (N_L < N_R) and
/// the local pieces are small; otherwise a direct copy moves every byte once.
pub(crate) fn choose(n_l: u64, n_r: u64, b: u64, policy: Policy) -> Method {
    match policy {
        Policy::Direct => Method::Direct { unit: n_l.min(n_r) },
        Policy::Buffered => buffered(n_l, n_r, b),
        Policy::Auto if n_l < n_r && n_l < PACK_BELOW && n_l < b => buffered(n_l, n_r, b),
        Policy::Auto => Method::Direct { unit: n_l.min(n_r) },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_four_cases_of_table_1() {
        let b = 1000;
        assert_eq!(
            buffered(800, 400, b),
            Method::Buffered { case: 1, unit: 400 }
        );
        assert_eq!(
            buffered(100, 800, b),
            Method::Buffered { case: 2, unit: 800 }
        );
        assert_eq!(
            buffered(300, 3000, b),
            Method::Buffered { case: 3, unit: 900 }
        );
        assert_eq!(
            buffered(2000, 4000, b),
            Method::Buffered {
                case: 4,
                unit: 1000
            }
        );
    }

    #[test]
    fn auto_packs_only_small_local_pieces_into_longer_remote_units() {
        assert_eq!(
            choose(8, 4096, 1 << 20, Policy::Auto),
            Method::Buffered {
                case: 2,
                unit: 4096
            }
        );
        assert_eq!(
            choose(4096, 8, 1 << 20, Policy::Auto),
            Method::Direct { unit: 8 }
        );
        assert_eq!(
            choose(512, 4096, 1 << 20, Policy::Auto),
            Method::Direct { unit: 512 }
        );
        assert_eq!(
            choose(8, 4096, 1 << 20, Policy::Direct),
            Method::Direct { unit: 8 }
        );
    }
}
