//! Talking to git remotes: configure them, fetch, push (never forced).
//!
//! Everything here works on the pack's current branch `B`: a fetch updates
//! `refs/remotes/<remote>/B` from the remote's `refs/heads/B`; a push sends
//! `refs/heads/B` to the remote's `refs/heads/B` without `+`, so the remote
//! refuses anything that is not a fast-forward. Network work never holds the
//! pack's write lock: writers keep going while a fetch or push runs.

use std::fs;
use std::path::{Path, PathBuf};

use git2::{ErrorCode, FetchOptions, PushOptions};

use super::beside_git::while_a_ref_is_locked;
use super::{PackRepo, Result, git_err, io_err};
use crate::remote::{Credentials, Session};

/// True when `dir` is a bare git repository (`/media/usb/coach.git`): a directory that is
/// itself a git directory, which `install` clones rather than copies.
pub fn is_bare_repository(dir: &Path) -> bool {
    !PackRepo::is_repository(dir) && git2::Repository::open_bare(dir).is_ok_and(|r| r.is_bare())
}

/// A configured remote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteInfo {
    /// Remote name (`origin`).
    pub name: String,
    /// Fetch URL.
    pub url: String,
}

/// What a push did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushOutcome {
    /// The remote accepted the branch.
    Pushed,
    /// The remote refused the update (it moved, or a hook said no); nothing local changed.
    Rejected(String),
}

const SYNC_STATE_FILE: &str = "engram-sync.json";

