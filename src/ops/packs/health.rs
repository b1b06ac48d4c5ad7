//! Whether a pack can be read: the one classification behind every reader of all packs
//! (`list_engrams`, `search_memory` over all packs, `stats_engrams`, the web page's pack list
//! and pack pages, `engram sync`). A damaged pack is named with a one-line diagnosis and the
//! `engram doctor` command; it never makes the others fail.
//!
//! | damage | found by |
//! |---|---|
//! | `meta.json` unreadable | [`crate::pack::read_meta`] |
//! | `.git` not a repository, `.git/HEAD` missing, the branch unreadable | [`quick_check`] |
//! | a tree or blob of HEAD's tree missing | [`quick_check`]: existence only, once per HEAD commit |
//!
//! `engram doctor` runs the full diagnosis (every commit, hashes, the index, the working tree).
//!
//! A survey costs no listing and no parsing while nothing changed (every `search_memory`
//! over all packs takes one):
//!
//! | kept | until |
//! |---|---|
//! | the scan of the roots ([`crate::pack::Packs::scan`]) | a root, or the `meta.json` of one of its directories, is not the file it was (stamp: kind, size, inode, change and modification times); never kept when one of them changed in the last [`SETTLE`] (a change inside one clock tick leaves the stamp as it was) |
//! | a pack's verdict `Healthy` | its `.git/HEAD` or the branch it names reads differently, or `.git/packed-refs` or `.git/config` is not the file it was; a damaged pack is checked again on every survey |
//!
//! A pack whose commit loses an object without its branch moving is still found by the
//! read that fails ([`Engram::damage_of`] checks again, uncached).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::ops::Engram;
use crate::pack::{PackScan, PackSummary, ShadowedPack};
use crate::store::doctor::quick_check;

/// A damaged pack, named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Damage {
    /// The pack's directory name (what `engram doctor` takes).
    pub name: String,
    /// What is wrong, in one line.
    pub diagnosis: String,
    /// The command that says how to repair it.
    pub doctor: String,
}

impl Damage {
    fn new(name: &str, diagnosis: &str) -> Self {
        let diagnosis = diagnosis.split_whitespace().collect::<Vec<_>>().join(" ");
        Self { name: name.to_owned(), diagnosis, doctor: format!("engram doctor {name}") }
    }

    /// The one line every reader shows: name, diagnosis, the doctor command.
    pub fn note(&self) -> String {
        format!(
            "⚠ {}: {} — 此包已损坏 (damaged): `{}` says how to repair it; the other packs are unaffected",
            self.name, self.diagnosis, self.doctor
        )
    }
}

/// What [`Engram::pack_health`] finds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PackHealth {
    /// The pack reads.
    Healthy,
    /// It does not; why.
    Damaged(Damage),
}

impl PackHealth {
    /// The damage, when there is one.
    pub fn damage(&self) -> Option<&Damage> {
        match self {
            Self::Healthy => None,
            Self::Damaged(d) => Some(d),
        }
    }
}

/// The packs of the roots, each classified (see [`Engram::survey`]).
#[derive(Debug, Clone, Default)]
pub struct Survey {
    /// The packs `list_engrams` lists (their `meta.json` reads), in its order, with their health.
    pub packs: Vec<(PackSummary, PackHealth)>,
    /// Directories whose `meta.json` is broken: damaged, and not listed.
    pub unlisted: Vec<Damage>,
    /// Packs hidden by one of the same name (not in `packs`).
    pub shadowed: Vec<ShadowedPack>,
}

impl Survey {
    /// The listed packs that read.
    pub fn healthy(&self) -> impl Iterator<Item = &PackSummary> {
        self.packs.iter().filter(|(_, h)| *h == PackHealth::Healthy).map(|(p, _)| p)
    }

    /// Every damaged pack: the listed ones, then those whose `meta.json` is broken.
    pub fn damaged(&self) -> Vec<Damage> {
        self.packs
            .iter()
            .filter_map(|(_, h)| h.damage().cloned())
            .chain(self.unlisted.iter().cloned())
            .collect()
    }
}

