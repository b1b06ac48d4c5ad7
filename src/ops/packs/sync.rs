//! `engram remote …`, `engram sync` and `sync_status`: sharing a pack through any git remote.
//!
//! A sync is fetch → integrate → push. Integration is one commit through the
//! store (lock + compare-and-swap): a fast-forward when only the remote moved,
//! otherwise a merge whose content is decided here:
//! - memory files (category logs, the full index, their segments) are merged
//!   entry by entry ([`crate::memmerge`]) and the hot index is regenerated;
//!   a memory changed differently on both sides keeps both versions and is
//!   listed in `memory/_conflicts.md`;
//! - other memory files (archives, expired logs, the conflicts file) are
//!   append-only: a union of lines;
//! - any other file changed on both sides gets a line-based 3-way merge; on a
//!   real conflict our version stays and theirs is written next to it as
//!   `<name>.conflict-<host>.<ext>`;
//! - what cannot be combined at all (symbolic links, submodules, a file where
//!   the other side has a directory) leaves the branch as it is, saves it on a
//!   `conflict/<host>` branch pushed to the remote, and is reported.
//!
//! Nothing is ever force-pushed; a rejected push keeps the local commits.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, Utc};

use crate::memlog::{CategoryLog, FULL_INDEX, FullIndex, HOT_INDEX, LOG_DIR};
use crate::memmerge::{self, CONFLICTS_FILE, CONFLICTS_HEADER, MemorySide};
use crate::memory::{is_entry_line, parse_blocks};
use crate::ops::{Caller, Damage, Engram, EngramError, Result};
use crate::pack::USERS_DIR;
use crate::remote::encrypted::{self, CryptError, Key};
use crate::store::{
    ChangeKind, Changes, Credentials, Integrated, Integration, MergeView, PackRepo, PushOutcome, RemoteInfo,
    Side, Snapshot, StoreError, trailer,
};

/// The remote a pack syncs with when none is named.
pub const DEFAULT_REMOTE: &str = "origin";

/// The directory of the packs directory holding the keys of encrypted packs (never a pack).
pub const KEYS_DIR: &str = ".keys";

impl From<CryptError> for EngramError {
    fn from(e: CryptError) -> Self {
        match e {
            CryptError::Store(e) => e.into(),
            other => EngramError::Sync(other.to_string()),
        }
    }
}

/// Settings of sync: credentials and this device's name.
#[derive(Debug, Clone)]
pub struct SyncSettings {
    /// Credentials for https remotes.
    pub credentials: Credentials,
    /// This device's name, used in `conflict/<host>` branches and `.conflict-<host>` files.
    pub host: String,
}

impl Default for SyncSettings {
    fn default() -> Self {
        Self { credentials: Credentials::default(), host: "device".into() }
    }
}

/// How the fetched branch was brought in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    /// The remote has no commits on this branch yet.
    RemoteEmpty,
    /// Nothing new on the remote.
    UpToDate,
    /// Fast-forwarded to the remote.
    FastForward {
        /// Commits gained.
        commits: usize,
    },
    /// A merge commit was made.
    Merged {
        /// Short id of the merge commit.
        commit: String,
        /// Commits gained from the remote.
        commits: usize,
        /// Memory entries gained from the remote.
        memories: usize,
    },
    /// The two sides cannot be combined; local state saved on a branch.
    Unresolvable {
        /// Why.
        reason: String,
        /// The branch holding the local state.
        branch: String,
        /// Whether that branch reached the remote (and the error if not).
        pushed: std::result::Result<(), String>,
    },
}

/// What the push did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outgoing {
    /// Nothing local to send.
    NothingToPush,
    /// Sent this many commits.
    Pushed {
        /// Commits sent.
        commits: usize,
    },
    /// The remote refused (it moved, or a hook said no). Local commits are kept.
    Rejected(String),
    /// The push failed (network, authentication). Local commits are kept.
    Failed(String),
    /// Not attempted (the integration did not succeed).
    Skipped,
}

/// A conflict on a file other than memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileConflict {
    /// The file.
    pub path: String,
    /// What was done.
    pub resolution: String,
}

/// The result of syncing one pack.
#[derive(Debug, Clone)]
pub struct SyncReport {
    /// Pack name.
    pub pack: String,
    /// Remote name.
    pub remote: String,
    /// Remote URL.
    pub url: String,
    /// How the remote's commits came in.
    pub incoming: Incoming,
    /// What was pushed.
    pub outgoing: Outgoing,
    /// Memories changed differently on both sides (both kept; listed in `memory/_conflicts.md`).
    pub memory_conflicts: Vec<memmerge::MemoryConflict>,
    /// Other files changed on both sides.
    pub file_conflicts: Vec<FileConflict>,
    /// Proposal branches (`serve --propose`) pushed under their own name, never forced:
    /// each branch and whether the remote took it.
    pub proposals: Vec<(String, std::result::Result<(), String>)>,
    /// Proposal branches kept on this device because the remote is encrypted: it carries the
    /// branch only (a forge could not show a proposal it cannot read); review them here.
    pub proposals_kept_here: usize,
}

