//! `write_engram_file` and `add_knowledge`.

use crate::ops::{Caller, Engram, EngramError, Result, limits, user_path};
use crate::pack_path::PackPath;
use crate::pack_root::PackRoot;
use crate::store::{Changes, Edit};

/// How `write_engram_file` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// Replace the file.
    Overwrite,
    /// Append to the file.
    Append,
}

impl WriteMode {
    /// The reference's rule: exactly `append` (case-sensitive, untrimmed) appends; any other
    /// value overwrites. An overwrite by mistake is one commit, undone by `undo_last`.
    pub fn parse(s: &str) -> Self {
        if s == "append" { Self::Append } else { Self::Overwrite }
    }
}

/// Parses a path a tool may write: a [`PackPath`], and not in the reserved
/// `memory/` folder in any case (`Memory/x.md` is `memory/x.md` on macOS and
/// Windows): use the memory tools there. The store refuses both again.
fn check_writable(path: &str) -> Result<PackPath> {
    let rel = user_path(path)?;
    if rel.is_memory() {
        return Err(EngramError::BadPath {
            path: path.to_owned(),
            reason: "memory/ is written by capture_memory, correct_memory, delete_memory and consolidate_memory, so that its indexes stay consistent".into(),
        });
    }
    Ok(rel)
}

impl Engram {
    /// Refuses early a path the working tree cannot take a file at (a symbolic link or a
    /// file on the way, a directory there), with the tool's message.
    fn check_target_in_tree(&self, dir: &std::path::Path, rel: &PackPath, shown: &str) -> Result<()> {
        let unreadable =
            |e: std::io::Error| EngramError::Unreadable { path: shown.to_owned(), reason: e.to_string() };
        let root = PackRoot::open(dir).map_err(unreadable)?;
        match root.blocked(rel).map_err(unreadable)? {
            Some(why) => Err(EngramError::BadPath { path: shown.to_owned(), reason: why.to_string() }),
            None => Ok(()),
        }
    }

    /// `write_engram_file`.
    pub fn write_engram_file(
        &self,
        name: &str,
        path: &str,
        content: &str,
        mode: &str,
        caller: &Caller,
    ) -> Result<String> {
        let mode = WriteMode::parse(mode);
        let rel = check_writable(path)?;
        limits::check_size("content", content)?;
        let pack = self.resolve(name)?;
        self.check_target_in_tree(&pack.dir, &rel, path)?;
        let now = self.now().timestamp();
        let (commit, ()) = self.with_repo(&pack.dir, |repo| {
            repo.write(|snap| {
                let new = match mode {
                    WriteMode::Overwrite => content.to_owned(),
                    WriteMode::Append => {
                        format!("{}{content}", snap.read_text(rel.as_str())?.unwrap_or_default())
                    }
                };
                let mut changes = Changes::default();
                changes.put(rel.as_str(), new);
                let verb = if mode == WriteMode::Append { "append" } else { "write" };
                let message = caller.commit_message(format!("{verb}: {rel}"), now);
                Ok::<_, EngramError>(Edit::Commit { changes, message, value: () })
            })
        })?;
        let word = if mode == WriteMode::Append { "已追加" } else { "已写入" };
        let id = commit
            .map(|c| format!("\ncommit: {}", c.short))
            .unwrap_or_else(|| "\n(内容未变 / unchanged)".into());
        Ok(format!("{word}: {path}{id}"))
    }

    /// `add_knowledge`: writes `knowledge/<filename>` and lists it in the right index.
    pub fn add_knowledge(
        &self,
        name: &str,
        filename: &str,
        content: &str,
        summary: &str,
        caller: &Caller,
    ) -> Result<String> {
        let raw = filename.trim().replace('\\', "/");
        if raw.is_empty() {
            return Err(EngramError::Invalid { field: "filename", reason: "must not be empty".into() });
        }
        let with_ext = if raw.ends_with(".md") { raw.clone() } else { format!("{raw}.md") };
        // In normal form only: no empty, `.` or `..` parts, no absolute path.
        let target_path =
            PackPath::parse(&format!("knowledge/{with_ext}")).map_err(|e| EngramError::BadPath {
                path: format!("knowledge/{filename}"),
                reason: format!("filename must be a relative path inside knowledge/: {e}"),
            })?;
        limits::check_size("content", content)?;
        let summary = crate::memory::single_line(summary);
        if content.len() > super::chapters::SPLIT_BYTES {
            // A large document becomes chapters with their own index (one commit).
            let stem = with_ext.rsplit('/').next().unwrap_or(&with_ext).trim_end_matches(".md").to_owned();
            let (index, n, commit) = self.import_knowledge(name, &stem, Some(&summary), content, caller)?;
            let id = commit.map(|c| format!("\ncommit: {c}")).unwrap_or_default();
            return Ok(format!(
                "已添加知识: {index} — {summary}\n(文档超过 {} KB，已按章节拆分为 {n} 个文件 / split into {n} chapters){id}",
                super::chapters::SPLIT_BYTES / 1024
            ));
        }
        let pack = self.resolve(name)?;
        let target = target_path.as_str().to_owned();
        self.check_target_in_tree(&pack.dir, &target_path, &target)?;
        let now = self.now().timestamp();
        let shown_fn = if filename.ends_with(".md") { filename.to_owned() } else { format!("{filename}.md") };
        let (commit, ()) = self.with_repo(&pack.dir, |repo| {
            repo.write(|snap| {
                let parent = target.rsplit_once('/').map(|(p, _)| p).unwrap_or("knowledge");
                let sub_index = format!("{parent}/_index.md");
                let index_path = if parent != "knowledge" && snap.read(&sub_index)?.is_some() {
                    sub_index
                } else {
                    "knowledge/_index.md".to_owned()
                };
                let mut index = snap.read_text(&index_path)?.unwrap_or_default();
                let line = format!("- `{target}` - {summary}");
                let mut changes = Changes::default();
                if !index.lines().any(|l| l.trim_end() == line) {
                    if !index.is_empty() && !index.ends_with('\n') {
                        index.push('\n');
                    }
                    index.push_str(&line);
                    index.push('\n');
                    changes.put(index_path, index);
                }
                changes.put(target.clone(), content.to_owned());
                let message = caller.commit_message(format!("knowledge: {target} — {summary}"), now);
                Ok::<_, EngramError>(Edit::Commit { changes, message, value: () })
            })
        })?;
        let id = commit
            .map(|c| format!("\ncommit: {}", c.short))
            .unwrap_or_else(|| "\n(内容未变 / unchanged)".into());
        Ok(format!("已添加知识: knowledge/{shown_fn} — {summary}{id}"))
    }
}