/// HEAD commits whose trees [`quick_check`] found whole, per pack directory: not walked
/// again; and the packs found healthy, not checked again while their HEAD reads the same.
#[derive(Debug, Default)]
pub(crate) struct WholeHeads(Mutex<Heads>);

impl WholeHeads {
    fn lock(&self) -> std::sync::MutexGuard<'_, Heads> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn get(&self, dir: &Path) -> Option<String> {
        self.lock().whole.get(dir).cloned()
    }

    fn set(&self, dir: &Path, head: Option<String>) {
        let mut all = self.lock();
        match head {
            Some(head) => all.whole.insert(dir.to_owned(), head),
            None => all.whole.remove(dir),
        };
    }

    fn still_healthy(&self, dir: &Path, key: &HeadKey) -> bool {
        self.lock().healthy.get(dir) == Some(key)
    }

    fn set_healthy(&self, dir: &Path, key: Option<HeadKey>) {
        let mut all = self.lock();
        match key {
            Some(key) => all.healthy.insert(dir.to_owned(), key),
            None => all.healthy.remove(dir),
        };
    }
}

/// How long a changed root or `meta.json` is not trusted to keep its stamp: longer than any
/// file system's clock tick.
pub(crate) const SETTLE: Duration = Duration::from_secs(2);

/// What a file is, as far as a cache can tell without reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    dir: bool,
    len: u64,
    modified: Option<SystemTime>,
    #[cfg(unix)]
    inode: (u64, u64),
    #[cfg(unix)]
    changed: (i64, i64),
}

/// The stamp of `path` (a symbolic link itself, not followed); `None` when it is not there.
fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::symlink_metadata(path).ok()?;
    #[cfg(unix)]
    use std::os::unix::fs::MetadataExt;
    Some(Stamp {
        dir: m.is_dir(),
        len: m.len(),
        modified: m.modified().ok(),
        #[cfg(unix)]
        inode: (m.dev(), m.ino()),
        #[cfg(unix)]
        changed: (m.ctime(), m.ctime_nsec()),
    })
}

/// Whether a stamp was made long enough before `now` that a later change must alter it.
fn settled(s: &Option<Stamp>, now: SystemTime) -> bool {
    s.as_ref().and_then(|s| s.modified).is_none_or(|m| m + SETTLE <= now)
}

/// A scan of the roots and the stamps it was made from.
#[derive(Debug, Clone)]
struct KeptScan {
    roots: Vec<PathBuf>,
    stamps: Vec<(PathBuf, Option<Stamp>)>,
    scan: PackScan,
}

/// The stamps a scan of `roots` depends on: each root, and the `meta.json` of each of its
/// entries (what [`crate::pack::Packs::scan`] reads). Taken before the scan, so a change
/// during it makes the next stamps differ.
fn scan_stamps(roots: &[PathBuf]) -> Vec<(PathBuf, Option<Stamp>)> {
    let mut out = Vec::new();
    for root in roots {
        out.push((root.clone(), stamp(root)));
        let Ok(entries) = std::fs::read_dir(root) else { continue };
        let mut metas: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_name().to_str().is_some_and(|n| !n.starts_with('.')))
            .map(|e| e.path().join("meta.json"))
            .collect();
        metas.sort();
        out.extend(metas.into_iter().map(|m| {
            let s = stamp(&m);
            (m, s)
        }));
    }
    out
}

/// The scan of the roots last made, while it still holds (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct ScanCache(Mutex<Option<KeptScan>>);

impl ScanCache {
    /// The scan of `roots`, and whether it is the kept one (nothing it was made from changed).
    fn scan(&self, packs: &crate::pack::Packs, now: SystemTime) -> (PackScan, bool) {
        let roots = packs.roots();
        {
            let kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(k) = kept.as_ref()
                && k.roots == roots
                && k.stamps.iter().all(|(path, s)| stamp(path) == *s)
            {
                return (k.scan.clone(), true);
            }
        }
        let stamps = scan_stamps(roots);
        let scan = packs.scan();
        let keep = stamps.iter().all(|(_, s)| settled(s, now));
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *kept = keep.then(|| KeptScan { roots: roots.to_vec(), stamps, scan: scan.clone() });
        (scan, false)
    }
}

