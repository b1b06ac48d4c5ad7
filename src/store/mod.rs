//! The pack store: every change to a pack is one git commit, made here.
//!
//! This is the only module that knows `git2`. A pack is a git repository
//! with a working tree a person can read and edit. A write:
//!
//! 1. takes the pack's write lock (`flock` on `.git/engram.lock`, released by
//!    the kernel if the process dies) so processes on one pack queue up;
//! 2. finishes a write a crashed process left half-done (see [`recover`]);
//! 3. commits uncommitted hand edits as their own `edit:` commit, so they are
//!    never lost and never mixed into a tool's commit;
//! 4. runs the caller's edit against the HEAD tree, builds the new tree with
//!    a `TreeUpdateBuilder`, and moves the branch with a compare-and-swap; if
//!    someone outside the lock (a person running `git commit`) moved it, the
//!    edit is re-run on the new HEAD;
//! 5. writes the changed files into the working tree and the git index.

mod checksum;
mod clean;
pub mod doctor;
mod file_reserve;
pub mod floor;
mod gc;
mod gitindex;
mod guard;
mod history;
mod housekeeping;
mod locks;
mod merge;
mod no_wait;
mod objcache;
mod packwrite;
mod purge;
mod recent;
mod recover;
mod refswap;
mod revert;
mod scoped_write;
mod sync;
mod tree;
mod tree_read;
mod workspace_git;
mod worktree;

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use git2::{ErrorCode, IndexAddOption, ObjectType, Oid, Repository, Signature, Status, StatusOptions};

pub use gc::PackReport;
pub use guard::scan_added;
pub use history::{CommitInfo, FileChange, LogQuery};
pub use housekeeping::wait_for_background_packing;
pub use merge::{ChangeKind, ChangedPath, Integrated, Integration, MergeView, Side};
pub use no_wait::{hold, without_waiting};
pub use purge::{PurgeReport, PurgeTarget};
pub use revert::{RevertConflict, RevertPlan, parse_since};
pub use sync::{Credentials, PushOutcome, RemoteInfo, is_bare_repository};
pub use workspace_git::{
    MAX_FILES_PER_COMMIT, MAX_HISTORY_COMMITS, WorkspaceCommit, WorkspaceHistory, read_workspace_history,
};

/// Builds a [`LogQuery`].
pub fn history_query(
    limit: Option<usize>,
    since: Option<i64>,
    path: Option<String>,
    with_files: bool,
) -> LogQuery {
    LogQuery { limit, since, path, with_files }
}

/// Errors of the store. Messages name the pack directory and the step that failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Opening or creating the repository failed.
    #[error("cannot open the git repository of {dir}: {source}")]
    Open {
        /// Pack directory.
        dir: PathBuf,
        /// Cause.
        source: git2::Error,
    },
    /// A git operation failed.
    #[error("git failed while {step} in {dir}: {source}")]
    Git {
        /// What we were doing.
        step: &'static str,
        /// Pack directory.
        dir: PathBuf,
        /// Cause.
        source: git2::Error,
    },
    /// A filesystem operation failed.
    #[error("cannot {step} {path}: {source}")]
    Io {
        /// What we were doing.
        step: &'static str,
        /// The path involved.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// Inside [`without_waiting`]: the write would have waited for a lock another holds.
    #[error("{dir} is busy: another write holds its lock")]
    WouldWait {
        /// Pack directory.
        dir: PathBuf,
    },
    /// The branch kept moving under us.
    #[error("the branch of {dir} kept changing during the write (gave up after {attempts} attempts)")]
    Contention {
        /// Pack directory.
        dir: PathBuf,
        /// How often we tried.
        attempts: u32,
    },
    /// A path in a change is not a plain relative path inside the pack.
    #[error("refusing to write {path:?}: not a plain relative path inside the pack")]
    BadPath {
        /// The offending path.
        path: String,
    },
    /// Cloning a pack failed.
    #[error("git clone failed: {message}")]
    Clone {
        /// libgit2's message.
        message: String,
    },
    /// Talking to a remote failed (network, authentication, missing repository).
    #[error("git {step} {url} failed: {message}")]
    Remote {
        /// `fetching` or `pushing`.
        step: &'static str,
        /// The remote's URL.
        url: String,
        /// libgit2's message.
        message: String,
    },
    /// The pack's working tree or repository is damaged in a way a write must not paper over.
    #[error("the pack {dir} is damaged: {problem}")]
    Damaged {
        /// Pack directory.
        dir: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// The server is read-only.
    #[error("this engram server is read-only (--read-only): nothing was written to {dir}")]
    ReadOnly {
        /// Pack directory.
        dir: PathBuf,
    },
    /// Something other than a file sits where a file is expected.
    #[error("{path} is not a regular file")]
    NotAFile {
        /// Path in the pack.
        path: String,
    },
    /// The new text holds what looks like a credential; nothing was committed.
    #[error(
        "拒绝写入：内容疑似包含密钥 (refused: the new text looks like it contains a secret; nothing was written):{}\n{}",
        crate::secrets::describe(findings),
        if *hand_edit {
            "These are uncommitted hand edits in the pack's working tree: remove or redact them (e.g. `[REDACTED]`), then retry. Secrets must never enter the pack's git history."
        } else {
            "Store a redacted version instead (replace the secret with `[REDACTED]` or a reference such as `$ENV_VAR`). Secrets must never enter the pack's git history."
        }
    )]
    Secret {
        /// What was found, where (masked).
        findings: Vec<crate::secrets::Finding>,
        /// True when the text came from hand edits in the working tree.
        hand_edit: bool,
    },
    /// A commit id or date does not name a commit of the pack.
    #[error(
        "no commit {rev:?} in {dir}: give a commit id (as shown by memory_history / engram log) or a date YYYY-MM-DD"
    )]
    UnknownCommit {
        /// What was asked for.
        rev: String,
        /// Pack directory.
        dir: PathBuf,
    },
}

