//! A person running git in a pack while engram writes to it: their commands
//! never undo an acknowledged write, and engram's writes never fail because
//! of them (or fail with an honest message after a bounded wait).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;

use crate::common::*;
use crate::concurrency::memory_files;

/// Runs git in `dir` and reports whether it succeeded (a person's command may
/// fail on engram's `index.lock`, as two git commands do on each other's).
fn git_may_fail(dir: &Path, args: &[&str]) -> bool {
    git_in(dir).args(args).output().is_ok_and(|o| o.status.success())
}

/// A person's git loop on `pack` until `stop` is set (at most `max_rounds`
/// rounds): `round` runs one round; returns how many rounds ran and how many
/// commands succeeded.
fn person_loop(
    pack: PathBuf,
    stop: Arc<AtomicBool>,
    max_rounds: usize,
    round: impl Fn(&Path, usize) -> usize + Send + 'static,
) -> std::thread::JoinHandle<(usize, usize)> {
    std::thread::spawn(move || {
        let mut ok = 0;
        let mut rounds = 0;
        while !stop.load(Ordering::Relaxed) && rounds < max_rounds {
            ok += round(&pack, rounds);
            rounds += 1;
        }
        (rounds, ok)
    })
}

/// Every acknowledged capture is in HEAD and in the working-tree files.
fn assert_all_present(pack: &Path, acknowledged: &[String]) {
    assert_worktree_matches_head(pack);
    let m = memory_files(pack);
    let blocks: Vec<&String> = m.blocks.values().flatten().collect();
    let missing: Vec<&String> = acknowledged.iter().filter(|a| !blocks.contains(a)).collect();
    // A failure names the commits that added and dropped each missing capture.
    let trail = |text: &String| git(pack, &["log", "--format=%h %an %s (%p)", "-S", text.as_str()]);
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged captures missing: {missing:?}\ncommits that added or removed them:\n{}\nlast commits:\n{}",
        missing.len(),
        acknowledged.len(),
        missing.iter().map(|m| trail(m)).collect::<Vec<_>>().join("\n"),
        git(pack, &["log", "-12", "--format=%h %an %s (%p)"])
    );
    let indexed: Vec<&String> = m.index.iter().map(|(_, s)| s).collect();
    let unindexed: Vec<&String> = acknowledged.iter().filter(|a| !indexed.contains(a)).collect();
    assert!(unindexed.is_empty(), "acknowledged captures missing from the index: {unindexed:?}");
}

/// Clients capturing at once into pack `p`, `per_client` captures each; every
/// capture must be acknowledged. Returns the acknowledged texts.
async fn capture_from_clients(env: &TestEnv, clients: usize, per_client: usize, tag: &str) -> Vec<String> {
    let mut tasks = Vec::new();
    for c in 0..clients {
        let client = env.client().await;
        let tag = tag.to_owned();
        tasks.push(tokio::spawn(async move {
            let mut acknowledged = Vec::new();
            for i in 0..per_client {
                let text = format!("{tag} client {c} memory {i}");
                let r = client
                    .call(
                        "capture_memory",
                        json!({"name": "p", "category": format!("c{}", i % 2), "content": text, "summary": text}),
                    )
                    .await
                    .expect("call");
                assert!(!r.is_error, "client {c} capture {i}: {}", r.text);
                acknowledged.push(text);
            }
            client.close().await.expect("close");
            acknowledged
        }));
    }
    let mut acknowledged = Vec::new();
    for t in tasks {
        acknowledged.extend(t.await.expect("client task"));
    }
    acknowledged
}

/// What a person runs between captures to throw away "their" changes: each
/// restores files from the git index or resets to the HEAD it read.
const RESETS: [&[&str]; 4] =
    [&["checkout", "--", "memory"], &["checkout", "--", "."], &["stash", "-q"], &["reset", "-q", "--hard"]];

