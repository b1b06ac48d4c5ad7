//! `engram gc`, `engram purge`, `engram hooks install`.

use std::io::{BufRead as _, IsTerminal as _};
use std::process::ExitCode;

use crate::ops::Engram;
use crate::store::PurgeTarget;

fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// `engram gc [pack]`: packs loose objects of one pack or all.
pub fn gc(engram: &Engram, pack: Option<&str>) -> anyhow::Result<ExitCode> {
    let names: Vec<String> = match pack {
        Some(p) => vec![p.to_owned()],
        None => engram.packs().list().into_iter().map(|p| p.name).collect(),
    };
    for name in names {
        let dir = engram.resolve(&name)?.dir;
        let Some((before, report, after)) = engram.with_existing_repo(&dir, |r| {
            let before = r.git_size();
            let report = r.pack_objects()?;
            Ok((before, report, r.git_size()))
        })?
        else {
            outln!("{name}: not a git repository yet (until its first write); nothing to pack");
            continue;
        };
        outln!(
            "{name}: packed by {}: loose objects {} → {}, packs {} → {}; .git {} → {}",
            report.packer,
            report.loose.0,
            report.loose.1,
            report.packs.0,
            report.packs.1,
            mib(before),
            mib(after)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `engram purge <pack> <path|glob> [--text] [--yes]`.
pub fn purge(engram: &Engram, pack: &str, what: &str, text: bool, yes: bool) -> anyhow::Result<ExitCode> {
    let dir = engram.resolve(pack)?.dir;
    let target = if text { PurgeTarget::Text(what.to_owned()) } else { PurgeTarget::Path(what.to_owned()) };
    let preview = engram.with_existing_repo(&dir, |r| Ok(r.purge_preview(&target)?))?;
    let Some(preview) = preview.filter(|p| p.commits > 0) else {
        outln!("{pack}: nothing in the history matches {what:?}; nothing to do.");
        return Ok(ExitCode::SUCCESS);
    };
    outln!(
        "{pack}: {} commits hold {what:?} ({}). Purging rewrites these commits and every later one: their ids change.",
        preview.commits,
        preview.paths.iter().take(10).cloned().collect::<Vec<_>>().join(", ")
    );
    if !yes {
        if !std::io::stdin().is_terminal() {
            eprintln!("refusing to rewrite history without confirmation: pass --yes");
            return Ok(ExitCode::from(2));
        }
        out!("Type 'yes' to rewrite the history of {pack}: ");
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if answer.trim() != "yes" {
            outln!("aborted; nothing changed.");
            return Ok(ExitCode::from(2));
        }
    }
    let report = engram.with_repo(&dir, |r| Ok(r.purge(&target)?))?;
    outln!(
        "purged: {} commits rewritten; reflogs expired and objects repacked. HEAD is now {}.",
        report.commits,
        report.new_head.as_deref().unwrap_or("-")
    );
    if report.remotes_holding.is_empty() {
        outln!("no remote holds the old history.");
    } else {
        outln!(
            "these remotes still hold the old history (engram never force-pushes; rewrite them yourself, e.g. `git push --force <remote> <branch>`, and ask everyone who cloned the pack to re-clone):"
        );
        for (name, url) in &report.remotes_holding {
            outln!("- {name} {url}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The pre-commit hook engram installs.
pub fn pre_commit_script(exe: &std::path::Path) -> String {
    format!(
        "#!/bin/sh\n# Installed by `engram hooks install`: lint + secret scan on hand-made commits.\nexec \"{}\" hook git-pre-commit\n",
        exe.display()
    )
}

/// `engram hooks install <pack>`: installs the git pre-commit hook.
pub fn hooks_install(engram: &Engram, pack: &str) -> anyhow::Result<ExitCode> {
    let dir = engram.resolve(pack)?.dir;
    let hooks = engram.with_repo(&dir, |r| Ok(r.hooks_dir()))?;
    std::fs::create_dir_all(&hooks)?;
    let path = hooks.join("pre-commit");
    let exe = std::env::current_exe()?;
    let script = pre_commit_script(&exe);
    if let Ok(existing) = std::fs::read_to_string(&path)
        && !existing.contains("engram hooks install")
    {
        let backup = hooks.join("pre-commit.before-engram");
        std::fs::rename(&path, &backup)?;
        outln!("kept the existing hook as {}", backup.display());
    }
    std::fs::write(&path, script)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    }
    outln!(
        "installed {} (runs `engram lint` and the secret scan before every hand-made commit)",
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}
