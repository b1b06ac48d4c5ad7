//! Packs bundled in the binary: the demo pack and the reference's 12 example
//! packs (`templates/examples/`, installed by name), whose `template` is also
//! what `init` copies, as the reference's init does.

use std::fs;
use std::path::Path;

use include_dir::{Dir, include_dir};

static TEMPLATES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/templates");

/// A bundled file: path relative to the pack, and bytes.
pub type BundledFile = (String, &'static [u8]);

fn collect(dir: &'static Dir<'static>, prefix: &Path, out: &mut Vec<BundledFile>) {
    for f in dir.files() {
        if let Ok(rel) = f.path().strip_prefix(prefix) {
            out.push((rel.to_string_lossy().replace('\\', "/"), f.contents()));
        }
    }
    for d in dir.dirs() {
        collect(d, prefix, out);
    }
}

fn files_of(name: &str) -> Option<Vec<BundledFile>> {
    let dir = TEMPLATES.get_dir(name)?;
    let mut out = Vec::new();
    collect(dir, Path::new(name), &mut out);
    out.sort();
    Some(out)
}

/// The `init` template: the reference's own (`templates/examples/template`), so an init'd
/// pack has the same files and texts as one the Python server made.
pub fn pack_template() -> Vec<BundledFile> {
    files_of(&format!("{EXAMPLES}/template")).unwrap_or_default()
}

/// A bundled ready pack other than the template (`templates/<name>`).
pub fn builtin_pack(name: &str) -> Option<Vec<BundledFile>> {
    if name == EXAMPLES || crate::pack::validate_name(name).is_err() {
        return None;
    }
    files_of(name)
}

/// The folder of the reference's example packs, shipped with engram.
const EXAMPLES: &str = "examples";

/// The names of the example packs shipped with engram (the reference's 12), sorted.
pub fn example_names() -> Vec<&'static str> {
    let Some(dir) = TEMPLATES.get_dir(EXAMPLES) else { return Vec::new() };
    let mut names: Vec<&str> =
        dir.dirs().filter_map(|d| d.path().file_name().and_then(|n| n.to_str())).collect();
    names.sort_unstable();
    names
}

/// An example pack shipped with engram (`templates/examples/<name>`), by exact name.
pub fn example_pack(name: &str) -> Option<Vec<BundledFile>> {
    if crate::pack::validate_name(name).is_err() || !example_names().contains(&name) {
        return None;
    }
    files_of(&format!("{EXAMPLES}/{name}"))
}

/// Writes bundled files under `target` (which must not exist yet).
pub fn write_files(target: &Path, files: Vec<BundledFile>) -> std::io::Result<()> {
    fs::create_dir_all(target)?;
    for (rel, bytes) in files {
        let path = target.join(&rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(path, bytes)?;
    }
    Ok(())
}

/// Sets `name` (and an empty `description`) in a template meta.json, as the reference's init does.
pub fn finalize_meta(meta_json: &str, name: &str) -> Result<String, String> {
    crate::lint::finalize_template_meta(meta_json, name).map_err(|e| e.to_string())
}
