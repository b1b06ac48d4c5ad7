//! One user's knowledge graph in a pack: the storage side of the `graph`
//! toolset and of the personal toolset's entities.
//!
//! The graph module ([`crate::graph`]) is pure; this module gives it the
//! files of a commit (below `users/<user>/` of the graph pack), commits what
//! it returns through [`PackRepo::write`] (one commit per call, none when
//! nothing changed), and keeps a [`GraphSnapshot`] of HEAD for the read
//! tools: rebuilt when HEAD moved elsewhere, updated in place from the
//! changes of our own writes.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use crate::graph::{
    GraphCall, GraphChanges, GraphError, GraphFiles, GraphSnapshot, ImportReport, ReadCall, ToolOutput,
    WriteCall, export_jsonl, import_jsonl,
};
use crate::ops::{Caller, Engram, EngramError, Result};
use crate::pack::validate_new_name;
use crate::store::{Changes, Committed, Edit, PackRepo, Snapshot, StoreError, trailer};

/// The pack the graph lives in when `--graph-pack` is not given.
pub const DEFAULT_GRAPH_PACK: &str = "personal";
/// The user when `--user` / `ENGRAM_USER` is not given.
pub const DEFAULT_USER: &str = "default";

/// Where the structured memory (graph, profile, events) of this process lives.
#[derive(Debug, Clone)]
pub struct StructuredConfig {
    /// Name of the pack (a directory of the packs dir), created on first write.
    pub pack: String,
    /// The user whose records every tool reads and writes.
    pub user: String,
    /// `MEMORY_FILE_PATH` of the reference server, when set: used only to
    /// tell the user how to import it.
    pub memory_file: Option<PathBuf>,
}

impl Default for StructuredConfig {
    fn default() -> Self {
        Self { pack: DEFAULT_GRAPH_PACK.to_owned(), user: DEFAULT_USER.to_owned(), memory_file: None }
    }
}

/// Checks a user id: 1–64 characters of `A-Z a-z 0-9 _ . -`, not starting
/// with `.` or `-`, and a portable file name (it becomes a directory name,
/// `users/<id>/`, so `CON` or `nul` are refused).
pub fn validate_user(user: &str) -> std::result::Result<(), String> {
    let ok_chars = user.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if user.is_empty() || user.len() > 64 || !ok_chars || user.starts_with(['.', '-']) {
        return Err(format!(
            "invalid user id {user:?}: use 1-64 characters of A-Z, a-z, 0-9, `_`, `.`, `-`, not starting with `.` or `-`"
        ));
    }
    crate::pack_path::PackPath::check_component(user)
        .map_err(|e| format!("invalid user id {user:?}: it becomes the directory users/{user}/, and {e}"))
}

fn store_error(path: &str, e: StoreError) -> GraphError {
    GraphError::Read { path: path.to_owned(), source: Box::new(e) }
}

/// The graph files of one user in a store snapshot: the graph module's
/// `graph/…` paths live at `users/<user>/graph/…`.
pub struct UserFiles<'s, 'r> {
    /// The commit being read or modified.
    pub snapshot: &'s Snapshot<'r>,
    /// `users/<user>/`.
    pub prefix: &'s str,
}

impl GraphFiles for UserFiles<'_, '_> {
    fn read(&self, path: &str) -> std::result::Result<Option<String>, GraphError> {
        let full = format!("{}{path}", self.prefix);
        self.snapshot
            .read(&full)
            .map(|o| o.map(|b| String::from_utf8_lossy(&b).into_owned()))
            .map_err(|e| store_error(&full, e))
    }

    fn list(&self, dir: &str) -> std::result::Result<Vec<String>, GraphError> {
        let full = format!("{}{dir}", self.prefix);
        let paths = self
            .snapshot
            .list_files_recursive(&full)
            .map_err(|e| GraphError::List { dir: full.clone(), source: Box::new(e) })?;
        Ok(paths.into_iter().filter_map(|p| p.strip_prefix(self.prefix).map(str::to_owned)).collect())
    }
}

