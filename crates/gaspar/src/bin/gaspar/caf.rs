//! `gaspar caf [--show] [gfortran args]`: compiles and links a coarray Fortran program
//! against libcaf_gaspar, as OpenCoarrays' `caf` does against its library.
//!
//! The command run is `gfortran -fcoarray=lib ARGS -L DIR -lcaf_gaspar -Wl,-rpath,DIR`,
//! where DIR holds the running `gaspar` executable and `libcaf_gaspar.so` beside it (cargo
//! builds both into target/<profile>). The rpath lets the program find the library when
//! started as `gaspar run -n N ./a.out` or alone as `./a.out` (one image).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The Fortran compiler `gaspar caf` runs.
const COMPILER: &str = "gfortran";
/// The library's file name, found next to the `gaspar` executable.
const LIBRARY_FILE: &str = "libcaf_gaspar.so";
/// The library's name as the linker's `-l` takes it.
const LIBRARY_NAME: &str = "caf_gaspar";

/// Arguments of `gaspar caf`.
#[derive(clap::Args)]
pub(crate) struct CafArgs {
    /// Print the compiler command instead of running it.
    #[arg(long)]
    show: bool,
    /// Arguments for gfortran: sources, objects, `-o PROG`, optimization flags...
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "GFORTRAN ARGS"
    )]
    args: Vec<OsString>,
}

/// Runs (or with `--show` prints) the gfortran command; its exit status is the result.
pub(crate) fn run(args: CafArgs) -> ExitCode {
    let dir = match library_dir() {
        Ok(dir) => dir,
        Err(e) => return fail(&e),
    };
    let argv = compiler_args(&args.args, &dir);
    if args.show {
        println!("{}", shell_line(COMPILER, &argv));
        return ExitCode::SUCCESS;
    }
    if !dir.join(LIBRARY_FILE).is_file() {
        return fail(&format!(
            "{LIBRARY_FILE} is not next to gaspar in {}: build it with `cargo build -p gaspar-caf` \
             (the same profile as gaspar)",
            dir.display()
        ));
    }
    match Command::new(COMPILER).args(&argv).status() {
        Ok(status) => ExitCode::from(status.code().unwrap_or(1).clamp(0, 255) as u8),
        Err(e) => fail(&format!(
            "cannot run {COMPILER} ({e}): install it (apt-get install gfortran)"
        )),
    }
}

/// The directory of the running `gaspar` executable, where its library is.
fn library_dir() -> Result<PathBuf, String> {
    let exe = super::this_program()?;
    Path::new(&exe)
        .parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| format!("the gaspar binary {exe:?} has no directory"))
}

/// gfortran's arguments: coarrays through the library, the user's arguments, then the
/// library (after the user's objects, as the linker needs) and its run-time path.
fn compiler_args(user: &[OsString], dir: &Path) -> Vec<OsString> {
    let mut argv = vec![OsString::from("-fcoarray=lib")];
    argv.extend(user.iter().cloned());
    argv.push(OsString::from("-L"));
    argv.push(dir.as_os_str().to_owned());
    argv.push(OsString::from(format!("-l{LIBRARY_NAME}")));
    let mut rpath = OsString::from("-Wl,-rpath,");
    rpath.push(dir);
    argv.push(rpath);
    argv
}

/// The command as one line a shell reads back the same (arguments with special
/// characters in single quotes).
fn shell_line(program: &str, args: &[OsString]) -> String {
    std::iter::once(OsStr::new(program))
        .chain(args.iter().map(OsString::as_os_str))
        .map(|a| shell_word(&a.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ")
}

fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_=.,/:+@%".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

fn fail(message: &str) -> ExitCode {
    super::report(&format!("gaspar caf: {message}"));
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_follows_the_user_arguments_with_its_rpath() {
        let user = ["prog.f90", "-o", "prog"].map(OsString::from);
        let line = shell_line(COMPILER, &compiler_args(&user, Path::new("/opt/g p")));
        assert_eq!(
            line,
            "gfortran -fcoarray=lib prog.f90 -o prog -L '/opt/g p' -lcaf_gaspar '-Wl,-rpath,/opt/g p'"
        );
    }

    #[test]
    fn quotes_survive_a_shell() {
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("-O2"), "-O2");
    }
}
