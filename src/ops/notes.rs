//! The notes toolset: `store`, `recall`, `forget`, `list_categories`, `create_category`.
//!
//! Notes live in a pack (default `personal`, created on first write) as one
//! markdown file each, `notes/<category>/<slug>.md`, with a flat YAML front
//! matter (`id`, `title`, `importance`, `created`, `updated`); the category is
//! the directory. Category descriptions live in `notes/_categories.yaml`
//! (`name: description`); a directory under `notes/` is a category too, so a
//! person can add one by hand. Reads use the working tree, so hand edits show
//! up at once; the store commits them as `edit:` before its next write.

use std::collections::BTreeMap;

use chrono::SecondsFormat;
use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;

use super::files::PackFiles;
use super::packs::own_pack::PackSeed;
use super::{Caller, Engram, EngramError, limits};
use crate::frontmatter;
use crate::graph::fnv1a64_parts;
use crate::store::{Changes, CommitMessage, Edit};

/// The pack notes go to unless `--notes-pack` says otherwise.
pub const DEFAULT_NOTES_PACK: &str = "personal";
/// The category of a note stored without one; it always exists.
pub const DEFAULT_CATEGORY: &str = "general";
/// Default importance (1 = trivia … 5 = essential).
pub const DEFAULT_IMPORTANCE: u8 = 3;

const NOTES_DIR: &str = "notes";
const CATEGORIES_FILE: &str = "notes/_categories.yaml";
const MAX_TITLE_CHARS: usize = 200;
const MAX_SLUG_CHARS: usize = 60;
const MAX_RECALL: usize = 100;

const SEED: PackSeed = PackSeed {
    description: "个人笔记 (engram notes toolset) / personal notes stored by the notes tools",
    tags: &["notes", "笔记"],
    role: "# 个人笔记 / Personal notes\n\n这个包保存 notes 工具集（store / recall / forget）记下的笔记：`notes/<分类>/<标题>.md`。\nNotes stored by the notes toolset, one markdown file each under `notes/<category>/`. Edit them freely: engram commits hand edits before its next write.\n",
};

/// Errors of the notes tools; [`NotesError::code`] is the machine-readable code.
#[derive(Debug, thiserror::Error)]
pub enum NotesError {
    /// The category does not exist.
    #[error(
        "未知分类 (unknown category) {category:?}; existing categories: {}. Create it first with create_category.",
        known.join(", ")
    )]
    UnknownCategory {
        /// The category given.
        category: String,
        /// The categories that exist.
        known: Vec<String>,
    },
    /// No note matched.
    #[error("未找到笔记 (no note matches) {given:?}{}", list_candidates(candidates))]
    NotFound {
        /// What was asked for.
        given: String,
        /// Some notes that exist (`id — category/title`).
        candidates: Vec<String>,
    },
    /// Several notes matched.
    #[error(
        "匹配到多条笔记 (ambiguous) {given:?} — forget one of them by its id{}",
        list_candidates(candidates)
    )]
    Ambiguous {
        /// What was asked for.
        given: String,
        /// The matching notes (`id — category/title`).
        candidates: Vec<String>,
    },
    /// The pack or the store failed.
    #[error(transparent)]
    Engram(#[from] EngramError),
}

impl NotesError {
    /// A stable code for clients: `invalid_argument`, `unknown_category`,
    /// `not_found`, `ambiguous`, `pack_error` or `storage_error`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::UnknownCategory { .. } => "unknown_category",
            Self::NotFound { .. } => "not_found",
            Self::Ambiguous { .. } => "ambiguous",
            Self::Engram(e) => e.code(),
        }
    }
}

fn list_candidates(c: &[String]) -> String {
    super::candidate_list(c, "\n(no notes yet / 还没有笔记)")
}

type Result<T, E = NotesError> = std::result::Result<T, E>;

