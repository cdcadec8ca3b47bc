//! With the `mpi` feature: compiles the C shim that reads the MPI handles the `mpi`
//! crate's bindings lack (src/transport/mpi/constants.c), against the MPI library the
//! bindings found (build-probe-mpi, which honours MPICC as they do).
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "mpi")]
    mpi_constants();
}

#[cfg(feature = "mpi")]
fn mpi_constants() {
    const SHIM: &str = "src/transport/mpi/constants.c";
    println!("cargo:rerun-if-changed={SHIM}");
    println!("cargo:rerun-if-env-changed=MPICC");
    let library = match build_probe_mpi::probe() {
        Ok(library) => library,
        Err(errors) => {
            let reasons: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
            panic!(
                "no MPI library found for the mpi feature: {}",
                reasons.join("; ")
            );
        }
    };
    let mut build = cc::Build::new();
    build.file(SHIM);
    match library.mpicc {
        Some(mpicc) => {
            build.compiler(mpicc);
        }
        None => {
            for dir in &library.include_paths {
                build.include(dir);
            }
        }
    }
    build.compile("gaspar_mpi_constants");
}
