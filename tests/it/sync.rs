//! `engram remote`, `engram sync` and `sync_status` against a real git server
//! (`git daemon`) on loopback, with two devices writing while offline.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::*;

/// A `git daemon` serving bare repositories under a temporary directory.
struct GitDaemon {
    child: Child,
    base: PathBuf,
    port: u16,
    _dir: tempfile::TempDir,
}

impl GitDaemon {
    /// Starts the daemon, or `None` (with a message) when this git has no daemon.
    fn start() -> Option<Self> {
        // Run git-daemon itself: `git daemon` forks it, and killing the wrapper would leave it running.
        let exec_path = git_command().arg("--exec-path").output().ok()?;
        let daemon = PathBuf::from(String::from_utf8_lossy(&exec_path.stdout).trim()).join("git-daemon");
        if !daemon.exists() {
            eprintln!("skipping: this git has no `git daemon` ({} is missing)", daemon.display());
            return None;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().join("srv");
        std::fs::create_dir_all(&base).expect("mkdir");
        let port = TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
        let mut child = Command::new(&daemon)
            .envs(git_env())
            .args([
                "--export-all",
                "--enable=receive-pack",
                "--reuseaddr",
                "--listen=127.0.0.1",
                &format!("--port={port}"),
                &format!("--base-path={}", base.display()),
                &base.display().to_string(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start git daemon");
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "git daemon did not start listening on {port}");
            if let Ok(Some(status)) = child.try_wait() {
                panic!("git daemon exited: {status}");
            }
            std::thread::yield_now();
        }
        Some(Self { child, base, port, _dir: dir })
    }

    /// Creates an empty bare repository whose HEAD names `branch`; returns its git:// URL.
    fn bare(&self, name: &str, branch: &str) -> String {
        let path = self.base.join(format!("{name}.git"));
        let out = git_command()
            .args(["init", "--bare", "-q", &format!("--initial-branch={branch}")])
            .arg(&path)
            .output()
            .expect("git init --bare");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        format!("git://127.0.0.1:{}/{name}.git", self.port)
    }

    fn repo(&self, name: &str) -> PathBuf {
        self.base.join(format!("{name}.git"))
    }
}

impl Drop for GitDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn device(host: &str) -> TestEnv {
    let mut env = TestEnv::new();
    env.host = Some(host.to_owned());
    env
}

pub(crate) fn run_ok(env: &TestEnv, args: &[&str]) -> String {
    let out = env.cli(args);
    assert!(
        out.status.success(),
        "engram {args:?} failed:\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub(crate) fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

pub(crate) fn head(dir: &Path) -> String {
    git(dir, &["rev-parse", "HEAD"]).trim().to_owned()
}

pub(crate) fn branch(dir: &Path) -> String {
    git(dir, &["symbolic-ref", "--short", "HEAD"]).trim().to_owned()
}

pub(crate) fn is_ancestor(dir: &Path, ancestor: &str, of: &str) -> bool {
    git_in(dir)
        .args(["merge-base", "--is-ancestor", ancestor, of])
        .status()
        .expect("git merge-base")
        .success()
}

/// No file of the working tree contains conflict markers.
fn assert_no_conflict_markers(dir: &Path) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            if e.file_name() == ".git" {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let t = std::fs::read_to_string(&p).unwrap_or_default();
            for marker in ["<<<<<<<", ">>>>>>>", "\n=======\n"] {
                assert!(!t.contains(marker), "conflict marker {marker:?} in {}", p.display());
            }
        }
    }
}

/// `engram lint` passes with no memory-index warning.
fn assert_lint_clean(env: &TestEnv, pack: &str) {
    let out = env.cli(&["lint", pack]);
    let t = text(&out);
    assert!(out.status.success(), "lint failed:\n{t}");
    for line in t.lines().filter(|l| l.contains("memory/")) {
        assert!(line.contains(".conflict-") || !line.contains("⚠"), "memory lint warning: {line}\n{t}");
    }
    assert!(!t.contains("memory/_index"), "memory index warning:\n{t}");
}

pub(crate) fn capture(name: &str, category: &str, content: &str, summary: &str) -> serde_json::Value {
    json!({"name": name, "category": category, "content": content, "summary": summary})
}

/// Summaries of the full index (all segments included).
fn index_summaries(env: &TestEnv, pack: &str) -> String {
    let mut all = env.read(pack, "memory/_index_full.md");
    let log = env.pack(pack).join("memory/_log/_index_full");
    if let Ok(rd) = std::fs::read_dir(log) {
        for e in rd.flatten() {
            all.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
        }
    }
    all
}

#[tokio::test]
async fn two_devices_offline_then_sync_keep_everything() {
    let Some(daemon) = GitDaemon::start() else { return };
    let (a, b) = (device("laptop"), device("desktop"));
    a.init("coach");
    let url = daemon.bare("coach", &branch(&a.pack("coach")));
    two_devices_offline_then_sync(&a, &b, &url, &daemon.repo("coach")).await;
}

/// Two devices share `url` (the bare repository `bare` on a server): A pushes the pack, B
/// installs it, both write while offline (the same memory corrected differently, the same
/// knowledge line changed), then A, B and A sync. Every memory is kept on both and on the
/// server, no conflict markers, and nothing was force-pushed (the server refuses
/// non-fast-forwards, and its branch reflog only moved forward).
pub(crate) async fn two_devices_offline_then_sync(a: &TestEnv, b: &TestEnv, url: &str, bare: &Path) {
    git(bare, &["config", "receive.denyNonFastForwards", "true"]);
    git(bare, &["config", "core.logAllRefUpdates", "always"]);
    // A base memory and a knowledge file both devices will change.
    {
        let c = a.client().await;
        ok(&c, "capture_memory", capture("coach", "preferences", "喜欢早上训练", "早上训练")).await;
        ok(&c, "write_engram_file", json!({"name": "coach", "path": "knowledge/plan.md", "content": "# Plan\nline 1\nline 2\nline 3\n"}))
            .await;
    }
    run_ok(a, &["remote", "add", "coach", url]);
    let first = run_ok(a, &["sync", "coach"]);
    assert!(first.contains("pushed"), "{first}");
    run_ok(b, &["install", url]);
    assert_eq!(head(&a.pack("coach")), head(&b.pack("coach")));

    // Offline: both devices write at the same time, each through its own server.
    let (ca, cb) = tokio::join!(a.client(), b.client());
    let write_a = async {
        for i in 0..3 {
            ok(
                &ca,
                "capture_memory",
                capture("coach", "preferences", &format!("A 偏好 {i}"), &format!("A pref {i}")),
            )
            .await;
        }
        ok(&ca, "capture_memory", capture("coach", "facts", "A fact", "A fact")).await;
        ok(&ca, "correct_memory", json!({"name": "coach", "category": "preferences", "old_summary": "早上训练", "new_content": "喜欢清晨六点训练", "new_summary": "清晨六点训练"})).await;
        ok(&ca, "write_engram_file", json!({"name": "coach", "path": "knowledge/plan.md", "content": "# Plan\nline 1 from laptop\nline 2\nline 3\n"})).await;
    };
    let write_b = async {
        for i in 0..3 {
            ok(
                &cb,
                "capture_memory",
                capture("coach", "preferences", &format!("B 偏好 {i}"), &format!("B pref {i}")),
            )
            .await;
        }
        ok(&cb, "capture_memory", capture("coach", "facts", "B fact", "B fact")).await;
        ok(&cb, "correct_memory", json!({"name": "coach", "category": "preferences", "old_summary": "早上训练", "new_content": "喜欢晚上训练", "new_summary": "晚上训练"})).await;
        ok(&cb, "write_engram_file", json!({"name": "coach", "path": "knowledge/plan.md", "content": "# Plan\nline 1 from desktop\nline 2\nline 3\n"})).await;
    };
    tokio::join!(write_a, write_b);
    drop((ca, cb));
    let tip_a = head(&a.pack("coach"));
    let tip_b = head(&b.pack("coach"));

    // Sync A (push), B (merge + push), A (fast-forward).
    let sa = run_ok(a, &["sync", "coach"]);
    assert!(sa.contains("pushed"), "{sa}");
    let sb = run_ok(b, &["sync", "coach"]);
    assert!(sb.contains("merged"), "{sb}");
    assert!(sb.contains("memory conflicts: 1"), "{sb}");
    assert!(sb.contains("knowledge/plan.md"), "{sb}");
    let sa2 = run_ok(a, &["sync", "coach"]);
    assert!(sa2.contains("fast-forwarded"), "{sa2}");
    let result = head(&a.pack("coach"));
    assert_eq!(result, head(&b.pack("coach")));
    let remote_branch = branch(&a.pack("coach"));
    assert_eq!(result, git(bare, &["rev-parse", &remote_branch]).trim());
    // The server's branch only ever moved forward.
    let moves = git(bare, &["reflog", "show", "--format=%H", &format!("refs/heads/{remote_branch}")]);
    let moves: Vec<&str> = moves.lines().collect();
    assert!(moves.len() >= 3, "{moves:?}");
    for pair in moves.windows(2) {
        assert!(is_ancestor(bare, pair[1], pair[0]), "the server's branch went back: {moves:?}");
    }

    for env in [a, b] {
        let dir = env.pack("coach");
        // Nothing lost: both offline tips are in the result.
        assert!(is_ancestor(&dir, &tip_a, &result) && is_ancestor(&dir, &tip_b, &result));
        let index = index_summaries(env, "coach");
        let prefs = env.read("coach", "memory/preferences.md");
        for i in 0..3 {
            for who in ["A", "B"] {
                assert!(index.contains(&format!("{who} pref {i}")), "{index}");
                assert!(prefs.contains(&format!("{who} 偏好 {i}")), "{prefs}");
            }
        }
        let facts = env.read("coach", "memory/facts.md");
        assert!(facts.contains("A fact") && facts.contains("B fact"), "{facts}");
        // The memory corrected differently on both sides: both versions kept, conflict recorded.
        assert!(prefs.contains("喜欢清晨六点训练") && prefs.contains("喜欢晚上训练"), "{prefs}");
        assert!(!prefs.contains("喜欢早上训练\n"), "the old version is gone: {prefs}");
        let conflicts = env.read("coach", "memory/_conflicts.md");
        assert!(
            conflicts.contains("早上训练")
                && conflicts.contains("清晨六点训练")
                && conflicts.contains("晚上训练"),
            "{conflicts}"
        );
        // The hot index agrees with the full index.
        let hot = env.read("coach", "memory/_index.md");
        for line in hot.lines().filter(|l| l.starts_with("- `memory/")) {
            assert!(index.contains(line), "hot line not in the full index: {line}");
        }
        assert!(hot.contains("B pref 2") && hot.contains("A pref 2"), "{hot}");
        // The knowledge file: ours kept, theirs next to it.
        let plan = env.read("coach", "knowledge/plan.md");
        let copy = env.read("coach", "knowledge/plan.conflict-desktop.md");
        assert!(plan.contains("from desktop") && copy.contains("from laptop"), "{plan}\n{copy}");
        assert_no_conflict_markers(&dir);
        assert_lint_clean(env, "coach");
        assert_fsck(&dir);
        assert_clean(&dir);
    }
    // The merge is one commit with both tips as parents.
    let parents = git(&b.pack("coach"), &["rev-list", "--parents", "-n", "1", &result]);
    assert_eq!(parents.split_whitespace().count(), 3, "{parents}");

    // Memory tools keep working on the merged pack, on both devices.
    let c = b.client().await;
    ok(&c, "delete_memory", json!({"name": "coach", "category": "preferences", "summary": "晚上训练"})).await;
    let status = ok(&c, "load_engram", json!({"name": "coach"})).await;
    assert!(status.contains("清晨六点训练"), "{status}");
}

/// A ref lock held for a moment (git's own `gc` packing refs, a person's `git fetch`) is
/// waited for, not reported as a failed sync; one that stays held is never broken: a push the
/// remote took is still a push, and a fetch that cannot record what it brought fails, says
/// so, and leaves the lock where it is.
#[tokio::test]
async fn a_held_ref_lock_is_waited_for_and_never_broken() {
    let Some(daemon) = GitDaemon::start() else { return };
    let a = device("laptop");
    a.init("coach");
    let b = branch(&a.pack("coach"));
    let url = daemon.bare("coach", &b);
    run_ok(&a, &["remote", "add", "coach", &url]);
    run_ok(&a, &["sync", "coach"]);
    {
        let c = a.client().await;
        ok(&c, "capture_memory", capture("coach", "facts", "pushed past a lock", "lock")).await;
    }
    let lock = a.pack("coach").join(format!(".git/refs/remotes/origin/{b}.lock"));
    std::fs::create_dir_all(lock.parent().expect("a folder")).expect("mkdir");
    // Held for a moment: the sync waits, then fetches and pushes.
    std::fs::write(&lock, "").expect("take the lock");
    let released = {
        let lock = lock.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(600)); // the other program's moment
            std::fs::remove_file(&lock).expect("release the lock");
        })
    };
    let out = run_ok(&a, &["sync", "coach"]);
    released.join().expect("released");
    assert!(out.contains("pushed"), "{out}");
    assert_eq!(git(&daemon.repo("coach"), &["rev-parse", &b]).trim(), head(&a.pack("coach")));
    // Held throughout while pushing: the remote takes the push (a success); only the
    // remote-tracking ref waits for the next fetch, and the lock stays.
    {
        let c = a.client().await;
        ok(&c, "capture_memory", capture("coach", "facts", "pushed under a held lock", "held")).await;
    }
    std::fs::write(&lock, "").expect("take the lock");
    let out = run_ok(&a, &["sync", "coach"]);
    assert!(out.contains("pushed"), "{out}");
    assert_eq!(git(&daemon.repo("coach"), &["rev-parse", &b]).trim(), head(&a.pack("coach")));
    assert!(lock.exists(), "a lock another program holds is never broken");
    std::fs::remove_file(&lock).expect("release the lock");
    // Held throughout while the remote has news: the sync cannot record what it fetched, so
    // it fails with a message naming the lock, changes nothing and leaves the lock in place.
    let phone = device("phone");
    run_ok(&phone, &["install", &url]);
    {
        let c = phone.client().await;
        ok(&c, "capture_memory", capture("coach", "facts", "from the phone", "phone")).await;
    }
    assert!(run_ok(&phone, &["sync", "coach"]).contains("pushed"));
    let before = head(&a.pack("coach"));
    std::fs::write(&lock, "").expect("take the lock");
    let out = a.cli(&["sync", "coach"]);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(t.contains(&format!("refs/remotes/origin/{b}.lock")), "the message names the lock: {t}");
    assert!(lock.exists(), "a lock another program holds is never broken");
    assert_eq!(head(&a.pack("coach")), before);
    std::fs::remove_file(&lock).expect("release the lock");
    run_ok(&a, &["sync", "coach"]);
    assert!(a.read("coach", "memory/facts.md").contains("from the phone"));
}

