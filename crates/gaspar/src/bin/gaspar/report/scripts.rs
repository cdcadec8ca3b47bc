//! Runs the repository's benchmark scripts (scripts/bench-*) as a user would, keeping
//! their output in the report's raw/ directory.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The checkout of gaspar whose scripts/ the report runs: the one this binary was built
/// in (REPO/target/release/gaspar), else the current directory or one above it.
pub(super) fn repository() -> Result<PathBuf, String> {
    let has_scripts = |dir: &Path| dir.join("scripts/bench-armci").is_file();
    let from_binary = std::env::current_exe().ok();
    let from_here = std::env::current_dir().ok();
    [from_binary, from_here]
        .into_iter()
        .flatten()
        .find_map(|start| {
            start
                .ancestors()
                .find(|dir| has_scripts(dir))
                .map(Path::to_path_buf)
        })
        .ok_or_else(|| {
            "scripts/bench-* not found: run the report from a checkout of gaspar".to_string()
        })
}

/// One run of a script: its name under scripts/, arguments and environment.
pub(super) struct Script {
    name: &'static str,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Script {
    pub(super) fn new(name: &'static str) -> Script {
        Script {
            name,
            args: Vec::new(),
            env: Vec::new(),
        }
    }

    pub(super) fn arg(mut self, arg: impl Into<String>) -> Script {
        self.args.push(arg.into());
        self
    }

    pub(super) fn env(mut self, key: &str, value: impl Into<String>) -> Script {
        self.env.push((key.to_string(), value.into()));
        self
    }

    /// The command as typed in a shell at the repository's top.
    pub(super) fn command_line(&self) -> String {
        let quoted = |v: &str| {
            if v.contains(char::is_whitespace) {
                format!("'{v}'")
            } else {
                v.to_string()
            }
        };
        let env = self.env.iter().map(|(k, v)| format!("{k}={} ", quoted(v)));
        let args = self.args.iter().map(|a| format!(" {a}"));
        format!(
            "{}scripts/{}{}",
            env.collect::<String>(),
            self.name,
            args.collect::<String>()
        )
    }

    /// Runs the script with `GASPAR_BENCH_JSON=raw/NAME.json` (its figures as JSON, which
    /// this returns) as [`Script::run`] does.
    pub(super) fn run_json(&self, repo: &Path, raw: &Path) -> Result<serde_json::Value, String> {
        let json = raw.join(format!("{}.json", self.name));
        self.launch(repo, raw, Some(&json))?;
        std::fs::read_to_string(&json)
            .map_err(|e| e.to_string())
            .and_then(|text| serde_json::from_str(&text).map_err(|e| e.to_string()))
            .map_err(|e| format!("{}: {e}", json.display()))
    }

    /// Runs the script at `repo`'s top; its stdout goes to `raw/NAME.txt` (and is
    /// returned), its stderr to `raw/NAME.err` (removed when empty). `Err` names the failure and stderr's last
    /// line.
    pub(super) fn run(&self, repo: &Path, raw: &Path) -> Result<String, String> {
        self.launch(repo, raw, None)
    }

    fn launch(&self, repo: &Path, raw: &Path, json: Option<&Path>) -> Result<String, String> {
        let out = raw.join(format!("{}.txt", self.name));
        let err = raw.join(format!("{}.err", self.name));
        let create = |path: &Path| {
            std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))
        };
        let status = Command::new(repo.join("scripts").join(self.name))
            .current_dir(repo)
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .envs(json.map(|path| ("GASPAR_BENCH_JSON", path)))
            .stdin(Stdio::null())
            .stdout(create(&out)?)
            .stderr(create(&err)?)
            .status()
            .map_err(|e| format!("scripts/{}: {e}", self.name))?;
        let stdout = std::fs::read_to_string(&out).unwrap_or_default();
        let stderr = std::fs::read_to_string(&err).unwrap_or_default();
        if stderr.is_empty() {
            let _ = std::fs::remove_file(&err);
        }
        if status.success() {
            return Ok(stdout);
        }
        Err(format!(
            "scripts/{} failed ({status}): {}",
            self.name,
            stderr.lines().last().unwrap_or("no message")
        ))
    }
}
