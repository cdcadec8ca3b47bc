//! The command that starts a job on the mpi transport: the launcher of the MPI library this
//! gaspar was built against. (An MPICH program started by Open MPI's `mpirun`, which
//! `gaspar run --transport mpi` always used before 2026-11-30, ran as N jobs of one rank
//! each: "hello from rank 0 of 1" twice at `-n 2`.)

use std::path::Path;
use std::process::Command;

/// The launchers of each library, the first found on `PATH` is used: Debian installs both
/// libraries' under their own names and one of them as plain `mpirun` / `mpiexec`.
const OPEN_MPI_LAUNCHERS: [&str; 2] = ["mpirun.openmpi", "mpirun"];
const MPICH_LAUNCHERS: [&str; 3] = ["mpiexec.mpich", "mpiexec.hydra", "mpiexec"];

/// Which launcher family starts this build's mpi jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Library {
    /// Open MPI (and a build without the `mpi` feature, whose `--transport mpi` programs
    /// are the user's own: `mpirun` as the system has it).
    OpenMpi,
    /// MPICH: its Hydra `mpiexec`. (Only a build with the `mpi` feature links one.)
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    Mpich,
}

impl Library {
    /// The library this binary links.
    pub(crate) fn linked() -> Library {
        #[cfg(feature = "mpi")]
        if gaspar::mpi_library::is_mpich() {
            return Library::Mpich;
        }
        Library::OpenMpi
    }

    /// The launcher's name: the first of the library's that is on `PATH`, else its
    /// generic name (whose absence the caller reports).
    pub(crate) fn launcher(self) -> &'static str {
        let names: &[&'static str] = match self {
            Library::OpenMpi => &OPEN_MPI_LAUNCHERS,
            Library::Mpich => &MPICH_LAUNCHERS,
        };
        let on_path = |name: &str| {
            std::env::var_os("PATH").is_some_and(|path| {
                std::env::split_paths(&path).any(|dir| is_executable(&dir.join(name)))
            })
        };
        names
            .iter()
            .copied()
            .find(|name| on_path(name))
            .unwrap_or(names[names.len() - 1])
    }

    /// The command for a job of `procs` ranks on this machine, the program still to be
    /// added: Open MPI with more ranks than cores allowed, its shared-memory one-sided
    /// component (osc/sm completes puts, gets and atomics without the target's help;
    /// OpenMPI 4.1's default osc/rdma crashes the target of a 64-bit compare-and-swap) and,
    /// as root, `--allow-run-as-root`; `label` prefixes each line with its rank
    /// (`--tag-output`; MPICH's `-l`).
    pub(crate) fn command(self, procs: u32, label: bool) -> Command {
        let mut cmd = Command::new(self.launcher());
        cmd.arg("-n").arg(procs.to_string());
        match self {
            Library::OpenMpi => {
                cmd.args(["--oversubscribe", "--mca", "osc", "sm"]);
                if nix::unistd::geteuid().is_root() {
                    cmd.arg("--allow-run-as-root");
                }
                if label {
                    cmd.arg("--tag-output");
                }
            }
            Library::Mpich => {
                if label {
                    cmd.arg("-l");
                }
            }
        }
        cmd
    }

    /// The package that installs the launcher (Debian's), for the message when it is
    /// missing.
    pub(crate) fn package(self) -> &'static str {
        match self {
            Library::OpenMpi => "openmpi-bin",
            Library::Mpich => "mpich",
        }
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