#[tokio::test]
async fn a_rejected_push_keeps_local_commits_and_is_reported() {
    let Some(daemon) = GitDaemon::start() else { return };
    let a = device("laptop");
    a.init("coach");
    let url = daemon.bare("coach", &branch(&a.pack("coach")));
    run_ok(&a, &["remote", "add", "coach", &url]);
    run_ok(&a, &["sync", "coach"]);
    {
        let c = a.client().await;
        ok(&c, "capture_memory", capture("coach", "facts", "kept locally", "kept locally")).await;
    }
    let local = head(&a.pack("coach"));
    // The remote moves while our push is in flight: another device's commit lands first.
    let hook = daemon.repo("coach").join("hooks/pre-receive");
    std::fs::write(
        &hook,
        "#!/bin/sh\nread old new ref\nunset GIT_QUARANTINE_PATH GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES\nexport GIT_AUTHOR_NAME=other GIT_AUTHOR_EMAIL=other@localhost GIT_COMMITTER_NAME=other GIT_COMMITTER_EMAIL=other@localhost\nc=$(git commit-tree -p \"$old\" -m 'another device' \"$old^{tree}\")\ngit update-ref \"$ref\" \"$c\" \"$old\"\nexit 0\n",
    )
    .expect("write hook");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let out = a.cli(&["sync", "coach"]);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(t.contains("REJECTED") && t.contains("local commits are kept"), "{t}");
    assert_eq!(head(&a.pack("coach")), local, "local commits stay");
    assert!(a.read("coach", "memory/facts.md").contains("kept locally"));
    let c = a.client_with(&["--tools", "all"]).await;
    let status = ok(&c, "sync_status", json!({"name": "coach"})).await;
    assert!(status.contains("ahead 1") && status.contains("REJECTED"), "{status}");
    drop(c);
    // Once the remote stops moving, the next sync merges the other commit and pushes.
    std::fs::remove_file(&hook).expect("rm hook");
    let again = run_ok(&a, &["sync", "coach"]);
    assert!(again.contains("pushed"), "{again}");
    assert!(is_ancestor(&a.pack("coach"), &local, &head(&a.pack("coach"))));
}