/// Result alias for the store.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Who commits, and how hard to try to keep data on disk.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Commit author and committer name.
    pub author_name: String,
    /// Commit author and committer e-mail.
    pub author_email: String,
    /// fsync objects, refs and working-tree files before acknowledging a write.
    pub durable: bool,
    /// Print the time of each phase of every write to stderr (diagnostics).
    pub trace_timing: bool,
    /// Refuse every commit (`engram serve --read-only`).
    pub read_only: bool,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            author_name: "engram".to_owned(),
            author_email: "engram@localhost".to_owned(),
            durable: false,
            trace_timing: false,
            read_only: false,
        }
    }
}

/// The message of a commit: a subject for `git log --oneline`, an optional body and trailers.
#[derive(Debug, Clone, Default)]
pub struct CommitMessage {
    /// One line, e.g. `capture: preferences — 喜欢早上训练`.
    pub subject: String,
    /// Optional free text.
    pub body: Option<String>,
    /// `Key: value` trailers (`Engram-Tool`, `Engram-Client`, …).
    pub trailers: Vec<(String, String)>,
    /// Commit time (seconds since the epoch); the system clock when `None`.
    pub time: Option<i64>,
}

impl CommitMessage {
    /// A message with a subject only.
    pub fn new(subject: impl Into<String>) -> Self {
        Self { subject: subject.into(), ..Self::default() }
    }

    /// Sets the commit time (seconds since the epoch).
    pub fn at(mut self, time: i64) -> Self {
        self.time = Some(time);
        self
    }

    /// Adds a trailer.
    pub fn trailer(mut self, key: &str, value: impl Into<String>) -> Self {
        let value: String = value.into();
        if !value.trim().is_empty() {
            self.trailers.push((key.to_owned(), crate::memory::single_line(&value)));
        }
        self
    }

    fn render(&self) -> String {
        let mut out = truncate_chars(&crate::memory::single_line(&self.subject), 120);
        out.push('\n');
        if let Some(body) = &self.body {
            out.push('\n');
            out.push_str(body.trim_end());
            out.push('\n');
        }
        if !self.trailers.is_empty() {
            out.push('\n');
            for (k, v) in &self.trailers {
                out.push_str(&format!("{k}: {v}\n"));
            }
        }
        // Git commit messages cannot hold NUL (libgit2 would cut them there, fsck rejects them).
        out.replace('\0', "\u{2400}")
    }
}

fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// Changes to commit: path → new content, or `None` to delete.
#[derive(Debug, Default, Clone)]
pub struct Changes {
    files: BTreeMap<String, Option<Vec<u8>>>,
}

impl Changes {
    /// Writes (creates or replaces) a file.
    pub fn put(&mut self, path: impl Into<String>, content: impl Into<Vec<u8>>) {
        self.files.insert(path.into(), Some(content.into()));
    }
    /// Deletes a file (a no-op if it does not exist).
    pub fn remove(&mut self, path: impl Into<String>) {
        self.files.insert(path.into(), None);
    }
    /// The pending content of a path: `Some(bytes)` to write, `None` when not written (or deleted).
    pub fn get(&self, path: &str) -> Option<&[u8]> {
        self.files.get(path).and_then(|c| c.as_deref())
    }
    /// True when nothing changes.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
    /// The paths touched, sorted.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str)
    }
}

/// Read access to the tree a write starts from.
pub struct Snapshot<'r> {
    repo: &'r Repository,
    /// Where trees and blobs are read through (see [`objcache`]).
    cache: &'r objcache::ObjectCache,
    /// The root tree (`None` for an empty repository).
    tree: Option<Oid>,
    head: Option<Oid>,
    dir: &'r Path,
    /// Pending changes seen through this snapshot (see [`Snapshot::overlaid`]).
    overlay: BTreeMap<String, Option<Vec<u8>>>,
}

