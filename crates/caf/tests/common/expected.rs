//! Expected-outcome lists (`tests/fortran/EXPECTED`, `tests/gcc-coarray/EXPECTED`): one
//! line per program and set of job sizes,
//!
//! ```text
//! PROGRAM | JOBS | EXPECTED | TODAY | OPENCOARRAYS
//! ```
//!
//! * JOBS: comma list of job sizes run with `gaspar run -n N`, `alone` (the program
//!   started without a launcher: one image), or `mpirun2` (plain `mpirun -n 2`, only in a
//!   build with the mpi feature).
//! * EXPECTED: `pass`, `exit CODE` or `exit nonzero`, optionally followed by
//!   `; stderr: TEXT` (a stderr line contains TEXT, ignoring case) or `; quiet` (no "STOP" printed).
//! * TODAY: empty when gaspar meets EXPECTED now, `not-yet: REASON` when it does not
//!   yet, or `differs: REASON` when gaspar does otherwise on purpose (e.g. a test of
//!   libcaf_single's answer to a call the standard does not allow). All are asserted: a
//!   `not-yet` or `differs` job that meets its expectation fails the test too, so that the
//!   list stays true (clear the field then). There is no "sometimes": a job
//!   that is not asserted cannot fail, so a race is a bug to fix, not a state to list.
//! * OPENCOARRAYS: what Debian's OpenCoarrays does with the same program (`caf`, `cafrun`),
//!   for the comparison in the README; not checked.

use std::collections::BTreeSet;
use std::path::Path;

use super::Outcome;

/// How a job is started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launch {
    /// `gaspar run -n N ./prog`.
    Gaspar(u32),
    /// `mpirun -n N ./prog` (a build with the mpi feature).
    Mpirun(u32),
    /// `./prog`, without a launcher.
    Alone,
}

impl Launch {
    /// How many images the job has.
    pub fn images(self) -> u32 {
        match self {
            Launch::Gaspar(n) | Launch::Mpirun(n) => n,
            Launch::Alone => 1,
        }
    }
}

/// The line a passing program of tests/fortran prints when it ran with `images` images:
/// checking the count catches a job whose processes each started alone (a program that
/// loaded a library built for another MPI runs as singletons under that MPI's launcher).
pub fn ok_line(program: &str, images: u32) -> String {
    format!("{program} ok on {images}")
}

impl std::fmt::Display for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Launch::Gaspar(n) => write!(f, "gaspar run -n {n}"),
            Launch::Mpirun(n) => write!(f, "mpirun -n {n}"),
            Launch::Alone => write!(f, "alone"),
        }
    }
}

/// The exit status a job must end with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// 0, and (for the repository's programs) a line "PROGRAM ok" on stdout.
    Pass,
    Code(i32),
    NonZero,
}

/// What a job must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expectation {
    pub status: Status,
    /// Some stderr line contains this text.
    pub stderr: Option<String>,
    /// Nothing says "STOP" (a QUIET= stop).
    pub quiet: bool,
}

/// Whether gaspar meets an expectation today.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Today {
    /// It does (asserted).
    Meets,
    /// It does not yet, for this reason (asserted).
    NotYet(String),
    /// It does otherwise on purpose, for this reason (asserted).
    Differs(String),
}

/// One line of a list.
#[derive(Clone, Debug)]
pub struct Entry {
    pub program: String,
    pub launches: Vec<Launch>,
    pub expect: Expectation,
    /// What gaspar does today.
    pub today: Today,
    /// The line in the list, for messages.
    pub line: usize,
}

/// Fails the test unless each of the `present` programs has a line in the list `entries`
/// and each line one of them; `what` names the programs in the message.
pub fn assert_one_line_each<'a>(
    entries: &[Entry],
    present: impl IntoIterator<Item = &'a str>,
    what: &str,
) {
    let listed: BTreeSet<&str> = entries.iter().map(|e| e.program.as_str()).collect();
    let present: BTreeSet<&str> = present.into_iter().collect();
    let unlisted: Vec<_> = present.difference(&listed).collect();
    let gone: Vec<_> = listed.difference(&present).collect();
    assert!(
        unlisted.is_empty(),
        "{what} without a line in the list: {unlisted:?}"
    );
    assert!(
        gone.is_empty(),
        "lines in the list without one of the {what}: {gone:?}"
    );
}

/// Reads a list; a malformed line fails the test with its number.
pub fn read(path: &Path) -> Vec<Entry> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|(i, l)| {
            let mut entry =
                parse_line(l).unwrap_or_else(|e| panic!("{}:{}: {e}: {l}", path.display(), i + 1));
            entry.line = i + 1;
            entry
        })
        .collect()
}

