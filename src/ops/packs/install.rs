//! `install_engram`, `engram init` and the pack registry.

use std::fs;
use std::path::{Path, PathBuf};

use crate::lang::{Lang, Said};
use crate::ops::{Engram, EngramError, Result};
use crate::pack::{read_meta, validate_new_name};
use crate::store::PackRepo;
use crate::templates;

/// Prefix of the directory an install clones into before renaming it into place.
pub(crate) const INSTALL_STAGING: &str = ".engram-install-";

/// A staging directory left in the packs directory by an install or a pack
/// creation that did not finish (`.engram-install-<pid>-<name>`,
/// `.<name>.creating-<pid>[-<n>]`), which engram did not remove.
#[derive(Debug, Clone)]
pub struct Staging {
    /// The directory.
    pub dir: PathBuf,
    /// Why it is still there (names the process that made it).
    pub reason: String,
}

impl Staging {
    /// One line for `engram list` / `engram doctor`.
    pub fn describe(&self) -> String {
        format!("未完成的安装 (unfinished install or pack creation) {}: {}", self.dir.display(), self.reason)
    }
}

/// The process id in a staging directory's name, when it is one.
fn staging_owner(file_name: &str) -> Option<u32> {
    if let Some(rest) = file_name.strip_prefix(INSTALL_STAGING) {
        return rest.split_once('-').and_then(|(pid, _)| pid.parse().ok());
    }
    let (_, tail) = file_name.strip_prefix('.')?.rsplit_once(".creating-")?;
    tail.split('-').next()?.parse().ok()
}

/// Whether process `pid` exists (on this machine). Unknown means alive: a
/// directory is only removed when its owner is known to be gone.
fn process_alive(pid: u32) -> bool {
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    {
        let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else {
            return true;
        };
        // Signal 0 sends nothing: it only asks whether the process exists.
        !matches!(rustix::process::test_kill_process(pid), Err(rustix::io::Errno::SRCH))
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        let _ = pid;
        true
    }
}

/// The staging directories in `packs_dir`; with `remove`, those whose process
/// is gone are deleted first (a killed install left them, possibly a large
/// clone). Returns the ones that remain.
pub(crate) fn leftover_staging(packs_dir: &Path, remove: bool) -> Vec<Staging> {
    let Ok(entries) = fs::read_dir(packs_dir) else { return Vec::new() };
    let mut left = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(staging_owner) else { continue };
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let dir = entry.path();
        let reason = if process_alive(pid) {
            format!(
                "process {pid} is still running (an install in progress); if none is, remove the directory"
            )
        } else if !remove {
            format!("process {pid} is gone; engram removes it when it next starts")
        } else {
            match crate::store::remove_pack_dir(&dir) {
                Ok(()) => continue,
                Err(e) => format!(
                    "process {pid} is gone but the directory cannot be removed ({e}); remove it by hand"
                ),
            }
        };
        left.push(Staging { dir, reason });
    }
    left.sort_by(|a, b| a.dir.cmp(&b.dir));
    left
}

/// An install failure: `安装失败：<zh>` (the reference's form) and `install failed: <en>`.
fn fail(zh: impl std::fmt::Display, en: impl std::fmt::Display) -> EngramError {
    EngramError::Install(Said::new(format!("安装失败：{zh}"), format!("install failed: {en}")))
}

/// An init failure: `初始化失败：<zh>` (the reference's form) and `init failed: <en>`.
fn init_fail(zh: impl std::fmt::Display, en: impl std::fmt::Display) -> EngramError {
    EngramError::Init(Said::new(format!("初始化失败：{zh}"), format!("init failed: {en}")))
}

/// The directory name a URL or path installs into: its last segment minus `.git`.
fn target_name(source: &str) -> String {
    let path = match source.split_once("://") {
        Some((_, rest)) => rest.split_once('/').map(|(_, p)| p).unwrap_or(""),
        None => source,
    };
    let path = path.split(['?', '#']).next().unwrap_or("");
    let last = path.trim_end_matches('/').rsplit(['/', ':']).next().unwrap_or("");
    last.strip_suffix(".git").unwrap_or(last).to_owned()
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == ".git" {
            continue;
        }
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&entry.path(), &to.join(&name))?;
        } else if kind.is_file() {
            let size = entry.metadata()?.len();
            if size > MAX_PACK_FILE_BYTES as u64 {
                return Err(too_large(&entry.path(), size));
            }
            fs::copy(entry.path(), to.join(&name))?;
        }
        // Symbolic links are not copied: a pack must not point outside itself.
    }
    Ok(())
}