impl SyncReport {
    /// True when everything reached the remote and nothing needs a person.
    pub fn is_success(&self) -> bool {
        !matches!(self.incoming, Incoming::Unresolvable { .. })
            && matches!(self.outgoing, Outgoing::NothingToPush | Outgoing::Pushed { .. })
    }

    /// True when the remote refused the push, most often because another device pushed
    /// first: a new sync fetches that, merges and pushes again.
    pub fn push_lost_a_race(&self) -> bool {
        matches!(self.outgoing, Outgoing::Rejected(_))
    }

    /// The report as text (Chinese first line, English details).
    pub fn render(&self) -> String {
        let head =
            if self.is_success() { "同步完成 (synced)" } else { "同步未完成 (sync incomplete)" };
        let mut s = format!(
            "{head}: {} ↔ {} ({})\n",
            self.pack,
            self.remote,
            crate::secrets::mask_url_credentials(&self.url)
        );
        let incoming = match &self.incoming {
            Incoming::RemoteEmpty => "the remote has no commits on this branch yet".to_owned(),
            Incoming::UpToDate => "nothing new on the remote".to_owned(),
            Incoming::FastForward { commits } => {
                format!("fast-forwarded {commits} commit(s) from the remote")
            }
            Incoming::Merged { commit, commits, memories } => format!(
                "merged {commits} commit(s) from the remote ({memories} new memories) in commit {commit}"
            ),
            Incoming::Unresolvable { reason, branch, pushed } => format!(
                "NOT merged: {reason}. Local state kept unchanged and saved on branch {branch}{}",
                match pushed {
                    Ok(()) => format!(" (pushed to {})", self.remote),
                    Err(e) => format!(" (push of that branch failed: {e})"),
                }
            ),
        };
        s.push_str(&format!("- pull: {incoming}\n"));
        let outgoing = match &self.outgoing {
            Outgoing::NothingToPush => "nothing to push".to_owned(),
            Outgoing::Pushed { commits } => format!("pushed {commits} commit(s)"),
            Outgoing::Rejected(m) => {
                format!("REJECTED by the remote ({m}); local commits are kept — run `engram sync` again")
            }
            Outgoing::Failed(m) => format!("FAILED ({m}); local commits are kept — run `engram sync` again"),
            Outgoing::Skipped => "skipped".to_owned(),
        };
        s.push_str(&format!("- push: {outgoing}\n"));
        for (branch, pushed) in &self.proposals {
            match pushed {
                Ok(()) => s.push_str(&format!("- proposal {branch}: pushed\n")),
                Err(e) => s.push_str(&format!("- proposal {branch}: NOT pushed ({e})\n")),
            }
        }
        if self.proposals_kept_here > 0 {
            s.push_str(&format!(
                "- proposals: {} kept on this device (an encrypted remote carries the branch only); review them here with `engram review list {}`\n",
                self.proposals_kept_here, self.pack
            ));
        }
        if !self.memory_conflicts.is_empty() {
            s.push_str(&format!(
                "- memory conflicts: {} (both versions kept; see {CONFLICTS_FILE})\n",
                self.memory_conflicts.len()
            ));
            for c in &self.memory_conflicts {
                s.push_str(&format!("  - [{}] [{}] {}\n", c.category, c.ts, c.base_summary));
            }
        }
        if !self.file_conflicts.is_empty() {
            s.push_str(&format!("- file conflicts: {}\n", self.file_conflicts.len()));
            for c in &self.file_conflicts {
                s.push_str(&format!("  - {}: {}\n", c.path, c.resolution));
            }
        }
        s.trim_end().to_owned()
    }
}

/// True for the memory files merged entry by entry: category logs, the full
/// index, their segments and the hot index.
fn is_memory_log(path: &str) -> bool {
    if path == FULL_INDEX || path == HOT_INDEX || path.starts_with(&format!("{LOG_DIR}/")) {
        return true;
    }
    path.strip_prefix("memory/").and_then(|p| p.strip_suffix(".md")).is_some_and(is_category_name)
}

fn is_category_name(stem: &str) -> bool {
    !stem.is_empty()
        && !stem.contains('/')
        && !stem.starts_with('_')
        && !stem.ends_with("-archive")
        && !stem.ends_with("-expired")
}

