//! `engram build <name> --from <dir>`: a folder of documents (Markdown, text) becomes a
//! pack — knowledge (a large document as chapters, through the chapter import's
//! functions), role / workflow / rules drafts, knowledge summaries and examples.
//!
//! One commit per stage, so `git log` separates what was generated from what a person
//! changes later: `adopt:` (meta.json), `build: knowledge`, `build: extract` (by a small
//! model, or heuristically without an API key), `build: polish` (a large model; only with
//! a key). The pack is built in a staging directory of the packs directory
//! (`.engram-install-<pid>-<name>`, removed at the next start if the process dies) and
//! renamed into place when every stage is done: a failed build (an API error, a bad
//! answer) leaves nothing behind, and the name stays free.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::build_extract::{self, Extracted};
use crate::jsonfmt::python_pretty;
use crate::markdown_text;
use crate::ops::engram::chapters::{self, SPLIT_BYTES};
use crate::ops::{Caller, Engram, EngramError, Result, limits};
use crate::pack_path::PackPath;
use crate::store::{Changes, Edit};

/// File extensions read as documents (case-insensitive).
const DOC_EXTENSIONS: &[&str] = &["md", "markdown", "txt", "text"];

/// The models of a build with an API key.
#[derive(Debug, Clone)]
pub struct BuildModels {
    /// Key and base URL (its `model` is not used).
    pub api: crate::llm::AnthropicSettings,
    /// The small model that extracts.
    pub extract_model: String,
    /// The large model that polishes.
    pub polish_model: String,
}

/// The arguments of `engram build`.
#[derive(Debug, Clone)]
pub struct BuildRequest {
    /// Pack name.
    pub name: String,
    /// The folder of documents.
    pub from: PathBuf,
    /// Replace an existing pack of that name (its directory, history included).
    pub replace: bool,
    /// Globs of documents (or folders) to leave out, see [`excluded`].
    pub exclude: Vec<String>,
    /// Models to ask; `None`: heuristic extraction, no polish.
    pub models: Option<BuildModels>,
}

/// What a build reports while it runs.
#[derive(Debug, Clone)]
pub enum BuildEvent {
    /// Stage `done` of `total` finished (`label` names it).
    Stage {
        /// Stages done.
        done: usize,
        /// All stages.
        total: usize,
        /// The stage just done.
        label: String,
    },
    /// Something skipped or a fallback, for stderr.
    Warning(String),
}

/// What a build made.
#[derive(Debug, Clone)]
pub struct BuildReport {
    /// The pack's directory.
    pub dir: PathBuf,
    /// Documents read.
    pub documents: usize,
    /// Knowledge files written (chapters count one each).
    pub knowledge_files: usize,
    /// Examples written.
    pub examples: usize,
    /// `(subject, short id)` of each stage's commit, oldest first.
    pub commits: Vec<(String, String)>,
    /// Lint errors and warnings of the new pack.
    pub lint: (usize, usize),
}

/// One document of the folder.
#[derive(Debug, Clone)]
pub(crate) struct Document {
    /// Its path under the folder (for messages).
    pub rel: String,
    /// Its title: the first `# ` heading, else the file name.
    pub title: String,
    /// Its text.
    pub text: String,
}

/// One document as knowledge: its index line's target and summary, and its files.
#[derive(Debug, Clone)]
pub(crate) struct KnowledgeDoc {
    /// The file `knowledge/_index.md` names (the document, or its chapter index).
    pub path: String,
    /// The index line's summary.
    pub summary: String,
    /// After the summary (`（N 章 / chapters）` for a chaptered document).
    pub suffix: String,
    /// Files (path, text): the document, or its chapters and chapter index.
    pub files: Vec<(String, String)>,
}

impl KnowledgeDoc {
    /// The content files (not indexes).
    pub fn content_files(&self) -> impl Iterator<Item = &(String, String)> {
        self.files.iter().filter(|(p, _)| !p.ends_with("/_index.md"))
    }
}

