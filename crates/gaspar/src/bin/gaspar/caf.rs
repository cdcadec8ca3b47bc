//! `gaspar caf [--show] [--fc FC] [gfortran args]`: compiles and links a coarray Fortran
//! program against libcaf_gaspar, as OpenCoarrays' `caf` does against its library.
//!
//! The command run is `FC -fcoarray=lib ARGS [SHIM] -L DIR -lcaf_gaspar -Wl,-rpath,DIR`,
//! where DIR holds the running `gaspar` executable and `libcaf_gaspar.so` beside it (cargo
//! builds both into target/<profile>). The rpath lets the program find the library when
//! started as `gaspar run -n N ./a.out` or alone as `./a.out` (one image). FC is `--fc`,
//! else `$FC`, else `gfortran`.
//!
//! GCC 16 changed the signatures of some calls whose names stayed (this_image, num_images,
//! the team statements, SYNC's ERRMSG=; the accessor transfers, whose TEAM= / TEAM_NUMBER=
//! arguments gfortran 15 leaves undefined; the presence test's coarray argument). The library exports GCC 16's forms under `_gaspar_caf16_*`; when
//! FC is gfortran 16 or later and the command links, SHIM is a few lines of assembly
//! (written beside the library, [`GCC16_FORMS`]) defining the changed names in the
//! executable as jumps to those forms, ahead of the library. The form is thus chosen when
//! the program is linked, by the compiler's version, never guessed at run time.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The Fortran compiler `gaspar caf` runs unless `--fc` or `$FC` names another.
const COMPILER: &str = "gfortran";
/// The first gfortran release calling the team and image queries in GCC 16's form.
const GCC16: u32 = 16;
/// The `_gfortran_caf_*` names GCC 16 calls with changed arguments, and libcaf_gaspar's
/// function in that form.
const GCC16_FORMS: &[(&str, &str)] = &[
    ("_gfortran_caf_this_image", "_gaspar_caf16_this_image"),
    ("_gfortran_caf_num_images", "_gaspar_caf16_num_images"),
    ("_gfortran_caf_form_team", "_gaspar_caf16_form_team"),
    ("_gfortran_caf_change_team", "_gaspar_caf16_change_team"),
    ("_gfortran_caf_end_team", "_gaspar_caf16_end_team"),
    ("_gfortran_caf_sync_team", "_gaspar_caf16_sync_team"),
    ("_gfortran_caf_team_number", "_gaspar_caf16_team_number"),
    ("_gfortran_caf_get_team", "_gaspar_caf16_get_team"),
    ("_gfortran_caf_sync_all", "_gaspar_caf16_sync_all"),
    ("_gfortran_caf_sync_memory", "_gaspar_caf16_sync_memory"),
    ("_gfortran_caf_sync_images", "_gaspar_caf16_sync_images"),
    (
        "_gfortran_caf_get_from_remote",
        "_gaspar_caf16_get_from_remote",
    ),
    (
        "_gfortran_caf_send_to_remote",
        "_gaspar_caf16_send_to_remote",
    ),
    (
        "_gfortran_caf_transfer_between_remotes",
        "_gaspar_caf16_transfer_between_remotes",
    ),
    (
        "_gfortran_caf_is_present_on_remote",
        "_gaspar_caf16_is_present_on_remote",
    ),
];
/// The shim's file name, beside the library.
const GCC16_SHIM_FILE: &str = "caf_gaspar_gcc16_forms.s";
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
    /// The Fortran compiler (default: $FC, else gfortran).
    #[arg(long, value_name = "FC")]
    fc: Option<OsString>,
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
    let compiler = args
        .fc
        .clone()
        .or_else(|| std::env::var_os("FC").filter(|fc| !fc.is_empty()))
        .unwrap_or_else(|| OsString::from(COMPILER));
    let major = match compiler_major(&compiler) {
        Ok(major) => major,
        Err(e) => return fail(&e),
    };
    let shim = if major >= GCC16 && links(&args.args) {
        match gcc16_shim(&dir) {
            Ok(path) => Some(path),
            Err(e) => return fail(&e),
        }
    } else {
        None
    };
    let argv = compiler_args(&args.args, &dir, shim.as_deref());
    if args.show {
        println!("{}", shell_line(&compiler.to_string_lossy(), &argv));
        return ExitCode::SUCCESS;
    }
    if !dir.join(LIBRARY_FILE).is_file() {
        return fail(&format!(
            "{LIBRARY_FILE} is not next to gaspar in {}: build it with `cargo build -p gaspar-caf` \
             (the same profile as gaspar)",
            dir.display()
        ));
    }
    match Command::new(&compiler).args(&argv).status() {
        Ok(status) => ExitCode::from(status.code().unwrap_or(1).clamp(0, 255) as u8),
        Err(e) => fail(&format!(
            "cannot run {} ({e}): install it (apt-get install gfortran)",
            compiler.to_string_lossy()
        )),
    }
}