/// `knowledge/a.md` → `knowledge/a.conflict-<host>.md` (a free name).
fn conflict_path(path: &str, host: &str, taken: &dyn Fn(&str) -> bool) -> String {
    let (dir, file) = match path.rsplit_once('/') {
        Some((d, f)) => (format!("{d}/"), f),
        None => (String::new(), path),
    };
    let (stem, ext) = match file.rsplit_once('.') {
        Some((s, e)) if !s.is_empty() => (s, format!(".{e}")),
        _ => (file, String::new()),
    };
    for n in 1..1000 {
        let suffix = if n == 1 { String::new() } else { format!("-{n}") };
        let candidate = format!("{dir}{stem}.conflict-{host}{suffix}{ext}");
        if !taken(&candidate) {
            return candidate;
        }
    }
    format!("{dir}{stem}.conflict-{host}-{}{ext}", std::process::id())
}

pub(super) fn load_memory(snap: &Snapshot<'_>) -> std::result::Result<MemorySide, StoreError> {
    let mut names: Vec<String> = snap
        .list("memory")?
        .into_iter()
        .filter_map(|n| n.strip_suffix(".md").map(str::to_owned))
        .filter(|n| is_category_name(n))
        .collect();
    names.extend(snap.list(LOG_DIR)?.into_iter().filter(|n| is_category_name(n)));
    names.sort();
    names.dedup();
    let mut side = MemorySide::default();
    for name in names {
        let log = CategoryLog::load(snap, &name)?;
        side.categories.insert(name, parse_blocks(&log.concatenated_text()));
    }
    let index = FullIndex::load(snap)?;
    side.index = index.entry_lines().iter().map(|l| l.trim().to_owned()).collect();
    if let Some(head) = snap.read_text(FULL_INDEX)? {
        side.header = head.lines().filter(|l| !is_entry_line(l)).map(str::to_owned).collect();
        while side.header.last().is_some_and(|l| l.trim().is_empty()) {
            side.header.pop();
        }
    }
    Ok(side)
}

fn segments_of(
    snap: &Snapshot<'_>,
    name: &str,
    blocks: bool,
) -> std::result::Result<Vec<(String, Vec<String>)>, StoreError> {
    let dir = format!("{LOG_DIR}/{name}");
    let mut files: Vec<String> = snap.list(&dir)?.into_iter().filter(|n| n.ends_with(".md")).collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let path = format!("{dir}/{f}");
        let text = snap.read_text(&path)?.unwrap_or_default();
        let items = if blocks {
            parse_blocks(&text).into_iter().map(|b| b.text).collect()
        } else {
            text.lines().map(|l| l.trim().to_owned()).filter(|l| !l.is_empty()).collect()
        };
        out.push((path, items));
    }
    Ok(out)
}

/// Decisions of one merge, handed back through the store.
#[derive(Debug, Default, Clone)]
pub(super) struct MergeNotes {
    pub(super) memory_conflicts: Vec<memmerge::MemoryConflict>,
    pub(super) file_conflicts: Vec<FileConflict>,
    pub(super) memories: usize,
    pub(super) commits: usize,
}

/// Who merges what: names in conflict files and in the merge commit.
pub(super) struct MergeContext<'a> {
    pub(super) host: &'a str,
    pub(super) remote: &'a str,
    pub(super) now: DateTime<Utc>,
    pub(super) caller: &'a Caller,
}

