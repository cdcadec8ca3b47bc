//! A program started alone with `GFORTRAN_NUM_IMAGES=N`, as programs of GCC's caf_shmem
//! are started, runs as N images: it becomes the launcher of a job of N copies of itself,
//! what `gaspar run -n N PROG ARGS` would start, and exits with that job's status.
//! caf_shmem forks its images the same way; unlike caf_shmem, a program started alone
//! without the variable stays one image (as with OpenCoarrays and GCC's single-image
//! library), and under `gaspar run` or mpirun the variable is ignored.

use std::ffi::OsString;

use gaspar::launcher::{self, LaunchSpec};

/// caf_shmem's variable for the number of images.
const NUM_IMAGES: &str = "GFORTRAN_NUM_IMAGES";

/// When this process was started alone with `GFORTRAN_NUM_IMAGES` above 1, runs the job
/// of that many images of this program and exits with its status; otherwise returns.
/// Called before the coarray runtime starts, so that the launcher's process never joins
/// a job itself.
pub(crate) fn run_images_if_asked() {
    let Some(value) = std::env::var_os(NUM_IMAGES) else {
        return;
    };
    if !launcher::started_alone() {
        return;
    }
    let images = match value.to_str().map(str::trim).map(str::parse::<u32>) {
        Some(Ok(n)) if n >= 1 => n,
        _ => end(&format!(
            "{NUM_IMAGES}={} is not a number of images (1 or more)",
            value.to_string_lossy()
        )),
    };
    if images == 1 {
        return;
    }
    let program = std::env::current_exe().unwrap_or_else(|e| {
        end(&format!(
            "cannot find this program to start its images: {e}"
        ))
    });
    let spec = LaunchSpec {
        procs: images,
        label: false,
        program: OsString::from(program),
        args: std::env::args_os().skip(1).collect(),
    };
    match launcher::run(&spec) {
        Ok(None) => std::process::exit(0),
        Ok(Some(failure)) => {
            if !failure.is_told() {
                crate::error::say(&format!("gaspar caf: {failure}"));
            }
            std::process::exit(failure.exit_code())
        }
        Err(e) => end(&e.to_string()),
    }
}

/// Ends this process with one line and status 1.
fn end(why: &str) -> ! {
    crate::error::say(&format!("gaspar caf: {why}"));
    std::process::exit(1)
}
