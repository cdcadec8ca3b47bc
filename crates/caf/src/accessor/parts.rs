//! This image's parts of data coarrays, by the part's global address (the number every
//! image computes for it): how the service thread finds the memory a request names.

use std::collections::HashMap;
use std::sync::Mutex;

static PARTS: Mutex<Option<HashMap<u64, usize>>> = Mutex::new(None);

fn with<T>(f: impl FnOnce(&mut HashMap<u64, usize>) -> T) -> T {
    let mut guard = PARTS.lock().unwrap_or_else(|p| p.into_inner());
    f(guard.get_or_insert_with(HashMap::new))
}

/// Records this image's part `ga_bits` at `local` (registration).
pub(crate) fn insert(ga_bits: u64, local: usize) {
    with(|parts| parts.insert(ga_bits, local));
}

/// Forgets a part (deregistration).
pub(crate) fn remove(ga_bits: u64) {
    with(|parts| parts.remove(&ga_bits));
}

/// This process's address of part `ga_bits`.
pub(crate) fn local(ga_bits: u64) -> Option<usize> {
    with(|parts| parts.get(&ga_bits).copied())
}
