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
//!
//! ARCHITECTURE.md lists the files; this one holds the small shared types
//! ([`Changes`], [`CommitMessage`], [`Snapshot`], …).

mod beside_git;
mod clean;
pub mod doctor;
mod error;
mod guard;
mod history;
mod index_lock;
mod maintenance;
mod merge;
mod open;
mod proposals;
mod publish;
mod purge;
mod racy_commit;
mod racy_reset;
mod recover;
mod revert;
mod scoped_write;
mod sync;
pub mod trailer;
mod tree;
mod tree_read;
mod trouble;
mod worktree;

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use git2::{ErrorCode, Oid, Repository, Signature};

use beside_git::reread;
use error::io_err;
use publish::{CommitOutcome, PhaseTimer};

pub use crate::remote::Credentials;
pub use crate::workspace_git::{
    MAX_FILES_PER_COMMIT, MAX_HISTORY_COMMITS, WorkspaceCommit, WorkspaceHistory, read_workspace_history,
};
pub(crate) use error::git_err;
pub use error::{Result, SecretSource, StoreError};
pub use guard::scan_added;
pub use history::{CommitInfo, FileChange, LogPage, LogQuery, UnseenWalk, WalkFrom};
pub use index_lock::BUSY_BOUND;
pub use maintenance::PackReport;
pub use maintenance::wait_for_background_packing;
pub use merge::{ChangeKind, ChangedPath, Integrated, Integration, MergeView, Side};
pub use open::{clone_pack, init_git};
pub use proposals::{
    PROPOSE_CONFIG_KEY, ProposalInfo, ProposalSides, ProposeSetting, Proposer, proposer, proposing,
};
pub use purge::{PurgeReport, PurgeTarget};
pub use revert::{RevertConflict, RevertPlan, parse_since};
pub use sync::{PushOutcome, RemoteInfo, is_bare_repository};
pub use tree_read::read_folder;

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

    /// Signs the message with the [`trailer::TOOL`] and [`trailer::CLIENT`] trailers: the one
    /// place they are written (`ops::Caller::commit_message` for the tools and the CLI).
    pub fn made_by(self, tool: &str, client: Option<&str>) -> Self {
        self.trailer(trailer::TOOL, tool).trailer(trailer::CLIENT, client.unwrap_or_default())
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
///
/// Paths are checked when the commit is published (see `publish.rs`): each
/// must parse as a [`PackPath`](crate::pack_path::PackPath), and the reserved
/// `memory/` folder (in any case) may be written only by changes made with
/// [`Changes::for_memory`].
#[derive(Debug, Default, Clone)]
pub struct Changes {
    files: BTreeMap<String, Option<Vec<u8>>>,
    /// May write the reserved `memory/` folder (the memory tools, expiry, reverts).
    memory: bool,
    /// File modes other than a regular file (hand edits: executables, symbolic links).
    modes: BTreeMap<String, i32>,
}

impl Changes {
    /// Changes that may write the reserved `memory/` folder (the memory tools, the expiry
    /// pass and reverts; see the type's doc).
    pub fn for_memory() -> Self {
        Self { memory: true, ..Self::default() }
    }
    /// A file of the working tree with its mode (hand edits and adoption).
    fn put_with_mode(&mut self, path: String, content: Vec<u8>, mode: i32) {
        if mode != MODE_BLOB {
            self.modes.insert(path.clone(), mode);
        }
        self.files.insert(path, Some(content));
    }
    /// The git mode a written path gets.
    fn mode_of(&self, path: &str) -> i32 {
        self.modes.get(path).copied().unwrap_or(MODE_BLOB)
    }
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
    /// Adds (or overrides with) every change of `other`.
    pub fn extend(&mut self, other: Changes) {
        self.memory |= other.memory;
        self.modes.extend(other.modes);
        self.files.extend(other.files);
    }
    /// Keeps only the changes whose path passes `keep`.
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.files.retain(|p, _| keep(p));
    }
}

