//! Shared helpers for the lint integration tests.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

use engram::lint::{Level, LintMessage, lint_pack};

/// A throw-away packs root holding packs built file by file.
pub struct Packs {
    pub dir: tempfile::TempDir,
}

impl Packs {
    pub fn new() -> Self {
        Self { dir: tempfile::tempdir().expect("create temp dir") }
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    pub fn pack(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Write `content` to `<root>/<rel>`, creating parent directories.
    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.dir.path().join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("create parent dirs");
        }
        fs::write(&path, content).expect("write file");
        path
    }

    pub fn remove(&self, rel: &str) {
        let path = self.dir.path().join(rel);
        if path.is_dir() {
            fs::remove_dir_all(path).expect("remove dir");
        } else {
            fs::remove_file(path).expect("remove file");
        }
    }

    /// A minimal pack that lints clean: meta, role, one knowledge file, one example using it.
    pub fn valid(&self, name: &str) -> PathBuf {
        self.write(
            &format!("{name}/meta.json"),
            format!("{{\"name\": \"{name}\", \"description\": \"测试包\"}}"),
        );
        self.write(&format!("{name}/role.md"), "# role\n");
        self.write(
            &format!("{name}/knowledge/_index.md"),
            "## 知识索引\n- `knowledge/a.md` - A\n  摘要：a\n",
        );
        self.write(&format!("{name}/knowledge/a.md"), "a\n");
        self.write(
            &format!("{name}/examples/_index.md"),
            "## 案例索引\n- `examples/e.md` - E\n  uses: knowledge/a.md\n",
        );
        self.write(&format!("{name}/examples/e.md"), "---\nid: e\nuses:\n  - knowledge/a.md\n---\nbody\n");
        self.pack(name)
    }

    /// Lint `<root>/<name>` with this root as the packs root.
    pub fn lint(&self, name: &str) -> Vec<LintMessage> {
        lint_pack(&self.pack(name), self.dir.path())
    }
}

/// Findings as `(level, file, message)` string triples for compact assertions.
pub fn triples(msgs: &[LintMessage]) -> Vec<(&'static str, String, String)> {
    msgs.iter()
        .map(|m| {
            let level = match m.level {
                Level::Error => "error",
                Level::Warning => "warning",
            };
            (level, m.file.clone(), m.message.clone())
        })
        .collect()
}

pub fn e(file: &str, message: &str) -> (&'static str, String, String) {
    ("error", file.to_string(), message.to_string())
}

pub fn w(file: &str, message: &str) -> (&'static str, String, String) {
    ("warning", file.to_string(), message.to_string())
}

/// Recursively copy a directory tree (regular files and directories only).
pub fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("create target dir");
    for entry in fs::read_dir(from).expect("read template dir") {
        let entry = entry.expect("dir entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).expect("copy file");
        }
    }
}