/// Packs resolved by directory name ([`Engram::resolve`]), each with the stamps of its directory
/// and `meta.json`: a named search neither reads nor parses `meta.json` while they hold.
#[derive(Debug, Default)]
pub(crate) struct ResolveCache(Mutex<HashMap<String, KeptPack>>);

#[derive(Debug, Clone)]
struct KeptPack {
    pack: crate::pack::PackDir,
    stamps: [Option<Stamp>; 2],
}

impl ResolveCache {
    /// The pack named `name`: the kept one while its stamps hold, else resolved again.
    pub(crate) fn resolve(
        &self,
        packs: &crate::pack::Packs,
        name: &str,
        now: SystemTime,
    ) -> Result<crate::pack::PackDir, crate::pack::PackError> {
        let stamps_of = |dir: &Path| [stamp(dir), stamp(&dir.join("meta.json"))];
        {
            let kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(k) = kept.get(name)
                && stamps_of(&k.pack.dir) == k.stamps
            {
                return Ok(k.pack.clone());
            }
        }
        let first_root = packs.roots().first().map(|r| r.join(name));
        let stamps = first_root.as_deref().map(stamps_of);
        let pack = packs.resolve(name)?;
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        // Only a real directory of the first root, named as asked and settled, is kept: no other
        // root can shadow it, and no `meta.name` of another directory decides.
        match stamps {
            Some(stamps)
                if first_root.as_deref() == Some(pack.dir.as_path())
                    && stamps[0].as_ref().is_some_and(|s| s.dir)
                    && stamps.iter().all(|s| settled(s, now)) =>
            {
                kept.insert(name.to_owned(), KeptPack { pack: pack.clone(), stamps });
            }
            _ => {
                kept.remove(name);
            }
        }
        Ok(pack)
    }
}

/// What a pack's HEAD is, read from its files: what [`quick_check`] found healthy stays so
/// while this reads the same.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HeadKey {
    head: Vec<u8>,
    branch: Option<Vec<u8>>,
    packed_refs: Option<Stamp>,
    config: Option<Stamp>,
}

impl HeadKey {
    /// The key of the repository in `dir`; `None` when `.git/HEAD` does not read or names a
    /// branch that is not a plain name (then [`quick_check`] always runs).
    fn of(dir: &Path) -> Option<Self> {
        let git = dir.join(".git");
        if !stamp(&git)?.dir {
            return None;
        }
        let head = std::fs::read(git.join("HEAD")).ok()?;
        let branch = match head.strip_prefix(b"ref: ") {
            Some(name) => {
                let name = std::str::from_utf8(name).ok()?.trim_end();
                let plain = name.starts_with("refs/heads/")
                    && name.split('/').all(|c| !c.is_empty() && c != "." && c != "..");
                if !plain {
                    return None;
                }
                std::fs::read(git.join(name)).ok()
            }
            None => None,
        };
        Some(Self {
            head,
            branch,
            packed_refs: stamp(&git.join("packed-refs")),
            config: stamp(&git.join("config")),
        })
    }
}

/// Per pack directory: the HEAD commits [`quick_check`] found whole, and the [`HeadKey`]
/// under which the last check found the pack healthy.
#[derive(Debug, Default)]
struct Heads {
    whole: HashMap<PathBuf, String>,
    healthy: HashMap<PathBuf, HeadKey>,
}