impl PackRepo {
    /// The configured remotes, sorted by name.
    pub fn remotes(&self) -> Result<Vec<RemoteInfo>> {
        let names = self.repo.remotes().map_err(|e| git_err("listing remotes", &self.dir, e))?;
        let mut out = Vec::new();
        for name in names.iter().flatten().flatten() {
            let remote =
                self.repo.find_remote(name).map_err(|e| git_err("reading a remote", &self.dir, e))?;
            out.push(RemoteInfo { name: name.to_owned(), url: remote.url().unwrap_or_default().to_owned() });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Adds a remote, or changes the URL of an existing one. Returns true when it already existed.
    pub fn set_remote(&self, name: &str, url: &str) -> Result<bool> {
        let existed = match self.repo.find_remote(name) {
            Ok(_) => true,
            Err(e) if e.code() == ErrorCode::NotFound => false,
            Err(e) => return Err(git_err("reading a remote", &self.dir, e)),
        };
        let set =
            if existed { self.repo.remote_set_url(name, url) } else { self.repo.remote(name, url).map(drop) };
        set.map_err(|e| git_err("setting a remote", &self.dir, e))?;
        Ok(existed)
    }

    /// Removes a remote (and its remote-tracking branches). Returns false when there was none.
    pub fn remove_remote(&self, name: &str) -> Result<bool> {
        match self.repo.remote_delete(name) {
            Ok(()) => Ok(true),
            Err(e) if e.code() == ErrorCode::NotFound => Ok(false),
            Err(e) => Err(git_err("removing a remote", &self.dir, e)),
        }
    }

    /// The short name of the current branch (`main`, `master`, …).
    pub fn branch_name(&self) -> Result<String> {
        let full = self.branch_ref()?;
        Ok(full.strip_prefix("refs/heads/").unwrap_or(&full).to_owned())
    }

    /// The remote-tracking ref of the current branch on `remote`.
    pub fn tracking_ref(&self, remote: &str) -> Result<String> {
        Ok(format!("refs/remotes/{remote}/{}", self.branch_name()?))
    }

    /// Fetches the current branch from `remote` into its remote-tracking ref.
    /// Returns the remote's tip, or `None` when the remote does not have the branch yet.
    pub fn fetch(&self, remote: &str, creds: &Credentials) -> Result<Option<String>> {
        let branch = self.branch_name()?;
        let tracking = self.tracking_ref(remote)?;
        let mut r = self.repo.find_remote(remote).map_err(|e| git_err("reading a remote", &self.dir, e))?;
        let url = r.url().unwrap_or_default().to_owned();
        let config = self.repo.config().ok();
        let session = Session::new(creds, &url, config.as_ref())?;
        let mut opts = FetchOptions::new();
        opts.remote_callbacks(session.callbacks());
        opts.download_tags(git2::AutotagOption::None);
        let spec = format!("+refs/heads/{branch}:{tracking}");
        while_a_ref_is_locked(|| r.fetch(&[spec.as_str()], Some(&mut opts), Some("engram sync: fetch")))
            .map_err(|e| session.error("fetching", &e))?;
        // The remote's refs as seen during the fetch. A remote holding an encrypted pack is
        // never merged or pushed to in plain text; a branch that does not exist there leaves
        // no (or a stale) tracking ref.
        if let Ok(heads) = r.list() {
            let has = |name: &str| heads.iter().any(|h| h.name() == name);
            if has(crate::remote::encrypted::CIPHER_BRANCH) {
                let message =
                    format!("it holds an encrypted pack: `engram remote add <pack> {url} --encrypt`");
                return Err(super::StoreError::Remote { step: "fetching", url: url.clone(), message });
            }
            if !has(&format!("refs/heads/{branch}")) {
                return Ok(None);
            }
        }
        Ok(self.ref_id(&tracking)?.map(|o| o.to_string()))
    }

    /// Pushes `local_ref` to `remote_ref` on `remote`, never forced.
    pub fn push_ref(
        &self,
        remote: &str,
        local_ref: &str,
        remote_ref: &str,
        creds: &Credentials,
    ) -> Result<PushOutcome> {
        let mut r = self.repo.find_remote(remote).map_err(|e| git_err("reading a remote", &self.dir, e))?;
        let url = r.url().unwrap_or_default().to_owned();
        let config = self.repo.config().ok();
        let session = Session::new(creds, &url, config.as_ref())?;
        let mut rejected: Option<String> = None;
        let accepted = std::cell::Cell::new(false);
        {
            let mut cb = session.callbacks();
            cb.push_update_reference(|name, status| {
                match status {
                    Some(msg) => rejected = Some(format!("{name}: {msg}")),
                    None => accepted.set(true),
                }
                Ok(())
            });
            let mut opts = PushOptions::new();
            opts.remote_callbacks(cb);
            let spec = format!("{local_ref}:{remote_ref}");
            match while_a_ref_is_locked(|| r.push(&[spec.as_str()], Some(&mut opts))) {
                Ok(()) => {}
                // libgit2 refuses before sending when the remote's branch is not an ancestor of
                // ours: another device pushed since our fetch. That is a push the remote would
                // refuse, not a failure: the next sync merges it and pushes again.
                Err(e) if e.code() == ErrorCode::NotFastForward => {
                    return Ok(PushOutcome::Rejected(format!(
                        "{remote_ref}: the remote moved since the last fetch (another device pushed first)"
                    )));
                }
                // The remote took the branch; only our remote-tracking ref stayed behind (its
                // lock held throughout): the next fetch brings it up to date.
                Err(e) if e.code() == ErrorCode::Locked && accepted.get() => {}
                Err(e) => return Err(session.error("pushing", &e)),
            }
        }
        Ok(rejected.map_or(PushOutcome::Pushed, PushOutcome::Rejected))
    }

    /// Pushes the current branch to the same branch on `remote` (never forced).
    pub fn push(&self, remote: &str, creds: &Credentials) -> Result<PushOutcome> {
        let branch = self.branch_ref()?;
        let outcome = self.push_ref(remote, &branch, &branch, creds)?;
        // libgit2 updates tracking refs that match the remote's fetch refspec; set ours too,
        // in case the remote was configured without one.
        if outcome == PushOutcome::Pushed
            && let Some(head) = self.ref_id(&branch)?
        {
            let tracking = self.tracking_ref(remote)?;
            let moved =
                while_a_ref_is_locked(|| self.repo.reference(&tracking, head, true, "engram sync: push"));
            // Another program holds its lock: the next fetch brings it up to date.
            if let Err(e) = moved
                && e.code() != ErrorCode::Locked
            {
                return Err(git_err("updating the remote-tracking branch", &self.dir, e));
            }
        }
        Ok(outcome)
    }

    /// Commits of the current branch not on `remote` (ahead) and the other way
    /// round (behind), as of the last fetch; `None` when nothing was fetched yet.
    pub fn ahead_behind(&self, remote: &str) -> Result<Option<(usize, usize)>> {
        let Some(tracking) = self.ref_id(&self.tracking_ref(remote)?)? else { return Ok(None) };
        let Some(head) = self.head_commit()?.map(|c| c.id()) else { return Ok(Some((0, 0))) };
        self.repo
            .graph_ahead_behind(head, tracking)
            .map(Some)
            .map_err(|e| git_err("counting commits ahead and behind", &self.dir, e))
    }

    /// Number of commits reachable from HEAD (0 on an unborn branch): what a
    /// push to a remote without the branch sends.
    pub fn commit_count(&self) -> Result<usize> {
        let Some(head) = self.head_commit()?.map(|c| c.id()) else { return Ok(0) };
        let git = |e| git_err("counting commits", &self.dir, e);
        let mut walk = self.repo.revwalk().map_err(git)?;
        walk.push(head).map_err(git)?;
        walk.try_fold(0, |n, id| id.map(|_| n + 1)).map_err(git)
    }

    fn sync_state_path(&self) -> PathBuf {
        self.git_dir().join(SYNC_STATE_FILE)
    }

    /// The last sync record (`.git/engram-sync.json`), if any.
    pub fn read_sync_state(&self) -> Result<Option<String>> {
        let path = self.sync_state_path();
        match fs::read_to_string(&path) {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_err("read", &path, e)),
        }
    }

    /// Replaces the last sync record.
    pub fn write_sync_state(&self, text: &str) -> Result<()> {
        super::write_file_atomic(&self.sync_state_path(), text.as_bytes(), self.options.durable)
    }
}