fn stage(done: usize, total: usize, label: &str) -> BuildEvent {
    BuildEvent::Stage { done, total, label: label.to_owned() }
}

fn failed(stage: &str, why: impl std::fmt::Display) -> EngramError {
    EngramError::Init(crate::lang::Said::new(
        format!("构建失败 (build failed) at stage {stage}: {why}"),
        format!("build failed at stage {stage}: {why}"),
    ))
}

/// The title of a document: its first `# ` heading, else the file name without extension.
fn title_of(path: &Path, text: &str) -> String {
    text.lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix("# ").map(str::trim).filter(|t| !t.is_empty()))
        .map(crate::memory::single_line)
        .unwrap_or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default())
}

/// Whether `rel` (a path under the documents' folder) is excluded by one of `globs`: a
/// glob with a `/` is matched against the whole path, one without against each of its
/// parts (so `drafts` leaves out a folder anywhere, `*.txt` every text file).
pub(crate) fn excluded(globs: &[String], rel: &str) -> bool {
    globs.iter().map(|g| g.trim_matches('/')).any(|g| {
        if g.contains('/') {
            crate::pack_path::glob_match(g, rel)
        } else {
            rel.split('/').any(|part| crate::pack_path::glob_match(g, part))
        }
    })
}

/// Reads the documents under `from` (recursively, in path order; hidden entries and
/// symbolic links are not followed). Files that are not Markdown or text, not UTF-8, empty,
/// over the content limit, excluded by a glob of `exclude`, or holding what the secret guard
/// refuses (a pack could not commit them) are skipped with a warning that names the file
/// (and the line).
pub(crate) fn read_documents(
    from: &Path,
    exclude: &[String],
    warn: &mut dyn FnMut(String),
) -> Result<Vec<Document>> {
    let meta = fs::metadata(from).map_err(|e| failed("read", format!("{}: {e}", from.display())))?;
    if !meta.is_dir() {
        return Err(failed("read", format!("{} is not a directory", from.display())));
    }
    let mut files = Vec::new();
    let mut dirs = vec![from.to_owned()];
    while let Some(dir) = dirs.pop() {
        let entries = fs::read_dir(&dir).map_err(|e| failed("read", format!("{}: {e}", dir.display())))?;
        for entry in entries {
            let entry = entry.map_err(|e| failed("read", format!("{}: {e}", dir.display())))?;
            let path = entry.path();
            let rel = path.strip_prefix(from).unwrap_or(&path).to_string_lossy().replace('\\', "/");
            if entry.file_name().to_string_lossy().starts_with('.') || excluded(exclude, &rel) {
                continue;
            }
            match entry.file_type() {
                Ok(t) if t.is_dir() => dirs.push(path),
                Ok(t) if t.is_file() => files.push((rel, path)),
                Ok(t) if t.is_symlink() => warn(format!("skipped {rel}: a symbolic link (not followed)")),
                _ => warn(format!("skipped {rel}: not a regular file")),
            }
        }
    }
    files.sort();
    let mut docs = Vec::new();
    for (rel, path) in files {
        let ext = path.extension().map(|e| e.to_string_lossy().to_lowercase()).unwrap_or_default();
        if !DOC_EXTENSIONS.contains(&ext.as_str()) {
            warn(format!("skipped {rel}: not Markdown or text (.md, .markdown, .txt)"));
            continue;
        }
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) => {
                warn(format!("skipped {rel}: {e}"));
                continue;
            }
        };
        let Ok(text) = String::from_utf8(bytes) else {
            warn(format!("skipped {rel}: not UTF-8 text"));
            continue;
        };
        let text = text.replace("\r\n", "\n");
        if text.trim().is_empty() {
            warn(format!("skipped {rel}: empty"));
            continue;
        }
        if let Err(e) = limits::check_size("content", &text) {
            warn(format!("skipped {rel}: {e}"));
            continue;
        }
        if let Some(f) = crate::secrets::scan(&text).first() {
            warn(format!(
                "skipped {rel}: line {} holds what looks like a {} `{}`, which a pack never commits \
                 (remove it, or leave the file out with --exclude)",
                f.line, f.kind, f.masked
            ));
            continue;
        }
        docs.push(Document { title: title_of(&path, &text), rel, text });
    }
    Ok(docs)
}

