//! When the accessor service of gfortran 15/16 programs starts: only where an accessor may
//! need it. A program of coarrays of intrinsic types on one node (every accessor runs in
//! the caller) keeps each image to one thread, which glibc's malloc rewards; a program
//! with a coarray of a derived type starts the service on every image, for a static one
//! (registered before the program starts) and for one allocated later (alone, so that
//! nothing else started it), and its accessors reach it when the parts are not at their
//! owners' addresses (`GASPAR_SHM_PLACEMENT=anywhere`); so does a program of intrinsic
//! types whose coarrays are registered memory (`GASPAR_COARRAY_MEMORY=ra`), which no other
//! image maps. tests/threads/service_{plain,derived,alloc_derived}.f90, built by
//! gfortran 16 in the sid chroot of scripts/sid-chroot, print each image's thread count
//! from /proc/self/status.

mod common;

use common::*;

/// Each image's thread count from the program's `image I threads N` lines; fails unless
/// every one of `images` images printed one.
fn thread_counts(out: &Outcome, images: u32) -> Vec<u32> {
    assert_eq!(out.code, Some(0), "{}", out.summary());
    let mut counts: Vec<(u32, u32)> = out
        .stdout
        .lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words[..] {
                ["image", image, "threads", count] => {
                    Some((image.parse().ok()?, count.parse().ok()?))
                }
                _ => None,
            }
        })
        .collect();
    counts.sort();
    let images_seen: Vec<u32> = counts.iter().map(|&(image, _)| image).collect();
    assert_eq!(
        images_seen,
        (1..=images).collect::<Vec<_>>(),
        "{}",
        out.summary()
    );
    counts.into_iter().map(|(_, count)| count).collect()
}

#[test]
fn the_service_starts_only_for_coarrays_of_derived_types() {
    if cfg!(feature = "mpi") {
        // the mpi round runs `mpirun` jobs only (these are `gaspar run` ones)
        return;
    }
    let Some(gaspar) = sid::ready_with_gaspar() else {
        return;
    };
    // (program, settings, images, whether the service runs)
    let jobs = [
        ("service_plain", "", 2, false),
        ("service_plain", "GASPAR_SHM_PLACEMENT=anywhere ", 3, false),
        // Memory registered on its own is not mapped in the other images: every accessor
        // runs in the owner.
        ("service_plain", "GASPAR_COARRAY_MEMORY=ra ", 2, true),
        ("service_derived", "", 2, true),
        ("service_derived", "GASPAR_SHM_PLACEMENT=anywhere ", 3, true),
        (
            "service_alloc_derived",
            "GASPAR_SHM_PLACEMENT=anywhere ",
            2,
            true,
        ),
    ];
    let mut built = std::collections::BTreeMap::new();
    for (name, env, images, service) in jobs {
        let dir = built.entry(name).or_insert_with(|| {
            let dir = work_dir("accessor-threads", name);
            let source = manifest_dir().join(format!("tests/threads/{name}.f90"));
            if let Err(how) = sid::gaspar_caf(&dir, "gfortran-16", &source, name) {
                panic!("{name}: {how}");
            }
            dir
        });
        let out = sid::run(dir, &format!("{env}{gaspar} run -n {images} ./{name}"));
        let counts = thread_counts(&out, images);
        if service {
            assert!(
                counts.iter().all(|&c| c >= 2),
                "{name} ({env}{images} images): an image runs no service: {counts:?}"
            );
        } else {
            assert!(
                counts.iter().all(|&c| c == 1),
                "{name} ({env}{images} images): an image has more than its own thread: \
                 {counts:?}"
            );
        }
    }
}