use crate::pack_root::MAX_PACK_FILE_BYTES;

fn too_large(path: &Path, size: u64) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::FileTooLarge,
        format!(
            "{} is {size} bytes; a pack file may be at most {MAX_PACK_FILE_BYTES} bytes (engram would not read it)",
            path.display()
        ),
    )
}

/// The first file under `dir` (its `.git` aside) larger than [`MAX_PACK_FILE_BYTES`]: a
/// fetched pack holding one is refused before it is put in place.
fn oversized_file(dir: &Path) -> Option<std::io::Error> {
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else { continue };
        for entry in entries.flatten() {
            if entry.file_name() == ".git" {
                continue;
            }
            let Ok(meta) = entry.path().symlink_metadata() else { continue };
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.len() > MAX_PACK_FILE_BYTES as u64 {
                let shown =
                    entry.path().strip_prefix(dir).map(Path::to_owned).unwrap_or_else(|_| entry.path());
                return Some(too_large(&shown, meta.len()));
            }
        }
    }
    None
}

impl Engram {
    /// `install_engram(source)`: a URL, a local path, `builtin:<name>` or a registry name.
    /// The answer in both languages: the MCP tool answers its Chinese (the reference's text).
    pub fn install_engram(&self, source: &str, progress: &mut dyn FnMut(usize, usize)) -> Result<Said> {
        let source = source.trim();
        if source.is_empty() {
            return Err(fail("未在 registry 中找到 ", "give a git URL, a local path or a registry name"));
        }
        if source.starts_with('-') {
            return Err(fail(
                format_args!("非法来源 {source:?} (give a git URL, a local path or a registry name)"),
                format_args!("invalid source {source:?} (give a git URL, a local path or a registry name)"),
            ));
        }
        if let Some(builtin) = source.strip_prefix("builtin:") {
            return self.install_builtin(builtin);
        }
        // On a team server a path is a path whether or not it exists: whether a directory of
        // the server exists is not the caller's to learn (the path rule refuses it alike).
        let closed_path =
            self.config.server_paths.is_closed() && (source.starts_with('/') || source.starts_with('.'));
        let looks_like_url =
            closed_path || source.contains("://") || source.ends_with(".git") || Path::new(source).is_dir();
        if looks_like_url {
            return self.install_from(source, None, progress);
        }
        // Name mode: a pack shipped with engram (the reference's examples) first; when its
        // directory is taken, no registry fallback (as in the reference).
        if let Some(files) = templates::example_pack(source) {
            return self.install_bundled(source, files, &example_suffix(source));
        }
        let registry = self.registry();
        let entry = registry.find(source).filter(|e| !e.source.trim().is_empty()).cloned();
        let Some(entry) = entry else {
            return Err(fail(
                format_args!("未在 registry 中找到 {source}"),
                if source.contains('/') {
                    format!("{source} is neither a directory nor a pack in the registry")
                } else {
                    format!("no pack named {source} in the registry (`engram registry search` lists them)")
                },
            ));
        };
        if let Some(builtin) = entry.source.strip_prefix("builtin:") {
            return self.install_builtin(builtin);
        }
        self.install_from(&entry.source, None, progress)
    }