impl Snapshot<'_> {
    /// Reads a file of the HEAD tree; `None` if absent.
    pub fn read(&self, path: &str) -> Result<Option<Vec<u8>>> {
        if let Some(content) = self.overlay.get(path) {
            return Ok(content.clone());
        }
        let Some(id) = self.blob_entry(path)? else { return Ok(None) };
        let blob = self.cache.blob(self.repo, id).map_err(|e| git_err("reading a blob", self.dir, e))?;
        Ok(Some(blob.to_vec()))
    }

    /// The entry at `path` in the tree (mode and id), if any.
    pub(super) fn entry(&self, path: &str) -> Result<Option<(i32, Oid)>> {
        let Some(root) = self.tree else { return Ok(None) };
        self.cache.entry_at(self.repo, root, path).map_err(|e| git_err("reading the tree", self.dir, e))
    }

    /// The blob id of the file at `path`; `None` if absent, an error for a directory or submodule.
    fn blob_entry(&self, path: &str) -> Result<Option<Oid>> {
        match self.entry(path)? {
            None => Ok(None),
            Some((mode, id)) if is_blob_mode(mode) => Ok(Some(id)),
            Some(_) => Err(StoreError::NotAFile { path: path.to_owned() }),
        }
    }

    /// Reads a file as UTF-8 text (lossy for invalid bytes); `None` if absent.
    pub fn read_text(&self, path: &str) -> Result<Option<String>> {
        Ok(self.read(path)?.map(|b| String::from_utf8_lossy(&b).replace("\r\n", "\n")))
    }

    /// True when the path exists (file or directory).
    pub fn exists(&self, path: &str) -> bool {
        if let Some(content) = self.overlay.get(path) {
            return content.is_some();
        }
        let prefix = format!("{path}/");
        if self.overlay.iter().any(|(p, c)| c.is_some() && p.starts_with(&prefix)) {
            return true;
        }
        self.entry(path).ok().flatten().is_some()
    }

    /// Lists the entries (files and directories) directly under `dir` (`""` for the root).
    pub fn list(&self, dir: &str) -> Result<Vec<String>> {
        let mut names = self.tree_listing(dir)?;
        self.overlay_listing(dir, &mut names);
        Ok(names)
    }

    /// Calls `visit` with the name of every entry of directory `dir`, in no
    /// particular order: [`list`](Self::list) without allocating the names.
    pub fn for_each_name(&self, dir: &str, mut visit: impl FnMut(&str)) -> Result<()> {
        if !self.overlay.is_empty() {
            self.list(dir)?.iter().for_each(|n| visit(n));
            return Ok(());
        }
        let Some(id) = self.subtree_id(dir)? else { return Ok(()) };
        let sub = self.cache.tree(self.repo, id).map_err(|e| git_err("reading a tree", self.dir, e))?;
        sub.keys().filter_map(|name| std::str::from_utf8(name).ok()).for_each(visit);
        Ok(())
    }

    fn tree_listing(&self, dir: &str) -> Result<Vec<String>> {
        let Some(id) = self.subtree_id(dir)? else { return Ok(Vec::new()) };
        let sub = self.cache.tree(self.repo, id).map_err(|e| git_err("reading a tree", self.dir, e))?;
        Ok(sub.keys().filter_map(|name| std::str::from_utf8(name).ok().map(str::to_owned)).collect())
    }

    /// The id of the subtree at `dir` (`""` for the root), if it exists and is a directory.
    pub(super) fn subtree_id(&self, dir: &str) -> Result<Option<Oid>> {
        let dir = dir.trim_end_matches('/');
        if dir.is_empty() {
            return Ok(self.tree);
        }
        Ok(match self.entry(dir)? {
            Some((objcache::MODE_TREE, id)) => Some(id),
            _ => None,
        })
    }

    /// The commit this snapshot is of (`None` for an empty repository).
    pub fn head(&self) -> Option<String> {
        self.head.map(|h| h.to_string())
    }
}

/// The branch HEAD points at (`refs/heads/…`, or `HEAD` when detached) and its commit.
struct BranchHead {
    branch: String,
    id: Option<Oid>,
}

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// Full id of the new commit.
    pub id: String,
    /// Short (7-hex) id.
    pub short: String,
    /// Full id of the commit the branch pointed at before (`None` for the first commit).
    pub previous_head: Option<String>,
}

/// What an edit passed to [`PackRepo::write`] decides.
pub enum Edit<T> {
    /// Commit these changes with this message, and hand back `value`.
    Commit {
        /// Files to write or delete.
        changes: Changes,
        /// The commit message.
        message: CommitMessage,
        /// Handed back to the caller of `write`.
        value: T,
    },
    /// Commit nothing (a duplicate, a no-op, a refusal) and hand back the value.
    Nothing(T),
}

enum CommitOutcome {
    Committed(Committed),
    Unchanged,
    Retry,
}

/// A file a write put into the working tree: path, blob id, content, metadata after writing.
type WrittenFile = (String, Oid, std::sync::Arc<Vec<u8>>, fs::Metadata);

/// One pack's repository.
pub struct PackRepo {
    dir: PathBuf,
    repo: Repository,
    options: StoreOptions,
    /// The working tree as last known to equal HEAD (see [`clean`]).
    clean: std::sync::Mutex<Option<clean::CleanState>>,
    /// Objects recently written or read (see [`objcache`]).
    objects: objcache::ObjectCache,
    /// The git index as this process last wrote it (see [`gitindex`]).
    known_index: std::sync::Mutex<Option<gitindex::KnownIndex>>,
}

/// True for the modes of a file entry (regular, executable, symbolic link).
fn is_blob_mode(mode: i32) -> bool {
    matches!(mode & 0o170000, 0o100000 | 0o120000)
}

const LOCK_FILE: &str = "engram.lock";
const MAX_ATTEMPTS: u32 = 50;

fn git_err(step: &'static str, dir: &Path, source: git2::Error) -> StoreError {
    StoreError::Git { step, dir: dir.to_owned(), source }
}

fn io_err(step: &'static str, path: &Path, source: std::io::Error) -> StoreError {
    StoreError::Io { step, path: path.to_owned(), source }
}

/// Checks that a path is a plain relative path with no `.`/`..`/empty parts and not under `.git`.
pub fn is_plain_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\\')
        && !path.contains('\0')
        && path.split('/').all(|p| !p.is_empty() && p != "." && p != "..")
        && !path.split('/').any(|p| p.eq_ignore_ascii_case(".git"))
}

