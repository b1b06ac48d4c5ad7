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

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;

use crate::ops::Engram;
use crate::pack::{PackSummary, ShadowedPack};
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

/// HEAD commits whose trees [`quick_check`] found whole, per pack directory: not walked again.
#[derive(Debug, Default)]
pub(crate) struct WholeHeads(Mutex<HashMap<PathBuf, String>>);

impl WholeHeads {
    fn get(&self, dir: &Path) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).get(dir).cloned()
    }

    fn set(&self, dir: &Path, head: Option<String>) {
        let mut all = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match head {
            Some(head) => all.insert(dir.to_owned(), head),
            None => all.remove(dir),
        };
    }
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
        let known = self.whole_heads.get(dir);
        let (found, health) = match quick_check(dir, known.as_deref()) {
            Ok(head) => (head, PackHealth::Healthy),
            Err(f) => (None, PackHealth::Damaged(Damage::new(&name, &f.problem))),
        };
        self.whole_heads.set(dir, found);
        health
    }

    /// The damage of a pack whose read failed although [`Engram::pack_health`] passed it
    /// (an object that is there but cannot be read): the error, on one line.
    pub fn damage_of(&self, dir: &Path, error: &crate::ops::EngramError) -> Damage {
        match self.pack_health(dir) {
            PackHealth::Damaged(d) => d,
            PackHealth::Healthy => Damage::new(&dir_name(dir), &error.to_string()),
        }
    }

    /// Every pack of the roots, classified: what `list_engrams` lists, each with its
    /// [`PackHealth`], the directories whose `meta.json` is broken, and shadowed packs.
    pub fn survey(&self) -> Survey {
        let scan = self.packs().scan();
        let packs = scan
            .packs
            .into_iter()
            .map(|p| {
                let health = self.pack_health(&p.dir);
                (p, health)
            })
            .collect();
        let unlisted =
            scan.broken.iter().filter_map(|b| self.pack_health(&b.dir).damage().cloned()).collect();
        Survey { packs, unlisted, shadowed: scan.shadowed }
    }
}
