//! The copy engine's calibration as a user meets it: `gaspar calibrate`, `gaspar info`,
//! `gaspar run` calibrating once before a job, a damaged or foreign cache file remade,
//! and a rank without a table saying that it copies with memcpy. Each test has its own
//! cache directory (`XDG_CACHE_HOME`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{example, gaspar, run_command, Outcome};

/// A fresh cache home for one test.
fn cache_home(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("gaspar-copy-engine-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the cache home");
    dir
}

fn gaspar_with(cache: &Path, args: &[&str]) -> Outcome {
    let mut cmd = Command::new(gaspar());
    cmd.args(args)
        .env("XDG_CACHE_HOME", cache)
        .env("GASPAR_LOG", "info");
    run_command(cmd)
}

/// The table file under `cache` (the only `copy-table-*` file there).
fn table_file(cache: &Path) -> Option<PathBuf> {
    std::fs::read_dir(cache.join("gaspar"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("copy-table-") && n.ends_with(".txt"))
        })
}

/// The table rows `gaspar info` or `gaspar calibrate` printed: 18 size classes from 64 B
/// to 8 MiB, eight placements and the strided patterns' column each.
fn table_rows(stdout: &str) -> Vec<String> {
    let rows: Vec<String> = stdout
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("size "))
        .skip(1)
        .take_while(|l| l.contains('x'))
        .map(str::to_string)
        .collect();
    rows
}

fn assert_full_table(stdout: &str) -> Vec<String> {
    let rows = table_rows(stdout);
    assert_eq!(rows.len(), 18, "table rows in:\n{stdout}");
    assert!(rows[0].trim_start().starts_with("64 B"), "{stdout}");
    assert!(rows[17].trim_start().starts_with("8 MiB"), "{stdout}");
    for row in &rows {
        let methods = row
            .split_whitespace()
            .filter(|w| ["memcpy", "inline16", "pieces2k", "rep-movsb", "nt-stores"].contains(w))
            .count();
        assert_eq!(
            methods, 9,
            "one method per placement and one for patterns: {row}"
        );
    }
    rows
}

#[test]
fn calibrate_stores_the_table_that_info_shows() {
    let cache = cache_home("calibrate");
    let before = gaspar_with(&cache, &["info"]);
    before.assert_success();
    assert!(
        before
            .stdout
            .contains("no table: not calibrated yet; copies use memcpy"),
        "{}",
        before.stdout
    );

    let calibrated = gaspar_with(&cache, &["calibrate"]);
    calibrated.assert_success();
    assert!(
        calibrated.stdout.contains("copy engine calibrated on"),
        "{}",
        calibrated.stdout
    );
    let file = table_file(&cache).expect("the table file was written");
    assert!(
        calibrated
            .stdout
            .contains(&format!("stored in {}", file.display())),
        "{}",
        calibrated.stdout
    );
    let measured = assert_full_table(&calibrated.stdout);

    let after = gaspar_with(&cache, &["info"]);
    after.assert_success();
    assert!(
        after
            .stdout
            .contains(&format!("table file: {}", file.display())),
        "{}",
        after.stdout
    );
    assert_eq!(assert_full_table(&after.stdout), measured);
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
fn run_calibrates_once_and_remakes_a_damaged_or_foreign_table() {
    let cache = cache_home("run");
    let hello = example("hello");
    let job = |cache: &Path| {
        let mut cmd = Command::new(gaspar());
        cmd.args(["run", "-n", "2"])
            .arg(&hello)
            .env("XDG_CACHE_HOME", cache)
            .env("GASPAR_LOG", "info");
        let out = run_command(cmd);
        out.assert_success();
        assert_eq!(out.stdout.matches("hello from rank").count(), 2);
        out
    };
    // First job: the launcher measures, once; the ranks find the table and say nothing.
    let first = job(&cache);
    assert_eq!(
        first.stderr.matches("copy engine calibrated in").count(),
        1,
        "{}",
        first.stderr
    );
    assert!(
        !first.stderr.contains("copying with memcpy"),
        "{}",
        first.stderr
    );
    let file = table_file(&cache).expect("the launcher wrote the table");
    let good = std::fs::read_to_string(&file).expect("read the table");

    // Second job: nothing to measure.
    let second = job(&cache);
    assert!(
        !second.stderr.contains("copy engine calibrated"),
        "{}",
        second.stderr
    );

    // A damaged file is reported by `info`, then remade by the next job.
    for damage in [
        "garbage\n".to_string(),
        good.replace("memcpy", "memcpx"),
        good[..good.len() / 2].to_string(),
    ] {
        std::fs::write(&file, &damage).expect("damage the table");
        let info = gaspar_with(&cache, &["info"]);
        info.assert_success();
        assert!(
            info.stdout.contains("the cached table is unusable"),
            "{}",
            info.stdout
        );
        let remade = job(&cache);
        assert!(
            remade.stderr.contains("copy engine calibrated in"),
            "{}",
            remade.stderr
        );
        assert_full_table(&gaspar_with(&cache, &["info"]).stdout);
    }

    // A table measured on another processor (another key) is not used, and is remade.
    let good = std::fs::read_to_string(&file).expect("read the table");
    let foreign: String = good
        .lines()
        .map(|l| {
            if l.starts_with("key ") {
                "key 0123456789abcdef".to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    std::fs::write(&file, foreign).expect("write a foreign table");
    let info = gaspar_with(&cache, &["info"]);
    assert!(
        info.stdout.contains("measured on another processor"),
        "{}",
        info.stdout
    );
    let remade = job(&cache);
    assert!(
        remade.stderr.contains("copy engine calibrated in"),
        "{}",
        remade.stderr
    );
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
fn a_rank_without_a_table_copies_with_memcpy_and_says_so() {
    let cache = cache_home("rank");
    // A program started without the launcher: one rank, no table in its cache.
    let out = gaspar_with(&cache, &["demo-rank"]);
    out.assert_success();
    assert!(
        out.stderr
            .contains("copy engine: not calibrated yet; copying with memcpy"),
        "{}",
        out.stderr
    );
    assert!(table_file(&cache).is_none(), "a rank must not calibrate");
    // Without any cache directory, `calibrate` still measures and says it stored nothing.
    let mut cmd = Command::new(gaspar());
    cmd.arg("calibrate")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("HOME");
    let out = run_command(cmd);
    out.assert_success();
    assert!(
        out.stdout.contains("not stored: no cache directory"),
        "{}",
        out.stdout
    );
    assert_full_table(&out.stdout);
    let _ = std::fs::remove_dir_all(&cache);
}

/// `gaspar info | grep -q gaspar` and `gaspar info | head -1`: the reader may be gone
/// before the report is written. The report then ends quietly with success, as `cat`'s
/// would, instead of a panic (exit 101) that a script under `pipefail` takes for a failure.
/// The pipe's read end is closed before the command starts, so every write meets it.
#[test]
fn info_and_calibrate_end_quietly_when_the_reader_is_gone() {
    let cache = cache_home("closed-pipe");
    for args in [["info"], ["calibrate"]] {
        let (read_end, write_end) = nix::unistd::pipe().expect("a pipe");
        drop(read_end);
        let out = Command::new(gaspar())
            .args(args)
            .env("XDG_CACHE_HOME", &cache)
            .stdout(std::process::Stdio::from(write_end))
            .output()
            .expect("run gaspar");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "gaspar {args:?} with a closed stdout: {:?}, stderr: {stderr}",
            out.status
        );
        assert!(!stderr.contains("panicked"), "gaspar {args:?}: {stderr}");
    }
}