/// Adds the graph's changes to store changes, under `prefix`.
pub(crate) fn add_changes(changes: &mut Changes, prefix: &str, graph: &GraphChanges) {
    for path in &graph.removes {
        changes.remove(format!("{prefix}{path}"));
    }
    for (path, content) in &graph.writes {
        changes.put(format!("{prefix}{path}"), content.as_bytes().to_vec());
    }
}

/// The snapshot of HEAD's graph (for this user), and which HEAD it is of.
#[derive(Default)]
struct Cached {
    head: Option<String>,
    valid: bool,
    snapshot: GraphSnapshot,
}

/// One user's graph in the graph pack, with its cached snapshot.
pub struct UserGraph {
    engram: Arc<Engram>,
    config: StructuredConfig,
    prefix: String,
    cache: Mutex<Cached>,
}

impl UserGraph {
    /// The graph of `config.user` in `config.pack`. Checks the names; creates nothing.
    pub fn new(engram: Arc<Engram>, config: StructuredConfig) -> Result<Self> {
        validate_user(&config.user).map_err(|reason| EngramError::Invalid { field: "user", reason })?;
        validate_new_name(&config.pack)?;
        let prefix = format!("users/{}/", config.user);
        Ok(Self { engram, config, prefix, cache: Mutex::new(Cached::default()) })
    }

    /// The operations this graph belongs to.
    pub fn engram(&self) -> &Engram {
        &self.engram
    }

    /// The user whose records this graph holds.
    pub fn user(&self) -> &str {
        &self.config.user
    }

    /// `users/<user>/`: every file of this user lives below it.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The pack directory.
    pub fn pack_dir(&self) -> PathBuf {
        self.engram.config().packs_dir.join(&self.config.pack)
    }