/// Lays the documents out as knowledge: a document over [`SPLIT_BYTES`] becomes chapters
/// (the chapter import's split and files), a smaller one `knowledge/<slug>.md`.
pub(crate) fn knowledge_layout(docs: &[Document]) -> Vec<KnowledgeDoc> {
    let mut taken: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    for doc in docs {
        let base = chapters::slug(&doc.title);
        let mut slug = base.clone();
        let mut n = 2;
        while !taken.insert(slug.to_lowercase()) {
            slug = format!("{base}-{n}");
            n += 1;
        }
        let summary = chapters::titled(&doc.title, &markdown_text::summary(&doc.text, 80));
        let parts =
            if doc.text.len() > SPLIT_BYTES { chapters::split_chapters(&doc.text) } else { Vec::new() };
        if parts.len() > 1 {
            let (files, _) = chapters::chapter_files(&slug, &doc.title, &summary, &parts);
            out.push(KnowledgeDoc {
                path: format!("knowledge/{slug}/_index.md"),
                summary,
                suffix: chapters::chapters_note(
                    parts.len(),
                    markdown_text::mostly_chinese([doc.text.as_str()]),
                ),
                files,
            });
        } else {
            let path = format!("knowledge/{slug}.md");
            out.push(KnowledgeDoc {
                files: vec![(path.clone(), format!("{}\n", doc.text.trim_end()))],
                path,
                summary,
                suffix: String::new(),
            });
        }
    }
    out
}

/// `knowledge/_index.md` for the documents, with `summary(doc)` on each line; its heading
/// in Chinese when the documents are (`zh`), else in English.
fn knowledge_index(
    knowledge: &[KnowledgeDoc],
    zh: bool,
    summary: impl Fn(&KnowledgeDoc) -> String,
) -> String {
    let mut index = if zh { "## 知识索引\n\n" } else { "## Knowledge index\n\n" }.to_owned();
    for k in knowledge {
        index.push_str(&format!("- `{}` - {}{}\n", k.path, summary(k), k.suffix));
    }
    index
}

/// The staging directory a build of `name` uses in `packs_dir`.
fn staging_dir(packs_dir: &Path, name: &str) -> PathBuf {
    packs_dir.join(format!("{}{}-{name}", crate::ops::packs::install::INSTALL_STAGING, std::process::id()))
}

impl Engram {
    /// `engram build`: see the module documentation. `progress` hears of each stage and
    /// each warning. On failure nothing is left in the packs directory.
    pub fn build_pack(
        &self,
        req: &BuildRequest,
        progress: &mut dyn FnMut(BuildEvent),
    ) -> Result<BuildReport> {
        if let Err(e) = crate::pack::validate_new_name(&req.name) {
            return Err(failed("check", e));
        }
        let target = self.config.packs_dir.join(&req.name);
        if target.exists() && !req.replace {
            return Err(failed(
                "check",
                format!(
                    "a pack named {} already exists (give --force to replace it, history included)",
                    req.name
                ),
            ));
        }
        let docs = read_documents(&req.from, &req.exclude, &mut |w| progress(BuildEvent::Warning(w)))?;
        if docs.is_empty() {
            return Err(failed("read", format!("no Markdown or text documents in {}", req.from.display())));
        }
        let total = if req.models.is_some() { 4 } else { 3 };
        progress(stage(1, total, "read documents"));
        fs::create_dir_all(&self.config.packs_dir).map_err(|e| failed("stage", e))?;
        let tmp = staging_dir(&self.config.packs_dir, &req.name);
        let _ = crate::store::remove_pack_dir(&tmp);
        let built = self.build_stages(req, &docs, &tmp, total, progress);
        let report = match built {
            Ok(r) => r,
            Err(e) => {
                let _ = crate::store::remove_pack_dir(&tmp);
                return Err(e);
            }
        };
        // Every stage is committed: the pack goes into place.
        self.forget_repo(&tmp);
        let old = self.config.packs_dir.join(format!(
            "{}{}-replaced-{}",
            crate::ops::packs::install::INSTALL_STAGING,
            std::process::id(),
            req.name
        ));
        let replacing = target.exists();
        if replacing {
            fs::rename(&target, &old).map_err(|e| {
                let _ = crate::store::remove_pack_dir(&tmp);
                failed("place", e)
            })?;
        }
        if let Err(e) = fs::rename(&tmp, &target) {
            if replacing {
                let _ = fs::rename(&old, &target);
            }
            let _ = crate::store::remove_pack_dir(&tmp);
            return Err(failed("place", e));
        }
        if replacing {
            let _ = crate::store::remove_pack_dir(&old);
        }
        let msgs = crate::lint::lint_pack(&target, &self.config.packs_dir);
        let errors = msgs.iter().filter(|m| m.level == crate::lint::Level::Error).count();
        Ok(BuildReport { dir: target, lint: (errors, msgs.len() - errors), ..report })
    }