#[tokio::test]
async fn sync_counts_every_commit_it_pushes() {
    let Some(daemon) = GitDaemon::start() else { return };
    let a = device("laptop");
    a.init("coach");
    async fn capture_n(env: &TestEnv, range: std::ops::Range<usize>) {
        let c = env.client().await;
        for i in range {
            ok(&c, "capture_memory", capture("coach", "log", &format!("entry {i}"), &format!("entry {i}")))
                .await;
        }
        c.close().await.expect("close");
    }
    capture_n(&a, 0..4).await;
    let all = commit_count(&a.pack("coach"));
    assert!(all >= 5, "{all}");
    let url = daemon.bare("coach", &branch(&a.pack("coach")));
    run_ok(&a, &["remote", "add", "coach", &url]);
    let first = run_ok(&a, &["sync", "coach"]);
    assert!(first.contains(&format!("pushed {all} commit(s)")), "an empty remote gets all {all}: {first}");
    capture_n(&a, 4..7).await;
    let again = run_ok(&a, &["sync", "coach"]);
    assert!(again.contains("pushed 3 commit(s)"), "{again}");
    assert_eq!(
        git(&daemon.repo("coach"), &["rev-list", "--count", &branch(&a.pack("coach"))]).trim(),
        (all + 3).to_string()
    );
}

