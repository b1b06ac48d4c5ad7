//! Encrypted remotes (issue #38): `engram key new`, `engram remote add --encrypt`, `engram
//! install --key`. The remote holds nothing readable; every device keeps a plain repository
//! and syncs exactly as with a plain remote.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::common::*;
use crate::sync::{branch, capture, device, head, run_ok, text};
use crate::sync_https::{HttpsServer, TOKEN, device_with_ca_variable};
use crate::sync_ssh::{SshServer, device_with_default_key};

/// An empty bare repository at `dir/<name>.git`; returns its path as the remote URL.
fn bare(dir: &Path, name: &str) -> String {
    let path = dir.join(format!("{name}.git"));
    let out = git_command().args(["init", "--bare", "-q"]).arg(&path).output().expect("git init --bare");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    path.display().to_string()
}

fn key_file(env: &TestEnv, pack: &str) -> PathBuf {
    env.packs.join(".keys").join(format!("{pack}.key"))
}

/// The key's hex line, to check that no output ever shows it.
fn key_hex(path: &Path) -> String {
    std::fs::read_to_string(path).expect("key").lines().last().expect("a key line").to_owned()
}

/// `engram key new` + `engram remote add --encrypt` + the first sync, on device `a`.
fn share_encrypted(a: &TestEnv, url: &str) {
    let made = run_ok(a, &["key", "new", "coach"]);
    let key = key_file(a, "coach");
    assert!(made.contains(&key.display().to_string()) && made.contains("engram key import"), "{made}");
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&key).expect("key file").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let added = run_ok(a, &["remote", "add", "coach", url, "--encrypt"]);
    assert!(added.contains("encrypted"), "{added}");
    let first = run_ok(a, &["sync", "coach"]);
    assert!(first.contains("pushed"), "{first}");
    for out in [&made, &added, &first] {
        assert!(!out.contains(&key_hex(&key)), "a key was printed: {out}");
    }
}