    /// The stages after reading, in the staging directory `tmp`.
    fn build_stages(
        &self,
        req: &BuildRequest,
        docs: &[Document],
        tmp: &Path,
        total: usize,
        progress: &mut dyn FnMut(BuildEvent),
    ) -> Result<BuildReport> {
        let caller = Caller { tool: "build".into(), client: Some("engram-cli".into()) };
        let now = self.now();
        let today = now.format("%Y-%m-%d").to_string();
        let knowledge = knowledge_layout(docs);
        let zh = markdown_text::mostly_chinese(docs.iter().map(|d| d.text.as_str()));
        for k in &knowledge {
            for (path, _) in &k.files {
                PackPath::parse(path).map_err(|e| failed("knowledge", format!("{path}: {e}")))?;
            }
        }
        // The pack starts as its meta.json (the `adopt:` commit), as every new pack does.
        let mut meta = serde_json::Map::new();
        meta.insert("name".into(), json!(req.name));
        meta.insert("description".into(), json!(format!("{} (engram build)", req.name)));
        meta.insert("author".into(), json!("engram build"));
        meta.insert("version".into(), json!("1.0.0"));
        meta.insert("tags".into(), json!([]));
        fs::create_dir_all(tmp).map_err(|e| failed("stage", e))?;
        fs::write(
            tmp.join("meta.json"),
            format!("{}\n", python_pretty(&serde_json::Value::Object(meta.clone()))),
        )
        .map_err(|e| failed("stage", e))?;
        self.repo(tmp)?;
        let mut commits = Vec::new();
        let mut commit = |subject: String, files: Vec<(String, String)>| -> Result<()> {
            let (c, ()) = self.with_repo(tmp, |repo| {
                repo.write(|_| {
                    let mut changes = Changes::default();
                    for (path, content) in &files {
                        changes.put(path.clone(), content.clone());
                    }
                    let message = caller.commit_message(subject.clone(), now.timestamp());
                    Ok::<_, EngramError>(Edit::Commit { changes, message, value: () })
                })
            })?;
            commits.push((subject, c.map(|c| c.short).unwrap_or_default()));
            Ok(())
        };

        // Stage: knowledge, as the documents are (summaries: their first lines).
        let mut files: Vec<(String, String)> = knowledge.iter().flat_map(|k| k.files.clone()).collect();
        files.push(("knowledge/_index.md".into(), knowledge_index(&knowledge, zh, |k| k.summary.clone())));
        let knowledge_files = knowledge.iter().map(|k| k.content_files().count()).sum::<usize>();
        commit(format!("build: knowledge — {} documents, {knowledge_files} files", docs.len()), files)
            .map_err(|e| failed("knowledge", e))?;
        progress(stage(2, total, "knowledge"));

        // Stage: extract (a small model, else heuristics).
        let heuristic = build_extract::heuristic(&req.name, docs, &knowledge);
        let (extracted, how) = match &req.models {
            Some(m) => {
                let got = build_extract::extract_with_model(m, &req.name, docs, &knowledge, heuristic)
                    .map_err(|e| {
                        failed("extract", format!("{e} (model {}); nothing was written", m.extract_model))
                    })?;
                (got, format!("by {}", m.extract_model))
            }
            None => (heuristic, "heuristic, no API key".to_owned()),
        };
        let examples = extracted.examples.len();
        commit(
            format!("build: extract — role, workflow, rules, summaries, {examples} examples ({how})"),
            extract_files(&req.name, &meta, &extracted, &knowledge, (knowledge_files, zh), &today),
        )
        .map_err(|e| failed("extract", e))?;
        progress(stage(3, total, "extract"));

        // Stage: polish (a large model), only with a key.
        if let Some(m) = &req.models {
            let (role, workflow, rules) =
                build_extract::polish_with_model(m, &req.name, &extracted, &knowledge).map_err(|e| {
                    failed("polish", format!("{e} (model {}); nothing was written", m.polish_model))
                })?;
            commit(
                format!("build: polish — role, workflow, rules (by {})", m.polish_model),
                vec![("role.md".into(), role), ("workflow.md".into(), workflow), ("rules.md".into(), rules)],
            )
            .map_err(|e| failed("polish", e))?;
            progress(stage(4, total, "polish"));
        }
        Ok(BuildReport {
            dir: tmp.to_owned(),
            documents: docs.len(),
            knowledge_files,
            examples,
            commits,
            lint: (0, 0),
        })
    }
}