impl PackRepo {
    /// Opens the repository of a pack directory, creating it (and an `adopt`
    /// commit of the files already there) when the directory has no `.git`.
    pub fn open_or_adopt(dir: &Path, options: StoreOptions) -> Result<Self> {
        if dir.join(".git").exists() {
            match Self::open(dir, options.clone()) {
                Ok(repo) => return Ok(repo),
                // Another process may be creating the repository right now (it holds the
                // directory lock until its adopt commit is made): wait for it below.
                Err(e) if !Self::creation_in_progress(dir) => return Err(e),
                Err(_) => {}
            }
        }
        if options.read_only {
            return Err(StoreError::ReadOnly { dir: dir.to_owned() });
        }
        // Two processes may adopt the same pack at once: serialise on the directory itself.
        let dir_lock = File::open(dir).map_err(|e| io_err("open", dir, e))?;
        no_wait::lock_exclusive(&dir_lock, dir, |e| io_err("lock", dir, e))?;
        if dir.join(".git").exists() {
            return Self::open(dir, options);
        }
        configure_libgit2();
        // No template directory: git's sample hooks are ~20 KiB a small pack does not need.
        let mut init = git2::RepositoryInitOptions::new();
        init.external_template(false);
        let repo = Repository::init_opts(dir, &init)
            .map_err(|source| StoreError::Open { dir: dir.to_owned(), source })?;
        let this = Self {
            dir: dir.to_owned(),
            repo,
            options,
            clean: std::sync::Mutex::new(None),
            objects: objcache::ObjectCache::default(),
            known_index: std::sync::Mutex::new(None),
        };
        this.configure()?;
        {
            let _lock = this.lock()?;
            this.commit_working_tree_edits(
                &CommitMessage::new("adopt: existing pack files").trailer("Engram-Tool", "adopt"),
            )?;
        }
        Ok(this)
    }

    /// True when another process holds the directory lock taken while a pack is adopted.
    fn creation_in_progress(dir: &Path) -> bool {
        let Ok(file) = File::open(dir) else { return false };
        match fs4::fs_std::FileExt::try_lock_exclusive(&file) {
            Ok(true) => {
                let _ = fs4::fs_std::FileExt::unlock(&file);
                false
            }
            _ => true,
        }
    }

    /// Opens an existing pack repository.
    pub fn open(dir: &Path, options: StoreOptions) -> Result<Self> {
        configure_libgit2();
        let repo =
            Repository::open(dir).map_err(|source| StoreError::Open { dir: dir.to_owned(), source })?;
        let this = Self {
            dir: dir.to_owned(),
            repo,
            options,
            clean: std::sync::Mutex::new(None),
            objects: objcache::ObjectCache::default(),
            known_index: std::sync::Mutex::new(None),
        };
        if this.options.durable {
            this.configure()?;
        }
        Ok(this)
    }

    /// True when the directory already is a git repository.
    pub fn is_repository(dir: &Path) -> bool {
        dir.join(".git").exists()
    }

    fn configure(&self) -> Result<()> {
        let mut cfg = self.repo.config().map_err(|e| git_err("reading config", &self.dir, e))?;
        // Packs are written by engram and read by people: keep line endings as written.
        cfg.set_bool("core.autocrlf", false).map_err(|e| git_err("writing config", &self.dir, e))?;
        if self.options.durable {
            // libgit2 honours this key for objects, packs and refs (git itself now prefers core.fsync).
            cfg.set_bool("core.fsyncObjectFiles", true)
                .map_err(|e| git_err("writing config", &self.dir, e))?;
        }
        Ok(())
    }

