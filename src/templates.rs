//! Packs bundled in the binary: the demo pack and the reference's 12 example
//! packs (`templates/examples/`, installed by name), whose `template` is also
//! what `init` copies, as the reference's init does.

use std::fs;
use std::path::Path;

use include_dir::{Dir, include_dir};

use crate::lang::Lang;

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

/// The `init` template in `lang`: in Chinese the reference's own
/// (`templates/examples/template`), so an init'd pack has the same files and texts as one
/// the Python server made; in English `templates/template-en` (the same files, English names
/// and texts).
pub fn pack_template(lang: Lang) -> Vec<BundledFile> {
    match lang {
        Lang::Zh => files_of(&format!("{EXAMPLES}/template")),
        Lang::En => files_of(TEMPLATE_EN),
    }
    .unwrap_or_default()
}

/// The English `init` template's folder.
const TEMPLATE_EN: &str = "template-en";

/// A bundled ready pack other than the templates (`templates/<name>`).
pub fn builtin_pack(name: &str) -> Option<Vec<BundledFile>> {
    if name == EXAMPLES || name == TEMPLATE_EN || crate::pack::validate_name(name).is_err() {
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

/// Sets `name` (and an empty `description`) in a template meta.json, as the reference's init
/// does; the English template's description is `<name> expert pack`.
pub fn finalize_meta(meta_json: &str, name: &str, lang: Lang) -> Result<String, String> {
    match lang {
        Lang::Zh => crate::lint::finalize_template_meta(meta_json, name),
        Lang::En => crate::lint::finalize_template_meta_with(meta_json, name, &format!("{name} expert pack")),
    }
    .map_err(|e| e.to_string())
}
