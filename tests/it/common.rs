//! Test environment: a temporary packs directory and helpers to run the real binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub use engram::mcp::client::{StdioClient, ToolReply};
use serde_json::Value;

/// The binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_engram"))
}

/// What every engram process a test starts inherits from the test process (`PATH`,
/// `HOME`; tests override `HOME`): start from `cmd.env_clear().envs(base_env())`,
/// so a developer's `ENGRAM_*` variables cannot change a result. Plus `ENGRAM_LANG=zh`: the
/// tests assert the Python Engram server's Chinese CLI texts, while a process with no locale
/// speaks English (tests/it/cli_lang.rs runs the other languages).
pub fn base_env() -> Vec<(&'static str, std::ffi::OsString)> {
    let mut env = engram::settings::child_env();
    env.push((engram::settings::ENV_LANG, "zh".into()));
    env
}

/// A pinned "now" so expiry and timestamps are reproducible.
pub const NOW: &str = "2026-11-22T10:00:00Z";

pub struct TestEnv {
    pub dir: tempfile::TempDir,
    pub packs: PathBuf,
    pub now: Option<String>,
    /// `ENGRAM_HOST` (the device name sync uses), when set.
    pub host: Option<String>,
    /// More environment variables for every engram process (`ENGRAM_GIT_TOKEN`, …).
    pub vars: Vec<(String, String)>,
}

impl TestEnv {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let packs = dir.path().join("packs");
        std::fs::create_dir_all(&packs).expect("mkdir");
        Self { dir, packs, now: Some(NOW.to_owned()), host: None, vars: Vec::new() }
    }

    /// Same, with the real clock.
    pub fn with_real_clock() -> Self {
        let mut env = Self::new();
        env.now = None;
        env
    }

    fn envs(&self) -> Vec<(&str, String)> {
        let mut v = vec![("HOME", self.dir.path().display().to_string())];
        if let Some(n) = &self.now {
            v.push(("ENGRAM_NOW", n.clone()));
        }
        if let Some(h) = &self.host {
            v.push(("ENGRAM_HOST", h.clone()));
        }
        v.extend(self.vars.iter().map(|(k, val)| (k.as_str(), val.clone())));
        v
    }

    pub async fn client(&self) -> StdioClient {
        self.client_with(&[]).await
    }

    pub async fn client_with(&self, extra: &[&str]) -> StdioClient {
        let packs = self.packs.display().to_string();
        let mut args = vec!["serve", "--packs-dir", packs.as_str()];
        args.extend_from_slice(extra);
        let envs = self.envs();
        let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        StdioClient::spawn_in(&bin(), &args, &envs, self.dir.path()).await.expect("spawn engram serve")
    }

    /// A server over stdio whose MCP client introduces itself as `name` (`--propose` branches
    /// are named after it).
    pub async fn client_named(&self, name: &str, extra: &[&str]) -> StdioClient {
        let packs = self.packs.display().to_string();
        let mut args = vec!["serve", "--packs-dir", packs.as_str()];
        args.extend_from_slice(extra);
        let envs = self.envs();
        let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        StdioClient::spawn_named(&bin(), &args, &envs, self.dir.path(), name)
            .await
            .expect("spawn engram serve")
    }

    /// Runs the CLI with `--packs-dir`.
    pub fn cli(&self, args: &[&str]) -> Output {
        self.cli_command(args).output().expect("run engram")
    }

    /// Runs the CLI with `--packs-dir`, killing it and failing the test if it still runs
    /// after `bound` (for a command that must end on its own, not wait forever).
    pub fn cli_within(&self, args: &[&str], bound: Duration) -> Output {
        let mut cmd = self.cli_command(args);
        let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("run engram");
        let deadline = Instant::now() + bound;
        while child.try_wait().expect("try_wait").is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("engram {args:?} still runs after {bound:?}");
            }
            std::thread::sleep(Duration::from_millis(20)); // polling, not timing
        }
        child.wait_with_output().expect("wait")
    }

    fn cli_command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin());
        cmd.args(args).arg("--packs-dir").arg(&self.packs).current_dir(self.dir.path());
        cmd.env_clear().envs(base_env()).envs(self.envs());
        cmd
    }

    pub fn pack(&self, name: &str) -> PathBuf {
        self.packs.join(name)
    }

    pub fn read(&self, pack: &str, rel: &str) -> String {
        std::fs::read_to_string(self.pack(pack).join(rel)).unwrap_or_default()
    }

    /// `engram init <name>` through the CLI.
    pub fn init(&self, name: &str) {
        let out = self.cli(&["init", name]);
        assert!(out.status.success(), "init failed: {}", String::from_utf8_lossy(&out.stderr));
    }
}

/// The identity every git command a test runs commits as (see [`git_command`]).
pub const GIT_NAME: &str = "Engram Test";
/// The email of [`GIT_NAME`].
pub const GIT_EMAIL: &str = "test@example.invalid";

