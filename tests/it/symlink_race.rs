//! A local process swaps a pack folder for a symbolic link to a folder outside the pack,
//! again and again, while a client writes and reads a file in that folder (issue 15, item 1:
//! before pack files were opened from a handle of the pack directory without following
//! links, 18,203 rounds overwrote an outside file 169 times and read one 3,137 times).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::*;

const MARKER: &str = "OUTSIDE-FILE-MARKER-7f3a";

/// Swaps needed before the client may stop, client rounds, and the time bound of the loop.
const MIN_SWAPS: u64 = 10_000;
const ROUNDS: usize = 300;
const TIME_BOUND: Duration = Duration::from_secs(120);

/// Exchanges `knowledge/race` (a real folder, or the link) with `.git/race-swap` (the link,
/// or the real folder) in one `renameat2(RENAME_EXCHANGE)`, until told to stop once it has
/// swapped at least [`MIN_SWAPS`] times. `.git` is the hiding place: git never lists it.
fn swapper(race: PathBuf, hidden: PathBuf, stop: Arc<AtomicBool>, swaps: Arc<AtomicU64>) {
    let started = Instant::now();
    loop {
        let done = swaps.load(Ordering::Relaxed);
        if (stop.load(Ordering::Relaxed) && done >= MIN_SWAPS) || started.elapsed() > TIME_BOUND * 2 {
            return;
        }
        exchange(&race, &hidden);
        swaps.fetch_add(1, Ordering::Relaxed);
        // Let the server's threads run between swaps on a busy machine (no timing involved).
        std::thread::yield_now();
    }
}

/// Exchanges two names in one `renameat2(RENAME_EXCHANGE)`: a folder and a link to one
/// outside, so a reader of either name sees one or the other, never neither.
fn exchange(a: &Path, b: &Path) {
    rustix::fs::renameat_with(rustix::fs::CWD, a, rustix::fs::CWD, b, rustix::fs::RenameFlags::EXCHANGE)
        .expect("exchange a folder and a link");
}

/// Files below `dir` with their contents, sorted.
fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = fs::read_dir(dir)
        .expect("list")
        .flatten()
        .map(|e| (e.file_name().to_string_lossy().into_owned(), fs::read(e.path()).unwrap_or_default()))
        .collect();
    out.sort();
    out
}

#[cfg(any(target_os = "linux", target_os = "macos"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swapping_a_folder_for_a_link_out_never_carries_a_write_or_a_read_outside() {
    let env = TestEnv::new();
    env.init("p");
    let pack = env.pack("p");
    let outside = env.dir.path().join("outside");
    fs::create_dir_all(&outside).expect("mkdir");
    fs::write(outside.join("victim.md"), format!("{MARKER}\n")).expect("write");
    let outside_before = contents(&outside);

    let c = env.client().await;
    let write = |i: usize| json!({"name": "p", "path": "knowledge/race/victim.md", "content": format!("round {i} inside\n")});
    let read = json!({"name": "p", "path": "knowledge/race/victim.md"});
    ok(&c, "write_engram_file", write(0)).await;
    let race = pack.join("knowledge/race");
    let hidden = pack.join(".git/race-swap");
    std::os::unix::fs::symlink(&outside, &hidden).expect("symlink");

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let thread = {
        let (stop, swaps) = (stop.clone(), swaps.clone());
        std::thread::spawn(move || swapper(race, hidden, stop, swaps))
    };
    let started = Instant::now();
    let (mut rounds, mut writes_ok, mut reads_ok, mut read_escapes, mut write_escapes) = (0, 0, 0, 0, 0);
    // Refusals that blamed damage on the pack (the swaps are another program's doing).
    let mut blamed = Vec::new();
    while rounds < ROUNDS && started.elapsed() < TIME_BOUND {
        rounds += 1;
        let w = call(&c, "write_engram_file", write(rounds)).await;
        writes_ok += usize::from(!w.is_error);
        if w.is_error && (w.text.contains("doctor") || w.text.contains("damaged")) {
            blamed.push(w.text.clone());
        }
        if contents(&outside) != outside_before {
            write_escapes += 1;
            fs::write(outside.join("victim.md"), format!("{MARKER}\n")).expect("restore");
        }
        let r = call(&c, "read_engram_file", read.clone()).await;
        reads_ok += usize::from(!r.is_error);
        read_escapes += usize::from(r.text.contains(MARKER));
    }
    stop.store(true, Ordering::Relaxed);
    thread.join().expect("swapper");
    let swapped = swaps.load(Ordering::Relaxed);
    eprintln!(
        "symlink race: {rounds} rounds, {swapped} swaps, {writes_ok} writes and {reads_ok} reads answered ok, \
         {write_escapes} outside writes, {read_escapes} outside reads"
    );
    assert!(swapped >= MIN_SWAPS, "only {swapped} swaps");
    assert_eq!((write_escapes, read_escapes), (0, 0), "writes and reads escaped the pack");
    assert_eq!(contents(&outside), outside_before, "nothing written, changed or created outside");
    assert!(writes_ok > 0 && reads_ok > 0, "the tools kept working between swaps");
    assert!(blamed.is_empty(), "{} refusals blamed damage, e.g. {}", blamed.len(), blamed[0]);

    // Afterwards the pack works and its history never took in the outside file. Whether
    // HEAD last saw the folder or the link depends on the interleaving: remove both (the
    // next write commits that as a hand edit) and write the file again.
    let race = pack.join("knowledge/race");
    if fs::symlink_metadata(&race).is_ok_and(|m| m.file_type().is_symlink()) {
        fs::remove_file(&race).expect("remove the link");
    } else {
        fs::remove_dir_all(&race).expect("remove the folder");
    }
    let hidden = pack.join(".git/race-swap");
    if fs::symlink_metadata(&hidden).is_ok_and(|m| m.file_type().is_symlink()) {
        fs::remove_file(&hidden).expect("remove the link");
    } else {
        fs::remove_dir_all(&hidden).expect("remove the folder");
    }
    ok(&c, "write_engram_file", write(ROUNDS + 1)).await;
    let text = ok(&c, "read_engram_file", read).await;
    assert!(text.contains(&format!("round {} inside", ROUNDS + 1)), "{text}");
    c.close().await.expect("close");
    let history = git(&pack, &["log", "-p", "--all"]);
    assert!(!history.contains(MARKER), "the outside file entered the pack's history");
    assert_fsck(&pack);
}