    /// Creates the pack (a `meta.json` and its first commit) when it does not exist yet.
    pub fn ensure_pack(&self) -> Result<PathBuf> {
        let dir = self.pack_dir();
        if !dir.exists() {
            // Built aside (files, repository, first commit) and renamed into
            // place, so a concurrent process never sees half a pack.
            let tmp = self.engram.config().packs_dir.join(format!(
                ".{}.creating-{}",
                self.config.pack,
                std::process::id()
            ));
            let io = |step: &'static str, path: &Path| {
                let path = path.to_owned();
                move |source| StoreError::Io { step, path, source }
            };
            std::fs::create_dir_all(&tmp).map_err(io("create the graph pack", &tmp))?;
            let meta = personal_meta(&self.config.pack);
            std::fs::write(tmp.join("meta.json"), meta.as_bytes()).map_err(io("write", &tmp))?;
            // The repository and its first commit exist before the pack appears.
            drop(PackRepo::open_or_adopt(&tmp, self.engram.config().store.clone())?);
            if std::fs::rename(&tmp, &dir).is_err() {
                let _ = crate::store::remove_pack_dir(&tmp);
                if !dir.exists() {
                    return Err(StoreError::Io {
                        step: "create the graph pack",
                        path: dir,
                        source: std::io::Error::other("rename failed"),
                    }
                    .into());
                }
            }
        }
        self.engram.repo(&dir)?;
        Ok(dir)
    }

    /// Runs `f` with the pack's repository (created when missing), locked for this process.
    pub fn with_repo<T>(&self, f: impl FnOnce(&PackRepo) -> Result<T>) -> Result<T> {
        let dir = self.ensure_pack()?;
        self.engram.with_repo(&dir, f)
    }

    /// Runs `f` on the graph of HEAD (empty when the pack does not exist), or of a proposing
    /// caller's proposal branch ([`PackRepo::read_current`]).
    pub fn read<T>(&self, f: impl FnOnce(&GraphSnapshot) -> T) -> Result<T> {
        let dir = self.pack_dir();
        if !PackRepo::is_repository(&dir) {
            return Ok(f(&GraphSnapshot::new()));
        }
        self.engram.with_repo(&dir, |repo| {
            // HEAD, or a proposing caller's proposal branch (`serve --propose`).
            let head = match repo.read_target()? {
                Some(tip) => Some(tip),
                None => repo.head_id(),
            };
            let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            if !cache.valid || cache.head != head {
                let graph_dir = format!("{}graph", self.prefix);
                let (head, files) = repo.read_current(|snap| {
                    Ok::<_, EngramError>((snap.head(), snap.read_files_recursive(&graph_dir)?))
                })?;
                let prefix = self.prefix.as_str();
                let snapshot = GraphSnapshot::from_files(
                    files.iter().filter_map(|(p, c)| p.strip_prefix(prefix).map(|p| (p, c.as_str()))),
                );
                *cache = Cached { head, valid: true, snapshot };
            }
            Ok(f(&cache.snapshot))
        })
    }

    /// Commits one change of the graph (and any other files) as one commit.
    ///
    /// `edit` runs on the files of the commit being modified (it may run more
    /// than once) and returns the graph changes, the other store changes, the
    /// commit subject and a value. Nothing is committed when both are empty.
    pub fn write<T>(
        &self,
        caller: &Caller,
        mut edit: impl FnMut(&UserFiles<'_, '_>, &Snapshot<'_>) -> Result<(GraphChanges, Changes, String, T)>,
    ) -> Result<(Option<Committed>, T)> {
        let now = self.engram.now().timestamp();
        self.with_repo(|repo| {
            let mut base = None;
            let mut graph_changes = GraphChanges::default();
            let (committed, value) = repo.write_scoped(|snap| {
                base = snap.head();
                let files = UserFiles { snapshot: snap, prefix: &self.prefix };
                let (graph, mut changes, subject, value) = edit(&files, snap)?;
                add_changes(&mut changes, &self.prefix, &graph);
                graph_changes = graph;
                if changes.is_empty() {
                    return Ok::<_, EngramError>(Edit::Nothing(value));
                }
                let message =
                    caller.commit_message(subject, now).trailer(trailer::USER, self.config.user.clone());
                Ok(Edit::Commit { changes, message, value })
            })?;
            if let Some(c) = &committed {
                let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
                if cache.valid && cache.head == base {
                    cache.snapshot.apply(&graph_changes);
                    cache.head = Some(c.id.clone());
                } else {
                    cache.valid = false;
                }
            }
            Ok((committed, value))
        })
    }

    /// Runs one of the nine graph tools. `None` when `tool` is not one of them.
    pub fn call(&self, tool: &str, arguments: Option<&Value>, caller: &Caller) -> Option<Result<ToolOutput>> {
        let call = match GraphCall::parse(tool, arguments)? {
            Ok(call) => call,
            Err(output) => return Some(Ok(output)),
        };
        Some(match call {
            GraphCall::Read(read) => self.run_read(&read),
            GraphCall::Write(write) => self.run_write(tool, write, caller),
        })
    }

    fn run_read(&self, call: &ReadCall) -> Result<ToolOutput> {
        let (mut output, empty) =
            self.read(|s| (call.run(s), s.entity_count() == 0 && s.relation_count() == 0))?;
        if let (ReadCall::ReadGraph(_), true, Some(hint)) = (call, empty, self.import_hint_text()) {
            output.content.push(hint);
        }
        Ok(output)
    }

    fn run_write(&self, tool: &str, call: WriteCall, caller: &Caller) -> Result<ToolOutput> {
        let now_ms = u64::try_from(self.engram.now().timestamp_millis()).unwrap_or(0);
        let subject = format!("graph: {tool} — {}", subject_items(&call));
        let (_, output) = self.write(caller, |files, _| {
            let (output, changes) = call.clone().run(files, now_ms)?;
            Ok((changes, Changes::default(), subject.clone(), output))
        })?;
        Ok(output)
    }

    /// The `memory://knowledge-graph` resource text.
    pub fn resource_text(&self) -> Result<String> {
        self.read(crate::graph::read_resource)
    }

    /// The graph in the reference's JSONL format.
    pub fn export(&self) -> Result<String> {
        self.read(export_jsonl)
    }

    /// Imports the reference's JSONL text as this user's graph, in one commit.
    /// Refuses to overwrite an existing graph unless `replace`.
    pub fn import(
        &self,
        text: &str,
        source: &str,
        replace: bool,
        caller: &Caller,
    ) -> Result<(ImportReport, Option<Committed>)> {
        let import = import_jsonl(text);
        let graph_dir = format!("{}graph", self.prefix);
        let (committed, report) = self.write(caller, |_, snap| {
            let existing = snap.list_files_recursive(&graph_dir)?;
            if !existing.is_empty() && !replace {
                return Err(EngramError::Invalid {
                    field: "replace",
                    reason: format!(
                        "the graph of user {:?} in pack {:?} already has {} files; pass --replace to replace it with the file's graph",
                        self.config.user,
                        self.config.pack,
                        existing.len()
                    ),
                });
            }
            let mut changes = Changes::default();
            let written: std::collections::HashSet<String> =
                import.changes.writes.iter().map(|(p, _)| format!("{}{p}", self.prefix)).collect();
            for path in existing.into_iter().filter(|p| !written.contains(p)) {
                changes.remove(path);
            }
            let r = &import.report;
            let subject = format!("graph: import {source} — {} entities, {} relations", r.entities, r.relations);
            Ok((import.changes.clone(), changes, subject, import.report.clone()))
        })?;
        Ok((report, committed))
    }

    /// When `MEMORY_FILE_PATH` is set and this user's graph is empty: how to import the file.
    pub fn import_hint(&self) -> Result<Option<String>> {
        if self.config.memory_file.is_none() {
            return Ok(None);
        }
        let empty = self.read(|s| s.entity_count() == 0 && s.relation_count() == 0)?;
        Ok(if empty { self.import_hint_text() } else { None })
    }

    fn import_hint_text(&self) -> Option<String> {
        let file = self.config.memory_file.as_ref()?;
        let mut command = format!("engram graph import {}", shell_quote(file));
        if self.config.pack != DEFAULT_GRAPH_PACK {
            command.push_str(&format!(" --graph-pack {}", self.config.pack));
        }
        if self.config.user != DEFAULT_USER {
            command.push_str(&format!(" --user {}", self.config.user));
        }
        Some(format!(
            "MEMORY_FILE_PATH is set ({}), but engram's graph (pack {:?}, user {:?}) is empty: engram does not read that file. \
             To bring the reference server's graph over, run: {command}",
            file.display(),
            self.config.pack,
            self.config.user
        ))
    }
}

