//! Faults of the machine under a pack: a full disk.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use crate::common::*;

/// A small tmpfs mounted over a directory, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (e.g. `8m`) on `dir`; `None` when mounting is not permitted here.
    fn mount(dir: &Path, size: &str) -> Option<Self> {
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .is_ok_and(|o| o.status.success());
        ok.then(|| Self(dir.to_owned()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Fills the file system of `file`'s directory until a write fails for lack of space.
fn fill(file: &Path) {
    let mut f = fs::File::create(file).expect("filler");
    for chunk in [1 << 20, 4096, 1] {
        let bytes = vec![b'x'; chunk];
        while f.write_all(&bytes).is_ok() {}
    }
    let _ = f.sync_all();
}

/// Temp files and anything but complete packs in `objects/pack`.
fn leftovers(pack: &Path) -> Vec<String> {
    let dir = pack.join(".git/objects/pack");
    let mut out = Vec::new();
    for e in fs::read_dir(&dir).expect("pack dir").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let len = e.metadata().map(|m| m.len()).unwrap_or(0);
        // git's own files beside a pack (`git gc` writes `.rev` and, for cruft packs, `.mtimes`).
        let git_file = [".rev", ".mtimes", ".bitmap", ".keep"].iter().any(|x| name.ends_with(x));
        let complete = name.starts_with("pack-")
            && (name.ends_with(".pack") || name.ends_with(".idx") || git_file)
            && len > 0;
        if !complete {
            out.push(format!("{name} ({len} bytes)"));
        }
    }
    for e in fs::read_dir(&dir).expect("pack dir").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(base) = name.strip_suffix(".pack")
            && !dir.join(format!("{base}.idx")).exists()
        {
            out.push(format!("{name} without its index"));
        }
    }
    out
}

/// Issue 15 item 12: a full disk. A write fails with a clear "disk full" error
/// (not a hint at damage) and leaves no temporary file; reads still work;
/// `engram gc` on the full disk fails cleanly and leaves none either; once
/// space returns, gc and writes work, `git fsck` is clean and every
/// acknowledged capture is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_fails_writes_clearly_and_leaves_nothing_behind() {
    let env = TestEnv::new();
    let Some(_mounted) = Tmpfs::mount(&env.packs, "8m") else {
        eprintln!("skipped: mounting a tmpfs is not permitted here");
        return;
    };
    env.init("full");
    let pack = env.pack("full");
    let c = env.client().await;
    let mut acknowledged = Vec::new();
    for i in 0..5 {
        let text = format!("before the disk filled {i}");
        ok(&c, "capture_memory", json!({"name": "full", "category": "c", "content": text, "summary": text}))
            .await;
        acknowledged.push(text);
    }
    let filler = env.packs.join(".filler");
    fill(&filler);

    // Writes fail, clearly, and leave nothing behind.
    for i in 0..3 {
        let text = format!("on a full disk {i}");
        let e = err(
            &c,
            "capture_memory",
            json!({"name": "full", "category": "c", "content": text, "summary": text}),
        )
        .await;
        assert!(e.contains("磁盘已满 (disk full)") && e.contains("free some space"), "{e}");
        assert!(!e.contains("engram doctor"), "a full disk is not damage: {e}");
        eprintln!("capture on a full disk: {e}");
    }
    assert!(leftovers(&pack).is_empty(), "after failed writes: {:?}", leftovers(&pack));
    // Reads work on the full disk.
    let loaded = ok(&c, "load_engram", json!({"name": "full"})).await;
    assert!(loaded.contains("before the disk filled 4"), "{loaded}");
    let found = ok(&c, "search_memory", json!({"query": "disk filled", "name": "full"})).await;
    assert!(found.contains("before the disk filled"), "{found}");
    ok(&c, "read_engram_file", json!({"name": "full", "path": "memory/c.md"})).await;

    // gc on the full disk: fails or does nothing, and leaves no temp file either.
    let out = env.cli(&["gc", "full"]);
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    eprintln!("gc on a full disk: {} {said}", out.status);
    if !out.status.success() {
        assert!(said.contains("disk full") || said.contains("No space left"), "{said}");
    }
    assert!(leftovers(&pack).is_empty(), "after gc on a full disk: {:?} ({said})", leftovers(&pack));

    // Space returns: gc (git's) works, writes work, fsck is clean and every acknowledged
    // capture is there.
    fs::remove_file(&filler).expect("free space");
    let out = env.cli(&["gc", "full"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(leftovers(&pack).is_empty(), "after gc: {:?}", leftovers(&pack));
    c.close().await.expect("close");
    let c = env.client().await;
    let text = "after space returned".to_owned();
    ok(&c, "capture_memory", json!({"name": "full", "category": "c", "content": text, "summary": text}))
        .await;
    acknowledged.push(text);
    assert!(leftovers(&pack).is_empty(), "after the first write: {:?}", leftovers(&pack));
    c.close().await.expect("close");
    assert_fsck(&pack);
    assert_clean(&pack);
    let m = crate::concurrency::assert_consistent(&pack);
    for a in &acknowledged {
        assert_eq!(m.blocks["c"].iter().filter(|b| *b == a).count(), 1, "{a:?} present once");
    }
    assert!(!m.blocks["c"].iter().any(|b| b.starts_with("on a full disk")), "refused writes left nothing");
    drop(env.cli(&["doctor", "full"]));
}