/// A note as the tools return it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Note {
    /// Stable id (front matter `id`).
    pub id: String,
    /// The short name the note is found by.
    pub title: String,
    /// The note's category (its directory).
    pub category: String,
    /// 1 (trivia) … 5 (essential).
    pub importance: u8,
    /// RFC 3339.
    pub created: String,
    /// RFC 3339.
    pub updated: String,
    /// The body.
    pub content: String,
    /// Path of the file in the pack.
    pub path: String,
}

/// A category and how many notes it holds.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Category {
    /// Name (the directory under `notes/`).
    pub name: String,
    /// What belongs in it.
    pub description: String,
    /// Number of notes.
    pub notes: usize,
}

/// What `store` did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stored {
    /// `created` or `updated` (a note with exactly the same title in the category is updated).
    pub action: &'static str,
    /// The note as stored.
    pub note: Note,
    /// True when no title was given and one was derived from the content.
    pub title_derived: bool,
    /// Short commit id (absent when nothing changed).
    pub commit: Option<String>,
    /// A sentence for the model.
    pub message: String,
}

/// Arguments of `store`.
#[derive(Debug, Clone, Default)]
pub struct StoreNote {
    /// The body.
    pub content: String,
    /// Title (derived from the content when missing).
    pub title: Option<String>,
    /// Category (default `general`).
    pub category: Option<String>,
    /// 1–5 (default 3; an update keeps the old one when omitted).
    pub importance: Option<i64>,
}

/// Front matter of a note file. Every field is optional when reading (files are hand-edited).
#[derive(Debug, Default, Serialize, Deserialize)]
struct NoteMeta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    importance: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    updated: Option<String>,
}

/// Normalises text for matching: NFKC, lowercase, single spaces.
fn fold(s: &str) -> String {
    let lowered: String = s.nfkc().flat_map(char::to_lowercase).collect();
    lowered.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A file-name-safe, stable slug of a title: letters and digits of any script
/// (lowercased, NFC), everything else folded to `-`, at most 60 characters.
pub fn slug(title: &str) -> String {
    let mut out = String::new();
    let mut dash = false;
    for c in title.nfc().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c);
        } else {
            dash = true;
        }
        if out.chars().count() >= MAX_SLUG_CHARS {
            break;
        }
    }
    const RESERVED: &[&str] = &[
        "con", "prn", "aux", "nul", "com1", "com2", "com3", "com4", "com5", "com6", "com7", "com8", "com9",
        "lpt1", "lpt2", "lpt3", "lpt4", "lpt5", "lpt6", "lpt7", "lpt8", "lpt9",
    ];
    if out.is_empty() {
        out.push_str("note");
    } else if RESERVED.contains(&out.as_str()) {
        out.push_str("-note");
    }
    out
}

/// A title from the first meaningful line of the content.
pub(crate) fn derive_title(content: &str) -> String {
    let line = content
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim_start_matches(['-', '*', '>']).trim())
        .find(|l| !l.is_empty())
        .unwrap_or("note");
    let mut words = 0;
    let mut out = String::new();
    for (i, c) in line.chars().enumerate() {
        if c.is_whitespace() {
            words += 1;
            if words >= 8 {
                break;
            }
        }
        if i >= 40 {
            out.push('…');
            break;
        }
        out.push(c);
    }
    let out = out.trim().trim_end_matches(['.', '。', ',', '，', ':', '：']).to_owned();
    if out.is_empty() { "note".into() } else { out }
}

fn check_category_name(name: &str) -> Result<String> {
    let name: String = name.trim().nfc().collect();
    let reason = if name.is_empty() {
        Some("must not be empty".to_owned())
    } else if name.chars().count() > limits::MAX_LABEL_CHARS {
        Some(format!("longer than {} characters", limits::MAX_LABEL_CHARS))
    } else if name.starts_with(['.', '_']) {
        Some("must not start with `.` or `_`".to_owned())
    } else if name
        .chars()
        .any(|c| c.is_control() || matches!(c, '/' | '\\' | ':' | '*' | '?' | '"' | '<' | '>' | '|'))
    {
        Some("must not contain control characters or any of / \\ : * ? \" < > |".to_owned())
    } else if name == "." || name == ".." {
        Some("`.` and `..` are not categories".to_owned())
    } else if let Err(e) = crate::pack_path::PackPath::check_component(&name) {
        Some(format!("{e}; a category becomes the folder notes/<category>/"))
    } else {
        None
    };
    match reason {
        Some(reason) => Err(NotesError::from(EngramError::Invalid { field: "category", reason })),
        None => Ok(name),
    }
}