    /// The pack directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn git_dir(&self) -> PathBuf {
        self.repo.path().to_owned()
    }

    fn lock(&self) -> Result<File> {
        let path = self.git_dir().join(LOCK_FILE);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| io_err("open the write lock", &path, e))?;
        no_wait::lock_exclusive(&file, &self.dir, |e| io_err("take the write lock", &path, e))?;
        Ok(file)
    }

    /// The id of HEAD, if any.
    pub fn head_id(&self) -> Option<String> {
        self.repo.head().ok().and_then(|h| h.target()).map(|o| o.to_string())
    }

    /// Runs `edit` against HEAD and commits what it returns, as one commit.
    ///
    /// `edit` may be called more than once (when the branch moves under us), so
    /// it must be a pure function of the snapshot. It returns `Ok(None)` to
    /// commit nothing, or the changes, the message and a value handed back.
    pub fn write<T, E>(
        &self,
        mut edit: impl FnMut(&Snapshot<'_>) -> Result<Edit<T>, E>,
    ) -> Result<(Option<Committed>, T), E>
    where
        E: From<StoreError>,
    {
        let mut trace = PhaseTimer::new(self.options.trace_timing);

        if self.options.read_only {
            return Err(StoreError::ReadOnly { dir: self.dir.clone() }.into());
        }
        if !no_wait::waiting_allowed() && housekeeping::next_write_would_wait(&self.git_dir()) {
            return Err(StoreError::WouldWait { dir: self.dir.clone() }.into());
        }
        let _lock = self.lock()?;
        trace.mark("lock");
        recover::finish_pending(self)?;
        trace.mark("recover");
        scoped_write::flush_index(self)?;
        let mut verified = self.commit_hand_edits_if_any()?;
        trace.mark("hand-edits");
        for _attempt in 0..MAX_ATTEMPTS {
            let at = match verified.take() {
                Some(current) => current,
                None => self.branch_head()?,
            };
            let head = at.id;
            let snapshot = self.snapshot_of(head)?;
            let (changes, message, value) = match edit(&snapshot)? {
                Edit::Commit { changes, message, value } => (changes, message, value),
                Edit::Nothing(value) => return Ok((None, value)),
            };
            trace.mark("edit");
            if changes.is_empty() {
                return Ok((None, value));
            }
            match self.commit_changes(&at, snapshot.tree, &changes, &message, false, &mut trace)? {
                CommitOutcome::Committed(committed) => {
                    housekeeping::after_write(self);
                    trace.mark("gc-check");
                    trace.report(&self.dir);
                    return Ok((Some(committed), value));
                }
                CommitOutcome::Unchanged => return Ok((None, value)),
                CommitOutcome::Retry => continue,
            }
        }
        Err(StoreError::Contention { dir: self.dir.clone(), attempts: MAX_ATTEMPTS }.into())
    }

    /// A snapshot of commit `head` (the empty tree when the repository has no commit yet).
    fn snapshot_of(&self, head: Option<Oid>) -> Result<Snapshot<'_>> {
        let tree = head
            .map(|id| self.objects.commit_tree(&self.repo, id))
            .transpose()
            .map_err(|e| git_err("reading HEAD's tree", &self.dir, e))?;
        Ok(self.snapshot_of_tree(tree, head))
    }

    /// A snapshot of the tree `tree` (of commit `head`).
    fn snapshot_of_tree(&self, tree: Option<Oid>, head: Option<Oid>) -> Snapshot<'_> {
        Snapshot {
            repo: &self.repo,
            cache: &self.objects,
            tree,
            head,
            dir: &self.dir,
            overlay: BTreeMap::new(),
        }
    }

    /// The branch HEAD points at and its commit, read once (the branch name
    /// is needed to move it, the id to build on).
    fn branch_head(&self) -> Result<BranchHead> {
        let branch = self.branch_ref()?;
        let id = match self.repo.refname_to_id(&branch) {
            Ok(id) => Some(id),
            Err(e) if matches!(e.code(), ErrorCode::UnbornBranch | ErrorCode::NotFound) => None,
            Err(e) => return Err(git_err("reading HEAD", &self.dir, e)),
        };
        Ok(BranchHead { branch, id })
    }

    /// HEAD's commit id, read from the refs alone (`None` before the first commit).
    fn head_oid(&self) -> Result<Option<Oid>> {
        match self.repo.refname_to_id("HEAD") {
            Ok(id) => Ok(Some(id)),
            Err(e) if matches!(e.code(), ErrorCode::UnbornBranch | ErrorCode::NotFound) => Ok(None),
            Err(e) => Err(git_err("reading HEAD", &self.dir, e)),
        }
    }

    fn head_commit(&self) -> Result<Option<git2::Commit<'_>>> {
        match self.repo.head() {
            Ok(h) => h.peel_to_commit().map(Some).map_err(|e| git_err("reading HEAD", &self.dir, e)),
            Err(e) if matches!(e.code(), ErrorCode::UnbornBranch | ErrorCode::NotFound) => Ok(None),
            Err(e) => Err(git_err("reading HEAD", &self.dir, e)),
        }
    }

    fn signature(&self, time: Option<i64>) -> Result<Signature<'static>> {
        let res = match time {
            Some(t) => {
                Signature::new(&self.options.author_name, &self.options.author_email, &git2::Time::new(t, 0))
            }
            None => Signature::now(&self.options.author_name, &self.options.author_email),
        };
        res.map_err(|e| git_err("building the signature", &self.dir, e))
    }

    /// Builds the tree on `base` (the tree of `at`'s commit), moves `at`'s
    /// branch (CAS) and syncs the working tree.
    /// Returns `Retry` when the branch moved and the edit must be re-run.
    fn commit_changes(
        &self,
        at: &BranchHead,
        base: Option<Oid>,
        changes: &Changes,
        message: &CommitMessage,
        defer_index: bool,
        trace: &mut PhaseTimer,
    ) -> Result<CommitOutcome> {
        let dir = &self.dir;
        let head = at.id;
        let base_snapshot = self.snapshot_of_tree(base, head);
        guard::check_changes(&base_snapshot, changes)?;
        let mut objects = packwrite::NewObjects::default();
        let mut tree_changes = packwrite::PathChanges::new();
        let mut blobs = BTreeMap::new();
        for (path, content) in &changes.files {
            if !is_plain_relative(path) || self.crosses_symlink(path) {
                return Err(StoreError::BadPath { path: path.clone() });
            }
            let id = match content {
                Some(bytes) => {
                    let id = objects.add(ObjectType::Blob, bytes.clone(), dir)?;
                    blobs.insert(path.as_str(), id);
                    Some(id)
                }
                None => None,
            };
            tree_changes.insert(path.as_str(), id);
        }
        let tree_id =
            packwrite::updated_tree(&self.repo, &self.objects, dir, base, &tree_changes, &mut objects, true)?
                .ok_or_else(|| StoreError::Damaged {
                    dir: dir.clone(),
                    problem: "the new root tree is missing".into(),
                })?;
        if head.is_some() && base == Some(tree_id) {
            // Nothing actually changed (same bytes): no empty commits.
            return Ok(CommitOutcome::Unchanged);
        }
        let sig = self.signature(message.time)?;
        let parents: Vec<Oid> = head.into_iter().collect();
        trace.mark("objects");
        let rendered = message.render();
        let commit_id = objects.add(
            ObjectType::Commit,
            packwrite::commit_bytes(tree_id, &parents, &sig, &rendered),
            dir,
        )?;
        objects.write(&self.repo, self.options.durable, &self.objects)?;
        self.objects.keep_commit(commit_id, tree_id);
        let old = head;
        trace.mark("commit-object");
        recover::write_pending(self, old, commit_id, changes)?;
        trace.mark("pending");
        let moved = match old {
            Some(expected) => {
                let log = format!("engram: {}", truncate_chars(&message.subject, 60));
                match refswap::swap_branch(self, &at.branch, expected, commit_id, &log, &sig) {
                    refswap::Swap::Moved => true,
                    refswap::Swap::Raced => {
                        std::thread::sleep(std::time::Duration::from_millis(2));
                        false
                    }
                    refswap::Swap::NotHere => self.move_branch(old, commit_id, &message.subject)?,
                }
            }
            None => self.move_branch(old, commit_id, &message.subject)?,
        };
        if !moved {
            recover::clear_pending(self)?;
            return Ok(CommitOutcome::Retry);
        }
        if let Some(parent) = old {
            recent::note_commit(dir, commit_id, parent, sig.when().seconds(), &rendered);
        }
        trace.mark("branch-cas");
        if defer_index {
            *self.clean.lock().unwrap_or_else(|p| p.into_inner()) = None;
            scoped_write::sync_working_tree_deferred(self, changes)?;
        } else {
            let written = self.sync_working_tree(changes, &blobs)?;
            let mut known = self.clean.lock().unwrap_or_else(|p| p.into_inner());
            match known.as_mut() {
                Some(state) if old.is_some_and(|o| state.is_at(o)) => {
                    let removed = changes.files.iter().filter(|(_, c)| c.is_none()).map(|(p, _)| p.clone());
                    state.committed(&self.dir, commit_id, written, removed.collect());
                }
                _ => *known = None,
            }
        }
        trace.mark("worktree+index");
        recover::clear_pending(self)?;
        trace.mark("clear-pending");
        let id = commit_id.to_string();
        Ok(CommitOutcome::Committed(Committed {
            short: short_id(&id),
            id,
            previous_head: old.map(|o| o.to_string()),
        }))
    }

    /// True when a directory on the way to `path` in the working tree is a
    /// symbolic link (writing there could leave the pack).
    fn crosses_symlink(&self, path: &str) -> bool {
        let mut cur = self.dir.clone();
        let parts: Vec<&str> = path.split('/').collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            cur.push(part);
            match fs::symlink_metadata(&cur) {
                Ok(m) if m.file_type().is_symlink() => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
        false
    }

    /// Compare-and-swap of the current branch from `old` to `new`.
    fn move_branch(&self, old: Option<Oid>, new: Oid, subject: &str) -> Result<bool> {
        let branch = self.branch_ref()?;
        let log = format!("engram: {}", truncate_chars(subject, 60));
        let res = match old {
            Some(old) => self.repo.reference_matching(&branch, new, true, old, &log).map(|_| ()),
            None => self.repo.reference(&branch, new, false, &log).map(|_| ()),
        };
        match res {
            Ok(()) => Ok(true),
            Err(e) if e.code() == ErrorCode::Locked => {
                // A lock file another process left: wait for it, or clear it once stale.
                for lock in locks::lock_files(self) {
                    locks::wait_for(&lock);
                }
                Ok(false)
            }
            Err(e) if matches!(e.code(), ErrorCode::Modified | ErrorCode::Exists) => {
                std::thread::sleep(std::time::Duration::from_millis(2));
                Ok(false)
            }
            Err(e) => Err(git_err("moving the branch", &self.dir, e)),
        }
    }

    /// The full name of the branch HEAD points at (`refs/heads/main` for a new repository).
    fn branch_ref(&self) -> Result<String> {
        match self.repo.find_reference("HEAD") {
            Ok(r) => match r.symbolic_target() {
                Ok(Some(t)) => Ok(t.to_owned()),
                _ => Ok("HEAD".to_owned()),
            },
            Err(e) => Err(git_err("reading HEAD", &self.dir, e)),
        }
    }

    /// Writes changed files into the working tree and the index. `blobs` are
    /// the ids of the committed contents: the index entries are made from
    /// them and the files' `stat`, so no file is read back and hashed.
    fn sync_working_tree(&self, changes: &Changes, blobs: &BTreeMap<&str, Oid>) -> Result<Vec<WrittenFile>> {
        let mut written = Vec::new();
        // (path, its index entry when the platform can make one)
        let mut added: Vec<(&str, Option<git2::IndexEntry>)> = Vec::new();
        let mut removed: Vec<&str> = Vec::new();
        for (path, content) in &changes.files {
            let full = self.dir.join(path);
            match content {
                Some(bytes) => {
                    let stat = worktree::write_file(&full, bytes, self.options.durable, &self.git_dir())?;
                    let id = blobs.get(path.as_str()).copied();
                    added.push((path, id.and_then(|id| worktree::index_entry(path, id, &stat))));
                    if let Some(id) = id {
                        written.push((path.clone(), id, std::sync::Arc::new(bytes.clone()), stat));
                    }
                }
                None => {
                    match fs::remove_file(&full) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => return Err(io_err("remove", &full, e)),
                    }
                    remove_empty_parents(&self.dir, &full);
                    removed.push(path);
                }
            }
        }
        let git_dir = self.git_dir();
        locks::wait_for(&git_dir.join("index.lock"));
        if self.update_known_index(&added, &removed) {
            return Ok(written);
        }
        let mut index = self.repo.index().map_err(|e| git_err("opening the index", &self.dir, e))?;
        // Re-read only when another process changed it (libgit2 compares the file's stamp).
        index.read(false).map_err(|e| git_err("reading the index", &self.dir, e))?;
        for (path, entry) in &added {
            match entry {
                Some(entry) => index.add(entry),
                None => index.add_path(Path::new(path)),
            }
            .map_err(|e| git_err("updating the index", &self.dir, e))?;
        }
        for path in &removed {
            let _ = index.remove_path(Path::new(path));
        }
        if !worktree::exchange_index(&index, &git_dir) {
            index.write().map_err(|e| git_err("writing the index", &self.dir, e))?;
        }
        *self.known_index.lock().unwrap_or_else(|p| p.into_inner()) =
            gitindex::KnownIndex::of(&index, &git_dir.join("index"));
        Ok(written)
    }

    /// Updates the git index from the model this process keeps of it (see
    /// [`gitindex`]); false (and nothing written) when the model is not
    /// current or an entry cannot be made here.
    fn update_known_index(&self, added: &[(&str, Option<git2::IndexEntry>)], removed: &[&str]) -> bool {
        let git_dir = self.git_dir();
        let index_path = git_dir.join("index");
        let mut known = self.known_index.lock().unwrap_or_else(|p| p.into_inner());
        let Some(model) = known.as_mut().filter(|k| k.is_current(&index_path)) else { return false };
        if added.iter().any(|(_, e)| e.is_none()) {
            return false;
        }
        for (_, entry) in added {
            if let Some(entry) = entry
                && model.put(entry).is_none()
            {
                *known = None;
                return false;
            }
        }
        for path in removed {
            model.remove(path);
        }
        if worktree::exchange_index_bytes(&model.encode(), &git_dir) && model.written(&index_path) {
            return true;
        }
        *known = None;
        false
    }

    /// Commits hand edits unless the working tree provably still equals HEAD
    /// as this process last left it (see [`clean`]).
    ///
    /// Returns the branch and commit the working tree was found clean at, or
    /// `None` when it had to look closer (and may have committed): HEAD must
    /// then be read again.
    fn commit_hand_edits_if_any(&self) -> Result<Option<BranchHead>> {
        let current = self.branch_head()?;
        let mut known = self.clean.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(state) = known.as_mut()
            && state.still_clean(&self.dir, current.id)
        {
            return Ok(Some(current));
        }
        *known = None;
        self.commit_hand_edits()?;
        *known = clean::CleanState::record(self)?;
        Ok(None)
    }

    /// Commits uncommitted changes of the working tree as an `edit:` commit.
    fn commit_hand_edits(&self) -> Result<()> {
        let paths = self.dirty_paths()?;
        if paths.is_empty() {
            return Ok(());
        }
        let head_tree = self
            .head_commit()?
            .map(|c| c.tree())
            .transpose()
            .map_err(|e| git_err("reading HEAD's tree", &self.dir, e))?;
        guard::check_hand_edits(&self.repo, &self.dir, head_tree.as_ref(), &paths)?;

        // A tracked file replaced by a directory would be committed as a deletion: refuse.
        let replaced = doctor::replaced_files(&self.repo, &self.dir);
        if !replaced.is_empty() {
            return Err(StoreError::Damaged {
                dir: self.dir.clone(),
                problem: format!("{} in the working tree", replaced.join(", ")),
            });
        }
        let listed: Vec<&str> = paths.iter().take(5).map(String::as_str).collect();
        let more = if paths.len() > 5 { format!(" (+{} more)", paths.len() - 5) } else { String::new() };
        let message = CommitMessage {
            subject: format!("edit: {}{more}", listed.join(", ")),
            body: Some(
                "Changes made by hand in the working tree, committed by engram before its next write.".into(),
            ),
            trailers: vec![("Engram-Tool".into(), "hand-edit".into())],
            time: None,
        };
        self.commit_working_tree_edits(&message)
    }

    /// Paths whose working-tree state differs from HEAD (untracked included, ignored excluded).
    pub fn dirty_paths(&self) -> Result<Vec<String>> {
        let mut opts = StatusOptions::new();
        opts.include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(false)
            .exclude_submodules(true);
        let statuses = self
            .repo
            .statuses(Some(&mut opts))
            .map_err(|e| git_err("reading the working tree status", &self.dir, e))?;
        Ok(statuses
            .iter()
            .filter(|s| s.status() != Status::CURRENT && !s.status().contains(Status::IGNORED))
            .filter_map(|s| s.path().ok().map(str::to_owned))
            .collect())
    }

    fn commit_working_tree_edits(&self, message: &CommitMessage) -> Result<()> {
        let dir = &self.dir;
        let mut index = self.repo.index().map_err(|e| git_err("opening the index", dir, e))?;
        index.read(true).map_err(|e| git_err("reading the index", dir, e))?;
        index
            .add_all(["*"], IndexAddOption::DEFAULT, None)
            .map_err(|e| git_err("staging hand edits", dir, e))?;
        index.update_all(["*"], None).map_err(|e| git_err("staging hand edits", dir, e))?;
        let tree_id = index.write_tree().map_err(|e| git_err("writing the tree", dir, e))?;
        let head = self.head_commit()?;
        if let Some(h) = &head
            && h.tree_id() == tree_id
        {
            locks::wait_for(&self.git_dir().join("index.lock"));
            index.write().map_err(|e| git_err("writing the index", dir, e))?;
            return Ok(());
        }
        let tree = self.repo.find_tree(tree_id).map_err(|e| git_err("reading the tree", dir, e))?;
        let sig = self.signature(message.time)?;
        let parents: Vec<&git2::Commit<'_>> = head.iter().collect();
        let id = self
            .repo
            .commit(None, &sig, &sig, &message.render(), &tree, &parents)
            .map_err(|e| git_err("writing the commit", dir, e))?;
        if !self.move_branch(head.as_ref().map(|h| h.id()), id, &message.subject)? {
            return Err(StoreError::Contention { dir: dir.clone(), attempts: 1 });
        }
        locks::wait_for(&self.git_dir().join("index.lock"));
        index.write().map_err(|e| git_err("writing the index", dir, e))?;
        Ok(())
    }

    /// Runs `git fsck`-like connectivity checks the library offers: every
    /// commit reachable from HEAD and its trees and blobs can be read.
    pub fn verify(&self) -> Result<usize> {
        let mut walk = self.repo.revwalk().map_err(|e| git_err("walking history", &self.dir, e))?;
        if self.head_commit()?.is_none() {
            return Ok(0);
        }
        walk.push_head().map_err(|e| git_err("walking history", &self.dir, e))?;
        let mut n = 0;
        for id in walk {
            let id = id.map_err(|e| git_err("walking history", &self.dir, e))?;
            let commit = self.repo.find_commit(id).map_err(|e| git_err("reading a commit", &self.dir, e))?;
            let tree = commit.tree().map_err(|e| git_err("reading a tree", &self.dir, e))?;
            let mut err = None;
            tree.walk(git2::TreeWalkMode::PreOrder, |_, entry| {
                if entry.kind() == Some(ObjectType::Blob)
                    && let Err(e) = self.repo.find_blob(entry.id())
                {
                    err = Some(e);
                    return git2::TreeWalkResult::Abort;
                }
                git2::TreeWalkResult::Ok
            })
            .ok();
            if let Some(e) = err {
                return Err(git_err("reading a blob", &self.dir, e));
            }
            n += 1;
        }
        Ok(n)
    }

    /// Packs loose objects now (see `gc`).
    pub fn pack_objects(&self) -> Result<PackReport> {
        let _lock = self.lock()?;
        gc::pack_now(self)
    }
}