/// The content of a merge commit (see the module docs).
pub(super) fn resolve(view: &MergeView<'_>, cx: &MergeContext<'_>) -> Result<Integration<MergeNotes>> {
    let mut changes = Changes::default();
    let mut notes = MergeNotes { commits: view.incoming_commits, ..MergeNotes::default() };
    let mut memory_touched = false;
    let exists_in_result =
        |p: &str, changes: &Changes| changes.paths().any(|c| c == p) || view.ours.exists(p);
    for cp in &view.changed {
        let path = cp.path.as_str();
        if is_memory_log(path) {
            memory_touched |= matches!(cp.kind, ChangeKind::TheirsOnly | ChangeKind::BothDiffer);
            continue;
        }
        match cp.kind {
            ChangeKind::OursOnly | ChangeKind::BothSame => {}
            ChangeKind::TheirsOnly => match view.theirs.read(path)? {
                Some(bytes) if cp.is_plain() => changes.put(path, bytes),
                None => changes.remove(path),
                Some(_) => {
                    return Ok(Integration::Unresolvable {
                        reason: format!("{path} is a symbolic link or submodule on the remote"),
                        value: notes,
                    });
                }
            },
            ChangeKind::BothDiffer => {
                if !cp.is_plain() {
                    return Ok(Integration::Unresolvable {
                        reason: format!("{path} is a symbolic link or submodule changed on both sides"),
                        value: notes,
                    });
                }
                let append_only = path.starts_with("memory/");
                let is_index = path.ends_with("/_index.md") || path == "_index.md";
                match (cp.exists(Side::Ours), cp.exists(Side::Theirs)) {
                    (true, true) => {
                        if let Some(bytes) = view.merge_text(path, append_only)? {
                            changes.put(path, bytes);
                        } else if is_index && let Some(bytes) = view.merge_text(path, true)? {
                            changes.put(path, bytes);
                            notes.file_conflicts.push(FileConflict {
                                path: path.to_owned(),
                                resolution: "both sides changed the same lines; kept the lines of both"
                                    .into(),
                            });
                        } else {
                            let theirs = view.theirs.read(path)?.unwrap_or_default();
                            let copy = conflict_path(path, cx.host, &|p| exists_in_result(p, &changes));
                            changes.put(copy.clone(), theirs);
                            notes.file_conflicts.push(FileConflict {
                                path: path.to_owned(),
                                resolution: format!(
                                    "changed on both sides: kept this device's version; the remote's version is in {copy}"
                                ),
                            });
                        }
                    }
                    (false, true) => {
                        if let Some(bytes) = view.theirs.read(path)? {
                            changes.put(path, bytes);
                        }
                        notes.file_conflicts.push(FileConflict {
                            path: path.to_owned(),
                            resolution:
                                "deleted on this device, changed on the remote: kept the remote's version"
                                    .into(),
                        });
                    }
                    (true, false) => {
                        notes.file_conflicts.push(FileConflict {
                            path: path.to_owned(),
                            resolution:
                                "changed on this device, deleted on the remote: kept this device's version"
                                    .into(),
                        })
                    }
                    (false, false) => {}
                }
            }
        }
    }
    if memory_touched {
        merge_memory(view, cx, &mut changes, &mut notes)?;
    }
    let mut subject = format!("sync: merge {} ({} commits", cx.remote, view.incoming_commits);
    if notes.memories > 0 {
        subject.push_str(&format!(", {} memories", notes.memories));
    }
    let n_conflicts = notes.memory_conflicts.len() + notes.file_conflicts.len();
    if n_conflicts > 0 {
        subject.push_str(&format!(", {n_conflicts} conflicts"));
    }
    subject.push(')');
    let mut body = String::new();
    for c in &notes.memory_conflicts {
        body.push_str(&format!("memory conflict: [{}] [{}] {}\n", c.category, c.ts, c.base_summary));
    }
    for c in &notes.file_conflicts {
        body.push_str(&format!("file conflict: {}: {}\n", c.path, c.resolution));
    }
    let mut message = cx.caller.commit_message(subject, cx.now.timestamp()).trailer(trailer::HOST, cx.host);
    if !body.is_empty() {
        message.body = Some(body);
    }
    Ok(Integration::Merge { changes, message, value: notes })
}

fn merge_memory(
    view: &MergeView<'_>,
    cx: &MergeContext<'_>,
    changes: &mut Changes,
    notes: &mut MergeNotes,
) -> Result<()> {
    let (base, ours, theirs) =
        (load_memory(&view.base)?, load_memory(&view.ours)?, load_memory(&view.theirs)?);
    let merged = memmerge::merge(&base, &ours, &theirs);
    let mut category_segments = BTreeMap::new();
    for cat in merged.categories.keys() {
        category_segments.insert(cat.clone(), segments_of(&view.ours, cat, true)?);
    }
    let index_segments = segments_of(&view.ours, "_index_full", false)?;
    for (path, content) in memmerge::render_files(&merged, &category_segments, &index_segments) {
        let current = view.ours.read_text(&path)?;
        match content {
            Some(text) if current.as_deref() != Some(text.as_str()) => {
                if text.is_empty() && current.is_none() {
                    continue;
                }
                changes.put(path, text);
            }
            None if current.is_some() => changes.remove(path),
            _ => {}
        }
    }
    if !merged.conflicts.is_empty() {
        let existing = changes_text(changes, CONFLICTS_FILE).or(view.ours.read_text(CONFLICTS_FILE)?);
        let mut text = existing.unwrap_or_else(|| CONFLICTS_HEADER.to_owned());
        let when = cx.now.format("%Y-%m-%d %H:%M").to_string();
        text.push_str(&memmerge::render_conflicts(&merged.conflicts, &when, cx.remote, cx.host));
        changes.put(CONFLICTS_FILE, text);
    }
    notes.memories = merged.incoming;
    notes.memory_conflicts = merged.conflicts;
    Ok(())
}

fn changes_text(changes: &Changes, path: &str) -> Option<String> {
    changes.get(path).map(|b| String::from_utf8_lossy(b).into_owned())
}