/// Issue 15 item 2: a person's `git checkout -- memory` (and `git checkout .`,
/// `git stash`, `git reset --hard`, `git status`) in a loop while three server
/// processes capture. A checkout restores the git index's version of the files;
/// when the index lagged the commit (or a reset read HEAD before a capture moved
/// it), engram used to commit that older state as a hand edit, erasing
/// acknowledged memories (11 of 195).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_checkout_during_captures_never_undoes_an_acknowledged_write() {
    let env = TestEnv::with_real_clock();
    let pack = persons_pack(&env);
    let stop = Arc::new(AtomicBool::new(false));
    let person = person_loop(pack.clone(), stop.clone(), 100_000, |dir, i| {
        usize::from(git_may_fail(dir, RESETS[i % RESETS.len()]))
            + usize::from(git_may_fail(dir, &["status", "--porcelain"]))
    });
    let mut acknowledged = capture_from_clients(&env, 3, 80, "checkout race").await;
    stop.store(true, Ordering::Relaxed);
    let (rounds, succeeded) = person.join().expect("person");
    // One more of each after the last write: none finds anything older to put back.
    for args in RESETS {
        git_may_fail(&pack, args);
    }
    // A reset of the person's last rounds may have raced the last capture: it moved the
    // branch back off it, and it is the pack's next write that puts the branch back (as
    // `a_reset_that_read_head_before_a_capture_is_undone_by_the_next_write` shows). So one
    // more write comes before the check, as after every other capture.
    let client = env.client().await;
    ok(
        &client,
        "capture_memory",
        json!({"name": "p", "category": "c0", "content": "checkout race last", "summary": "checkout race last"}),
    )
    .await;
    client.close().await.expect("close");
    acknowledged.push("checkout race last".into());
    let stashes = git(&pack, &["stash", "list"]).lines().count();
    eprintln!(
        "checkout loop: {rounds} rounds, {succeeded} git commands succeeded, {stashes} stashes; 3 clients, {} captures acknowledged",
        acknowledged.len()
    );
    assert!(rounds > 0, "the person's loop ran");
    assert_eq!(acknowledged.len(), 241);
    assert_all_present(&pack, &acknowledged);
    let log = git(&pack, &["log", "--format=%s"]);
    assert!(!log.lines().any(|s| s.starts_with("edit:")), "no reset was committed as a hand edit:\n{log}");
    let out = env.cli(&["doctor", "p"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert_fsck(&pack);
}

/// Issue 15 item 2 for the graph toolset, whose writes update the git index
/// lazily (`scoped_write`): a person's `git checkout -- users` restores the
/// index's older version of an entity file; engram must put HEAD's version
/// back instead of committing the older one as a hand edit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_checkout_never_undoes_a_graph_write_whose_index_lags() {
    let env = TestEnv::with_real_clock();
    let client = env.client_with(&["--tools", "engram,graph"]).await;
    ok(
        &client,
        "create_entities",
        json!({"entities": [{"name": "Dog", "entityType": "pet", "observations": []}]}),
    )
    .await;
    // A full write brings the git index up to date: the entity file is in it, so
    // a checkout can put its (soon older) version back.
    ok(
        &client,
        "capture_memory",
        json!({"name": "personal", "category": "c", "content": "x", "summary": "x"}),
    )
    .await;
    let pack = env.pack("personal");
    assert!(git(&pack, &["ls-files", "users"]).contains("/entities/"), "the entity is in the index");
    let stop = Arc::new(AtomicBool::new(false));
    let entity = git(&pack, &["ls-files", "users"])
        .lines()
        .find(|l| l.contains("/entities/"))
        .expect("entity")
        .to_owned();
    let restores = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = restores.clone();
    let person = person_loop(pack.clone(), stop.clone(), 100_000, move |dir, _| {
        let before = std::fs::read(dir.join(&entity)).unwrap_or_default();
        let ok = usize::from(git_may_fail(dir, &["checkout", "--", "."]));
        if std::fs::read(dir.join(&entity)).unwrap_or_default() != before {
            counted.fetch_add(1, Ordering::Relaxed);
        }
        ok + usize::from(git_may_fail(dir, &["status", "--porcelain"]))
    });
    let mut acknowledged = Vec::new();
    for i in 0..120 {
        let obs = format!("observation {i}");
        let r = client
            .call("add_observations", json!({"observations": [{"entityName": "Dog", "contents": [obs]}]}))
            .await
            .expect("call");
        assert!(!r.is_error, "add_observations {i}: {}", r.text);
        acknowledged.push(obs);
    }
    stop.store(true, Ordering::Relaxed);
    let (rounds, succeeded) = person.join().expect("person");
    eprintln!(
        "graph checkout loop: {rounds} rounds, {succeeded} git commands succeeded, {} put an older entity file back, 120 writes",
        restores.load(Ordering::Relaxed)
    );
    let read = ok(&client, "open_nodes", json!({"names": ["Dog"]})).await;
    client.close().await.expect("close");
    let missing: Vec<&String> = acknowledged.iter().filter(|o| !read.contains(o.as_str())).collect();
    assert!(missing.is_empty(), "observations missing from HEAD: {missing:?}");
    assert_worktree_matches_head(&pack);
    let files = git(&pack, &["ls-files", "users"]);
    let entity = files.lines().find(|l| l.contains("/entities/")).expect("the entity file");
    let text = std::fs::read_to_string(pack.join(entity)).expect("entity file");
    let missing: Vec<&String> = acknowledged.iter().filter(|o| !text.contains(o.as_str())).collect();
    assert!(missing.is_empty(), "observations missing from the working tree: {missing:?}");
    let log = git(&pack, &["log", "--format=%s"]);
    assert!(!log.lines().any(|s| s.starts_with("edit:")), "no restore was committed as a hand edit:\n{log}");
    assert_fsck(&pack);
}