/// The compiler's major version (`FC -dumpversion`).
fn compiler_major(compiler: &OsStr) -> Result<u32, String> {
    let name = compiler.to_string_lossy();
    let out = Command::new(compiler)
        .arg("-dumpversion")
        .output()
        .map_err(|e| format!("cannot run {name} ({e}): install it (apt-get install gfortran)"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    parse_major(&text).ok_or_else(|| format!("{name} -dumpversion printed {:?}", text.trim()))
}

/// The leading number of a version ("16", "12.2.0").
fn parse_major(version: &str) -> Option<u32> {
    let digits: String = version
        .trim()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Whether the command links (no -c, -S or -E).
fn links(user: &[OsString]) -> bool {
    !user.iter().any(|a| a == "-c" || a == "-S" || a == "-E")
}

/// The assembly that sends GCC 16's changed names to the library's GCC 16 forms.
fn gcc16_shim_text() -> String {
    // On x86-64 through the library's GOT entry: one indirect jump where `jmp NAME@PLT`
    // made two (the PLT's own jump through that entry).
    let (jump, suffix) = if cfg!(target_arch = "aarch64") {
        ("b\t", "")
    } else {
        ("jmp\t*", "@GOTPCREL(%rip)")
    };
    let mut text =
        String::from("# gaspar caf: GCC 16's coarray calls whose arguments changed\n\t.text\n");
    // Each name gets its size: without `.size` the linker gives the program's symbol the
    // size of the library's same-named function, which runs past the end of `.text`, and
    // valgrind stops on the program with an assertion (perf and gdb are misled too).
    for (name, form) in GCC16_FORMS {
        text.push_str(&format!(
            "\t.globl\t{name}\n\t.type\t{name}, @function\n{name}:\n\t{jump}{form}{suffix}\n\t.size\t{name}, .-{name}\n"
        ));
    }
    text.push_str("\t.section\t.note.GNU-stack,\"\",@progbits\n");
    text
}

/// Writes the shim beside the library (when missing or stale) and returns its path.
fn gcc16_shim(dir: &Path) -> Result<PathBuf, String> {
    let path = dir.join(GCC16_SHIM_FILE);
    let text = gcc16_shim_text();
    if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
        std::fs::write(&path, &text)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(path)
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
fn compiler_args(user: &[OsString], dir: &Path, shim: Option<&Path>) -> Vec<OsString> {
    let mut argv = vec![OsString::from("-fcoarray=lib")];
    argv.extend(user.iter().cloned());
    if let Some(shim) = shim {
        argv.push(shim.as_os_str().to_owned());
    }
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
        let line = shell_line(COMPILER, &compiler_args(&user, Path::new("/opt/g p"), None));
        assert_eq!(
            line,
            "gfortran -fcoarray=lib prog.f90 -o prog -L '/opt/g p' -lcaf_gaspar '-Wl,-rpath,/opt/g p'"
        );
    }

    #[test]
    fn gcc16_programs_link_the_shim_ahead_of_the_library() {
        let user = ["prog.f90"].map(OsString::from);
        let shim = Path::new("/l/caf_gaspar_gcc16_forms.s");
        let line = shell_line(
            "gfortran-16",
            &compiler_args(&user, Path::new("/l"), Some(shim)),
        );
        assert_eq!(
            line,
            "gfortran-16 -fcoarray=lib prog.f90 /l/caf_gaspar_gcc16_forms.s -L /l -lcaf_gaspar -Wl,-rpath,/l"
        );
        let text = gcc16_shim_text();
        for (name, form) in GCC16_FORMS {
            assert!(text.contains(&format!("{name}:\n")), "{text}");
            assert!(text.contains(form), "{text}");
        }
        assert_eq!(parse_major("16\n"), Some(16));
        assert_eq!(parse_major("12.2.0"), Some(12));
        assert_eq!(parse_major("x"), None);
        assert!(!links(&["-c".into(), "a.f90".into()]));
    }

    #[test]
    fn quotes_survive_a_shell() {
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("-O2"), "-O2");
    }
}