/// Every object of the bare repository at `url`, as `git cat-file --batch-all-objects --batch`
/// prints them.
fn remote_objects(url: &str) -> Vec<u8> {
    let out = git_command()
        .args(["-C", url, "cat-file", "--batch-all-objects", "--batch"])
        .output()
        .expect("git cat-file");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// None of `words` appears anywhere in the remote's objects, and it has only the cipher branch.
fn assert_remote_opaque(url: &str, words: &[&str]) {
    let objects = remote_objects(url);
    assert!(!objects.is_empty());
    for word in words {
        let found = objects.windows(word.len()).any(|w| w == word.as_bytes());
        assert!(!found, "the remote holds {word:?}");
    }
    let refs = git(Path::new(url), &["for-each-ref", "--format=%(refname)"]);
    assert_eq!(refs.trim(), "refs/heads/engram-encrypted", "{refs}");
    // Each commit's time is its depth on the branch, not a clock: newest first, n down to 1.
    let log = git(Path::new(url), &["log", "--format=%an <%ae> %at %s%n%b", "engram-encrypted"]);
    let lines: Vec<&str> = log.lines().filter(|l| !l.is_empty()).collect();
    for (line, depth) in lines.iter().zip((1..=lines.len()).rev()) {
        assert_eq!(*line, format!("engram <engram@invalid> {depth} engram encrypted pack"), "{log}");
    }
}

/// Words of the pack that must never reach an encrypted remote: memory texts, summaries,
/// categories, file names, commit subjects and trailers, device names.
const SECRET_WORDS: &[&str] = &[
    "偏好",
    "pref",
    "fact",
    "训练",
    "preferences",
    "facts",
    "knowledge",
    "plan",
    "meta.json",
    "memory/",
    "_index",
    "Engram-",
    "capture",
    "laptop",
    "desktop",
    "coach",
];

/// State of a pack that a refused sync must not change.
fn pack_state(dir: &Path) -> (String, String, String) {
    let refs = git(dir, &["for-each-ref", "--format=%(refname) %(objectname)"]);
    let status = git(dir, &["status", "--porcelain"]);
    (head(dir), refs, status)
}

#[tokio::test]
async fn encrypted_two_devices_keep_every_memory_and_the_remote_reads_nothing() {
    let (a, b) = (device("laptop"), device("desktop"));
    let server = tempfile::tempdir().expect("tempdir");
    let url = bare(server.path(), "coach");
    a.init("coach");
    {
        let c = a.client().await;
        ok(&c, "capture_memory", capture("coach", "preferences", "喜欢早上训练", "早上训练")).await;
        ok(
            &c,
            "write_engram_file",
            json!({"name": "coach", "path": "knowledge/plan.md", "content": "# Plan\nline 1\n"}),
        )
        .await;
    }
    share_encrypted(&a, &url);
    let installed = run_ok(&b, &["install", &url, "--key", &key_file(&a, "coach").display().to_string()]);
    assert!(installed.contains("安装成功") || installed.contains("installed"), "{installed}");
    assert_eq!(head(&a.pack("coach")), head(&b.pack("coach")));
    assert_eq!(branch(&a.pack("coach")), branch(&b.pack("coach")));
    assert_eq!(key_hex(&key_file(&b, "coach")), key_hex(&key_file(&a, "coach")));

    // Offline: both devices write at once, and correct the same memory differently.
    let (ca, cb) = tokio::join!(a.client(), b.client());
    let write = |c: &'static str| {
        let client = if c == "A" { &ca } else { &cb };
        let new = if c == "A" { "喜欢清晨六点训练" } else { "喜欢晚上训练" };
        async move {
            for i in 0..3 {
                let (content, summary) = (format!("{c} 偏好 {i}"), format!("{c} pref {i}"));
                ok(client, "capture_memory", capture("coach", "preferences", &content, &summary)).await;
            }
            ok(
                client,
                "capture_memory",
                capture("coach", "facts", &format!("{c} fact"), &format!("{c} fact")),
            )
            .await;
            let correction = json!({"name": "coach", "category": "preferences", "old_summary": "早上训练", "new_content": new, "new_summary": new});
            ok(client, "correct_memory", correction).await;
        }
    };
    tokio::join!(write("A"), write("B"));
    drop((ca, cb));
    let (tip_a, tip_b) = (head(&a.pack("coach")), head(&b.pack("coach")));

    let sa = run_ok(&a, &["sync", "coach"]);
    assert!(sa.contains("pushed"), "{sa}");
    let sb = run_ok(&b, &["sync", "coach"]);
    assert!(sb.contains("merged") && sb.contains("memory conflicts: 1") && sb.contains("pushed"), "{sb}");
    let sa2 = run_ok(&a, &["sync", "coach"]);
    assert!(sa2.contains("fast-forwarded"), "{sa2}");
    let again = run_ok(&b, &["sync", "coach"]);
    assert!(again.contains("nothing new") && again.contains("nothing to push"), "{again}");

    let result = head(&a.pack("coach"));
    assert_eq!(result, head(&b.pack("coach")));
    let tree = |env: &TestEnv| git(&env.pack("coach"), &["rev-parse", "HEAD^{tree}"]);
    assert_eq!(tree(&a), tree(&b));
    for env in [&a, &b] {
        let dir = env.pack("coach");
        for tip in [&tip_a, &tip_b] {
            assert!(crate::sync::is_ancestor(&dir, tip, &result));
        }
        let prefs = env.read("coach", "memory/preferences.md");
        let facts = env.read("coach", "memory/facts.md");
        for who in ["A", "B"] {
            for i in 0..3 {
                assert_eq!(prefs.matches(&format!("{who} 偏好 {i}")).count(), 1, "{prefs}");
            }
            assert_eq!(facts.matches(&format!("{who} fact")).count(), 1, "{facts}");
        }
        assert!(prefs.contains("喜欢清晨六点训练") && prefs.contains("喜欢晚上训练"), "{prefs}");
        assert!(env.read("coach", "memory/_conflicts.md").contains("早上训练"));
        // A plain repository: `git log -p` shows the memories.
        assert!(git(&dir, &["log", "-p", "-n", "40"]).contains("A 偏好 0"));
        assert_fsck(&dir);
        assert_clean(&dir);
        assert!(
            !dir.join(".keys").exists() && git(&dir, &["ls-files"]).lines().all(|f| !f.ends_with(".key"))
        );
    }
    assert_remote_opaque(&url, SECRET_WORDS);
    let c = a.client_with(&["--tools", "engram,sync"]).await;
    let status = ok(&c, "sync_status", json!({"name": "coach"})).await;
    assert!(status.contains("encrypted") && status.contains("ahead 0, behind 0"), "{status}");
}