/// The state recorded after each sync, read by `sync_status`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct SyncRecord {
    pub(super) time: String,
    pub(super) ok: bool,
    remote: String,
    pub(super) report: String,
    memory_conflicts: usize,
    file_conflicts: Vec<String>,
}

impl Engram {
    pub(super) fn sync_settings(&self) -> &SyncSettings {
        &self.config.sync
    }

    /// A repository handle of its own for sync, so network work never holds
    /// the in-process lock tool writes take.
    fn sync_repo(&self, dir: &Path) -> Result<PackRepo> {
        Ok(PackRepo::open_or_adopt(dir, self.config.store.clone())?)
    }

    /// [`Engram::sync_repo`] for a read: a folder that is not a repository yet has no
    /// remote, and a read does not make it one.
    pub(super) fn sync_repo_to_read(&self, name: &str, dir: &Path) -> Result<PackRepo> {
        if !PackRepo::is_repository(dir) {
            return Err(EngramError::NoRemote { name: name.to_owned() });
        }
        Ok(PackRepo::open(dir, self.config.store.clone())?)
    }

    /// `engram remote add`: sets the URL of a pack's remote (default `origin`); with
    /// `encrypt`, the remote holds the pack encrypted with the pack's key (`engram key new`).
    pub fn remote_add(&self, name: &str, url: &str, remote: Option<&str>, encrypt: bool) -> Result<String> {
        let pack_dir = self.sync_dir(name)?;
        let remote = remote.unwrap_or(DEFAULT_REMOTE);
        if url.trim().is_empty() {
            return Err(EngramError::Invalid { field: "url", reason: "must not be empty".into() });
        }
        if encrypt {
            self.pack_key(name)?;
        }
        let repo = self.sync_repo(&pack_dir)?;
        let existed = repo.set_remote(remote, url.trim())?;
        if encrypt {
            encrypted::set_encrypted(repo.dir(), remote)?;
        }
        let url = if encrypt { format!("{url} (encrypted)") } else { url.to_owned() };
        Ok(if existed {
            format!("已更新远端 (remote updated): {name} {remote} → {url}")
        } else {
            format!("已添加远端 (remote added): {name} {remote} → {url}\nNext: engram sync {name}")
        })
    }

    /// `engram remote remove`.
    pub fn remote_remove(&self, name: &str, remote: Option<&str>) -> Result<String> {
        let pack_dir = self.sync_dir(name)?;
        let remote = remote.unwrap_or(DEFAULT_REMOTE);
        if self.sync_repo_to_read(name, &pack_dir)?.remove_remote(remote)? {
            Ok(format!("已删除远端 (remote removed): {name} {remote}"))
        } else {
            Err(EngramError::Sync(format!("{name} has no remote named {remote:?}")))
        }
    }

    /// Where pack `name`'s key is kept: `<packs>/.keys/<name>.key`, outside the pack's repository.
    pub fn key_path(&self, name: &str) -> std::path::PathBuf {
        self.config.packs_dir.join(KEYS_DIR).join(format!("{name}.key"))
    }

    /// Pack `name`'s key, or why there is none.
    fn pack_key(&self, name: &str) -> Result<Key> {
        let path = self.key_path(name);
        if !path.exists() {
            return Err(CryptError::NoKey { pack: name.to_owned(), path }.into());
        }
        Ok(Key::read(&path)?)
    }

    /// `engram key new <pack>`: makes the pack's key (mode 600, outside the pack) and says how
    /// to bring it to another device. Never replaces a key.
    pub fn key_new(&self, name: &str) -> Result<String> {
        self.sync_dir(name)?;
        let path = self.key_path(name);
        if path.exists() {
            return Err(EngramError::Sync(format!(
                "{name} already has a key ({}); a new one would not open what the remote holds",
                path.display()
            )));
        }
        Key::generate()?.write_new(&path)?;
        Ok(format!(
            "密钥已生成 (key created): {}\nNext: engram remote add {name} <url> --encrypt; engram sync {name}\nOn another device: copy this file there yourself (scp, a USB stick, a password manager; never through the remote), then `engram key import {name} FILE` for a pack it has, or `engram install <url> --key FILE`",
            path.display()
        ))
    }

    /// `engram key import <pack> FILE`: copies a key file into place (mode 600).
    pub fn key_import(&self, name: &str, file: &Path) -> Result<String> {
        self.sync_dir(name)?;
        let key = Key::read(file)?;
        let path = self.key_path(name);
        if path.exists() {
            return Err(EngramError::Sync(format!("{name} already has a key ({})", path.display())));
        }
        key.write_new(&path)?;
        Ok(format!("密钥已导入 (key imported): {}\nNext: engram sync {name}", path.display()))
    }