    /// `engram install <url> --key FILE`: installs the encrypted pack at `source` (a URL or a
    /// path of a git repository, see `engram remote add --encrypt`) and keeps its key.
    pub fn install_encrypted(
        &self,
        source: &str,
        key_file: &Path,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Said> {
        let key = crate::remote::encrypted::Key::read(key_file).map_err(|e| fail(&e, &e))?;
        self.install_from(source.trim(), Some(&key), progress)
    }

    /// Installs a pack shipped in the binary (`builtin:<name>`: the demo pack or an example).
    fn install_builtin(&self, name: &str) -> Result<Said> {
        if let Some(files) = templates::example_pack(name) {
            return self.install_bundled(name, files, &example_suffix(name));
        }
        let Some(files) = templates::builtin_pack(name) else {
            return Err(fail(
                format_args!("没有内置包 {name}"),
                format_args!("no built-in pack named {name}"),
            ));
        };
        self.install_bundled(name, files, &Said::new(" (来源: 内置 builtin)", " (built in)"))
    }

    /// Writes bundled files into a staging directory, renames it into place and makes it
    /// a repository whose one commit holds them (the publish path's `adopt:` commit).
    fn install_bundled(&self, name: &str, files: Vec<templates::BundledFile>, suffix: &Said) -> Result<Said> {
        let target = self.config.packs_dir.join(name);
        if target.exists() {
            return Err(target_exists(name));
        }
        let tmp = self.config.packs_dir.join(format!("{INSTALL_STAGING}{}-{name}", std::process::id()));
        let _ = crate::store::remove_pack_dir(&tmp);
        let placed = templates::write_files(&tmp, files).and_then(|()| fs::rename(&tmp, &target));
        if let Err(e) = placed {
            let _ = crate::store::remove_pack_dir(&tmp);
            return Err(fail(
                format_args!("复制目录出错。{e}"),
                format_args!("copying the files failed. {e}"),
            ));
        }
        self.adopt_installed(&target, &format!("install: {name} (bundled)"))?;
        self.install_message(&target, name, suffix)
    }

    fn install_from(
        &self,
        source: &str,
        key: Option<&crate::remote::encrypted::Key>,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Said> {
        let name = target_name(source);
        validate_new_name(&name).map_err(|e| {
            fail(
                format_args!("无法从 {source} 得到合法目录名 ({e})"),
                format_args!("{source} gives no usable directory name ({})", e.text(Lang::En)),
            )
        })?;
        // On a team server a local source must lie in a directory the operator allowed
        // (never the packs directory: it holds every user's own packs).
        let checked;
        let source = match crate::ops::server_paths::local_source(source) {
            Some(path) if self.config.server_paths.is_closed() => {
                checked = self
                    .server_path(&path)
                    .map_err(|e| fail(&e, e.text(Lang::En)))?
                    .to_string_lossy()
                    .into_owned();
                checked.as_str()
            }
            _ => source,
        };
        let target = self.config.packs_dir.join(&name);
        if target.exists() {
            return Err(target_exists(&name));
        }
        let tmp = self.config.packs_dir.join(format!("{INSTALL_STAGING}{}-{name}", std::process::id()));
        let _ = crate::store::remove_pack_dir(&tmp);
        let local = Path::new(source);
        // A folder is copied; a repository, with a working tree or bare (a USB disk's
        // `coach.git`), is cloned like a URL.
        let plain_folder =
            local.is_dir() && !PackRepo::is_repository(local) && !crate::store::is_bare_repository(local);
        let key_path = self.key_path(&name);
        if key.is_some() && key_path.exists() {
            return Err(fail(
                format_args!("{} 已存在 (a key is already there)", key_path.display()),
                format_args!(
                    "{} already exists; remove it or install under another name",
                    key_path.display()
                ),
            ));
        }
        let fetched = if let Some(key) = key {
            crate::remote::encrypted::clone(source, &tmp, key, &self.config.sync.credentials)
                .map_err(|e| (format!("解密安装出错 (encrypted install failed)。{e}"), e.to_string()))
        } else if plain_folder {
            copy_tree(local, &tmp)
                .map_err(|e| (format!("复制失败 (copy failed): {e}"), format!("copying failed: {e}")))
        } else {
            crate::store::clone_pack(
                source,
                &tmp,
                &self.config.sync.credentials,
                MAX_PACK_FILE_BYTES as u64,
                progress,
            )
            .map_err(|e| (format!("git clone 出错。{e}"), format!("git clone failed. {e}")))
        };
        let fetched = fetched.and_then(|()| match oversized_file(&tmp) {
            Some(e) => Err((e.to_string(), e.to_string())),
            None => Ok(()),
        });
        if let Err((zh, en)) = fetched {
            let _ = crate::store::remove_pack_dir(&tmp);
            return Err(self.needs_key(source, key.is_none() && !plain_folder).unwrap_or(fail(zh, en)));
        }
        match read_meta(&tmp) {
            Ok(_) => {}
            Err(problem) => {
                let _ = crate::store::remove_pack_dir(&tmp);
                if let Some(e) = self.needs_key(source, key.is_none() && !plain_folder) {
                    return Err(e);
                }
                return Err(if problem == "is missing" {
                    fail(
                        "仓库根目录缺少 meta.json，已回滚。",
                        "there is no meta.json at the root; nothing was installed.",
                    )
                } else {
                    fail(
                        format_args!("meta.json 不是合法 JSON，已回滚。({problem})"),
                        format_args!("meta.json is not valid JSON; nothing was installed. ({problem})"),
                    )
                });
            }
        }
        if let Err(e) = fs::rename(&tmp, &target) {
            let _ = crate::store::remove_pack_dir(&tmp);
            return Err(fail(&e, &e));
        }
        if let Some(key) = key {
            key.write_new(&key_path).map_err(|e| fail(&e, &e))?;
        }
        self.adopt_installed(&target, &format!("install: {name} from {source}"))?;
        self.install_message(&target, &name, &Said::new("", ""))
    }

    /// The refusal of an install from a remote that holds an encrypted pack, without its key.
    fn needs_key(&self, source: &str, ask: bool) -> Option<EngramError> {
        let creds = &self.config.sync.credentials;
        (ask && crate::remote::encrypted::holds_encrypted_pack(source, creds)).then(|| {
            let e = crate::remote::encrypted::CryptError::NeedsKey { url: source.to_owned() };
            fail(&e, &e)
        })
    }

    fn adopt_installed(&self, target: &Path, _subject: &str) -> Result<()> {
        // A clone already has history; a copied directory gets an `adopt` commit.
        self.repo(target)?;
        Ok(())
    }

    fn install_message(&self, target: &Path, dir_name: &str, suffix: &Said) -> Result<Said> {
        let meta = read_meta(target).unwrap_or_default();
        // An empty meta name shows the directory's (the reference shows nothing: §11.5).
        let name = meta.get("name").and_then(|v| v.as_str()).filter(|s| !s.is_empty()).unwrap_or(dir_name);
        let desc = meta.get("description").and_then(|v| v.as_str()).unwrap_or("");
        Ok(Said::new(
            format!("安装成功：{name} - {desc}{}", suffix.zh),
            format!("installed: {name} - {desc}{}", suffix.en),
        ))
    }

    /// `init_engram(name, nested)` / `engram init <name>`: a new pack from the bundled template
    /// in `template`'s language. The answer in both languages (the MCP tool answers its Chinese).
    pub fn init_engram(&self, name: &str, nested: bool, template: Lang) -> Result<Said> {
        let target = self.init_pack(name, nested, template)?;
        let shown = target.canonicalize().unwrap_or(target);
        Ok(Said::new(format!("初始化成功：{}", shown.display()), format!("initialized: {}", shown.display())))
    }

    /// Makes pack `name` from the bundled template in `lang` (with `nested`, plus a knowledge
    /// group and its `_index.md`): built in a staging directory, renamed into place, and
    /// adopted as the pack's first commit through the publish path. Returns its directory.
    pub(crate) fn init_pack(&self, name: &str, nested: bool, lang: Lang) -> Result<PathBuf> {
        // The reference's text exactly: it names the refused name and nothing else.
        if let Err(e) = validate_new_name(name) {
            return Err(init_fail(format_args!("非法名称 {name}"), e.text(Lang::En)));
        }
        let target = self.config.packs_dir.join(name);
        if target.exists() {
            return Err(init_fail(
                format_args!("目标目录已存在 {name}"),
                format_args!("the directory already exists: {name}"),
            ));
        }
        let mut files = templates::pack_template(lang);
        let meta = files
            .iter()
            .find(|(p, _)| p == "meta.json")
            .map(|(_, b)| String::from_utf8_lossy(b).into_owned());
        let meta = templates::finalize_meta(&meta.unwrap_or_default(), name, lang).map_err(|e| {
            init_fail(
                format_args!("模板 meta.json 无法解析。{e}"),
                format_args!("the template's meta.json cannot be read. {e}"),
            )
        })?;
        let mut owned: Vec<(String, Vec<u8>)> =
            files.drain(..).filter(|(p, _)| p != "meta.json").map(|(p, b)| (p, b.to_vec())).collect();
        owned.push(("meta.json".into(), meta.into_bytes()));
        if nested {
            let (index, group, [group_index, group_file]) = match lang {
                Lang::Zh => (NESTED_INDEX, "分组示例", [NESTED_GROUP_INDEX, NESTED_GROUP_FILE]),
                Lang::En => (NESTED_INDEX_EN, "example-group", [NESTED_GROUP_INDEX_EN, NESTED_GROUP_FILE_EN]),
            };
            let group_file_name = lang.pick("示例知识.md", "example-topic.md");
            owned.retain(|(p, _)| p != "knowledge/_index.md");
            owned.push(("knowledge/_index.md".into(), index.as_bytes().to_vec()));
            owned.push((format!("knowledge/{group}/_index.md"), group_index.as_bytes().to_vec()));
            owned.push((format!("knowledge/{group}/{group_file_name}"), group_file.as_bytes().to_vec()));
        }
        let tmp = self.config.packs_dir.join(format!("{INSTALL_STAGING}{}-{name}", std::process::id()));
        let _ = crate::store::remove_pack_dir(&tmp);
        let placed = write_owned(&tmp, &owned).and_then(|()| fs::rename(&tmp, &target));
        if let Err(e) = placed {
            let _ = crate::store::remove_pack_dir(&tmp);
            return Err(init_fail(&e, &e));
        }
        self.repo(&target)?;
        Ok(target)
    }
}

/// The knowledge index `nested` writes instead of the template's (the reference's text: its
/// two topics, then the group entry).
const NESTED_INDEX: &str = "## 知识索引\n\n### 基础主题\n- `knowledge/主题A.md` - 主题A基础知识。\n- `knowledge/主题B.md` - 主题B基础知识。\n\n### 分组目录\n- `knowledge/分组示例/_index.md` - 分组索引入口。\n  → 详见 knowledge/分组示例/_index.md\n";
/// The group's own index.
const NESTED_GROUP_INDEX: &str = "## 分组示例索引\n\n- `knowledge/分组示例/示例知识.md` - 分组内知识样例。\n";
/// The group's sample file (the reference's text).
const NESTED_GROUP_FILE: &str = "# 示例知识\n\n在这里沉淀该分组下的系统性知识。";

/// [`NESTED_INDEX`] of the English template.
const NESTED_INDEX_EN: &str = "## Knowledge index\n\n### Basics\n- `knowledge/topic-a.md` - The basics of topic A.\n- `knowledge/topic-b.md` - The basics of topic B.\n\n### Groups\n- `knowledge/example-group/_index.md` - The group's own index.\n";
/// [`NESTED_GROUP_INDEX`] of the English template.
const NESTED_GROUP_INDEX_EN: &str = "## Example group index\n\n- `knowledge/example-group/example-topic.md` - A sample knowledge file of the group.\n";
/// [`NESTED_GROUP_FILE`] of the English template.
const NESTED_GROUP_FILE_EN: &str = "# Example topic\n\nWrite the group's systematic knowledge here.";

/// ` (来源: 本地 examples/<name>)`, the reference's suffix for a bundled example pack.
fn example_suffix(name: &str) -> Said {
    Said::new(format!(" (来源: 本地 examples/{name})"), format!(" (from the bundled examples/{name})"))
}

/// The target directory of an install exists.
fn target_exists(name: &str) -> EngramError {
    fail(format_args!("目标目录已存在 {name}"), format_args!("the directory already exists: {name}"))
}

/// Writes files (pack-relative paths) under `dir`.
fn write_owned(dir: &Path, files: &[(String, Vec<u8>)]) -> std::io::Result<()> {
    for (rel, bytes) in files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(path, bytes)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staging_names_carry_their_owner() {
        assert_eq!(staging_owner(".engram-install-4242-coach"), Some(4242));
        assert_eq!(staging_owner(".engram-install-4242-my-pack"), Some(4242));
        assert_eq!(staging_owner(".personal.creating-77"), Some(77));
        assert_eq!(staging_owner(".notes.v2.creating-77-3"), Some(77));
        for other in ["coach", ".git", ".engram-install-x-y", ".a.creating-", "_global"] {
            assert_eq!(staging_owner(other), None, "{other}");
        }
        assert!(process_alive(std::process::id()));
    }

    #[test]
    fn target_names_come_from_the_last_segment() {
        assert_eq!(target_name("https://github.com/x/engram-fitness.git"), "engram-fitness");
        assert_eq!(target_name("/tmp/packs/demo/"), "demo");
        assert_eq!(target_name("git@host:org/pack.git"), "pack");
        assert_eq!(target_name("git://127.0.0.1:9418/p.git"), "p");
    }
}