/// Issue 15 item 14: a person commits and checks out in the pack while two
/// server processes write. Every engram write succeeds (git's index lock is
/// waited for with backoff, a branch moved under a write re-runs it, for a
/// bounded time), no answer blames damage, and every acknowledged capture and
/// every file the person committed end up in HEAD.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_succeed_while_a_person_commits_and_checks_out() {
    let env = TestEnv::with_real_clock();
    let pack = persons_pack(&env);
    let stop = Arc::new(AtomicBool::new(false));
    // Each round adds a file, and each write looks at the working tree: on a machine slowed
    // down enough the rounds would outgrow the writes without end (a full-suite run under load
    // 16 had 7,000 files after 30 minutes). A bound keeps the work finite; a normal run makes
    // about 130 rounds.
    let person = person_loop(pack.clone(), stop.clone(), 1_000, |dir, i| {
        let notes = dir.join("notes");
        let _ = std::fs::create_dir_all(&notes);
        std::fs::write(notes.join(format!("person-{i}.md")), format!("written by the person, round {i}\n"))
            .expect("person file");
        usize::from(git_may_fail(dir, &["add", "notes"]))
            + usize::from(git_may_fail(dir, &["commit", "-q", "-m", &format!("person {i}")]))
            + usize::from(git_may_fail(dir, &["checkout", "--", "memory"]))
            + usize::from(i % 4 == 0 && git_may_fail(dir, &["status", "--porcelain"]))
    });
    let acknowledged = capture_from_clients(&env, 2, 100, "beside a person's commits").await;
    stop.store(true, Ordering::Relaxed);
    let (rounds, succeeded) = person.join().expect("person");
    // One more write takes in what the person left uncommitted.
    let client = env.client().await;
    ok(
        &client,
        "capture_memory",
        json!({"name": "p", "category": "c", "content": "last", "summary": "last"}),
    )
    .await;
    client.close().await.expect("close");
    let person_commits = git(&pack, &["log", "--format=%an", "--author=Person"]).lines().count();
    // A person's commit of an index that lagged a capture, undone by the next write (see
    // `a_capture_a_persons_commit_of_a_lagging_index_dropped_is_restored_by_the_next_write`).
    let restores = git(&pack, &["log", "--format=%s"]).lines().filter(|s| s.starts_with("restore:")).count();
    eprintln!(
        "person's git loop: {rounds} rounds, {succeeded} git commands succeeded, {person_commits} person commits, {restores} restore commits; 2 clients, {} engram writes, all succeeded",
        acknowledged.len() + 1
    );
    assert!(rounds > 0);
    assert_eq!(acknowledged.len(), 200);
    assert_all_present(&pack, &acknowledged);
    for i in 0..rounds {
        let shown = git(&pack, &["show", &format!("HEAD:notes/person-{i}.md")]);
        assert_eq!(shown, format!("written by the person, round {i}\n"));
    }
    assert_clean(&pack);
    assert_fsck(&pack);
}

/// A person's git command stopped inside its read of the git index: a `core.fsmonitor`
/// hook (which git runs while it reads the index, before it takes `index.lock`) waits
/// until the test lets it go. Git's as-is commit reads HEAD, then the index — without a
/// lock — then takes `index.lock`, writes back the index it read and moves HEAD with a
/// compare-and-swap against the HEAD it read. `git reset --hard` reads HEAD, then the
/// index, then takes `index.lock`, rewrites the index and the files to the commit it
/// read and moves the branch there from wherever it points by then.
#[cfg(unix)]
struct GatedGit {
    child: std::process::Child,
    gate: PathBuf,
}

