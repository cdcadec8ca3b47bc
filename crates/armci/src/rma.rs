//! Put, get and accumulate: contiguous, strided (S), I/O vector (V), their nonblocking
//! (Nb) forms, single values, and put-with-flag.

use gaspar::Handle as GasparHandle;

const NULL: GasparHandle = GasparHandle::NULL;

macro_rules! nb {
    ($hdl:expr, $h:expr) => {{
        let h = $h;
        if !$hdl.is_null() {
            // SAFETY: a non-null handle points to an armci_hdl_t of the caller.
            unsafe { (*$hdl).set(h) };
        }
        0
    }};
}

mod contiguous;
mod nonblocking;
mod value;
mod vector;

// The C entry points keep their paths `rma::ARMCI_X` (the profiling interface names them
// by these).
#[allow(unused_imports)]
pub use self::contiguous::*;
#[allow(unused_imports)]
pub use self::nonblocking::*;
#[allow(unused_imports)]
pub use self::value::*;
#[allow(unused_imports)]
pub use self::vector::*;