/// The working tree's files (not `.git`), with their contents.
fn tree_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            if e.file_name() == ".git" {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).expect("inside").display().to_string();
                out.push((rel, std::fs::read(&p).expect("read")));
            }
        }
    }
    out.sort();
    out
}

/// Someone pushes a commit with plain git (not engram) that adds a credential.
fn push_a_leak(daemon: &GitDaemon, url: &str, branch: &str, key: &str) -> String {
    push_around_engram(daemon, url, branch, "knowledge/leak.md", &|f| {
        std::fs::write(f, format!("# Deploy\n\naws key {key}\n"))
    })
}

/// Someone pushes a commit with plain git (not engram) that adds the file `path`, written
/// by `write`; returns the commit's id.
fn push_around_engram(
    daemon: &GitDaemon,
    url: &str,
    branch: &str,
    path: &str,
    write: &dyn Fn(&Path) -> std::io::Result<()>,
) -> String {
    let work = daemon.base.join(format!("elsewhere-{}", path.replace('/', "-")));
    let gitc = |args: &[&str]| {
        let out = git_command_as("someone", "someone@example.invalid").args(args).output().expect("git");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let w = work.display().to_string();
    gitc(&["clone", "-q", url, &w]);
    write(&work.join(path)).expect("write");
    gitc(&["-C", &w, "add", path]);
    gitc(&["-C", &w, "commit", "-qm", "notes from the deploy"]);
    gitc(&["-C", &w, "push", "-q", "origin", &format!("HEAD:{branch}")]);
    gitc(&["-C", &w, "rev-parse", "HEAD"])
}

#[tokio::test]
async fn a_credential_pushed_around_engram_is_refused_at_sync() {
    let Some(daemon) = GitDaemon::start() else { return };
    let a = device("laptop");
    a.init("coach");
    let pack = a.pack("coach");
    let url = daemon.bare("coach", &branch(&pack));
    run_ok(&a, &["remote", "add", "coach", &url]);
    run_ok(&a, &["sync", "coach"]);
    let key = ["AKIA", "Q3EXAMPLEKEY7Z2W"].concat();
    let leak = push_a_leak(&daemon, &url, &branch(&pack), &key);
    let short = &leak[..7];
    let check_refused = |what: &str| {
        let (before_head, before_files) = (head(&pack), tree_files(&pack));
        let out = a.cli(&["sync", "coach"]);
        let t = text(&out);
        assert!(!out.status.success(), "{what}: sync succeeded:\n{t}");
        assert!(
            t.contains(&format!("{short}:knowledge/leak.md line 3")),
            "{what}: names commit, file, line:\n{t}"
        );
        assert!(t.contains("AWS access key id") && !t.contains(&key), "{what}: masked:\n{t}");
        assert!(t.contains("engram purge") && t.contains("nothing was merged"), "{what}: how to clean:\n{t}");
        assert_eq!(head(&pack), before_head, "{what}: HEAD moved");
        assert_eq!(tree_files(&pack), before_files, "{what}: the working tree changed");
        assert!(!is_ancestor(&pack, &leak, "HEAD"), "{what}: the secret is reachable from HEAD");
        assert_clean(&pack);
        t
    };
    // HEAD is behind the remote: the fast-forward is refused.
    check_refused("fast-forward");
    // Diverged (a local write meanwhile): the merge is refused too.
    {
        let c = a.client_with(&["--tools", "all"]).await;
        ok(&c, "capture_memory", capture("coach", "facts", "kept locally", "kept locally")).await;
        let status = ok(&c, "sync_status", json!({"name": "coach"})).await;
        assert!(status.contains("knowledge/leak.md line 3") && status.contains("engram purge"), "{status}");
    }
    check_refused("merge");
    assert_fsck(&pack);
}

/// A file over the pack file limit pushed with plain git: sync refuses it by its object
/// header (never inflating it), names commit and path, and changes nothing.
#[test]
fn a_file_over_the_limit_pushed_around_engram_is_refused_at_sync() {
    let Some(daemon) = GitDaemon::start() else { return };
    let a = device("laptop");
    a.init("coach");
    let pack = a.pack("coach");
    let url = daemon.bare("coach", &branch(&pack));
    run_ok(&a, &["remote", "add", "coach", &url]);
    run_ok(&a, &["sync", "coach"]);
    let big = push_around_engram(&daemon, &url, &branch(&pack), "knowledge/big.md", &|f| {
        std::fs::File::create(f)?.set_len(100 << 20)
    });
    let before = head(&pack);
    let out = a.cli(&["sync", "coach"]);
    let t = text(&out);
    assert!(!out.status.success(), "sync succeeded:\n{t}");
    assert!(
        t.contains(&format!("remote's commit {} adds it with 104857600 bytes", &big[..7]))
            && t.contains("knowledge/big.md"),
        "{t}"
    );
    assert_eq!(head(&pack), before, "HEAD moved");
    assert!(!pack.join("knowledge/big.md").exists());
    assert_clean(&pack);
}

#[test]
fn sync_without_a_remote_is_a_clear_error() {
    let env = TestEnv::new();
    env.init("coach");
    let out = env.cli(&["sync", "coach"]);
    assert!(!out.status.success());
    let t = text(&out);
    assert!(t.contains("no remote") && t.contains("engram remote add coach"), "{t}");
    let out = env.cli(&["remote", "list", "coach"]);
    assert!(text(&out).contains("no remote"));
}

#[test]
fn remotes_can_be_added_listed_and_removed() {
    let env = TestEnv::new();
    env.init("coach");
    let peer = env.dir.path().join("peer.git");
    git(env.dir.path(), &["init", "--bare", "-q", &peer.display().to_string()]);
    run_ok(&env, &["remote", "add", "coach", &peer.display().to_string()]);
    let list = run_ok(&env, &["remote", "list", "coach"]);
    assert!(list.starts_with("origin\t") && list.contains("peer.git"), "{list}");
    // A local path works as a remote too.
    let s = run_ok(&env, &["sync", "--all"]);
    assert!(s.contains("pushed"), "{s}");
    run_ok(&env, &["remote", "remove", "coach"]);
    assert!(!run_ok(&env, &["remote", "list", "coach"]).contains("origin\t"));
}

#[tokio::test]
async fn serve_pulls_on_start_and_pushes_after_writes() {
    let Some(daemon) = GitDaemon::start() else { return };
    let a = device("laptop");
    let b = device("desktop");
    a.init("coach");
    let url = daemon.bare("coach", &branch(&a.pack("coach")));
    run_ok(&a, &["remote", "add", "coach", &url]);
    run_ok(&a, &["sync", "coach"]);
    run_ok(&b, &["install", &url]);
    {
        let c = b.client().await;
        ok(&c, "capture_memory", capture("coach", "facts", "from desktop", "from desktop")).await;
    }
    run_ok(&b, &["sync", "coach"]);

    let c = a.client_with(&["--tools", "engram,sync", "--sync-on-start"]).await;
    let names = c.tool_names().await.expect("tools");
    assert!(names.iter().any(|n| n == "sync_status"));
    // The pull runs in the background; tool calls are answered meanwhile.
    ok(&c, "ping", json!({})).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = ok(&c, "sync_status", json!({"name": "coach"})).await;
        if status.contains("fast-forwarded") {
            break;
        }
        assert!(Instant::now() < deadline, "no background pull: {status}");
        tokio::time::sleep(Duration::from_millis(50)).await; // polling, not timing
    }
    assert!(a.read("coach", "memory/facts.md").contains("from desktop"));
    // A write is pushed in the background.
    ok(&c, "capture_memory", capture("coach", "facts", "from laptop", "from laptop")).await;
    let local = head(&a.pack("coach"));
    let remote_branch = branch(&a.pack("coach"));
    loop {
        let remote = git(&daemon.repo("coach"), &["rev-parse", &remote_branch]);
        if remote.trim() == local {
            break;
        }
        assert!(Instant::now() < deadline, "the write was not pushed");
        tokio::time::sleep(Duration::from_millis(50)).await; // polling, not timing
    }
}