/// Read access to the tree a write starts from.
pub struct Snapshot<'r> {
    repo: &'r Repository,
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
        let blob = reread(|| self.repo.find_blob(id)).map_err(|e| git_err("reading a blob", self.dir, e))?;
        Ok(Some(blob.content().to_vec()))
    }

    /// The entry at `path` in the tree (mode and id), if any.
    pub(super) fn entry(&self, path: &str) -> Result<Option<(i32, Oid)>> {
        let Some(root) = self.tree else { return Ok(None) };
        let path = path.trim_matches('/');
        if path.is_empty() {
            return Ok(Some((MODE_TREE, root)));
        }
        let tree =
            reread(|| self.repo.find_tree(root)).map_err(|e| git_err("reading the tree", self.dir, e))?;
        match tree.get_path(Path::new(path)) {
            Ok(entry) => Ok(Some((entry.filemode(), entry.id()))),
            Err(e) if e.code() == ErrorCode::NotFound => Ok(None),
            Err(e) => Err(git_err("reading the tree", self.dir, e)),
        }
    }

    /// The blob id of the file at `path`; `None` if absent, an error for a directory or submodule.
    fn blob_entry(&self, path: &str) -> Result<Option<Oid>> {
        match self.entry(path)? {
            None => Ok(None),
            Some((mode, id)) if is_blob_mode(mode) => Ok(Some(id)),
            Some(_) => Err(StoreError::NotAFile { path: path.to_owned() }),
        }
    }

    /// The blob id of the file at `path` (what its content is known by: equal ids, equal
    /// content); `None` when it is absent or changed in this snapshot's overlay.
    pub fn file_id(&self, path: &str) -> Result<Option<String>> {
        if self.overlay.contains_key(path) {
            return Ok(None);
        }
        Ok(self.blob_entry(path)?.map(|id| id.to_string()))
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
        let mut names = Vec::new();
        self.tree_names(dir, |n| names.push(n.to_owned()))?;
        self.overlay_listing(dir, &mut names);
        Ok(names)
    }

    /// Calls `visit` with the name of every entry of directory `dir`, in no
    /// particular order: [`list`](Self::list) without allocating the names.
    pub fn for_each_name(&self, dir: &str, mut visit: impl FnMut(&str)) -> Result<()> {
        if self.overlay.is_empty() {
            return self.tree_names(dir, visit);
        }
        self.list(dir)?.iter().for_each(|n| visit(n));
        Ok(())
    }

    fn tree_names(&self, dir: &str, mut visit: impl FnMut(&str)) -> Result<()> {
        let Some(id) = self.subtree_id(dir)? else { return Ok(()) };
        let sub = reread(|| self.repo.find_tree(id)).map_err(|e| git_err("reading a tree", self.dir, e))?;
        for entry in sub.iter() {
            if let Ok(name) = std::str::from_utf8(entry.name_bytes()) {
                visit(name);
            }
        }
        Ok(())
    }

    /// The tree id of folder `dir` (what its whole content is known by): `None` when it is
    /// absent, or when changes laid over this snapshot ([`Snapshot::overlaid`]) touch it.
    pub fn folder_id(&self, dir: &str) -> Result<Option<String>> {
        let prefix = format!("{}/", dir.trim_end_matches('/'));
        let touched = self.overlay.keys().any(|p| prefix == "/" || p.starts_with(&prefix));
        Ok(self.subtree_id(dir)?.filter(|_| !touched).map(|id| id.to_string()))
    }

    /// The id of the subtree at `dir` (`""` for the root), if it exists and is a directory.
    pub(super) fn subtree_id(&self, dir: &str) -> Result<Option<Oid>> {
        let dir = dir.trim_end_matches('/');
        if dir.is_empty() {
            return Ok(self.tree);
        }
        Ok(match self.entry(dir)? {
            Some((MODE_TREE, id)) => Some(id),
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

/// One pack's repository.
pub struct PackRepo {
    dir: PathBuf,
    repo: Repository,
    options: StoreOptions,
    /// The working tree as last known to equal HEAD (see [`clean`]).
    clean: std::sync::Mutex<Option<clean::CleanState>>,
    /// The git index as last found (or left) in agreement with HEAD: no entry lagging it
    /// (see [`racy_commit`]).
    index_checked: std::sync::Mutex<Option<index_lock::Stamp>>,
    /// Set once a scoped write has checked the whole working tree (see [`scoped_write`]).
    scoped_checked: std::sync::atomic::AtomicBool,
    /// Whether the pack's `.git/config` sets `engram.propose = true` (read again when the file
    /// changed; see [`proposals`]).
    proposes: std::sync::Mutex<proposals::ProposeSetting>,
}

/// The mode of a tree entry that is a directory.
const MODE_TREE: i32 = 0o040000;
/// The mode of a regular (non-executable) file entry.
const MODE_BLOB: i32 = 0o100644;

/// True for the modes of a file entry (regular, executable, symbolic link).
fn is_blob_mode(mode: i32) -> bool {
    matches!(mode & 0o170000, 0o100000 | 0o120000)
}

impl PackRepo {
    /// A snapshot of commit `head` (the empty tree when the repository has no commit yet).
    fn snapshot_of(&self, head: Option<Oid>) -> Result<Snapshot<'_>> {
        let tree = head
            .map(|id| reread(|| self.repo.find_commit(id)).map(|c| c.tree_id()))
            .transpose()
            .map_err(|e| git_err("reading HEAD's tree", &self.dir, e))?;
        Ok(self.snapshot_of_tree(tree, head))
    }

    /// A snapshot of the tree `tree` (of commit `head`).
    fn snapshot_of_tree(&self, tree: Option<Oid>, head: Option<Oid>) -> Snapshot<'_> {
        Snapshot { repo: &self.repo, tree, head, dir: &self.dir, overlay: BTreeMap::new() }
    }

    /// The branch HEAD points at and its commit, read once (the branch name
    /// is needed to move it, the id to build on).
    fn branch_head(&self) -> Result<BranchHead> {
        let branch = self.branch_ref()?;
        Ok(BranchHead { id: self.ref_id(&branch)?, branch })
    }

    /// HEAD's commit id from the refs alone, the commit not read (`None` before the first
    /// commit or when HEAD cannot be read): what a read's cache compares on every call.
    pub fn head_id(&self) -> Option<String> {
        self.head_oid().ok().flatten().map(|id| id.to_string())
    }

    /// HEAD's commit id, read from the refs alone (`None` before the first commit).
    fn head_oid(&self) -> Result<Option<Oid>> {
        self.ref_id("HEAD")
    }

    /// The id a ref resolves to (`None` when it or the branch it names does not exist).
    fn ref_id(&self, name: &str) -> Result<Option<Oid>> {
        match self.repo.refname_to_id(name) {
            Ok(id) => Ok(Some(id)),
            Err(e) if matches!(e.code(), ErrorCode::UnbornBranch | ErrorCode::NotFound) => Ok(None),
            Err(e) => Err(git_err("reading a reference", &self.dir, e)),
        }
    }

    fn head_commit(&self) -> Result<Option<git2::Commit<'_>>> {
        let Some(id) = self.head_oid()? else { return Ok(None) };
        let (mut backoff, mut tries) = (index_lock::Backoff::new(), 0);
        loop {
            match self.repo.find_commit(id) {
                // Not found: a person's `git gc` (run by `git commit`) packing it right now.
                Err(e) if e.code() == ErrorCode::NotFound && tries < 10 => {
                    tries += 1;
                    backoff.sleep();
                }
                found => return found.map(Some).map_err(|e| git_err("reading HEAD", &self.dir, e)),
            }
        }
    }

    fn signature(&self, time: Option<i64>) -> Result<Signature<'static>> {
        let (name, email) = (&self.options.author_name, &self.options.author_email);
        match time {
            Some(t) => Signature::new(name, email, &git2::Time::new(t, 0)),
            None => Signature::now(name, email),
        }
        .map_err(|e| git_err("building the signature", &self.dir, e))
    }

    /// The full name of the branch HEAD points at (`refs/heads/main` for a new repository).
    fn branch_ref(&self) -> Result<String> {
        let head = self.repo.find_reference("HEAD").map_err(|e| git_err("reading HEAD", &self.dir, e))?;
        Ok(head.symbolic_target().ok().flatten().unwrap_or("HEAD").to_owned())
    }
}