/// Everything the notes of a pack consist of.
struct NoteSet {
    descriptions: BTreeMap<String, String>,
    /// Category directories found under `notes/`.
    dirs: Vec<String>,
    notes: Vec<Note>,
}

impl NoteSet {
    fn load(files: &dyn PackFiles) -> Result<Self> {
        let descriptions = match files.text(CATEGORIES_FILE)? {
            Some(text) => frontmatter::parse::<BTreeMap<String, Option<String>>>(&text)
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.unwrap_or_default()))
                .collect(),
            None => BTreeMap::new(),
        };
        let mut dirs = Vec::new();
        let mut notes = Vec::new();
        for name in files.names(NOTES_DIR)? {
            if name.starts_with(['.', '_']) || name.ends_with(".md") || name.ends_with(".yaml") {
                continue;
            }
            let dir = format!("{NOTES_DIR}/{name}");
            let entries = files.names(&dir)?;
            let mut any = false;
            for file in entries {
                if file.starts_with(['.', '_']) || !file.ends_with(".md") {
                    continue;
                }
                let path = format!("{dir}/{file}");
                if let Some(text) = files.text(&path)? {
                    notes.push(parse_note(&name, &path, &text));
                    any = true;
                }
            }
            if any || files.text(&dir)?.is_none() {
                dirs.push(name);
            }
        }
        Ok(Self { descriptions, dirs, notes })
    }

    fn categories(&self) -> Vec<Category> {
        let mut names: Vec<String> = vec![DEFAULT_CATEGORY.to_owned()];
        names.extend(self.descriptions.keys().cloned());
        names.extend(self.dirs.iter().cloned());
        names.sort();
        names.dedup();
        names
            .into_iter()
            .map(|name| {
                let description = self.descriptions.get(&name).cloned().unwrap_or_else(|| {
                    if name == DEFAULT_CATEGORY {
                        "默认分类 / default category".into()
                    } else {
                        String::new()
                    }
                });
                let notes = self.notes.iter().filter(|n| n.category == name).count();
                Category { name, description, notes }
            })
            .collect()
    }

    fn has_category(&self, name: &str) -> bool {
        name == DEFAULT_CATEGORY
            || self.descriptions.contains_key(name)
            || self.dirs.iter().any(|d| d == name)
    }

    fn category_names(&self) -> Vec<String> {
        self.categories().into_iter().map(|c| c.name).collect()
    }

    fn render_categories(&self) -> Result<String> {
        let map: BTreeMap<&str, &str> =
            self.descriptions.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let yaml = serde_saphyr::to_string(&map).map_err(|e| {
            NotesError::from(EngramError::Invalid { field: "description", reason: e.to_string() })
        })?;
        Ok(format!("# 笔记分类：名称: 描述 / note categories: name: description (edit freely)\n{yaml}"))
    }
}

fn parse_note(category: &str, path: &str, text: &str) -> Note {
    let split = frontmatter::split(text);
    let (meta, body) = match split.yaml.map(frontmatter::parse::<NoteMeta>) {
        Some(Ok(meta)) => (meta, split.body),
        Some(Err(_)) => (NoteMeta::default(), split.body),
        None => (NoteMeta::default(), text),
    };
    let stem = path.rsplit('/').next().unwrap_or(path).trim_end_matches(".md");
    let title = meta.title.filter(|t| !t.trim().is_empty()).unwrap_or_else(|| stem.to_owned());
    Note {
        id: meta
            .id
            .filter(|i| !i.trim().is_empty())
            .unwrap_or_else(|| format!("{:08x}", fnv1a64_parts(&[path]) as u32)),
        title: crate::memory::single_line(&title),
        category: category.to_owned(),
        importance: meta.importance.map_or(DEFAULT_IMPORTANCE, |i| i.clamp(1, 5) as u8),
        created: meta.created.unwrap_or_default(),
        updated: meta.updated.unwrap_or_default(),
        content: body.trim_matches('\n').to_owned(),
        path: path.to_owned(),
    }
}

