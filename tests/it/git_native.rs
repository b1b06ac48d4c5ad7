//! Engram as one more git client: what a person keeps in a pack's repository with the
//! real git CLI — stashes, linked worktrees, unreachable objects inside git's grace period,
//! a multi-pack-index, their index settings (split index, index version 4, the untracked
//! cache), a `git commit` holding `index.lock` while its editor is open — survives engram's
//! writes, `engram gc` and `engram purge`; git's own maintenance beside two servers loses no
//! acknowledged write; and no engram process outlives the server that started it.
//!
//! Every git command of "the person" runs with its own identity and no system or global
//! configuration ([`person`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::*;

/// `git -C dir` as the person runs it: their identity, no system or global configuration
/// ([`git_command_as`]). Automatic gc and maintenance run in the foreground, so no git
/// process of the person outlives its command.
fn person(dir: &Path) -> Command {
    let mut cmd = git_command_as("Person", "person@example.com");
    cmd.arg("-C")
        .arg(dir)
        .args(["-c", "gc.autoDetach=false", "-c", "maintenance.autoDetach=false"])
        .stdin(Stdio::null());
    cmd
}

/// Runs the person's `git args…` in `dir`: its output, whatever the exit status.
fn pgit_out(dir: &Path, args: &[&str]) -> Output {
    person(dir).args(args).output().expect("run git")
}

/// Runs the person's `git args…` in `dir`, asserting it succeeds; its standard output.
fn pgit(dir: &Path, args: &[&str]) -> String {
    let out = pgit_out(dir, args);
    assert!(
        out.status.success(),
        "git {args:?} in {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `git fsck --full --strict` in `dir`: `Err` with git's standard error when it fails. A
/// packing job of a live (or just exited) server is waited for first, as `assert_fsck` does.
fn fsck_full(dir: &Path) -> Result<(), String> {
    let out = pgit_out(dir, &["fsck", "--full", "--strict", "--no-progress"]);
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "git fsck --full --strict failed in {}: {}\n{}",
            dir.display(),
            first_lines(&out.stdout),
            first_lines(&out.stderr)
        ))
    }
}

fn assert_fsck_full(dir: &Path) {
    if let Err(e) = fsck_full(dir) {
        panic!("{e}");
    }
}

/// A capture's text: fixed-width numbers, so no text is a part of another.
fn text(tag: &str, i: usize) -> String {
    format!("{tag} capture {i:04} done")
}

/// The arguments of one `capture_memory` of `content` into pack `pack`.
fn capture_args(pack: &str, content: &str) -> serde_json::Value {
    json!({"name": pack, "category": "notes", "content": content, "summary": content})
}

/// Captures `content` into `pack`, asserting the server acknowledged it.
async fn capture(client: &StdioClient, pack: &str, content: &str) {
    ok(client, "capture_memory", capture_args(pack, content)).await;
}