/// Process-wide libgit2 settings, applied once: objects are not re-hashed on
/// every read (as cargo does; `engram doctor` and `git fsck` still verify
/// them), which halves the cost of reading the files a write builds on; and
/// index entries and tree entries are not checked for existence one lookup at
/// a time (every id engram puts there was written first, and the index copy a
/// write swaps in would otherwise look up every tracked file in every pack).
fn configure_libgit2() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        git2::opts::strict_hash_verification(false);
        git2::opts::strict_object_creation(false);
    });
}

/// Optional timing of the phases of a write, printed to stderr.
struct PhaseTimer {
    on: bool,
    last: std::time::Instant,
    phases: Vec<(&'static str, std::time::Duration)>,
}

impl PhaseTimer {
    fn new(on: bool) -> Self {
        Self { on, last: std::time::Instant::now(), phases: Vec::new() }
    }
    fn mark(&mut self, phase: &'static str) {
        if self.on {
            let now = std::time::Instant::now();
            self.phases.push((phase, now - self.last));
            self.last = now;
        }
    }
    fn report(&self, dir: &Path) {
        if self.on {
            let parts: Vec<String> =
                self.phases.iter().map(|(p, d)| format!("{p}={:.3}ms", d.as_secs_f64() * 1000.0)).collect();
            eprintln!("engram: write {}: {}", dir.display(), parts.join(" "));
        }
    }
}

fn short_id(id: &str) -> String {
    id.chars().take(7).collect()
}

/// Writes a file through a temporary file and a rename, so readers never see half a file.
pub fn write_file_atomic(path: &Path, bytes: &[u8], durable: bool) -> Result<()> {
    let parent = path.parent().unwrap_or(Path::new("."));
    write_file_atomic_via(path, bytes, durable, parent)
}

/// Like [`write_file_atomic`], with the temporary file in `tmp_dir` (same
/// filesystem), so a crash never leaves a stray file in a pack's working tree.
fn write_file_atomic_via(path: &Path, bytes: &[u8], durable: bool, tmp_dir: &Path) -> Result<()> {
    let parent = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(parent).map_err(|e| io_err("create directory", parent, e))?;
    if path.is_dir() {
        return Err(StoreError::NotAFile { path: path.display().to_string() });
    }
    let tmp = tmp_dir.join(format!(
        ".{}.engram-tmp-{}",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("file"),
        std::process::id()
    ));
    {
        let mut f = File::create(&tmp).map_err(|e| io_err("create", &tmp, e))?;
        f.write_all(bytes).map_err(|e| io_err("write", &tmp, e))?;
        if durable {
            f.sync_all().map_err(|e| io_err("sync", &tmp, e))?;
        }
    }
    fs::rename(&tmp, path).map_err(|e| io_err("rename into place", path, e))?;
    Ok(())
}

fn remove_empty_parents(root: &Path, file: &Path) {
    let mut dir = file.parent();
    while let Some(d) = dir {
        if d == root || !d.starts_with(root) {
            break;
        }
        if fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}

/// Clones a pack repository from a URL or a local path into `target`.
///
/// `progress` is called with (received objects, total objects).
pub fn clone_pack(source: &str, target: &Path, progress: &mut dyn FnMut(usize, usize)) -> Result<()> {
    let mut callbacks = git2::RemoteCallbacks::new();
    callbacks.transfer_progress(|p| {
        progress(p.received_objects(), p.total_objects());
        true
    });
    let mut fetch = git2::FetchOptions::new();
    fetch.remote_callbacks(callbacks);
    let mut builder = git2::build::RepoBuilder::new();
    builder.fetch_options(fetch);
    builder.clone(source, target).map_err(|e| StoreError::Clone { message: e.message().to_owned() })?;
    Ok(())
}