#[test]
fn encrypted_without_the_key_or_with_a_wrong_key_nothing_is_written() {
    let (a, c) = (device("laptop"), device("phone"));
    let server = tempfile::tempdir().expect("tempdir");
    let url = bare(server.path(), "coach");
    a.init("coach");
    share_encrypted(&a, &url);
    let remote_before = git(Path::new(&url), &["rev-parse", "engram-encrypted"]);

    // Install without a key: refused, and said why.
    let out = c.cli(&["install", &url]);
    let t = text(&out);
    assert!(!out.status.success() && t.contains("encrypted pack") && t.contains("--key"), "{t}");
    let listed = |env: &TestEnv| {
        let mut names: Vec<String> = std::fs::read_dir(&env.packs)
            .expect("packs dir")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    assert!(listed(&c).is_empty(), "{:?}", listed(&c));

    // A wrong key: refused before anything is installed, and the key is not kept.
    let wrong = c.dir.path().join("wrong.key");
    std::fs::write(&wrong, format!("engram-pack-key-1\n{}\n", "ab".repeat(32))).expect("write");
    let out = c.cli(&["install", &url, "--key", &wrong.display().to_string()]);
    let t = text(&out);
    assert!(!out.status.success() && t.contains("does not open"), "{t}");
    assert!(listed(&c).is_empty(), "{:?}", listed(&c));

    // A key for a remote that holds no encrypted pack: said so, nothing installed.
    let plain_url = bare(server.path(), "plain");
    let out = c.cli(&["install", &plain_url, "--key", &wrong.display().to_string()]);
    let t = text(&out);
    assert!(!out.status.success() && t.contains("holds no encrypted pack"), "{t}");
    assert!(listed(&c).is_empty(), "{:?}", listed(&c));

    // A device whose key is gone: sync fails before the network, nothing changes.
    let pack = a.pack("coach");
    {
        let c = tokio::runtime::Runtime::new().expect("runtime");
        c.block_on(async {
            let client = a.client().await;
            ok(&client, "capture_memory", capture("coach", "facts", "offline fact", "offline fact")).await;
        });
    }
    let moved = a.dir.path().join("coach.key");
    std::fs::rename(key_file(&a, "coach"), &moved).expect("move the key away");
    let before = pack_state(&pack);
    let out = a.cli(&["sync", "coach"]);
    let t = text(&out);
    assert!(!out.status.success() && t.contains("no key") && t.contains("engram key import"), "{t}");
    assert_eq!(pack_state(&pack), before);
    assert_eq!(git(Path::new(&url), &["rev-parse", "engram-encrypted"]), remote_before);

    // The key imported back: the sync goes through.
    run_ok(&a, &["key", "import", "coach", &moved.display().to_string()]);
    let synced = run_ok(&a, &["sync", "coach"]);
    assert!(synced.contains("pushed"), "{synced}");
    // A plain remote of the same repository is refused: it holds an encrypted pack.
    run_ok(&a, &["remote", "add", "coach", &url, "--name", "plain"]);
    let out = a.cli(&["remote", "remove", "coach"]);
    assert!(out.status.success(), "{}", text(&out));
    let before = pack_state(&pack);
    let out = a.cli(&["sync", "coach"]);
    let t = text(&out);
    assert!(!out.status.success() && t.contains("encrypted pack"), "{t}");
    assert_eq!(pack_state(&pack).0, before.0);
    assert_remote_opaque(&url, &["offline fact"]);
}

/// The newest git pack of the bare repository at `remote` and an offset in the middle of its
/// largest object (the sealed pack file the last push sent).
fn newest_sealed_pack_file(remote: &Path) -> (PathBuf, usize) {
    let dir = remote.join("objects/pack");
    let newest = std::fs::read_dir(&dir)
        .expect("packs")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "pack"))
        .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).expect("mtime"))
        .expect("a pack");
    let listing = git(remote, &["verify-pack", "-v", &newest.display().to_string()]);
    // `<oid> blob <size> <size in pack> <offset>`
    let (in_pack, offset) = listing
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 5 && f[1] == "blob").then(|| (f[3].parse::<usize>().ok(), f[4].parse::<usize>().ok()))
        })
        .filter_map(|(s, o)| Some((s?, o?)))
        .max()
        .expect("a blob");
    (newest, offset + in_pack / 2)
}

/// Rewrites the remote's `manifest` with `change` applied, as a person with write access to
/// the remote (but no key) could, and pushes it as a fast-forward.
fn tamper_manifest(url: &str, work: &Path, change: impl Fn(&mut Vec<u8>)) {
    let _ = std::fs::remove_dir_all(work);
    let out = git_command()
        .args(["clone", "-q", "-b", "engram-encrypted", url])
        .arg(work)
        .output()
        .expect("git clone");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let path = work.join("manifest");
    let mut bytes = std::fs::read(&path).expect("manifest");
    change(&mut bytes);
    std::fs::write(&path, bytes).expect("write");
    git(work, &["commit", "-q", "-am", "engram encrypted pack"]);
    git(work, &["push", "-q", "origin", "engram-encrypted"]);
}