#[cfg(unix)]
impl GatedGit {
    /// Starts `git <args>` in `pack` and returns once it has read HEAD and the index (it is
    /// then waiting in the hook).
    fn start(pack: &Path, gate: &Path, args: &[&str]) -> Self {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::create_dir_all(gate).expect("gate dir");
        let hook = gate.join("fsmonitor-hook");
        let (reached, go) = (gate.join("reached"), gate.join("go"));
        std::fs::write(
            &hook,
            format!(
                "#!/bin/sh\n[ -e '{reached}' ] && exit 1\n: > '{reached}'\nwhile [ ! -e '{go}' ]; do sleep 0.01; done\nexit 1\n",
                reached = reached.display(),
                go = go.display()
            ),
        )
        .expect("hook");
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let mut child = git_in(pack)
            .arg("-c")
            .arg(format!("core.fsmonitor={}", hook.display()))
            .args(["-c", "core.fsmonitorHookVersion=2"])
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn git");
        let started = std::time::Instant::now();
        while !reached.exists() {
            if let Ok(Some(status)) = child.try_wait() {
                let out = child.wait_with_output().expect("git");
                panic!(
                    "git {args:?} ended ({status}) before it ran the fsmonitor hook: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(60),
                "git {args:?} never ran the fsmonitor hook"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        Self { child, gate: gate.to_owned() }
    }

    /// Lets git go on; its exit status and standard error.
    fn finish(self) -> (bool, String) {
        std::fs::write(self.gate.join("go"), b"").expect("go");
        let out = self.child.wait_with_output().expect("git");
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Captures one memory through `client` into pack `p`.
async fn capture(client: &StdioClient, category: &str, text: &str) {
    ok(
        client,
        "capture_memory",
        json!({"name": "p", "category": category, "content": text, "summary": text}),
    )
    .await;
}

/// The race behind a lost capture (a person's `git commit` whose parent was engram's
/// capture commit and whose tree lacked the capture): the person's `git commit` reads
/// HEAD and the index, engram's capture then commits and puts its index in, and the
/// person's commit takes `index.lock` after it and writes back the index it read — without
/// the capture. Its own commit fails (HEAD moved), but the index it left lags HEAD.
/// Returns the captures acknowledged so far.
#[cfg(unix)]
async fn a_commit_writes_back_an_index_read_before_a_capture(
    client: &StdioClient,
    env: &TestEnv,
) -> Vec<String> {
    let pack = env.pack("p");
    as_person(&pack);
    capture(client, "c0", "memory zero").await;
    capture(client, "c1", "memory one").await;
    std::fs::create_dir_all(pack.join("notes")).expect("notes");
    std::fs::write(pack.join("notes/n1.md"), "the person's first note\n").expect("note");
    git(&pack, &["add", "notes"]);
    let gated = GatedGit::start(&pack, &env.dir.path().join("gate"), &["commit", "-q", "-m", "person 1"]);
    capture(client, "c1", "memory two").await;
    let (committed, stderr) = gated.finish();
    assert!(!committed, "the person's commit read HEAD before the capture moved it: its ref update fails");
    assert!(stderr.contains("cannot lock ref"), "{stderr}");
    // The evidence: git wrote back the index it had read, which lacks the capture.
    let staged = git(&pack, &["diff", "--cached", "--name-only", "HEAD"]);
    assert!(staged.contains("memory/c1.md"), "the index lags HEAD after the failed commit:\n{staged}");
    vec!["memory zero".into(), "memory one".into(), "memory two".into()]
}

/// The index a failed `git commit` wrote back lags HEAD; the next engram write must bring
/// it up to HEAD, or the person's next `git commit` (which commits the index as it is)
/// drops the capture.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_a_failed_git_commit_wrote_back_is_brought_up_to_head_by_the_next_write() {
    let env = TestEnv::with_real_clock();
    env.init("p");
    let pack = env.pack("p");
    let client = env.client().await;
    let mut acknowledged = a_commit_writes_back_an_index_read_before_a_capture(&client, &env).await;
    capture(&client, "c0", "memory three").await;
    acknowledged.push("memory three".into());
    std::fs::write(pack.join("notes/n2.md"), "the person's second note\n").expect("note");
    git(&pack, &["add", "notes"]);
    git(&pack, &["commit", "-q", "-m", "person 2"]);
    client.close().await.expect("close");
    assert_all_present(&pack, &acknowledged);
    assert_clean(&pack);
}

/// The person's next `git commit` came before engram's next write: it committed the
/// lagging index on top of the capture's commit (the capture is gone from HEAD, and a
/// `git checkout -- memory` took it from the working tree too). The next engram write
/// finds that commit — it undoes engram's last writes exactly, as an index read before
/// them does — and restores what they wrote before it writes anything else.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capture_a_persons_commit_of_a_lagging_index_dropped_is_restored_by_the_next_write() {
    let env = TestEnv::with_real_clock();
    env.init("p");
    let pack = env.pack("p");
    let client = env.client().await;
    let mut acknowledged = a_commit_writes_back_an_index_read_before_a_capture(&client, &env).await;
    git(&pack, &["checkout", "--", "memory"]);
    std::fs::write(pack.join("notes/n2.md"), "the person's second note\n").expect("note");
    git(&pack, &["add", "notes"]);
    git(&pack, &["commit", "-q", "-m", "person 2"]);
    assert!(
        !git(&pack, &["show", "HEAD:memory/c1.md"]).contains("memory two"),
        "the person's commit dropped the capture (the race this test is about)"
    );
    capture(&client, "c0", "memory three").await;
    acknowledged.push("memory three".into());
    client.close().await.expect("close");
    assert_all_present(&pack, &acknowledged);
    assert_clean(&pack);
    let log = git(&pack, &["log", "--format=%s"]);
    assert!(log.lines().any(|s| s.starts_with("restore:")), "one commit restores the capture:\n{log}");
    assert!(git(&pack, &["show", "HEAD:notes/n2.md"]).contains("second note"), "the person's commit stays");
}

/// A person's `git reset --hard` that read HEAD before a capture moved it: it takes the
/// index lock after the capture, puts the files and the index back to the commit it read
/// and moves the branch there, off the acknowledged capture (its reflog line says
/// `reset: moving to HEAD`, from the capture's commit to its parent). The next write puts
/// the branch back on the capture before it writes.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_that_read_head_before_a_capture_is_undone_by_the_next_write() {
    let env = TestEnv::with_real_clock();
    let pack = persons_pack(&env);
    let client = env.client().await;
    capture_under_a_racy_reset(&client, &env, &pack).await;
    assert!(
        !git(&pack, &["show", "HEAD:memory/c0.md"]).contains("memory one"),
        "the reset moved the branch back off the capture (the race this test is about)"
    );
    capture(&client, "c1", "memory two").await;
    client.close().await.expect("close");
    assert_all_present(&pack, &["memory zero", "memory one", "memory two"].map(String::from));
    assert_clean(&pack);
}

/// The racy reset above, and then the person commits before engram's next write: their
/// commit's parent is the commit the reset went back to, so putting the branch back on
/// the capture would drop it. The next write keeps the person's commit and merges the
/// capture's commit back in (one `restore:` merge), before it writes.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capture_a_racy_reset_dropped_comes_back_under_the_persons_commit_made_since() {
    let env = TestEnv::with_real_clock();
    let pack = persons_pack(&env);
    let client = env.client().await;
    capture_under_a_racy_reset(&client, &env, &pack).await;
    std::fs::create_dir_all(pack.join("notes")).expect("notes");
    std::fs::write(pack.join("notes/n1.md"), "the person's note\n").expect("note");
    git(&pack, &["add", "notes"]);
    git(&pack, &["commit", "-q", "-m", "person 1"]);
    assert!(
        !git(&pack, &["show", "HEAD:memory/c0.md"]).contains("memory one"),
        "the person's commit was made on the commit the reset went back to"
    );
    capture(&client, "c1", "memory two").await;
    client.close().await.expect("close");
    assert_all_present(&pack, &["memory zero", "memory one", "memory two"].map(String::from));
    assert_clean(&pack);
    assert!(
        git(&pack, &["show", "HEAD:notes/n1.md"]).contains("the person's note"),
        "the person's commit stays"
    );
    let log = git(&pack, &["log", "--format=%s|%p"]);
    let merges = log.lines().filter(|l| l.rsplit_once('|').is_some_and(|(_, p)| p.split(' ').count() == 2));
    assert!(
        merges.map(|l| l.starts_with("restore: ")).eq([true]),
        "one merge brings the capture back:\n{log}"
    );
}

/// Makes `pack` commit as a person would (`git commit` needs an identity).
fn as_person(pack: &Path) {
    git(pack, &["config", "user.name", "Person"]);
    git(pack, &["config", "user.email", "person@example.com"]);
}

/// Pack `p`, ready for a person's git commands.
fn persons_pack(env: &TestEnv) -> PathBuf {
    env.init("p");
    let pack = env.pack("p");
    as_person(&pack);
    pack
}

/// Captures "memory zero", then "memory one" while a person's `git reset --hard` that read
/// HEAD before it is held, and lets the reset go on after the capture.
#[cfg(unix)]
async fn capture_under_a_racy_reset(client: &StdioClient, env: &TestEnv, pack: &Path) {
    capture(client, "c0", "memory zero").await;
    let gated = GatedGit::start(pack, &env.dir.path().join("gate"), &["reset", "-q", "--hard"]);
    capture(client, "c0", "memory one").await;
    let (reset, stderr) = gated.finish();
    assert!(reset, "the reset runs after the capture: {stderr}");
}
