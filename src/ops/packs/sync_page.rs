//! What the page's sync view shows of a pack and how it resolves a conflict: the
//! [`SyncOverview`] (`sync_status` as values, no network) and the resolution of a file's
//! `.conflict-<host>` copy, one commit each. The merge that makes conflicts is in
//! [`super::sync`].

use chrono::{DateTime, Utc};

use super::sync::SyncRecord;
use crate::memmerge::{self, CONFLICTS_FILE};
use crate::ops::{Caller, Engram, EngramError, Result};
use crate::store::{Changes, Edit};

/// One pack's sync state as the page shows it (`sync_status` as values; no network).
#[derive(Debug, Clone)]
pub struct SyncOverview {
    /// The remote's name.
    pub remote: String,
    /// Its URL, credentials masked.
    pub url: String,
    /// The pack's branch.
    pub branch: String,
    /// Commits ahead of and behind the remote's branch as of the last fetch (`None`: never fetched).
    pub ahead_behind: Option<(usize, usize)>,
    /// The last sync's record (`None`: never synced from this device).
    pub last: Option<LastSync>,
    /// The memories `memory/_conflicts.md` lists.
    pub memory_conflicts: Vec<memmerge::ListedConflict>,
    /// This device's name: a conflict whose `host` is another device has this device's
    /// version on its remote side.
    pub host: String,
    /// Files' `.conflict-<host>` copies.
    pub copies: Vec<ConflictCopy>,
}

/// The record of a pack's last sync.
#[derive(Debug, Clone)]
pub struct LastSync {
    /// When it ran (`None` when the record's time cannot be read).
    pub time: Option<DateTime<Utc>>,
    /// Whether everything reached the remote.
    pub ok: bool,
    /// Its report ([`SyncReport::render`]) or error.
    pub report: String,
}

/// A file's copy that sync wrote beside it, with both texts.
#[derive(Debug, Clone)]
pub struct ConflictCopy {
    /// The copy (`knowledge/plan.conflict-laptop.md`).
    pub copy: String,
    /// The file it is a version of (`knowledge/plan.md`).
    pub original: String,
    /// The copy's text (`None`: not readable as text).
    pub copy_text: Option<String>,
    /// The file's text (`None`: the file is gone or not text).
    pub original_text: Option<String>,
}

/// What a pack's sync needs from a person, in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncState {
    /// Never synced from this device.
    Never,
    /// The last sync did not reach the remote.
    Failed,
    /// Conflicts wait for a person.
    Conflicts,
    /// All well.
    Ok,
}

impl SyncOverview {
    /// The state its badge shows: conflicts first, then the last sync's result.
    pub fn state(&self) -> SyncState {
        if !self.memory_conflicts.is_empty() || !self.copies.is_empty() {
            return SyncState::Conflicts;
        }
        match &self.last {
            None => SyncState::Never,
            Some(last) if !last.ok => SyncState::Failed,
            Some(_) => SyncState::Ok,
        }
    }
}

/// The file a conflict copy is a version of: `a/b.conflict-<host>[-n].md` → `a/b.md`.
fn original_of(copy: &str) -> Option<String> {
    let (dir, file) = match copy.rsplit_once('/') {
        Some((d, f)) => (format!("{d}/"), f),
        None => (String::new(), copy),
    };
    let (stem, rest) = file.split_once(".conflict-")?;
    let ext = rest.rsplit_once('.').map(|(_, e)| format!(".{e}")).unwrap_or_default();
    Some(format!("{dir}{stem}{ext}"))
}