/// Every file under `memory/` in HEAD, concatenated (through `git cat-file --batch`).
fn head_memory_text(dir: &Path) -> String {
    use std::io::Write as _;
    let tree = pgit(dir, &["ls-tree", "-r", "HEAD", "--", "memory"]);
    let ids: String = tree
        .lines()
        .filter_map(|l| {
            let (meta, _path) = l.split_once('\t')?;
            let mut parts = meta.split(' ');
            let (_mode, kind, id) = (parts.next()?, parts.next()?, parts.next()?);
            (kind == "blob").then(|| format!("{id}\n"))
        })
        .collect();
    let mut child = person(dir)
        .args(["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("git cat-file");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || stdin.write_all(ids.as_bytes()));
    let out = child.wait_with_output().expect("git cat-file");
    writer.join().expect("writer").expect("write ids");
    assert!(out.status.success(), "git cat-file --batch failed in {}", dir.display());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The texts of `texts` HEAD's memory files do not hold.
fn missing_from_head(dir: &Path, texts: &[String]) -> Vec<String> {
    let head = head_memory_text(dir);
    texts.iter().filter(|t| !head.contains(t.as_str())).cloned().collect()
}

/// Asserts every text of `acknowledged` is in HEAD's memory files.
fn assert_in_head(dir: &Path, acknowledged: &[String]) {
    let missing = missing_from_head(dir, acknowledged);
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged captures missing from HEAD in {}: {missing:?}\nlast commits:\n{}",
        missing.len(),
        acknowledged.len(),
        dir.display(),
        pgit(dir, &["log", "-12", "--format=%h %an %s (%p)"])
    );
}

/// Appends a line to a tracked file of the pack (a person's edit of a non-memory file).
fn edit(dir: &Path, rel: &str, line: &str) {
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new().append(true).open(dir.join(rel)).expect("open tracked file");
    writeln!(f, "{line}").expect("edit");
}

/// The first lines of a command's output, for messages (git repeats one error per pack).
fn first_lines(bytes: &[u8]) -> String {
    const KEEP: usize = 12;
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    let more = lines.len().saturating_sub(KEEP);
    let mut shown = lines[..lines.len().min(KEEP)].join("\n");
    if more > 0 {
        shown.push_str(&format!("\n… ({more} more lines)"));
    }
    shown
}

/// Stderr and stdout of an engram CLI run, for messages.
fn output_text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// `git stash list` with each entry's commit id.
fn stash_list(dir: &Path) -> String {
    pgit(dir, &["stash", "list", "--format=%gd %H %gs"])
}

/// What must hold after `engram gc` and after `engram purge` in
/// [`gc_and_purge_keep_stashes_and_worktrees`]; each broken promise is pushed on `problems`.
fn check_kept(pack: &Path, wt: &Path, stashes: &str, wt_head: &str, when: &str, problems: &mut Vec<String>) {
    let list = pgit_out(pack, &["stash", "list", "--format=%gd %H %gs"]);
    let list_text = String::from_utf8_lossy(&list.stdout);
    if !list.status.success() || list_text != stashes {
        problems.push(format!(
            "{when}: `git stash list` changed (exit {:?}):\nbefore:\n{stashes}after:\n{list_text}{}",
            list.status.code(),
            String::from_utf8_lossy(&list.stderr)
        ));
    }
    for i in 0..2 {
        let show = pgit_out(pack, &["stash", "show", "-p", &format!("stash@{{{i}}}")]);
        if !show.status.success() {
            problems.push(format!(
                "{when}: `git stash show -p stash@{{{i}}}` failed: {}",
                String::from_utf8_lossy(&show.stderr)
            ));
        }
    }
    let head = pgit_out(wt, &["rev-parse", "HEAD"]);
    if !head.status.success() || String::from_utf8_lossy(&head.stdout).trim() != wt_head {
        problems.push(format!(
            "{when}: the worktree's HEAD does not resolve to {wt_head}: {}{}",
            String::from_utf8_lossy(&head.stdout),
            String::from_utf8_lossy(&head.stderr)
        ));
    }
    let log = pgit_out(wt, &["log", "--format=%h %s"]);
    if !log.status.success() {
        problems.push(format!(
            "{when}: `git log` in the worktree failed: {}",
            String::from_utf8_lossy(&log.stderr)
        ));
    }
    if let Err(e) = fsck_full(pack) {
        problems.push(format!("{when}: {e}"));
    }
}

/// A person's stashes and linked worktree (and an unreachable loose object younger than
/// git's two-week grace period) outlive `engram gc` and `engram purge --text`: git keeps
/// the commits of every stash entry (reachable only from the stash's reflog), of every
/// worktree's HEAD and index, and unreachable objects younger than `gc.pruneExpire`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gc_and_purge_keep_stashes_and_worktrees() {
    let env = TestEnv::with_real_clock();
    env.init("p");
    let pack = env.pack("p");
    let client = env.client().await;
    let mut acknowledged: Vec<String> = (0..5).map(|i| text("before stash", i)).collect();
    for t in &acknowledged {
        capture(&client, "p", t).await;
    }
    // Two stashes of edits of tracked non-memory files.
    for (i, rel) in ["role.md", "knowledge/_index.md"].into_iter().enumerate() {
        edit(&pack, rel, &format!("the person's unfinished edit {i}"));
        pgit(&pack, &["stash", "push", "-q", "-m", &format!("person stash {i}")]);
    }
    let stashes = stash_list(&pack);
    assert_eq!(stashes.lines().count(), 2, "two stashes:\n{stashes}");
    // A linked worktree with a commit of its own (its HEAD is detached: only the worktree
    // names that commit).
    let wt = env.dir.path().join("wt");
    pgit(&pack, &["worktree", "add", "-q", "--detach", &wt.display().to_string()]);
    edit(&wt, "role.md", "the person's edit in their worktree");
    pgit(&wt, &["commit", "-q", "-a", "-m", "person: commit in a linked worktree"]);
    let wt_head = pgit(&wt, &["rev-parse", "HEAD"]).trim().to_owned();
    // An unreachable loose object, just written (well inside git's grace period).
    let blob = env.dir.path().join("unreachable.txt");
    std::fs::write(&blob, "an object the person wrote and has not referenced yet\n").expect("blob");
    let loose = pgit(&pack, &["hash-object", "-w", &blob.display().to_string()]).trim().to_owned();
    // Captures after the stashes (the purged text only in them).
    const PURGED: &str = "zebra quokka phrase to purge";
    capture(&client, "p", &format!("{} with {PURGED}", text("purged", 0))).await;
    for i in 0..5 {
        let t = text("after stash", i);
        capture(&client, "p", &t).await;
        acknowledged.push(t);
    }
    client.close().await.expect("close");
    assert_in_head(&pack, &acknowledged);
    assert_eq!(stash_list(&pack), stashes, "captures leave the stashes alone");

    let mut problems = Vec::new();
    let gc = env.cli(&["gc", "p"]);
    if !gc.status.success() {
        problems.push(format!("engram gc failed: {}", output_text(&gc)));
    }
    check_kept(&pack, &wt, &stashes, &wt_head, "after engram gc", &mut problems);
    let exists = pgit_out(&pack, &["cat-file", "-e", &loose]);
    if !exists.status.success() {
        problems.push(format!(
            "after engram gc: the unreachable loose object {loose} (seconds old, inside git's two-week grace period) is gone: {}",
            String::from_utf8_lossy(&exists.stderr)
        ));
    }

    let purge = env.cli(&["purge", "p", PURGED, "--text", "--yes"]);
    if purge.status.success() {
        if head_memory_text(&pack).contains(PURGED) {
            problems.push("engram purge --text left the text in HEAD".into());
        }
        let missing = missing_from_head(&pack, &acknowledged);
        if !missing.is_empty() {
            problems.push(format!("after engram purge: captures missing from HEAD: {missing:?}"));
        }
    } else {
        problems.push(format!("engram purge --text failed: {}", output_text(&purge)));
    }
    check_kept(&pack, &wt, &stashes, &wt_head, "after engram purge", &mut problems);

    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n\n"));
}

/// The multi-pack-index of `dir`'s repository.
fn midx(dir: &Path) -> PathBuf {
    dir.join(".git/objects/pack/multi-pack-index")
}

/// A multi-pack-index the person wrote (`git multi-pack-index write`) stays valid through
/// captures (and their background packing) and `engram gc`: engram never removes a pack
/// the midx names without rewriting or removing the midx.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn midx_survives_captures_and_gc() {
    const CAPTURES: usize = 400;
    let env = TestEnv::with_real_clock();
    env.init("m");
    let pack = env.pack("m");
    let client = env.client().await;
    let mut acknowledged: Vec<String> = (0..10).map(|i| text("before midx", i)).collect();
    for t in &acknowledged {
        capture(&client, "m", t).await;
    }
    pgit(&pack, &["repack", "-d", "-q"]);
    pgit(&pack, &["multi-pack-index", "write"]);
    assert!(midx(&pack).exists(), "git wrote a multi-pack-index");
    for i in 0..CAPTURES {
        let t = text("midx", i);
        let r = call(&client, "capture_memory", capture_args("m", &t)).await;
        assert!(!r.is_error, "capture {i} after the person's multi-pack-index: {}", r.text);
        acknowledged.push(t);
    }
    client.close().await.expect("close");
    // Checked once the server's packing is done, before engram gc, to tell the two apart.
    let mut problems = Vec::new();
    if let Some(e) = midx_problem(&pack) {
        problems.push(format!("after {CAPTURES} captures (before engram gc): {e}"));
    }
    let gc = env.cli(&["gc", "m"]);
    if !gc.status.success() {
        problems.push(format!("engram gc failed: {}", output_text(&gc)));
    }
    if let Some(e) = midx_problem(&pack) {
        problems.push(format!("after engram gc: {e}"));
    }
    if let Err(e) = fsck_full(&pack) {
        problems.push(format!("after engram gc: {e}"));
    }
    let missing = missing_from_head(&pack, &acknowledged);
    if !missing.is_empty() {
        problems.push(format!("{} acknowledged captures missing from HEAD: {missing:?}", missing.len()));
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n\n"));
}

/// `git multi-pack-index verify` of `dir`, when the multi-pack-index exists: what it said
/// when it failed.
fn midx_problem(dir: &Path) -> Option<String> {
    if !midx(dir).exists() {
        return None;
    }
    let verify = pgit_out(dir, &["multi-pack-index", "verify", "--no-progress"]);
    (!verify.status.success()).then(|| {
        format!(
            "git multi-pack-index verify failed: {}\n{}",
            first_lines(&verify.stdout),
            first_lines(&verify.stderr)
        )
    })
}

/// The 4-byte version of the git index of `dir` (header bytes 4..8, big-endian).
fn index_version(dir: &Path) -> u32 {
    let bytes = std::fs::read(dir.join(".git/index")).expect("read .git/index");
    assert!(bytes.len() >= 12 && &bytes[..4] == b"DIRC", "a git index");
    u32::from_be_bytes(bytes[4..8].try_into().expect("4 bytes"))
}

/// `git config <key>` in `dir` (trimmed; empty when unset).
fn config(dir: &Path, key: &str) -> String {
    String::from_utf8_lossy(&pgit_out(dir, &["config", key]).stdout).trim().to_owned()
}

/// A person's index settings are kept: `core.splitIndex` (captures land, or every one is
/// refused with a message naming `core.splitIndex` that blames no damage), index version 4
/// and the untracked cache (captures land). Afterwards the settings are still there, the
/// index is still version 4, `git status` works and shows nothing, and fsck is clean.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn person_index_settings_are_kept() {
    const PER_PACK: usize = 3;
    let env = TestEnv::with_real_clock();
    for name in ["split", "v4", "untracked"] {
        env.init(name);
    }
    let (split, v4, untracked) = (env.pack("split"), env.pack("v4"), env.pack("untracked"));
    pgit(&split, &["config", "core.splitIndex", "true"]);
    pgit(&split, &["update-index", "--split-index"]);
    assert!(
        std::fs::read_dir(split.join(".git"))
            .expect("git dir")
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("sharedindex.")),
        "git split the index"
    );
    pgit(&v4, &["update-index", "--index-version", "4"]);
    assert_eq!(index_version(&v4), 4, "git wrote a version 4 index");
    pgit(&untracked, &["config", "core.untrackedCache", "true"]);
    pgit(&untracked, &["update-index", "--untracked-cache"]);
    pgit(&untracked, &["status", "--porcelain"]);

    let client = env.client().await;
    let mut problems = Vec::new();
    for name in ["split", "v4", "untracked"] {
        let dir = env.pack(name);
        let mut acknowledged = Vec::new();
        let mut refused = Vec::new();
        for i in 0..PER_PACK {
            let t = text(name, i);
            let r = call(&client, "capture_memory", capture_args(name, &t)).await;
            if r.is_error {
                refused.push((t, r.text));
            } else {
                acknowledged.push(t);
            }
        }
        let missing = missing_from_head(&dir, &acknowledged);
        if !missing.is_empty() {
            problems.push(format!("{name}: acknowledged captures missing from HEAD: {missing:?}"));
        }
        if name == "split" && acknowledged.is_empty() {
            // Refusing is allowed for a split index: every capture, with a message that names
            // the setting and does not send the person to repair a pack that is fine.
            for (t, msg) in &refused {
                let lower = msg.to_lowercase();
                if !msg.contains("core.splitIndex") || lower.contains("damage") || lower.contains("doctor") {
                    problems.push(format!(
                        "split: capture {t:?} refused with a message that does not name core.splitIndex or blames damage: {msg}"
                    ));
                }
            }
            let written = refused.iter().filter(|(t, _)| head_memory_text(&dir).contains(t.as_str())).count();
            if written > 0 {
                problems.push(format!("split: {written} refused captures were written anyway"));
            }
        } else if !refused.is_empty() {
            problems.push(format!(
                "{name}: {} of {PER_PACK} captures refused{}: {:?}",
                refused.len(),
                if name == "split" { " (some acknowledged: refusing must be all or nothing)" } else { "" },
                refused
            ));
        }
    }
    client.close().await.expect("close");

    if config(&split, "core.splitIndex") != "true" {
        problems.push(format!("split: core.splitIndex is now {:?}", config(&split, "core.splitIndex")));
    }
    if index_version(&v4) != 4 {
        problems.push(format!("v4: the index is now version {}", index_version(&v4)));
    }
    if config(&untracked, "core.untrackedCache") != "true" {
        problems.push(format!(
            "untracked: core.untrackedCache is now {:?}",
            config(&untracked, "core.untrackedCache")
        ));
    }
    for name in ["split", "v4", "untracked"] {
        let dir = env.pack(name);
        let status = pgit_out(&dir, &["status", "--porcelain"]);
        if !status.status.success() {
            problems.push(format!("{name}: git status failed: {}", String::from_utf8_lossy(&status.stderr)));
        } else if !status.stdout.is_empty() {
            problems.push(format!(
                "{name}: git status shows changes after the captures:\n{}",
                String::from_utf8_lossy(&status.stdout)
            ));
        }
        if let Err(e) = fsck_full(&dir) {
            problems.push(format!("{name}: {e}"));
        }
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n\n"));
}

