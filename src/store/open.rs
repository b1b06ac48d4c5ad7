//! Opening a pack's repository: an existing one, or adopting a folder that has none.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use git2::Repository;

use super::{PackRepo, Result, StoreError, StoreOptions, git_err, io_err};

pub(super) const LOCK_FILE: &str = "engram.lock";

impl PackRepo {
    /// A handle over an opened repository, with empty caches.
    fn handle(dir: &Path, repo: Repository, options: StoreOptions) -> Self {
        Self {
            dir: dir.to_owned(),
            repo,
            options,
            clean: std::sync::Mutex::new(None),
            index_checked: std::sync::Mutex::new(None),
            scoped_checked: std::sync::atomic::AtomicBool::new(false),
            proposes: Default::default(),
        }
    }

    /// Opens the repository of a pack directory, creating it (and an `adopt`
    /// commit of the files already there) when the directory has no `.git`.
    /// For writers only: reads show a folder that is not a repository as it
    /// is and never create one. When the adoption is refused (the secret
    /// guard, the path checks), nothing is left behind: no `.git`, no commit.
    pub fn open_or_adopt(dir: &Path, options: StoreOptions) -> Result<Self> {
        if dir.join(".git").exists()
            && let Ok(repo) = Self::open(dir, options.clone())
        {
            return Ok(repo);
        }
        // Two processes may adopt the same pack at once, and one may be doing it now (it holds
        // this lock until its adopt commit is made): serialise on the directory itself.
        let dir_lock = File::open(dir).map_err(|e| io_err("open", dir, e))?;
        fs4::fs_std::FileExt::lock_exclusive(&dir_lock).map_err(|e| io_err("lock", dir, e))?;
        if dir.join(".git").exists() {
            return Self::open(dir, options);
        }
        if options.read_only {
            return Err(StoreError::ReadOnly { dir: dir.to_owned() });
        }
        init_git();
        // No template directory: git's sample hooks are ~20 KiB a small pack does not need.
        let mut init = git2::RepositoryInitOptions::new();
        init.external_template(false);
        let repo = Repository::init_opts(dir, &init)
            .map_err(|source| StoreError::Open { dir: dir.to_owned(), source })?;
        let this = Self::handle(dir, repo, options);
        let adopted = this.configure().and_then(|()| {
            let _lock = this.lock()?;
            // HEAD is unborn: the folder's files become the `adopt:` commit, through the one
            // publish path (secret guard and path checks included).
            this.commit_hand_edits()
        });
        if let Err(e) = adopted {
            // Refused (a credential, a bad file name) or failed: leave the folder as it was,
            // without the repository made a moment ago, so it stays readable as it is.
            drop(this);
            let _ = std::fs::remove_dir_all(dir.join(".git"));
            return Err(e);
        }
        Ok(this)
    }

    /// Opens an existing pack repository.
    pub fn open(dir: &Path, options: StoreOptions) -> Result<Self> {
        init_git();
        let repo =
            Repository::open(dir).map_err(|source| StoreError::Open { dir: dir.to_owned(), source })?;
        let this = Self::handle(dir, repo, options);
        if this.options.durable {
            this.configure()?;
        }
        Ok(this)
    }

    /// True when the directory already is a git repository.
    pub fn is_repository(dir: &Path) -> bool {
        dir.join(".git").exists()
    }

    pub(super) fn configure(&self) -> Result<()> {
        let mut cfg = self.repo.config().map_err(|e| git_err("reading config", &self.dir, e))?;
        // Packs are written by engram and read by people: keep line endings as written.
        let written = |e| git_err("writing config", &self.dir, e);
        cfg.set_bool("core.autocrlf", false).map_err(written)?;
        if self.options.durable {
            // libgit2 honours this key for objects, packs and refs (git itself now prefers core.fsync).
            cfg.set_bool("core.fsyncObjectFiles", true).map_err(written)?;
        }
        Ok(())
    }