fn parse_line(line: &str) -> Result<Entry, String> {
    let fields: Vec<&str> = line.split('|').map(str::trim).collect();
    let [program, jobs, expect, today, _opencoarrays] = fields[..] else {
        return Err(format!("{} fields, not 5", fields.len()));
    };
    let launches = jobs
        .split(',')
        .map(|j| match j.trim() {
            "alone" => Ok(Launch::Alone),
            j => match j.strip_prefix("mpirun") {
                Some(n) => n.parse().map(Launch::Mpirun),
                None => j.parse().map(Launch::Gaspar),
            },
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("bad job list {jobs:?}: {e}"))?;
    let today = if today.is_empty() {
        Today::Meets
    } else if let Some(reason) = today.strip_prefix("not-yet:") {
        Today::NotYet(reason.trim().to_owned())
    } else if let Some(reason) = today.strip_prefix("differs:") {
        Today::Differs(reason.trim().to_owned())
    } else {
        return Err(format!(
            "TODAY is {today:?}: empty, `not-yet: REASON` or `differs: REASON`"
        ));
    };
    Ok(Entry {
        program: program.to_owned(),
        launches,
        expect: parse_expectation(expect)?,
        today,
        line: 0,
    })
}

fn parse_expectation(text: &str) -> Result<Expectation, String> {
    let mut parts = text.split(';').map(str::trim);
    let status = match parts.next().unwrap_or("") {
        "pass" => Status::Pass,
        "exit nonzero" => Status::NonZero,
        s => Status::Code(
            s.strip_prefix("exit ")
                .and_then(|c| c.trim().parse().ok())
                .ok_or_else(|| format!("bad expectation {s:?}"))?,
        ),
    };
    let mut expectation = Expectation {
        status,
        stderr: None,
        quiet: false,
    };
    for part in parts {
        if part == "quiet" {
            expectation.quiet = true;
        } else if let Some(t) = part.strip_prefix("stderr:") {
            expectation.stderr = Some(t.trim().to_owned());
        } else {
            return Err(format!("bad qualifier {part:?}"));
        }
    }
    Ok(expectation)
}

impl Expectation {
    /// Whether `outcome` (or a failed build) meets the expectation; `Err` says how not.
    /// `ok_line`: the line a passing program prints, when it prints one ([`ok_line`]).
    pub fn met_by(
        &self,
        outcome: &Result<Outcome, String>,
        ok_line: Option<&str>,
    ) -> Result<(), String> {
        let outcome = outcome
            .as_ref()
            .map_err(|build| format!("build failed: {build}"))?;
        let status_ok = match (&self.status, outcome.code) {
            (_, _) if outcome.timed_out => false,
            (Status::Pass, Some(0)) => match ok_line {
                Some(ok) => outcome.stdout.lines().any(|l| l.trim() == ok),
                None => true,
            },
            (Status::Code(c), Some(code)) => *c == code,
            (Status::NonZero, code) => code != Some(0),
            _ => false,
        };
        let stderr_ok = match &self.stderr {
            Some(text) => {
                let text = text.to_lowercase();
                outcome
                    .stderr
                    .lines()
                    .any(|l| l.to_lowercase().contains(&text))
            }
            None => true,
        };
        let quiet_ok =
            !self.quiet || !(outcome.stdout.contains("STOP") || outcome.stderr.contains("STOP"));
        if status_ok && stderr_ok && quiet_ok {
            Ok(())
        } else {
            Err(outcome.summary())
        }
    }
}

/// The failures of one check, gathered so that one run reports them all.
#[derive(Default)]
pub struct Verdicts {
    failures: Vec<String>,
    checked: usize,
}

impl Verdicts {
    /// Records how `entry`'s job `launch` went against the expectation, both ways.
    pub fn judge(&mut self, entry: &Entry, launch: Launch, result: Result<(), String>) {
        self.checked += 1;
        let what = format!("{} ({launch}, line {})", entry.program, entry.line);
        match (result, &entry.today) {
            (Ok(()), Today::Meets) => {}
            (Err(how), Today::NotYet(reason)) => eprintln!("not yet ({reason}): {what}: {how}"),
            (Err(how), Today::Differs(reason)) => {
                eprintln!("differs on purpose ({reason}): {what}: {how}")
            }
            (Err(how), Today::Meets) => self.failures.push(format!("{what}: {how}")),
            (Ok(()), Today::NotYet(_) | Today::Differs(_)) => self.failures.push(format!(
                "{what}: meets its expectation now: clear its TODAY field in the list"
            )),
        }
    }

    /// Fails the test with every failure, or says how many jobs were checked.
    pub fn finish(self, list: &str) {
        assert!(
            self.failures.is_empty(),
            "{} of {} jobs differ from {list}:\n{}",
            self.failures.len(),
            self.checked,
            self.failures.join("\n")
        );
        eprintln!("{} jobs as {list} expects", self.checked);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse() {
        let e = parse_line("stop_quiet | 1,2, mpirun2 | exit 5; quiet | not-yet: no stop | exit 5")
            .unwrap();
        assert_eq!(
            e.launches,
            [Launch::Gaspar(1), Launch::Gaspar(2), Launch::Mpirun(2)]
        );
        assert_eq!(e.expect.status, Status::Code(5));
        assert!(e.expect.quiet);
        assert_eq!(e.today, Today::NotYet("no stop".into()));
        let e = parse_line("x | 2 | exit nonzero; stderr: ERROR STOP 7 |  | pass").unwrap();
        assert_eq!(e.expect.stderr.as_deref(), Some("ERROR STOP 7"));
        assert!(parse_line("x | 2 | maybe | | ").is_err());
        assert!(parse_line("x | 2 | pass | later | ").is_err());
        assert!(parse_line("x | 2 | pass | flaky: a race | pass").is_err());
    }
}