/// The real git CLI as every test runs it: no system or global configuration (a developer's
/// `~/.gitconfig` or `/etc/gitconfig` cannot change a result, and none is needed) and its own
/// identity, so the suite passes on a machine where git has never been set up.
pub fn git_command() -> Command {
    git_command_as(GIT_NAME, GIT_EMAIL)
}

/// [`git_command`], committing as `name <email>`.
pub fn git_command_as(name: &str, email: &str) -> Command {
    let mut cmd = Command::new("git");
    cmd.envs(git_env()).envs([
        ("GIT_AUTHOR_NAME", name),
        ("GIT_AUTHOR_EMAIL", email),
        ("GIT_COMMITTER_NAME", name),
        ("GIT_COMMITTER_EMAIL", email),
    ]);
    cmd
}

/// `git -C dir` (see [`git_command`]).
pub fn git_in(dir: &Path) -> Command {
    let mut cmd = git_command();
    cmd.arg("-C").arg(dir);
    cmd
}

/// The environment that keeps git from reading any configuration outside the repository,
/// for git programs a test starts directly (`git-daemon`, …).
pub fn git_env() -> [(&'static str, &'static str); 2] {
    [("GIT_CONFIG_NOSYSTEM", "1"), ("GIT_CONFIG_GLOBAL", "/dev/null")]
}

/// Runs git (the real CLI, see [`git_command`]) in a directory and returns stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_in(dir).args(args).output().expect("run git");
    assert!(out.status.success(), "git {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Number of commits on HEAD.
pub fn commit_count(dir: &Path) -> usize {
    git(dir, &["rev-list", "--count", "HEAD"]).trim().parse().expect("count")
}

/// `git fsck --strict` succeeds.
pub fn assert_fsck(dir: &Path) {
    let out = git_in(dir).args(["fsck", "--strict", "--no-progress"]).output().expect("git fsck");
    assert!(
        out.status.success(),
        "git fsck failed in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `git status --porcelain` is empty (working tree agrees with HEAD).
pub fn assert_clean(dir: &Path) {
    let s = git(dir, &["status", "--porcelain"]);
    assert!(s.trim().is_empty(), "working tree not clean in {}:\n{s}", dir.display());
}

pub async fn call(client: &StdioClient, tool: &str, args: Value) -> ToolReply {
    client.call(tool, args).await.unwrap_or_else(|e| panic!("{tool} call failed: {e}"))
}

/// Calls a tool and asserts it succeeded; returns the text.
pub async fn ok(client: &StdioClient, tool: &str, args: Value) -> String {
    let r = call(client, tool, args).await;
    assert!(!r.is_error, "{tool} returned an error: {}", r.text);
    r.text
}

/// Calls a tool and asserts it failed; returns the text.
pub async fn err(client: &StdioClient, tool: &str, args: Value) -> String {
    let r = call(client, tool, args).await;
    assert!(r.is_error, "{tool} unexpectedly succeeded: {}", r.text);
    r.text
}

/// The shared reference material, when present (tests that need it skip otherwise).
pub fn shared_dir() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("ENGRAM_SHARED_DIR").map(PathBuf::from),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared")),
    ];
    candidates.into_iter().flatten().find(|p| p.join("engram-packs").is_dir())
}

/// Copies a directory tree (files and dirs only).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir").flatten() {
        let p = e.path();
        let t = to.join(e.file_name());
        if p.is_dir() {
            copy_tree(&p, &t);
        } else {
            std::fs::copy(&p, &t).expect("copy");
        }
    }
}

/// The working tree holds exactly HEAD's files (tracked and untracked alike), whatever the git
/// index says: scoped writes (graph, personal) update the index lazily, so a running or killed
/// server may leave it behind (see `src/store/scoped_write.rs`). Compared through a scratch index.
pub fn assert_worktree_matches_head(dir: &Path) {
    let scratch = tempfile::NamedTempFile::new().expect("scratch index");
    let run = |args: &[&str]| {
        let out = git_in(dir).args(args).env("GIT_INDEX_FILE", scratch.path()).output().expect("run git");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run(&["read-tree", "HEAD"]);
    run(&["add", "-A"]);
    let diff = run(&["diff", "--cached", "--name-status", "HEAD"]);
    assert!(diff.trim().is_empty(), "working tree differs from HEAD in {}:\n{diff}", dir.display());
}

/// The reference's 12 example packs, shipped with engram (`templates/examples/`).
pub const EXAMPLE_PACKS: [&str; 12] = [
    "brand-support",
    "fitness-coach",
    "historical-figure",
    "language-partner",
    "mock-interviewer",
    "novel-character",
    "old-friend",
    "past-self",
    "project-context",
    "sports-nutritionist",
    "template",
    "user-persona",
];

/// The pack's branches, one per line.
pub fn branches(pack: &Path) -> String {
    git(pack, &["branch", "--list", "--format=%(refname:short)"])
}

/// Runs `engram args…`, asserting it succeeds; its standard output.
pub fn cli_ok(env: &TestEnv, args: &[&str]) -> String {
    let out = env.cli(args);
    assert!(
        out.status.success(),
        "engram {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