    /// The pack directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub(super) fn git_dir(&self) -> PathBuf {
        self.repo.path().to_owned()
    }

    /// Where engram keeps a cache of its own about this repository: `.git/engram-<name>`
    /// (beside `engram-sync.json`; never committed, safe to delete).
    pub fn cache_file(&self, name: &str) -> PathBuf {
        self.git_dir().join(format!("engram-{name}"))
    }

    pub(super) fn lock(&self) -> Result<File> {
        let path = self.git_dir().join(LOCK_FILE);
        let file = OpenOptions::new().create(true).truncate(false).write(true).open(&path);
        let file = file.map_err(|e| io_err("open the write lock", &path, e))?;
        fs4::fs_std::FileExt::lock_exclusive(&file).map_err(|e| io_err("take the write lock", &path, e))?;
        Ok(file)
    }
}

/// Initialises libgit2 once per process (its global state: TLS certificates, tens of
/// milliseconds), so a server can do it before its first request needs a repository, with
/// its settings: objects are not re-hashed on every read (as cargo does; `engram doctor` and
/// `git fsck` still verify them), which halves the cost of reading the files a write builds
/// on; and index and tree entries are not checked for existence one lookup at a time (every
/// id engram puts there was written first).
pub fn init_git() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        git2::opts::strict_hash_verification(false);
        git2::opts::strict_object_creation(false);
    });
}

/// Clones a pack repository from a URL or a local path into `target`, authenticating
/// and checking the remote like a sync does. No file is written out before every file of
/// the branch is known to be at most `max_file_bytes` (their sizes read from the object
/// headers): a pack holding a larger one is refused with its path, and the caller removes
/// `target`.
///
/// `progress` is called with (received objects, total objects).
pub fn clone_pack(
    source: &str,
    target: &Path,
    creds: &super::Credentials,
    max_file_bytes: u64,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<()> {
    let config = git2::Config::open_default().ok();
    let session = crate::remote::Session::new(creds, source, config.as_ref())?;
    let mut callbacks = session.callbacks();
    callbacks.transfer_progress(|p| {
        progress(p.received_objects(), p.total_objects());
        true
    });
    let mut fetch = git2::FetchOptions::new();
    fetch.remote_callbacks(callbacks);
    let mut no_files = git2::build::CheckoutBuilder::new();
    no_files.dry_run();
    let mut builder = git2::build::RepoBuilder::new();
    builder.fetch_options(fetch).with_checkout(no_files);
    let repo = builder.clone(source, target).map_err(|e| session.error("cloning", &e))?;
    if let Some((path, size)) = oversized_blob(&repo, max_file_bytes) {
        let message = format!(
            "{path} is {size} bytes; a pack file may be at most {max_file_bytes} bytes (engram would not read it)"
        );
        return Err(StoreError::Remote { step: "cloning", url: source.to_owned(), message });
    }
    let mut files = git2::build::CheckoutBuilder::new();
    files.force();
    repo.checkout_head(Some(&mut files)).map_err(|e| git_err("checking out the clone", target, e))?;
    Ok(())
}

/// The first file of HEAD's tree larger than `max` bytes, by its object header (the blob
/// is not read).
fn oversized_blob(repo: &Repository, max: u64) -> Option<(String, u64)> {
    let tree = repo.head().ok()?.peel_to_tree().ok()?;
    let odb = repo.odb().ok()?;
    let mut found = None;
    let _ = tree.walk(git2::TreeWalkMode::PreOrder, |root, entry| {
        if entry.kind() != Some(git2::ObjectType::Blob) {
            return git2::TreeWalkResult::Ok;
        }
        match odb.read_header(entry.id()) {
            Ok((size, _)) if size as u64 > max => {
                found = Some((format!("{root}{}", entry.name().unwrap_or("?")), size as u64));
                git2::TreeWalkResult::Abort
            }
            _ => git2::TreeWalkResult::Ok,
        }
    });
    found
}