/// The file text of a note (front matter, then the body).
pub(crate) fn render_note(note: &Note) -> Result<String> {
    let meta = NoteMeta {
        id: Some(note.id.clone()),
        title: Some(note.title.clone()),
        importance: Some(i64::from(note.importance)),
        created: Some(note.created.clone()),
        updated: Some(note.updated.clone()),
    };
    frontmatter::render(&meta, &note.content)
        .map_err(|reason| NotesError::from(EngramError::Invalid { field: "title", reason }))
}

fn describe(n: &Note) -> String {
    format!("{} — {}/{}", n.id, n.category, n.title)
}

fn check_importance(i: Option<i64>) -> Result<Option<u8>> {
    match i {
        None => Ok(None),
        Some(i @ 1..=5) => Ok(Some(i as u8)),
        Some(other) => Err(NotesError::from(EngramError::Invalid {
            field: "importance",
            reason: format!("{other} is out of range; use 1 (trivia) … 5 (essential), default 3"),
        })),
    }
}

/// The notes of one pack.
pub struct Notes<'e> {
    engram: &'e Engram,
    pack: String,
}

impl Engram {
    /// The notes tools over pack `pack` (created on the first write).
    pub fn notes(&self, pack: &str) -> Notes<'_> {
        Notes { engram: self, pack: pack.to_owned() }
    }
}

