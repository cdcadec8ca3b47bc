//! RANDOM_INIT on images. libgfortran's own `random_init` knows one image; this sets the
//! seed through libgfortran's `random_seed` so that IMAGE_DISTINCT= makes the images'
//! sequences differ and REPEATABLE= repeats them from run to run:
//! - repeatable, not distinct: libgfortran's fixed seed on every image;
//! - repeatable, distinct: that seed mixed with the image index;
//! - not repeatable, distinct: a fresh seed from the system on each image;
//! - not repeatable, not distinct: a seed mixed from the job's identity (the launcher's
//!   `GASPAR_JOB_ID`), the same on every image of one run; without a launcher (one image)
//!   a fresh seed.
//!
//! libgfortran's functions are looked up when called (the program links libgfortran; the
//! library itself does not).

use std::ffi::{c_int, c_void, CStr};

use crate::abi::type_code;
use crate::descriptor::{DescDim, Descriptor, Dtype};
use crate::error::CafError;
use crate::runtime;
use crate::stat::StatArgs;

/// `_gfortran_random_init(repeatable, image_distinct, image_num)` (LOGICAL and INTEGER
/// arguments by value).
type RandomInit = unsafe extern "C" fn(c_int, c_int, c_int);
/// `_gfortran_random_seed_i4(size, put, get)`.
type RandomSeed = unsafe extern "C" fn(*mut i32, *mut Descriptor, *mut Descriptor);

/// A rank-1 descriptor of default integers.
#[repr(C)]
struct SeedDescriptor {
    head: Descriptor,
    dim: DescDim,
}

impl SeedDescriptor {
    fn over(seed: &mut [i32]) -> SeedDescriptor {
        SeedDescriptor {
            head: Descriptor {
                base_addr: seed.as_mut_ptr().cast(),
                offset: -1,
                dtype: Dtype {
                    elem_len: 4,
                    version: 0,
                    rank: 1,
                    type_code: type_code::INTEGER,
                    attribute: 0,
                },
                span: 4,
                dim: [],
            },
            dim: DescDim {
                stride: 1,
                lower_bound: 1,
                upper_bound: seed.len() as isize,
            },
        }
    }
}

/// `call random_init(repeatable, image_distinct)`.
#[no_mangle]
pub extern "C" fn _gfortran_caf_random_init(repeatable: bool, image_distinct: bool) {
    // SAFETY: no STAT=: an error ends the job with one line.
    let stat = unsafe { StatArgs::stat_only(std::ptr::null_mut()) };
    runtime::statement("RANDOM_INIT", stat, |engine| {
        let image = engine.this_image();
        // SAFETY: the program links libgfortran, which defines both with these types.
        let (init, seed_fn) = unsafe {
            (
                lookup::<RandomInit>(c"_gfortran_random_init")?,
                lookup::<RandomSeed>(c"_gfortran_random_seed_i4")?,
            )
        };
        let job = std::env::var("GASPAR_JOB_ID").ok();
        // libgfortran's fixed seed, the base of every case but a fresh one per image.
        let fixed = repeatable || (!image_distinct && job.is_some());
        // SAFETY: libgfortran's random_init with its argument types; its image number
        // must be 0 (it stops for numbers above 2 when not repeatable).
        unsafe { init(c_int::from(fixed), 0, 0) };
        let mix = match (repeatable, image_distinct, job) {
            (true, true, _) => u64::from(image),
            (false, false, Some(job)) => fnv1a(job.as_bytes()),
            _ => return Ok(()),
        };
        let mut size = 0i32;
        // SAFETY: libgfortran's random_seed(size=) with absent put= and get=.
        unsafe { seed_fn(&mut size, std::ptr::null_mut(), std::ptr::null_mut()) };
        let mut seed = vec![0i32; size.max(0) as usize];
        let mut get = SeedDescriptor::over(&mut seed);
        // SAFETY: random_seed(get=) into a descriptor over `seed`, `size` integers.
        unsafe { seed_fn(std::ptr::null_mut(), std::ptr::null_mut(), &mut get.head) };
        for (i, s) in seed.iter_mut().enumerate() {
            *s ^= splitmix(mix.wrapping_add(i as u64)) as i32;
        }
        let mut put = SeedDescriptor::over(&mut seed);
        // SAFETY: random_seed(put=) from a descriptor over `seed`, `size` integers.
        unsafe { seed_fn(std::ptr::null_mut(), &mut put.head, std::ptr::null_mut()) };
        Ok(())
    });
}

/// The address of a libgfortran function as a function pointer of type `F`.
///
/// # Safety
/// `F` is the function's type.
unsafe fn lookup<F: Copy>(name: &CStr) -> Result<F, CafError> {
    // SAFETY: dlsym with the default handle and a NUL-terminated name.
    let addr: *mut c_void = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    if addr.is_null() {
        return Err(CafError::Unsupported(format!(
            "random_init without libgfortran's {}",
            name.to_string_lossy()
        )));
    }
    // SAFETY: a function pointer of type `F` (caller's contract), same size as a pointer.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&addr) })
}

/// SplitMix64's output function: spreads one counter over 64 bits.
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// FNV-1a hash of the job identity.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_mixes_differ_and_repeat() {
        assert_ne!(splitmix(1), splitmix(2));
        assert_eq!(splitmix(7), splitmix(7));
        assert_eq!(fnv1a(b"job-1"), fnv1a(b"job-1"));
        assert_ne!(fnv1a(b"job-1"), fnv1a(b"job-2"));
    }

    #[test]
    fn seed_descriptor_is_rank_one_default_integer() {
        let mut seed = [0i32; 5];
        let d = SeedDescriptor::over(&mut seed);
        assert_eq!(d.head.dtype.rank, 1);
        assert_eq!(
            (d.dim.lower_bound, d.dim.upper_bound, d.dim.stride),
            (1, 5, 1)
        );
    }
}