impl Engram {
    /// [`SyncOverview`] of a pack with a remote (by name, as [`Engram::sync_status`]).
    pub fn sync_overview(&self, name: &str) -> Result<SyncOverview> {
        let pack_dir = self.resolve(name)?.dir;
        let repo = self.sync_repo_to_read(name, &pack_dir)?;
        let remote = self.pick_remote(name, &repo)?;
        let last =
            repo.read_sync_state()?.and_then(|t| serde_json::from_str::<SyncRecord>(&t).ok()).map(|r| {
                LastSync {
                    time: DateTime::parse_from_rfc3339(&r.time).ok().map(|t| t.with_timezone(&Utc)),
                    ok: r.ok,
                    report: crate::secrets::mask_url_credentials(&r.report).into_owned(),
                }
            });
        let root = crate::ops::engram::load::open_root(&pack_dir)?;
        let read = |path: &str| crate::ops::engram::load::read_pack_text(&root, path).ok().flatten();
        let memory_conflicts =
            read(CONFLICTS_FILE).map(|t| memmerge::parse_conflicts(&t)).unwrap_or_default();
        let copies = conflict_copies(&root)
            .into_iter()
            .filter_map(|copy| {
                let original = original_of(&copy)?;
                Some(ConflictCopy { copy_text: read(&copy), original_text: read(&original), copy, original })
            })
            .collect();
        Ok(SyncOverview {
            url: crate::secrets::mask_url_credentials(&remote.url).into_owned(),
            branch: repo.branch_name()?,
            ahead_behind: repo.ahead_behind(&remote.name)?,
            remote: remote.name,
            last,
            memory_conflicts,
            host: self.sync_settings().host.clone(),
            copies,
        })
    }

    /// Resolves a file's conflict copy (`knowledge/plan.conflict-laptop.md`): with
    /// `keep_copy` the copy's text replaces the file's, otherwise the copy is discarded; either
    /// way the copy goes, in one commit. A copy no longer there is [`EngramError::ConflictGone`].
    pub fn resolve_conflict_copy(
        &self,
        name: &str,
        copy: &str,
        keep_copy: bool,
        caller: &Caller,
    ) -> Result<Option<String>> {
        let copy_path = crate::ops::user_path(copy)?;
        let original = original_of(copy_path.as_str()).ok_or_else(|| EngramError::BadPath {
            path: copy.to_owned(),
            reason: "not a sync conflict copy (`<name>.conflict-<host>.<ext>`)".into(),
        })?;
        let original = crate::ops::user_path(&original)?;
        let root = self.resolve(name)?.dir;
        let now = self.now().timestamp();
        let (commit, ()) = self.with_repo(&root, |repo| {
            repo.write(|snap| {
                let bytes = snap
                    .read(copy_path.as_str())?
                    .ok_or_else(|| EngramError::ConflictGone { what: copy_path.to_string() })?;
                let mut changes = Changes::default();
                let subject = if keep_copy {
                    changes.put(original.as_str(), bytes);
                    format!("resolve: {original} — keep the version in {copy_path}")
                } else {
                    format!("resolve: {original} — discard {copy_path}")
                };
                changes.remove(copy_path.as_str());
                let message = caller.commit_message(subject, now);
                Ok::<_, EngramError>(Edit::Commit { changes, message, value: () })
            })
        })?;
        Ok(commit.map(|c| c.short))
    }
}

/// Files named `*.conflict-<host>*` in the working tree (sync's copies of the remote's
/// version); symbolic links are not followed.
pub(super) fn conflict_copies(root: &crate::pack_root::PackRoot) -> Vec<String> {
    use crate::pack_path::PackPath;
    use crate::pack_root::{Found, Kind};
    let mut out = Vec::new();
    let mut stack: Vec<Option<PackPath>> = vec![None];
    while let Some(dir) = stack.pop() {
        let Ok(Found::Here(entries)) = root.list(dir.as_ref()) else { continue };
        for (name, kind) in entries {
            let path = match &dir {
                None => PackPath::parse(&name),
                Some(d) => d.join(&name),
            };
            // `.git` (and any name a pack path cannot hold) is not part of the working tree.
            let Ok(path) = path else { continue };
            match kind {
                Kind::Dir => stack.push(Some(path)),
                _ if name.contains(".conflict-") => out.push(path.into_string()),
                _ => {}
            }
        }
    }
    out.sort();
    out
}