/// `--sync-interval` pulls on time even while a client calls tools faster than the interval
/// (every call asks the worker to push; with nothing to push that must not hold back the pull).
#[tokio::test]
async fn the_interval_pull_runs_while_a_client_keeps_calling() {
    let a = device("laptop");
    let b = device("desktop");
    a.init("coach");
    let peer = a.dir.path().join("peer.git");
    git(a.dir.path(), &["init", "--bare", "-q", &peer.display().to_string()]);
    let url = peer.display().to_string();
    run_ok(&a, &["remote", "add", "coach", &url]);
    run_ok(&a, &["sync", "coach"]);
    run_ok(&b, &["install", &url]);
    let c = a.client_with(&["--tools", "engram,sync", "--sync-interval", "1"]).await;
    {
        let d = b.client().await;
        ok(&d, "capture_memory", capture("coach", "facts", "written on the desktop", "desktop")).await;
    }
    run_ok(&b, &["sync", "coach"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    // A read every 50 ms: far more often than the interval.
    while !a.read("coach", "memory/facts.md").contains("written on the desktop") {
        ok(&c, "sync_status", json!({"name": "coach"})).await;
        assert!(Instant::now() < deadline, "no pull while the client kept calling");
        tokio::time::sleep(Duration::from_millis(50)).await; // polling, not timing
    }
}

/// Every toolset's writes are pushed in the background, not only the Engram tools'
/// (the notes, workspace, personal and graph tools run through the same wrapper).
#[tokio::test]
async fn serve_pushes_after_a_notes_write() {
    let env = TestEnv::new();
    env.init("notes");
    let peer = env.dir.path().join("peer.git");
    git(env.dir.path(), &["init", "--bare", "-q", &peer.display().to_string()]);
    run_ok(&env, &["remote", "add", "notes", &peer.display().to_string()]);
    run_ok(&env, &["sync", "notes"]);
    let c = env.client_with(&["--tools", "notes", "--notes-pack", "notes", "--sync-interval", "86400"]).await;
    let stored = call(&c, "store", json!({"content": "espresso", "title": "coffee"})).await;
    assert!(!stored.is_error, "{}", stored.text);
    let local = head(&env.pack("notes"));
    let remote_branch = branch(&env.pack("notes"));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let remote = git(&peer, &["rev-parse", &remote_branch]);
        if remote.trim() == local {
            break;
        }
        assert!(Instant::now() < deadline, "the notes write was not pushed");
        tokio::time::sleep(Duration::from_millis(50)).await; // polling, not timing
    }
}

/// The Claude Code SessionEnd hook answers at once and pushes unpushed commits from a
/// detached `engram sync` (hooks/README.md).
#[tokio::test]
async fn the_session_end_hook_pushes_in_the_background() {
    let env = TestEnv::new();
    env.init("coach");
    let peer = env.dir.path().join("peer.git");
    git(env.dir.path(), &["init", "--bare", "-q", &peer.display().to_string()]);
    run_ok(&env, &["remote", "add", "coach", &peer.display().to_string()]);
    run_ok(&env, &["sync", "coach"]);
    {
        let c = env.client().await;
        ok(&c, "capture_memory", capture("coach", "facts", "after the last sync", "after")).await;
    }
    let local = head(&env.pack("coach"));
    let remote_branch = branch(&env.pack("coach"));
    assert_ne!(git(&peer, &["rev-parse", &remote_branch]).trim(), local);
    let answer = run_ok(&env, &["hook", "session-end"]);
    assert_eq!(answer.trim(), r#"{"suppressOutput":true}"#);
    let deadline = Instant::now() + Duration::from_secs(60);
    while git(&peer, &["rev-parse", &remote_branch]).trim() != local {
        assert!(Instant::now() < deadline, "the session-end hook did not push");
        tokio::time::sleep(Duration::from_millis(50)).await; // polling, not timing
    }
}

#[tokio::test]
async fn the_default_toolset_stays_small() {
    let env = TestEnv::new();
    let c = env.client().await;
    let names = c.tool_names().await.expect("tools");
    assert!(names.len() <= 16, "{names:?}");
    assert!(!names.iter().any(|n| n == "sync_status"));
}