fn short_id(id: &str) -> String {
    id.chars().take(7).collect()
}

/// Writes a file through a temporary file beside it and a rename, so readers never see half
/// a file. For engram's own files (sync state, the search index, a pack being created);
/// the files of a pack's working tree are written by the store through
/// [`crate::pack_root`].
pub fn write_file_atomic(path: &Path, bytes: &[u8], durable: bool) -> Result<()> {
    let parent = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(parent).map_err(|e| io_err("create directory", parent, e))?;
    if path.is_dir() {
        return Err(StoreError::NotAFile { path: path.display().to_string() });
    }
    let tmp = parent.join(format!(
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

/// Removes a whole pack directory (a staging directory, a pack being replaced
/// or deleted): the one way to do it. This process's background packing of
/// the pack is waited for first; a `git gc` another process started may still
/// add a file meanwhile, so the removal is tried again a few times.
/// A directory that does not exist is already removed.
pub fn remove_pack_dir(dir: &Path) -> std::io::Result<()> {
    maintenance::wait_for_pack(&dir.join(".git"));
    if let Ok(real) = fs::canonicalize(dir) {
        maintenance::wait_for_pack(&real.join(".git"));
    }
    let mut tries = 0;
    loop {
        match fs::remove_dir_all(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(_) if tries < 5 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20 << tries));
            }
            other => return other,
        }
    }
}