/// The file at `path` (device and inode), if there is one.
#[cfg(unix)]
fn lock_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::symlink_metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// How long the person's editor stays open (their `git commit` holds `index.lock` all along).
const EDITOR_HOLDS: Duration = Duration::from_secs(30);

/// Most captures tried while the person's editor is open (one every ~200 ms).
const CAPTURES_WHILE_HELD: usize = 200;

/// The person's `git commit -a`, its editor open for [`EDITOR_HOLDS`]: the commit holds
/// `index.lock` from before the editor starts until after it ends. Captures meanwhile either
/// succeed or answer that the pack is busy (naming `index.lock`) having written nothing;
/// the person's commit succeeds, and every acknowledged capture and the person's commit are
/// in the history afterwards. (Engram used to take a lock held for 10 s as abandoned.)
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_commit_holding_index_lock_succeeds() {
    use std::os::unix::fs::PermissionsExt as _;
    const MESSAGE: &str = "person: a commit made while engram captures";
    let env = TestEnv::with_real_clock();
    env.init("p");
    let pack = env.pack("p");
    let client = env.client().await;
    let mut acknowledged: Vec<String> = (0..3).map(|i| text("before commit", i)).collect();
    for t in &acknowledged {
        capture(&client, "p", t).await;
    }
    let editor = env.dir.path().join("slow-editor.sh");
    std::fs::write(
        &editor,
        format!("#!/bin/sh\nsleep {}\nprintf '%s\\n' '{MESSAGE}' > \"$1\"\n", EDITOR_HOLDS.as_secs()),
    )
    .expect("editor");
    std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    edit(&pack, "role.md", "the person's edit, committed with git commit -a");
    let mut commit = person(&pack)
        .args(["commit", "-a"])
        .env("GIT_EDITOR", &editor)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("git commit");
    let lock = pack.join(".git/index.lock");
    let started = Instant::now();
    while !lock.exists() {
        assert!(commit.try_wait().expect("try_wait").is_none(), "git commit ended before it took index.lock");
        assert!(started.elapsed() < Duration::from_secs(60), "git commit never took index.lock");
        std::thread::sleep(Duration::from_millis(5));
    }
    // git took the lock before it started the editor, which sleeps EDITOR_HOLDS: until then
    // the lock is the person's, and only another program can remove or replace it.
    let held_since = Instant::now();
    let lock_file = lock_identity(&lock).expect("index.lock");
    let mut broken = None;
    let mut refused = Vec::new();
    let mut wrong = Vec::new();
    let mut tried = 0;
    while tried < CAPTURES_WHILE_HELD && commit.try_wait().expect("try_wait").is_none() {
        let t = text("while held", tried);
        tried += 1;
        let r = call(&client, "capture_memory", capture_args("p", &t)).await;
        if broken.is_none() && held_since.elapsed() < EDITOR_HOLDS && lock_identity(&lock) != Some(lock_file)
        {
            broken = Some(format!(
                "the person's index.lock was removed or replaced {:.1?} into their editor's {EDITOR_HOLDS:?}, by capture {tried}",
                held_since.elapsed()
            ));
        }
        if !r.is_error {
            acknowledged.push(t);
        } else if r.text.to_lowercase().contains("busy") && r.text.contains("index.lock") {
            refused.push(t);
        } else {
            wrong.push((t, r.text));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let out = commit.wait_with_output().expect("git commit");
    for i in 0..3 {
        let t = text("after commit", i);
        capture(&client, "p", &t).await;
        acknowledged.push(t);
    }
    client.close().await.expect("close");
    eprintln!(
        "while the editor held index.lock: {tried} captures tried, {} acknowledged, {} refused as busy, {} other errors",
        acknowledged.len() - 6,
        refused.len(),
        wrong.len()
    );
    assert!(tried > 0, "captures were tried while the person's commit held index.lock");
    assert!(broken.is_none(), "{}", broken.unwrap_or_default());
    assert!(
        out.status.success(),
        "the person's git commit failed ({:?}): {}{}\nlast commits:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        pgit(&pack, &["log", "-8", "--format=%h %an %s (%p)"])
    );
    assert!(wrong.is_empty(), "captures answered neither success nor busy/index.lock: {wrong:?}");
    assert_in_head(&pack, &acknowledged);
    let written = missing_from_head(&pack, &refused);
    assert_eq!(written.len(), refused.len(), "captures refused as busy wrote nothing");
    let log = pgit(&pack, &["log", "--format=%an|%s"]);
    assert!(
        log.lines().any(|l| l == format!("Person|{MESSAGE}")),
        "the person's commit is in history:\n{log}"
    );
    assert!(
        pgit(&pack, &["show", "HEAD:role.md"]).contains("the person's edit, committed with git commit -a"),
        "the person's edit is in HEAD"
    );
    assert_fsck_full(&pack);
}

/// Rounds of the person's maintenance loop (each: gc, geometric repack, incremental repack
/// of the multi-pack-index).
const MAINTENANCE_ROUNDS: usize = 10;

/// Captures each server makes at least, and at most, while the person's loop runs.
const CAPTURES_PER_SERVER: std::ops::RangeInclusive<usize> = 40..=1_500;

/// Two server processes capture into one pack while the person runs git's own maintenance
/// in a loop: `git gc`, `git repack -d --geometric=2`, `git maintenance run
/// --task=incremental-repack`. The servers keep capturing until the person's loop is done
/// (within [`CAPTURES_PER_SERVER`]). Every acknowledged capture ends in HEAD and fsck is
/// clean; a git command may fail on engram's locks (as on another git command's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_maintenance_beside_two_servers() {
    let env = TestEnv::with_real_clock();
    env.init("g");
    let pack = env.pack("g");
    let done = Arc::new(AtomicBool::new(false));
    let person_thread = {
        let (pack, done) = (pack.clone(), done.clone());
        std::thread::spawn(move || {
            let mut succeeded = 0;
            let mut failures = Vec::new();
            for _ in 0..MAINTENANCE_ROUNDS {
                for args in [
                    &["gc", "-q"][..],
                    &["repack", "-d", "-q", "--geometric=2"],
                    &["maintenance", "run", "--task=incremental-repack"],
                ] {
                    let out = pgit_out(&pack, args);
                    if out.status.success() {
                        succeeded += 1;
                    } else {
                        failures.push(format!("git {args:?}: {}", first_lines(&out.stderr)));
                    }
                }
            }
            done.store(true, Ordering::Relaxed);
            (succeeded, failures)
        })
    };
    let mut tasks = Vec::new();
    for s in 0..2 {
        let client = env.client().await;
        let done = done.clone();
        tasks.push(tokio::spawn(async move {
            let mut acknowledged = Vec::new();
            let mut refused = Vec::new();
            for i in 0..*CAPTURES_PER_SERVER.end() {
                if i >= *CAPTURES_PER_SERVER.start() && done.load(Ordering::Relaxed) {
                    break;
                }
                let t = text(&format!("server {s}"), i);
                let r = client.call("capture_memory", capture_args("g", &t)).await.expect("call");
                if r.is_error {
                    refused.push((t, r.text));
                } else {
                    acknowledged.push(t);
                }
            }
            client.close().await.expect("close");
            (acknowledged, refused)
        }));
    }
    let mut acknowledged = Vec::new();
    let mut refused = Vec::new();
    for t in tasks {
        let (a, r) = t.await.expect("server task");
        acknowledged.extend(a);
        refused.extend(r);
    }
    let (succeeded, failures) = person_thread.join().expect("person");
    eprintln!(
        "maintenance beside two servers: {succeeded} of {} git commands succeeded; {} captures acknowledged, {} refused\nfirst git failures: {:#?}\nfirst refusals: {:#?}",
        MAINTENANCE_ROUNDS * 3,
        acknowledged.len(),
        refused.len(),
        failures.iter().take(3).collect::<Vec<_>>(),
        refused.iter().map(|(_, m)| m.as_str()).take(3).collect::<Vec<_>>()
    );
    assert!(succeeded > 0, "some of the person's git maintenance ran; every command failed: {failures:#?}");
    assert!(!acknowledged.is_empty(), "captures were acknowledged");
    assert_in_head(&pack, &acknowledged);
    assert_fsck_full(&pack);
    let status = pgit_out(&pack, &["status", "--porcelain"]);
    assert!(status.status.success(), "git status: {}", String::from_utf8_lossy(&status.stderr));
}

/// The engram processes left that this test started: exe is the engram binary, and its
/// command line, working directory or `HOME` names `root` (every engram process a test
/// starts runs with `HOME` set to its temporary directory). Zombies are not counted.
#[cfg(target_os = "linux")]
fn engram_processes_under(root: &Path) -> Vec<(u32, String)> {
    let exe = std::fs::canonicalize(bin()).expect("engram binary");
    let root_text = root.display().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let proc_dir = entry.path();
        let Ok(link) = std::fs::read_link(proc_dir.join("exe")) else { continue };
        let link = link.display().to_string();
        if link.trim_end_matches(" (deleted)") != exe.display().to_string() {
            continue;
        }
        let stat = std::fs::read_to_string(proc_dir.join("stat")).unwrap_or_default();
        if stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z')) {
            continue;
        }
        let cmdline = std::fs::read(proc_dir.join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let cwd =
            std::fs::read_link(proc_dir.join("cwd")).map(|p| p.display().to_string()).unwrap_or_default();
        let environ = std::fs::read(proc_dir.join("environ")).unwrap_or_default();
        let home = String::from_utf8_lossy(&environ)
            .split('\0')
            .find_map(|v| v.strip_prefix("HOME=").map(str::to_owned))
            .unwrap_or_default();
        if cmdline.contains(&root_text) || cwd.starts_with(&root_text) || home == root_text {
            found.push((pid, cmdline));
        }
    }
    found
}

/// Whether process `pid` is gone (or a zombie).
#[cfg(target_os = "linux")]
fn exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

/// A server that captured enough to pack, once its client closed and it exited, leaves no
/// engram process behind (no packing worker; packing is git's, `git gc --auto`, which may
/// still run).
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_engram_process_is_left_after_exit() {
    const CAPTURES: usize = 200;
    let env = TestEnv::with_real_clock();
    env.init("x");
    let client = env.client().await;
    let pid = client.pid().expect("server pid");
    for i in 0..CAPTURES {
        capture(&client, "x", &text("exit", i)).await;
    }
    client.close().await.expect("close");
    let started = Instant::now();
    while !exited(pid) {
        assert!(started.elapsed() < Duration::from_secs(120), "the server (pid {pid}) did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = engram_processes_under(env.dir.path());
    // Let any packing still running finish before the directory is removed.
    assert!(left.is_empty(), "engram processes left after the server exited: {left:?}");
    assert_in_head(&env.pack("x"), &(0..CAPTURES).map(|i| text("exit", i)).collect::<Vec<_>>());
}
