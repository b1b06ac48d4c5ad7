//! Packs engram creates for itself on first use (the notes pack, the workspace pack).

use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::ops::{Caller, Engram, EngramError, Result};
use crate::pack::{PackError, validate_new_name};
use crate::store::{Edit, Snapshot, StoreError};

/// What a self-created pack says about itself.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PackSeed {
    /// `meta.description`.
    pub description: &'static str,
    /// `meta.tags`.
    pub tags: &'static [&'static str],
    /// Content of `role.md`.
    pub role: &'static str,
}

impl Engram {
    /// The directory of pack `name`, or `None` when it does not exist yet.
    pub(crate) fn existing_pack(&self, name: &str) -> Result<Option<PathBuf>> {
        match self.packs().resolve(name) {
            Ok(p) => Ok(Some(p.dir)),
            Err(PackError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The directory of pack `name`, created under the packs directory (a
    /// valid `meta.json` and `role.md`, adopted as the pack's first commit)
    /// when it does not exist.
    ///
    /// The pack is made in a hidden directory beside it and renamed into
    /// place, so another process creating or resolving the same pack never
    /// sees it half made (an empty `meta.json`). When the name is taken
    /// meanwhile — another process won, or a directory is in the way — the
    /// files missing there are added in place.
    pub(crate) fn ensure_pack(&self, name: &str, seed: &PackSeed) -> Result<PathBuf> {
        static STAGED: AtomicU64 = AtomicU64::new(0);
        if let Some(dir) = self.existing_pack(name)? {
            return Ok(dir);
        }
        validate_new_name(name)?;
        let packs_dir = &self.config.packs_dir;
        let dir = packs_dir.join(name);
        let staging = packs_dir.join(format!(
            ".{name}.creating-{}-{}",
            std::process::id(),
            STAGED.fetch_add(1, Ordering::Relaxed)
        ));
        if let Err(e) = write_pack_files(&staging, name, seed) {
            let _ = crate::store::remove_pack_dir(&staging);
            return Err(e);
        }
        if fs::rename(&staging, &dir).is_err() {
            let _ = crate::store::remove_pack_dir(&staging);
            write_pack_files(&dir, name, seed)?;
        }
        self.repo(&dir)?;
        Ok(dir)
    }
}

impl Engram {
    /// Runs one write on the self-created pack `name` (made from `seed` when missing): `edit`
    /// gets HEAD's files, and the commit it asks for is signed by `caller` at the clock's now.
    /// Returns the short id of the commit (`None` when nothing was committed) and the edit's
    /// value. The write path of the notes and workspace toolsets.
    pub(crate) fn write_own_pack<T, E>(
        &self,
        name: &str,
        seed: &PackSeed,
        caller: &Caller,
        mut edit: impl FnMut(&Snapshot<'_>) -> std::result::Result<Edit<T>, E>,
    ) -> std::result::Result<(Option<String>, T), E>
    where
        E: From<EngramError>,
    {
        let dir = self.ensure_pack(name, seed)?;
        let repo = self.repo(&dir)?;
        let guard = self.hold(&repo)?;
        let time = self.now().timestamp();
        let written = guard.write(|snap| {
            Ok::<_, OwnWriteError<E>>(match edit(snap).map_err(OwnWriteError::Edit)? {
                Edit::Commit { changes, message, value } => {
                    Edit::Commit { changes, message: caller.sign(message.at(time)), value }
                }
                nothing => nothing,
            })
        });
        match written {
            Ok((commit, value)) => Ok((commit.map(|c| c.short), value)),
            Err(OwnWriteError::Edit(e)) => Err(e),
            Err(OwnWriteError::Store(e)) => Err(EngramError::from(e).into()),
        }
    }
}

/// The failure of a write on an own pack: the store's, or the toolset's own.
enum OwnWriteError<E> {
    Store(StoreError),
    Edit(E),
}

impl<E> From<StoreError> for OwnWriteError<E> {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

/// Writes the files of a new pack into `dir` (made when missing), keeping any already there.
fn write_pack_files(dir: &Path, name: &str, seed: &PackSeed) -> Result<()> {
    fs::create_dir_all(dir).map_err(|e| io("create the pack directory", dir, e))?;
    let meta = serde_json::json!({
        "name": name,
        "description": seed.description,
        "author": "engram",
        "version": "1.0.0",
        "tags": seed.tags,
        "knowledge_count": 0,
        "examples_count": 0,
    });
    let meta = format!("{}\n", crate::jsonfmt::python_pretty(&meta));
    create_new(&dir.join("meta.json"), &meta)?;
    create_new(&dir.join("role.md"), seed.role)?;
    // The sections every pack has (so `engram lint` finds nothing missing).
    for (section, heading) in [("knowledge", "## 知识索引\n"), ("examples", "## 案例索引\n")] {
        let sub = dir.join(section);
        fs::create_dir_all(&sub).map_err(|e| io("create the pack directory", &sub, e))?;
        create_new(&sub.join("_index.md"), heading)?;
    }
    Ok(())
}

fn io(step: &'static str, path: &Path, source: std::io::Error) -> EngramError {
    StoreError::Io { step, path: path.to_owned(), source }.into()
}

/// Writes a file unless it already exists (another process may be creating the same pack).
fn create_new(path: &Path, content: &str) -> Result<()> {
    match OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(mut f) => f.write_all(content.as_bytes()).map_err(|e| io("write", path, e)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io("create", path, e)),
    }
}