/// Issue 34 item 3: a local process exchanges the pack's `memory/` folder with a link to a
/// folder outside, again and again, while a client captures. A hand-edit commit used to
/// record `memory` as a symbolic link and delete every `memory/*` file from HEAD (135 of
/// 459 acknowledged captures lost). Now: every acknowledged capture is in HEAD, no link
/// is ever committed, and nothing is written outside.
#[cfg(any(target_os = "linux", target_os = "macos"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swapping_memory_for_a_link_never_loses_an_acknowledged_capture() {
    /// How long the attack runs (the issue's 60 s).
    const ATTACK: Duration = Duration::from_secs(60);
    let env = TestEnv::with_real_clock();
    env.init("p");
    let pack = env.pack("p");
    let client = env.client().await;
    let first = "before the attack".to_owned();
    let r = client
        .call("capture_memory", json!({"name": "p", "category": "swap", "content": first, "summary": first}))
        .await
        .expect("call");
    assert!(!r.is_error, "{}", r.text);
    let outside = env.dir.path().join("outside");
    fs::create_dir_all(&outside).expect("outside");
    fs::write(outside.join("swap.md"), MARKER).expect("outside file");
    let hidden = pack.join(".git/memory-swap");
    std::os::unix::fs::symlink(&outside, &hidden).expect("link");
    let (stop, swaps) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
    let attacker = {
        let (memory, hidden, stop, swaps) =
            (pack.join("memory"), hidden.clone(), stop.clone(), swaps.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                exchange(&memory, &hidden);
                swaps.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_micros(200));
            }
        })
    };
    let mut acknowledged = vec![first];
    let started = Instant::now();
    let mut n = 0;
    while started.elapsed() < ATTACK {
        n += 1;
        let text = format!("capture {n:05} during the swap");
        let r = client
            .call(
                "capture_memory",
                json!({"name": "p", "category": "swap", "content": text, "summary": text}),
            )
            .await
            .expect("call");
        if !r.is_error {
            acknowledged.push(text);
        }
        let _ = client.call("read_engram_file", json!({"name": "p", "path": "memory/swap.md"})).await;
    }
    stop.store(true, Ordering::Relaxed);
    attacker.join().expect("attacker");
    // The real folder back in place, if the last exchange left the link there.
    if fs::symlink_metadata(pack.join("memory")).is_ok_and(|m| m.file_type().is_symlink()) {
        exchange(&pack.join("memory"), &hidden);
    }
    let last = "after the attack".to_owned();
    let r = client
        .call("capture_memory", json!({"name": "p", "category": "swap", "content": last, "summary": last}))
        .await
        .expect("call");
    assert!(!r.is_error, "{}", r.text);
    acknowledged.push(last);
    client.close().await.expect("close");
    eprintln!(
        "{} swaps, {} of {n} captures acknowledged",
        swaps.load(Ordering::Relaxed),
        acknowledged.len() - 2
    );
    assert_eq!(
        contents(&outside),
        vec![("swap.md".to_owned(), MARKER.as_bytes().to_vec())],
        "outside untouched"
    );
    let links = git(&pack, &["ls-tree", "-r", "HEAD"]);
    assert!(!links.lines().any(|l| l.starts_with("120000")), "a link in HEAD:\n{links}");
    // Every memory file of HEAD (older entries roll into `memory/_log/…`).
    let head: String = git(&pack, &["ls-tree", "-r", "--name-only", "HEAD", "--", "memory"])
        .lines()
        .map(|f| git(&pack, &["show", &format!("HEAD:{f}")]))
        .collect();
    let lost: Vec<&String> = acknowledged.iter().filter(|t| !head.contains(t.as_str())).collect();
    assert!(lost.is_empty(), "{} acknowledged captures lost from HEAD, e.g. {:?}", lost.len(), lost.first());
    assert_fsck(&pack);
}