#[tokio::test]
async fn encrypted_a_tampered_or_truncated_remote_object_is_refused_and_changes_nothing() {
    let (a, b) = (device("laptop"), device("desktop"));
    let server = tempfile::tempdir().expect("tempdir");
    let url = bare(server.path(), "coach");
    a.init("coach");
    share_encrypted(&a, &url);
    run_ok(&b, &["install", &url, "--key", &key_file(&a, "coach").display().to_string()]);
    {
        let c = a.client().await;
        ok(&c, "capture_memory", capture("coach", "facts", "a new fact", "a new fact")).await;
    }
    run_ok(&a, &["sync", "coach"]);
    let pack = b.pack("coach");
    let before = pack_state(&pack);
    let work = server.path().join("work");

    // One flipped byte in the remote's storage, inside the newest sealed pack file: git's own
    // checks or the authentication refuse it.
    let (file, offset) = newest_sealed_pack_file(Path::new(&url));
    let mut bytes = std::fs::read(&file).expect("remote pack");
    bytes[offset] ^= 0x01;
    std::fs::write(&file, &bytes).expect("flip");
    let out = b.cli(&["sync", "coach"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert_eq!(pack_state(&pack), before);
    bytes[offset] ^= 0x01;
    std::fs::write(&file, &bytes).expect("unflip");
    let synced = run_ok(&b, &["sync", "coach"]);
    assert!(synced.contains("fast-forwarded") && b.read("coach", "memory/facts.md").contains("a new fact"));
    {
        let c = a.client().await;
        ok(&c, "capture_memory", capture("coach", "facts", "another fact", "another fact")).await;
    }
    run_ok(&a, &["sync", "coach"]);
    let before = pack_state(&pack);

    // One flipped byte in the middle of the sealed manifest.
    tamper_manifest(&url, &work, |bytes| {
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x01;
    });
    let out = b.cli(&["sync", "coach"]);
    let t = text(&out);
    assert!(!out.status.success() && t.contains("does not open") && t.contains("Nothing was changed"), "{t}");
    assert_eq!(pack_state(&pack), before);
    assert!(!b.read("coach", "memory/facts.md").contains("another fact"));

    // Cut short.
    tamper_manifest(&url, &work, |bytes| bytes.truncate(bytes.len() - 100));
    let out = b.cli(&["sync", "coach"]);
    assert!(!out.status.success() && text(&out).contains("does not open"), "{}", text(&out));
    assert_eq!(pack_state(&pack), before);
    assert_fsck(&pack);
    assert_clean(&pack);
}

#[tokio::test]
async fn encrypted_two_devices_sync_over_ssh() {
    let Some(server) = SshServer::start() else { return };
    let a = device_with_default_key("laptop", &server);
    let b = device_with_default_key("desktop", &server);
    a.init("coach");
    let url = server.bare("coach", &branch(&a.pack("coach")));
    {
        let c = a.client().await;
        ok(&c, "capture_memory", capture("coach", "preferences", "A 偏好 over ssh", "A pref over ssh")).await;
    }
    share_encrypted(&a, &url);
    run_ok(&b, &["install", &url, "--key", &key_file(&a, "coach").display().to_string()]);
    {
        let c = b.client().await;
        ok(&c, "capture_memory", capture("coach", "facts", "B fact over ssh", "B fact over ssh")).await;
    }
    assert!(run_ok(&b, &["sync", "coach"]).contains("pushed"));
    assert!(run_ok(&a, &["sync", "coach"]).contains("fast-forwarded"));
    assert_eq!(head(&a.pack("coach")), head(&b.pack("coach")));
    assert!(a.read("coach", "memory/facts.md").contains("B fact over ssh"));
    let repo = server.repo("coach").display().to_string();
    assert_remote_opaque(&repo, SECRET_WORDS);
}

#[tokio::test]
async fn encrypted_two_devices_sync_over_https() {
    let Some(server) = HttpsServer::start() else { return };
    let a = device_with_ca_variable("laptop", &server, TOKEN);
    // The other device names the CA the way git does: http.sslCAInfo in ~/.gitconfig.
    let mut b = device("desktop");
    b.vars.push(("ENGRAM_GIT_TOKEN".into(), TOKEN.into()));
    let gitconfig = format!("[http]\n\tsslCAInfo = {}\n", server.ca().display());
    std::fs::write(b.dir.path().join(".gitconfig"), gitconfig).expect("gitconfig");
    a.init("coach");
    let url = server.bare("coach", &branch(&a.pack("coach")));
    {
        let c = a.client().await;
        ok(&c, "capture_memory", capture("coach", "preferences", "A 偏好 over https", "A pref over https"))
            .await;
    }
    share_encrypted(&a, &url);
    let out = b.cli(&["install", &url]);
    assert!(!out.status.success() && text(&out).contains("--key"), "{}", text(&out));
    run_ok(&b, &["install", &url, "--key", &key_file(&a, "coach").display().to_string()]);
    {
        let c = b.client().await;
        ok(&c, "capture_memory", capture("coach", "facts", "B fact over https", "B fact over https")).await;
    }
    assert!(run_ok(&b, &["sync", "coach"]).contains("pushed"));
    assert!(run_ok(&a, &["sync", "coach"]).contains("fast-forwarded"));
    assert_eq!(head(&a.pack("coach")), head(&b.pack("coach")));
    assert!(a.read("coach", "memory/facts.md").contains("B fact over https"));
    assert_remote_opaque(&server.repo("coach").display().to_string(), SECRET_WORDS);
}

#[tokio::test]
async fn encrypted_many_small_pushes_keep_few_live_pack_files() {
    let (a, b) = (device("laptop"), device("desktop"));
    let server = tempfile::tempdir().expect("tempdir");
    let url = bare(server.path(), "coach");
    a.init("coach");
    share_encrypted(&a, &url);
    let c = a.client().await;
    let pushes = 24;
    for i in 0..pushes {
        ok(
            &c,
            "capture_memory",
            capture("coach", "facts", &format!("fact number {i}"), &format!("fact {i}")),
        )
        .await;
        assert!(run_ok(&a, &["sync", "coach"]).contains("pushed"));
    }
    // Live pack files merge geometrically: a handful, not one per push.
    let live = git(Path::new(&url), &["ls-tree", "--name-only", "engram-encrypted", "p/"]);
    let n_live = live.lines().count();
    assert!((1..=6).contains(&n_live), "{n_live} live pack files after {pushes} pushes:\n{live}");
    run_ok(&b, &["install", &url, "--key", &key_file(&a, "coach").display().to_string()]);
    assert_eq!(head(&a.pack("coach")), head(&b.pack("coach")));
    let facts = b.read("coach", "memory/facts.md");
    for i in 0..pushes {
        assert_eq!(facts.matches(&format!("fact number {i}\n")).count(), 1, "{facts}");
    }
    assert_fsck(&b.pack("coach"));
    assert_remote_opaque(&url, &["fact number"]);
}

/// Review on a team server (`serve --propose`) with an encrypted remote: a proposal stays on
/// the server (a forge could not show it: it cannot read it), an accepted one reaches the
/// remote encrypted with main, and another device with the key has it; the remote reads
/// nothing of either.
#[tokio::test]
async fn encrypted_remote_with_review_on_a_team_server() {
    let (server, other) = (device("laptop"), device("desktop"));
    let dir = tempfile::tempdir().expect("tempdir");
    let url = bare(dir.path(), "coach");
    server.init("coach");
    share_encrypted(&server, &url);
    let proposer = server.client_named("alice", &["--propose"]).await;
    ok(&proposer, "capture_memory", capture("coach", "facts", "Zebrafish 训练 proposal", "Zebrafish plan"))
        .await;
    proposer.close().await.expect("close");
    let before = head(&server.pack("coach"));

    // Synced while under review: main goes (unchanged), the proposal stays on the server.
    let synced = run_ok(&server, &["sync", "coach"]);
    assert!(synced.contains("proposals: 1 kept on this device"), "{synced}");
    let mut words: Vec<&str> = SECRET_WORDS.to_vec();
    words.extend(["Zebrafish", "alice", "proposals/"]);
    assert_remote_opaque(&url, &words);

    // Accepted: one merge commit on main, pushed encrypted, installed on another device.
    cli_ok(&server, &["review", "accept", "coach", "proposals/alice"]);
    assert_ne!(head(&server.pack("coach")), before);
    assert!(run_ok(&server, &["sync", "coach"]).contains("pushed"));
    assert_remote_opaque(&url, &words);
    run_ok(&other, &["install", &url, "--key", &key_file(&server, "coach").display().to_string()]);
    assert_eq!(head(&other.pack("coach")), head(&server.pack("coach")));
    let facts = other.read("coach", "memory/facts.md");
    assert_eq!(facts.matches("Zebrafish 训练 proposal").count(), 1, "{facts}");
}