/// The directory name of `dir`.
fn dir_name(dir: &Path) -> String {
    dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

impl Engram {
    /// Whether the pack in `dir` can be read: `meta.json` (not for the global memory), then
    /// the repository's cheap checks ([`quick_check`]). The one classification every reader
    /// of all packs uses.
    pub fn pack_health(&self, dir: &Path) -> PackHealth {
        let name = dir_name(dir);
        if name != crate::pack::GLOBAL_DIR
            && let Err(problem) = crate::pack::read_meta(dir)
        {
            let diagnosis = format!(
                "meta.json {problem} (the pack is not listed; undo_last / revert_memory / memory_history work on it)"
            );
            return PackHealth::Damaged(Damage::new(&name, &diagnosis));
        }
        self.repository_health(dir, &name)
    }

    /// The repository half of [`Engram::pack_health`]: [`quick_check`], skipped while the
    /// pack was found healthy under the same [`HeadKey`].
    fn repository_health(&self, dir: &Path, name: &str) -> PackHealth {
        let key = HeadKey::of(dir);
        if let Some(key) = &key
            && self.whole_heads.still_healthy(dir, key)
        {
            return PackHealth::Healthy;
        }
        let known = self.whole_heads.get(dir);
        let (found, health) = match quick_check(dir, known.as_deref()) {
            Ok(head) => (head, PackHealth::Healthy),
            Err(f) => (None, PackHealth::Damaged(Damage::new(name, &f.problem))),
        };
        self.whole_heads.set(dir, found);
        self.whole_heads.set_healthy(dir, key.filter(|_| health == PackHealth::Healthy));
        health
    }

    /// The damage of a pack whose read failed although [`Engram::pack_health`] passed it
    /// (an object that is there but cannot be read): the error, on one line.
    pub fn damage_of(&self, dir: &Path, error: &crate::ops::EngramError) -> Damage {
        self.whole_heads.set_healthy(dir, None);
        match self.pack_health(dir) {
            PackHealth::Damaged(d) => d,
            PackHealth::Healthy => Damage::new(&dir_name(dir), &error.to_string()),
        }
    }

    /// Every pack of the roots, classified: what `list_engrams` lists, each with its
    /// [`PackHealth`], the directories whose `meta.json` is broken, and shadowed packs.
    /// Nothing is listed or parsed again while nothing changed (see the module docs).
    pub fn survey(&self) -> Survey {
        let (scan, _) = self.scans.scan(&self.packs(), SystemTime::now());
        let packs = scan
            .packs
            .into_iter()
            .map(|p| {
                // The scan read its `meta.json`.
                let health = self.repository_health(&p.dir, &dir_name(&p.dir));
                (p, health)
            })
            .collect();
        let unlisted =
            scan.broken.iter().filter_map(|b| self.pack_health(&b.dir).damage().cloned()).collect();
        Survey { packs, unlisted, shadowed: scan.shadowed }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::Packs;

    /// Makes `path` look changed an hour ago (settled).
    fn age(path: &Path) {
        let old = SystemTime::now() - Duration::from_secs(3600);
        std::fs::File::open(path).and_then(|f| f.set_modified(old)).expect("set the modification time");
    }

    fn pack(root: &Path, dir: &str) {
        std::fs::create_dir(root.join(dir)).expect("pack dir");
        std::fs::write(root.join(dir).join("meta.json"), format!("{{\"name\": \"{dir}\"}}")).expect("meta");
        age(&root.join(dir).join("meta.json"));
    }

    fn dirs(scan: &PackScan) -> Vec<String> {
        scan.packs.iter().map(|p| dir_name(&p.dir)).collect()
    }

    #[test]
    fn a_kept_scan_sees_packs_added_removed_renamed_and_broken() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        pack(&root, "alpha");
        age(&root);
        let packs = Packs::new(root.clone(), None);
        let cache = ScanCache::default();
        let scan = |expect_kept: bool| {
            let (scan, kept) = cache.scan(&packs, SystemTime::now());
            assert_eq!(kept, expect_kept, "{:?}", dirs(&scan));
            scan
        };
        assert_eq!(dirs(&scan(false)), ["alpha"]);
        assert_eq!(dirs(&scan(true)), ["alpha"], "nothing changed: neither listed nor parsed");

        pack(&root, "beta");
        assert_eq!(dirs(&scan(false)), ["alpha", "beta"], "a new pack is seen at once");
        assert_eq!(dirs(&scan(false)), ["alpha", "beta"], "a root changed just now is not trusted");
        age(&root);
        scan(false);
        scan(true);

        std::fs::remove_dir_all(root.join("beta")).expect("remove beta");
        assert_eq!(dirs(&scan(false)), ["alpha"], "a removed pack is gone at once");
        age(&root);
        scan(false);

        std::fs::rename(root.join("alpha"), root.join("gamma")).expect("rename");
        assert_eq!(dirs(&scan(false)), ["gamma"], "a renamed pack is seen under its new name");
        age(&root);
        scan(false);
        scan(true);

        std::fs::write(root.join("gamma/meta.json"), "{oops").expect("break meta");
        let broken = scan(false);
        assert!(broken.packs.is_empty() && broken.broken.len() == 1, "{broken:?}");

        std::fs::create_dir(root.join("delta")).expect("a folder that is no pack yet");
        age(&root);
        age(&root.join("gamma/meta.json"));
        scan(false);
        scan(true);
        std::fs::write(root.join("delta/meta.json"), "{\"name\": \"delta\"}").expect("meta");
        assert_eq!(dirs(&scan(false)), ["delta"], "a meta.json written into a listed folder");
    }

    #[test]
    fn a_kept_resolution_sees_the_pack_removed_renamed_or_broken() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        pack(&root, "alpha");
        age(&root.join("alpha"));
        let packs = Packs::new(root.clone(), None);
        let cache = ResolveCache::default();
        let resolve = |name: &str| cache.resolve(&packs, name, SystemTime::now()).map(|p| p.dir);
        assert_eq!(resolve("alpha").ok(), Some(root.join("alpha")));
        assert!(cache.0.lock().expect("lock").contains_key("alpha"), "a settled pack is kept");
        assert_eq!(resolve("alpha").ok(), Some(root.join("alpha")), "kept");

        std::fs::write(root.join("alpha/meta.json"), "{oops").expect("break meta");
        assert!(resolve("alpha").is_err(), "a broken meta.json is seen at once");
        std::fs::write(root.join("alpha/meta.json"), "{\"name\": \"alpha\"}").expect("mend meta");
        assert!(resolve("alpha").is_ok());
        assert!(
            !cache.0.lock().expect("lock").contains_key("alpha"),
            "a meta.json changed just now is not kept"
        );

        age(&root.join("alpha/meta.json"));
        age(&root.join("alpha"));
        assert!(resolve("alpha").is_ok());
        std::fs::rename(root.join("alpha"), root.join("beta")).expect("rename");
        assert_eq!(
            resolve("alpha").ok(),
            Some(root.join("beta")),
            "a renamed directory is not kept under its old name (its meta.json still names it alpha)"
        );
        assert_eq!(resolve("beta").ok(), Some(root.join("beta")));
    }

    #[test]
    fn a_healthy_verdict_is_kept_only_while_the_branch_reads_the_same() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        pack(&root, "alpha");
        let dir = root.join("alpha");
        let repo = git2::Repository::init(&dir).expect("init");
        let sig = git2::Signature::now("t", "t@example.com").expect("signature");
        let tree = repo.treebuilder(None).and_then(|b| b.write()).expect("empty tree");
        let tree = repo.find_tree(tree).expect("tree");
        repo.commit(Some("HEAD"), &sig, &sig, "one", &tree, &[]).expect("commit");
        let engram = Engram::new(crate::ops::Config::new(root.clone())).expect("engram");
        let healthy = |e: &Engram| e.survey().packs.iter().all(|(_, h)| *h == PackHealth::Healthy);
        assert!(healthy(&engram));
        assert!(healthy(&engram), "kept");

        let branch = repo.head().expect("head").name().expect("a name").to_owned();
        let good = std::fs::read(dir.join(".git").join(&branch)).expect("read the branch");
        std::fs::write(dir.join(".git").join(&branch), "not a commit id\n").expect("break the branch");
        assert!(!healthy(&engram), "a broken branch is seen at once");
        assert!(!healthy(&engram), "and again: a damaged verdict is never kept");
        std::fs::write(dir.join(".git").join(&branch), good).expect("repair the branch");
        assert!(healthy(&engram), "a repaired branch is seen at once");
    }
}