fn shell_quote(path: &Path) -> String {
    let s = path.display().to_string();
    if s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c)) {
        s
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// `meta.json` of a pack created for structured memory.
fn personal_meta(name: &str) -> String {
    let mut meta = Map::new();
    meta.insert("name".into(), name.into());
    meta.insert("author".into(), "".into());
    meta.insert("version".into(), "1.0.0".into());
    meta.insert(
        "description".into(),
        "Personal memory: knowledge graph, profile, entities and events (engram graph and personal toolsets)"
            .into(),
    );
    meta.insert("tags".into(), Value::Array(vec!["personal".into()]));
    meta.insert("knowledge_count".into(), 0.into());
    meta.insert("examples_count".into(), 0.into());
    let mut text = crate::jsonfmt::python_pretty(&Value::Object(meta));
    text.push('\n');
    text
}

/// The names a write call is about, for the commit subject.
fn subject_items(call: &WriteCall) -> String {
    let rel = |r: &crate::graph::Relation| format!("{} —{}→ {}", r.from, r.relation_type, r.to);
    let items: Vec<String> = match call {
        WriteCall::CreateEntities(a) => a.entities.iter().map(|e| e.name.clone()).collect(),
        WriteCall::CreateRelations(a) => a.relations.iter().map(rel).collect(),
        WriteCall::AddObservations(a) => a.observations.iter().map(|o| o.entity_name.clone()).collect(),
        WriteCall::DeleteEntities(a) => a.entity_names.clone(),
        WriteCall::DeleteObservations(a) => a.deletions.iter().map(|d| d.entity_name.clone()).collect(),
        WriteCall::DeleteRelations(a) => a.relations.iter().map(rel).collect(),
    };
    list_items(&items)
}

/// `a, b, c (+N more)`.
pub(crate) fn list_items(items: &[String]) -> String {
    let shown: Vec<&str> = items.iter().take(5).map(String::as_str).collect();
    let mut out = shown.join(", ");
    if items.len() > 5 {
        out.push_str(&format!(" (+{} more)", items.len() - 5));
    }
    if out.is_empty() {
        out.push_str("(nothing)");
    }
    out
}