impl Notes<'_> {
    fn now(&self) -> String {
        self.engram.now().to_rfc3339_opts(SecondsFormat::Secs, true)
    }

    fn read(&self) -> Result<NoteSet> {
        match self.engram.existing_pack(&self.pack)? {
            Some(dir) => self.engram.read_pack_files(&dir, NoteSet::load),
            None => Ok(NoteSet { descriptions: BTreeMap::new(), dirs: Vec::new(), notes: Vec::new() }),
        }
    }

    /// Runs one write on the notes pack (created when missing).
    fn write<T>(
        &self,
        caller: &Caller,
        mut edit: impl FnMut(&NoteSet) -> Result<Option<(Changes, String, T)>>,
    ) -> Result<(Option<String>, T)> {
        self.engram.write_own_pack(&self.pack, &SEED, caller, |snap| {
            let set = NoteSet::load(snap)?;
            let Some((changes, subject, value)) = edit(&set)? else {
                return Err(NotesError::from(EngramError::Invalid {
                    field: "write",
                    reason: "nothing to do".into(),
                }));
            };
            Ok(Edit::Commit { changes, message: CommitMessage::new(subject), value })
        })
    }

    /// `list_categories`.
    pub fn list_categories(&self) -> Result<Vec<Category>> {
        Ok(self.read()?.categories())
    }

    /// `create_category`: creates a category (or updates its description).
    /// Returns the category and whether it was new.
    pub fn create_category(
        &self,
        name: &str,
        description: Option<&str>,
        caller: &Caller,
    ) -> Result<(Category, bool, Option<String>)> {
        let name = check_category_name(name)?;
        let description = description.map(crate::memory::single_line).unwrap_or_default();
        let existing = self.read()?;
        if existing.has_category(&name)
            && (description.is_empty() || existing.descriptions.get(&name) == Some(&description))
        {
            let cat = existing.categories().into_iter().find(|c| c.name == name);
            if let Some(cat) = cat {
                return Ok((cat, false, None));
            }
        }
        let (commit, created) = self.write(caller, |set| {
            let created = !set.has_category(&name);
            let mut next =
                NoteSet { descriptions: set.descriptions.clone(), dirs: Vec::new(), notes: Vec::new() };
            let old = next.descriptions.get(&name).cloned().unwrap_or_default();
            let desc = if description.is_empty() { old } else { description.clone() };
            next.descriptions.insert(name.clone(), desc);
            let mut changes = Changes::default();
            changes.put(CATEGORIES_FILE, next.render_categories()?);
            let verb = if created { "category" } else { "category: describe" };
            Ok(Some((changes, format!("{verb}: {name}"), created)))
        })?;
        let cat = self.read()?.categories().into_iter().find(|c| c.name == name).unwrap_or(Category {
            name,
            description,
            notes: 0,
        });
        Ok((cat, created, commit))
    }

    /// Deletes an empty category (its description; the default category stays). Refused while
    /// it holds notes, or when its folder holds other files. Answers the commit.
    pub fn delete_category(&self, name: &str, caller: &Caller) -> Result<Option<String>> {
        let name = check_category_name(name)?;
        let refuse = |reason: String| NotesError::from(EngramError::Invalid { field: "category", reason });
        if name == DEFAULT_CATEGORY {
            return Err(refuse(format!("{DEFAULT_CATEGORY:?} is the default category; it always exists")));
        }
        let (commit, ()) = self.write(caller, |set| {
            if !set.has_category(&name) {
                return Err(NotesError::UnknownCategory { category: name.clone(), known: set.category_names() });
            }
            let held = set.notes.iter().filter(|n| n.category == name).count();
            if held > 0 {
                return Err(refuse(format!(
                    "{name:?} holds {held} notes; forget or move them first (只能删除空分类 / only an empty category can be deleted)"
                )));
            }
            if set.dirs.contains(&name) {
                return Err(refuse(format!(
                    "the folder {NOTES_DIR}/{name}/ holds other files; remove them by hand first"
                )));
            }
            let mut next =
                NoteSet { descriptions: set.descriptions.clone(), dirs: Vec::new(), notes: Vec::new() };
            next.descriptions.remove(&name);
            let mut changes = Changes::default();
            changes.put(CATEGORIES_FILE, next.render_categories()?);
            Ok(Some((changes, format!("category: delete {name}"), ())))
        })?;
        Ok(commit)
    }

    /// `store`: creates a note, or updates the note of exactly the same title in
    /// the category. A title that differs from an existing one only in case or
    /// look-alike characters is refused, naming that note.
    pub fn store(&self, req: &StoreNote, caller: &Caller) -> Result<Stored> {
        let content = req.content.trim_matches('\n').to_owned();
        limits::check_content("content", &content)?;
        let given_title =
            req.title.as_deref().map(crate::memory::single_line).filter(|t| !t.trim().is_empty());
        let title_derived = given_title.is_none();
        let title: String = given_title.unwrap_or_else(|| derive_title(&content)).trim().nfc().collect();
        if title.chars().count() > MAX_TITLE_CHARS {
            return Err(NotesError::from(EngramError::Invalid {
                field: "title",
                reason: format!("longer than {MAX_TITLE_CHARS} characters; a title is a short name"),
            }));
        }
        let category = check_category_name(req.category.as_deref().unwrap_or(DEFAULT_CATEGORY))?;
        let importance = check_importance(req.importance)?;
        {
            let set = self.read()?;
            if !set.has_category(&category) {
                return Err(NotesError::UnknownCategory { category, known: set.category_names() });
            }
        }
        let now = self.now();
        let (commit, (note, action)) = self.write(caller, |set| {
            if !set.has_category(&category) {
                return Err(NotesError::UnknownCategory {
                    category: category.clone(),
                    known: set.category_names(),
                });
            }
            let in_category = || set.notes.iter().filter(|n| n.category == category);
            let existing = in_category().find(|n| n.title.nfc().eq(title.chars()));
            if existing.is_none() {
                // Titles that read alike (case, NFKC look-alikes such as `ﬁ`/`fi`) are
                // never merged: the caller must name the note exactly or pick another title.
                let key = fold(&title);
                if let Some(alike) = in_category().find(|n| fold(&n.title) == key) {
                    return Err(NotesError::from(EngramError::Invalid {
                        field: "title",
                        reason: format!(
                            "{title:?} differs from the existing note {:?} ({}, {}) only in case or look-alike characters; pass title {:?} exactly to update that note, or choose a clearly different title",
                            alike.title, alike.id, alike.path, alike.title
                        ),
                    }));
                }
            }
            let (note, action) = match existing {
                Some(old) => (
                    Note {
                        title: title.clone(),
                        importance: importance.unwrap_or(old.importance),
                        updated: now.clone(),
                        content: content.clone(),
                        ..old.clone()
                    },
                    "updated",
                ),
                None => {
                    let taken = |p: &str| set.notes.iter().any(|n| n.path == p);
                    let base = slug(&title);
                    let mut path = format!("{NOTES_DIR}/{category}/{base}.md");
                    let mut k = 2;
                    while taken(&path) {
                        path = format!("{NOTES_DIR}/{category}/{base}-{k}.md");
                        k += 1;
                    }
                    let mut attempt = 0u32;
                    let id = loop {
                        let n = attempt.to_string();
                        let id = format!("{:08x}", fnv1a64_parts(&[&category, &title, &now, &n]) as u32);
                        if !set.notes.iter().any(|x| x.id == id) {
                            break id;
                        }
                        attempt += 1;
                    };
                    (
                        Note {
                            id,
                            title: title.clone(),
                            category: category.clone(),
                            importance: importance.unwrap_or(DEFAULT_IMPORTANCE),
                            created: now.clone(),
                            updated: now.clone(),
                            content: content.clone(),
                            path,
                        },
                        "created",
                    )
                }
            };
            let mut changes = Changes::default();
            changes.put(note.path.clone(), render_note(&note)?);
            let verb = if action == "created" { "note" } else { "note: update" };
            Ok(Some((changes, format!("{verb}: {}/{}", note.category, note.title), (note, action))))
        })?;
        let mut message = format!("{} note {} \"{}\" in {}", action, note.id, note.title, note.category);
        if title_derived {
            message.push_str(&format!(
                ". No title was given, so the title \"{}\" was derived from the content (标题由内容生成); pass `title` to name notes yourself — recall finds notes by title first.",
                note.title
            ));
        }
        Ok(Stored { action, note, title_derived, commit, message })
    }

    /// `recall`: title matches first, then body matches, then newest; no query lists the newest.
    pub fn recall(
        &self,
        query: Option<&str>,
        category: Option<&str>,
        limit: Option<i64>,
    ) -> Result<Vec<Note>> {
        let limit = match limit {
            None => 10,
            Some(n @ 1..) => (n as usize).min(MAX_RECALL),
            Some(n) => {
                return Err(NotesError::from(EngramError::Invalid {
                    field: "limit",
                    reason: format!("{n}: must be at least 1"),
                }));
            }
        };
        let set = self.read()?;
        let category = match category.map(str::trim).filter(|c| !c.is_empty()) {
            Some(c) => {
                let c: String = c.nfc().collect();
                if !set.has_category(&c) {
                    return Err(NotesError::UnknownCategory { category: c, known: set.category_names() });
                }
                Some(c)
            }
            None => None,
        };
        let folded_query = query.map(fold).filter(|q| !q.is_empty());
        let terms: Vec<&str> = folded_query.as_deref().map(|q| q.split(' ').collect()).unwrap_or_default();
        let mut scored: Vec<((bool, usize, usize), Note)> = set
            .notes
            .into_iter()
            .filter(|n| category.as_ref().is_none_or(|c| *c == n.category))
            .filter_map(|n| {
                let Some(q) = &folded_query else { return Some(((false, 0, 0), n)) };
                let title = fold(&n.title);
                let body = fold(&n.content);
                let in_title = terms.iter().filter(|t| title.contains(**t)).count();
                let in_body = terms.iter().filter(|t| body.contains(**t)).count();
                (in_title + in_body > 0).then_some(((title == *q, in_title, in_body), n))
            })
            .collect();
        scored.sort_by(|(a, na), (b, nb)| {
            b.cmp(a).then_with(|| nb.updated.cmp(&na.updated)).then(na.path.cmp(&nb.path))
        });
        Ok(scored.into_iter().take(limit).map(|(_, n)| n).collect())
    }

    /// `forget`: deletes exactly one note, by id or by title.
    pub fn forget(
        &self,
        id: Option<&str>,
        title: Option<&str>,
        caller: &Caller,
    ) -> Result<(Note, Option<String>)> {
        let id = id.map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned);
        let title = title.map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned);
        if id.is_none() == title.is_none() {
            return Err(NotesError::from(EngramError::Invalid {
                field: "id",
                reason: "give exactly one of `id` or `title`".into(),
            }));
        }
        let find = |set: &NoteSet| -> Result<Note> {
            let all = || set.notes.iter().map(describe).collect::<Vec<_>>();
            if let Some(id) = &id {
                return set
                    .notes
                    .iter()
                    .find(|n| n.id == *id)
                    .cloned()
                    .ok_or_else(|| NotesError::NotFound { given: id.clone(), candidates: all() });
            }
            let given = title.clone().unwrap_or_default();
            let key = fold(&given);
            let exact: Vec<&Note> = set.notes.iter().filter(|n| fold(&n.title) == key).collect();
            let matches = if exact.is_empty() {
                set.notes.iter().filter(|n| fold(&n.title).contains(&key)).collect()
            } else {
                exact
            };
            match matches.as_slice() {
                [one] => Ok((*one).clone()),
                [] => Err(NotesError::NotFound { given, candidates: all() }),
                many => Err(NotesError::Ambiguous {
                    given,
                    candidates: many.iter().map(|n| describe(n)).collect(),
                }),
            }
        };
        // Fail before creating anything when the note is not there.
        find(&self.read()?)?;
        let (commit, note) = self.write(caller, |set| {
            let note = find(set)?;
            let mut changes = Changes::default();
            changes.remove(note.path.clone());
            Ok(Some((changes, format!("forget: {}/{}", note.category, note.title), note)))
        })?;
        Ok((note, commit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_safe_and_keep_chinese() {
        assert_eq!(slug("Morning Routine: coffee & run!"), "morning-routine-coffee-run");
        assert_eq!(slug("喜欢早上 训练"), "喜欢早上-训练");
        assert_eq!(slug("../../etc/passwd"), "etc-passwd");
        assert_eq!(slug("🙂🙂"), "note");
        assert_eq!(slug("CON"), "con-note");
        assert_eq!(slug(&"长".repeat(100)).chars().count(), MAX_SLUG_CHARS);
    }

    #[test]
    fn derived_titles_come_from_the_first_line() {
        assert_eq!(derive_title("# 周报\n内容"), "周报");
        assert_eq!(
            derive_title("\n\nThe cat sat on the mat and then it slept all day."),
            "The cat sat on the mat and then"
        );
    }

    #[test]
    fn hand_written_files_without_front_matter_are_notes() {
        let n = parse_note("work", "notes/work/todo.md", "buy milk\n");
        assert_eq!((n.title.as_str(), n.content.as_str(), n.importance), ("todo", "buy milk", 3));
        let bad = parse_note("work", "notes/work/x.md", "---\ntitle: [unclosed\n---\nbody\n");
        assert_eq!((bad.title.as_str(), bad.content.as_str()), ("x", "body"));
    }

    #[test]
    fn category_names_are_checked() {
        for bad in ["", "_x", ".x", "a/b", "a\\b", "a:b", "CON", "nul", "Aux", "lpt1", "end."] {
            assert!(check_category_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(check_category_name(" 工作 ").expect("ok"), "工作");
    }
}