    /// `engram remote list`.
    pub fn remote_list(&self, name: &str) -> Result<Vec<RemoteInfo>> {
        let pack_dir = self.sync_dir(name)?;
        Ok(self.sync_repo_to_read(name, &pack_dir)?.remotes()?)
    }

    pub(super) fn pick_remote(&self, name: &str, repo: &PackRepo) -> Result<RemoteInfo> {
        let remotes = repo.remotes()?;
        if let Some(r) = remotes.iter().find(|r| r.name == DEFAULT_REMOTE) {
            return Ok(r.clone());
        }
        match remotes.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(EngramError::NoRemote { name: name.to_owned() }),
            many => Err(EngramError::Sync(format!(
                "{name} has several remotes ({}) and none is named origin; rename the one to sync with to origin",
                many.iter().map(|r| r.name.as_str()).collect::<Vec<_>>().join(", ")
            ))),
        }
    }

    /// True when the pack has a remote.
    pub fn has_remote(&self, name: &str) -> bool {
        self.sync_dir(name)
            .ok()
            .filter(|dir| PackRepo::is_repository(dir))
            .and_then(|dir| self.sync_repo_to_read(name, &dir).ok())
            .and_then(|r| r.remotes().ok())
            .is_some_and(|r| !r.is_empty())
    }

    /// The directory of a pack to sync: a pack by name, or a user's own pack of a team
    /// server named `.users/<user>/<pack>` (as `engram sync` lists them).
    fn sync_dir(&self, name: &str) -> Result<std::path::PathBuf> {
        let Some(rest) = name.strip_prefix(&format!("{USERS_DIR}/")) else {
            return Ok(self.resolve(name)?.dir);
        };
        let bad = |reason: String| EngramError::Invalid { field: "name", reason };
        let (user, pack) =
            rest.split_once('/').ok_or_else(|| bad(format!("{name}: expected {USERS_DIR}/<user>/<pack>")))?;
        crate::ops::validate_user(user).map_err(bad)?;
        crate::pack_path::PackPath::check_component(pack).map_err(|e| bad(format!("{name}: {e}")))?;
        let dir = self.config.packs_dir.join(USERS_DIR).join(user).join(pack);
        if !PackRepo::is_repository(&dir) {
            return Err(EngramError::NoRemote { name: name.to_owned() });
        }
        Ok(dir)
    }

    /// Each user's own packs on a team server that are repositories, as
    /// `.users/<user>/<pack>`: synced with their own remotes like any pack (no user's pack
    /// ever goes to another's remote: each is a repository of its own).
    fn user_packs(&self) -> Vec<String> {
        let mut out = Vec::new();
        let base = self.config.packs_dir.join(USERS_DIR);
        let Ok(users) = std::fs::read_dir(&base) else { return out };
        for user in users.flatten() {
            let Ok(user_name) = user.file_name().into_string() else { continue };
            if crate::ops::validate_user(&user_name).is_err() {
                continue;
            }
            let Ok(packs) = std::fs::read_dir(user.path()) else { continue };
            for pack in packs.flatten() {
                let Ok(pack_name) = pack.file_name().into_string() else { continue };
                if !pack_name.starts_with('.') && PackRepo::is_repository(&pack.path()) {
                    out.push(format!("{USERS_DIR}/{user_name}/{pack_name}"));
                }
            }
        }
        out.sort();
        out
    }

    /// Every pack `engram sync` and the background sync consider: the packs, then the
    /// users' own packs.
    fn packs_to_sync(&self) -> Vec<String> {
        let mut names: Vec<String> = self.packs().list().into_iter().map(|p| p.name).collect();
        names.extend(self.user_packs());
        names
    }

    /// `engram sync <pack>`: fetch, integrate, push.
    pub fn sync_pack(&self, name: &str, caller: &Caller) -> Result<SyncReport> {
        let dir = self.sync_dir(name)?;
        let repo = self.sync_repo_to_read(name, &dir)?;
        let remote = self.pick_remote(name, &repo)?;
        let result = self.sync_with(name, &repo, &remote, caller);
        let record = match &result {
            Ok(report) => SyncRecord {
                time: self.now().to_rfc3339(),
                ok: report.is_success(),
                remote: remote.name.clone(),
                report: report.render(),
                memory_conflicts: report.memory_conflicts.len(),
                file_conflicts: report.file_conflicts.iter().map(|c| c.path.clone()).collect(),
            },
            Err(e) => SyncRecord {
                time: self.now().to_rfc3339(),
                ok: false,
                remote: remote.name.clone(),
                report: e.to_string(),
                memory_conflicts: 0,
                file_conflicts: Vec::new(),
            },
        };
        if let Ok(text) = serde_json::to_string_pretty(&record) {
            // The record is informational: a failure to write it must not fail the sync.
            let _ = repo.write_sync_state(&text);
        }
        result
    }

    fn sync_with(
        &self,
        name: &str,
        repo: &PackRepo,
        remote: &RemoteInfo,
        caller: &Caller,
    ) -> Result<SyncReport> {
        if let Some(path) = missing_local_remote(&remote.url) {
            let path = path.display();
            return Err(EngramError::Sync(format!(
                "{name}'s remote {} is the local path {path}, which does not exist yet; create an empty repository there with `git init --bare {path}`, then run `engram sync {name}` again",
                remote.name
            )));
        }
        let settings = self.sync_settings();
        let creds = &settings.credentials;
        let mut report = SyncReport {
            pack: name.to_owned(),
            remote: remote.name.clone(),
            url: remote.url.clone(),
            incoming: Incoming::UpToDate,
            outgoing: Outgoing::Skipped,
            memory_conflicts: Vec::new(),
            file_conflicts: Vec::new(),
            proposals: Vec::new(),
            proposals_kept_here: 0,
        };
        // An encrypted remote needs the key before anything goes over the network.
        let key =
            if encrypted::is_encrypted(repo.dir(), &remote.name) { Some(self.pack_key(name)?) } else { None };
        let fetched = match &key {
            Some(key) => encrypted::fetch(repo, &remote.name, key, creds)?,
            None => repo.fetch(&remote.name, creds)?,
        };
        let remote_has_branch = fetched.is_some();
        if let Some(theirs) = fetched {
            let cx = MergeContext { host: &settings.host, remote: &remote.name, now: self.now(), caller };
            let outcome = repo.integrate(&theirs, false, |view| resolve(view, &cx))?;
            report.incoming = match outcome {
                Integrated::UpToDate => Incoming::UpToDate,
                Integrated::FastForward { commits, .. } => Incoming::FastForward { commits },
                Integrated::Merged { commit, value } => {
                    report.memory_conflicts = value.memory_conflicts;
                    report.file_conflicts = value.file_conflicts;
                    Incoming::Merged {
                        commit: commit.short,
                        commits: value.commits,
                        memories: value.memories,
                    }
                }
                Integrated::Unresolvable { reason, .. } => {
                    let branch = repo.save_head_as_branch(&format!("conflict/{}", settings.host))?;
                    // A plain branch never goes to an encrypted remote.
                    let pushed = match key {
                        Some(_) => Err("kept on this device: the remote is encrypted".to_owned()),
                        None => match repo.push_ref(&remote.name, &branch, &branch, creds) {
                            Ok(PushOutcome::Pushed) => Ok(()),
                            Ok(PushOutcome::Rejected(m)) => Err(m),
                            Err(e) => Err(e.to_string()),
                        },
                    };
                    let short = branch.strip_prefix("refs/heads/").unwrap_or(&branch).to_owned();
                    report.incoming = Incoming::Unresolvable { reason, branch: short, pushed };
                    return Ok(report);
                }
            };
        } else {
            report.incoming = Incoming::RemoteEmpty;
        }
        // A remote without the branch receives every commit of HEAD (its tracking ref, if any, is stale).
        let ahead = match repo.ahead_behind(&remote.name)? {
            Some((ahead, _)) if remote_has_branch => ahead,
            _ => repo.commit_count()?,
        };
        report.outgoing = if ahead == 0 {
            Outgoing::NothingToPush
        } else {
            let pushed = match &key {
                Some(key) => encrypted::push(repo, &remote.name, key, creds).map_err(EngramError::from),
                None => repo.push(&remote.name, creds).map_err(EngramError::from),
            };
            match pushed {
                Ok(PushOutcome::Pushed) => Outgoing::Pushed { commits: ahead },
                Ok(PushOutcome::Rejected(m)) => Outgoing::Rejected(m),
                Err(e) => Outgoing::Failed(e.to_string()),
            }
        };
        // Proposals travel too, so a forge can show them as pull requests (or another
        // device review them); a branch the remote has moved elsewhere is refused, not forced.
        let proposals = repo.proposals_to_push(&remote.name)?;
        if key.is_some() {
            report.proposals_kept_here = proposals.len();
            return Ok(report);
        }
        for branch in proposals {
            let name = branch.ref_name();
            let pushed = match repo.push_ref(&remote.name, &name, &name, creds) {
                Ok(PushOutcome::Pushed) => Ok(()),
                Ok(PushOutcome::Rejected(m)) => Err(m),
                Err(e) => Err(e.to_string()),
            };
            report.proposals.push((branch.to_string(), pushed));
        }
        Ok(report)
    }

    /// Syncs every pack that has a remote; packs without one are skipped, and so are damaged
    /// packs ([`Engram::survey`]), which are handed back to be named.
    pub fn sync_all(&self, caller: &Caller) -> (Vec<(String, Result<SyncReport>)>, Vec<Damage>) {
        let survey = self.survey();
        let mut names: Vec<String> = survey.healthy().map(|p| p.name.clone()).collect();
        names.extend(self.user_packs());
        let results = names
            .into_iter()
            .filter(|name| self.has_remote(name))
            .map(|name| {
                let r = self.sync_pack(&name, caller);
                (name, r)
            })
            .collect();
        (results, survey.damaged())
    }

    /// Packs with a remote whose branch has commits the remote has not seen (no network).
    pub fn packs_to_push(&self) -> Vec<String> {
        let mut out = Vec::new();
        for name in self.packs_to_sync() {
            let Ok(dir) = self.sync_dir(&name) else { continue };
            if !PackRepo::is_repository(&dir) {
                continue;
            }
            let Ok(repo) = self.sync_repo_to_read(&name, &dir) else { continue };
            let Ok(remote) = self.pick_remote(&name, &repo) else { continue };
            // Proposals never travel to an encrypted remote: they alone are nothing to push.
            let proposals = if encrypted::is_encrypted(repo.dir(), &remote.name) {
                0
            } else {
                repo.proposals_to_push(&remote.name).map(|p| p.len()).unwrap_or(0)
            };
            match repo.ahead_behind(&remote.name) {
                Ok(Some((0, _))) if proposals == 0 => {}
                Ok(_) => out.push(name),
                Err(_) => {}
            }
        }
        out
    }

    /// `sync_status(name)`: remote, ahead/behind (as of the last fetch), last sync, conflicts. No network.
    /// Only a pack of this server's packs directory, by name: never a user's own pack of a
    /// team server (`.users/<user>/<pack>`, which the tools of every user could name).
    pub fn sync_status(&self, name: &str) -> Result<String> {
        let pack_dir = self.resolve(name)?.dir;
        let repo = self.sync_repo_to_read(name, &pack_dir)?;
        let remote = self.pick_remote(name, &repo)?;
        let mut s = format!(
            "## 同步状态 (sync status): {name}\n- remote: {} ({}){}\n",
            remote.name,
            crate::secrets::mask_url_credentials(&remote.url),
            if encrypted::is_encrypted(repo.dir(), &remote.name) { ", encrypted" } else { "" }
        );
        let branch = repo.branch_name()?;
        match repo.ahead_behind(&remote.name)? {
            Some((ahead, behind)) => s.push_str(&format!(
                "- branch {branch}: ahead {ahead}, behind {behind} (as of the last fetch)\n"
            )),
            None => s.push_str(&format!("- branch {branch}: never synced with {}\n", remote.name)),
        }
        match repo.read_sync_state()?.and_then(|t| serde_json::from_str::<SyncRecord>(&t).ok()) {
            Some(rec) => {
                s.push_str(&format!(
                    "- last sync: {} — {}\n",
                    rec.time,
                    if rec.ok { "ok" } else { "incomplete (see below)" }
                ));
                for line in rec.report.lines() {
                    s.push_str(&format!("  {line}\n"));
                }
            }
            None => s.push_str("- last sync: never\n"),
        }
        let root = crate::ops::engram::load::open_root(&pack_dir)?;
        let open = crate::ops::engram::load::read_pack_text(&root, CONFLICTS_FILE)?
            .map(|t| memmerge::count_conflicts(&t))
            .unwrap_or(0);
        if open > 0 {
            s.push_str(&format!(
                "- memory conflicts: {open} listed in {CONFLICTS_FILE} (both versions kept; resolve with correct_memory/delete_memory, then remove the item)\n"
            ));
        } else {
            s.push_str("- memory conflicts: none\n");
        }
        let copies = super::sync_page::conflict_copies(&root);
        if !copies.is_empty() {
            s.push_str(&format!("- conflict copies of files: {}\n", copies.join(", ")));
        }
        Ok(s.trim_end().to_owned())
    }
}

/// The path a remote URL names when it is a local repository (`/srv/pack.git`,
/// `../pack.git`, `file:///srv/pack.git`) that does not exist: libgit2 would take it for
/// a URL of an unknown kind and say "unsupported URL protocol", which tells a person
/// nothing about what to do. `None` for network URLs and for paths that exist.
fn missing_local_remote(url: &str) -> Option<&Path> {
    let path = match url.strip_prefix("file://") {
        Some(path) => path,
        None if url.contains("://") => return None,
        // scp-like `host:path` or `user@host:path`: a colon before the first slash.
        None if url.split('/').next().is_some_and(|first| first.contains(':')) => return None,
        None => url,
    };
    let path = Path::new(path);
    (!path.exists()).then_some(path)
}