/// The files the extract stage writes: meta.json, role/workflow/rules, the knowledge index
/// with the extracted summaries, the examples and their index.
fn extract_files(
    name: &str,
    meta: &serde_json::Map<String, serde_json::Value>,
    x: &Extracted,
    knowledge: &[KnowledgeDoc],
    (knowledge_files, zh): (usize, bool),
    today: &str,
) -> Vec<(String, String)> {
    let mut meta = meta.clone();
    meta.insert("description".into(), json!(x.description));
    meta.insert("tags".into(), json!(x.tags));
    meta.insert("knowledge_count".into(), json!(knowledge_files));
    meta.insert("examples_count".into(), json!(x.examples.len()));
    let body = |t: &str| format!("{}\n", t.trim_end());
    let mut files = vec![
        ("meta.json".to_owned(), format!("{}\n", python_pretty(&serde_json::Value::Object(meta)))),
        ("role.md".to_owned(), body(&x.role)),
        ("workflow.md".to_owned(), body(&x.workflow)),
        ("rules.md".to_owned(), body(&x.rules)),
        (
            "knowledge/_index.md".to_owned(),
            knowledge_index(knowledge, zh, |k| {
                x.summaries
                    .get(&k.path)
                    .map(|s| crate::memory::single_line(s))
                    .unwrap_or_else(|| k.summary.clone())
            }),
        ),
    ];
    let mut index = if zh { "## 案例索引\n\n" } else { "## Examples index\n\n" }.to_owned();
    let mut taken = HashSet::new();
    for (i, (summary, example)) in x.examples.iter().enumerate() {
        let mut example = example.clone();
        if example.id.is_empty() {
            example.id = format!("example_{name}_{}", i + 1);
        }
        let base = chapters::slug(&example.title);
        let mut slug = base.clone();
        let mut n = 2;
        while !taken.insert(slug.to_lowercase()) {
            slug = format!("{base}-{n}");
            n += 1;
        }
        let path = format!("examples/{slug}.md");
        index.push_str(&example.index_line(&path, &crate::memory::single_line(summary)));
        files.push((path, example.render(today)));
    }
    files.push(("examples/_index.md".to_owned(), index));
    files
}
