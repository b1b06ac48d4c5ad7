//! A packing job's delta merges, in a worker process.
//!
//! A delta merge (`gc::delta_merge`, libgit2's pack builder) takes tens to hundreds
//! of milliseconds of CPU and holds libgit2's pack-window lock, of which a process
//! has one. In the server's process it hurts the writes either way: at the normal
//! priority it takes their CPU beside a busy core; at the idle priority it holds
//! that lock with no CPU, and writes waited 70–420 ms for it. So the `engram`
//! binary has the merge made by a child process of its own (the hidden
//! `engram pack-merge`), which runs whole in the idle scheduling class:
//!
//! ```text
//! job thread (gc lock, plan claimed: gc::Claims)
//!     └─ plan on stdin ──► engram pack-merge GIT_DIR --parent PID   (idle class)
//!                              gc::delta_merge ─► pack in place ─► delete what it covers
//!        ◄── "packed objects=… loose_removed=… packs_removed=…" ── exits
//! ```
//!
//! The job thread waits for the child, so the gc lock and the plan's claims stay
//! held for the whole merge (the child holds no lock: its files would be closed at
//! `exec`). The plan names objects and packs by id only: the child builds every
//! path itself, inside the repository it was given. A child whose parent died (the
//! gc lock is then free, and a new job may plan the same packs) deletes nothing: it
//! leaves at most a complete new pack beside the packs it covers, the state a killed
//! job leaves anyway, which the next job merges again.
//!
//! Library users and unit tests register no worker: their delta merges run in
//! their own process, as before.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::SystemTime;

use git2::Oid;

use super::gc::{self, PackFile, PackReport};
use super::{Result, git_err, io_err};

/// The `engram` binary that makes this process's delta merges (see the module doc).
/// Process-wide: set once at start-up by the binary, read by every packing job.
static WORKER: OnceLock<PathBuf> = OnceLock::new();

/// The hidden command of the `engram` binary that runs [`serve_pack_merge`].
pub const PACK_MERGE_COMMAND: &str = "pack-merge";

/// Makes this process's delta merges run in `exe pack-merge` (the `engram` binary
/// calls this with its own path at start-up). Later calls change nothing.
pub fn run_delta_merges_in(exe: PathBuf) {
    let _ = WORKER.set(exe);
}

/// Runs the delta merge of `loose` and `merged` in the worker process and returns
/// its report; `None` when this process has no worker or it cannot start (the
/// caller merges in this process then).
pub(super) fn merge_in_worker(
    git_dir: &Path,
    loose: &[(Oid, PathBuf)],
    merged: &[(PackFile, Vec<Oid>)],
) -> Option<Result<PackReport>> {
    let exe = WORKER.get()?;
    let mut plan = String::new();
    for (id, _) in loose {
        plan.push_str(&format!("loose {id}\n"));
    }
    for id in merged.iter().filter_map(|(pack, _)| gc::pack_id(pack)) {
        plan.push_str(&format!("pack {id}\n"));
    }
    let child = Command::new(exe)
        .arg(PACK_MERGE_COMMAND)
        .arg(git_dir)
        .arg("--parent")
        .arg(std::process::id().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) => {
            eprintln!("engram: cannot start the packing worker {}: {e}; packing here", exe.display());
            return None;
        }
    };
    let sent = child.stdin.take().map(|mut stdin| stdin.write_all(plan.as_bytes()));
    let output = child.wait_with_output();
    Some(worker_report(git_dir, sent, output))
}

/// The report of a finished worker, or why it failed.
fn worker_report(
    git_dir: &Path,
    sent: Option<std::io::Result<()>>,
    output: std::io::Result<std::process::Output>,
) -> Result<PackReport> {
    let failed = |why: String| io_err("merge the packs of", git_dir, std::io::Error::other(why));
    let output = output.map_err(|e| io_err("wait for the packing worker of", git_dir, e))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(failed(format!("the packing worker {}: {}", output.status, stderr.trim())));
    }
    if let Some(Err(e)) = sent {
        return Err(io_err("send the plan to the packing worker of", git_dir, e));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    parse_report(&stdout)
        .ok_or_else(|| failed(format!("unexpected answer of the packing worker: {stdout:?}")))
}

/// Reads the worker's one-line answer (see [`format_report`]).
fn parse_report(line: &str) -> Option<PackReport> {
    let mut report = PackReport::default();
    let mut words = line.split_whitespace();
    (words.next()? == "packed").then_some(())?;
    for word in words {
        let (key, value) = word.split_once('=')?;
        let value: usize = value.parse().ok()?;
        match key {
            "objects" => report.objects = value,
            "loose_removed" => report.loose_removed = value,
            "packs_removed" => report.packs_removed = value,
            _ => return None,
        }
    }
    Some(report)
}

/// The worker's answer to its parent: one line.
pub fn format_report(report: &PackReport) -> String {
    format!(
        "packed objects={} loose_removed={} packs_removed={}",
        report.objects, report.loose_removed, report.packs_removed
    )
}

/// The worker's side (`engram pack-merge GIT_DIR --parent PID`): moves this process
/// to the idle scheduling class, reads the plan (`loose <id>` and `pack <id>` lines)
/// and makes the delta merge. The merged files are deleted only while process
/// `parent` (the job that planned the merge and holds the gc lock) is still this
/// process's parent. A plan line that is not one of the two forms is refused before
/// anything is written.
pub fn serve_pack_merge(git_dir: &Path, parent: u32, plan: impl BufRead) -> Result<PackReport> {
    super::housekeeping::lower_priority();
    let started = SystemTime::now();
    let git = git2::Repository::open(git_dir).map_err(|e| git_err("opening the repository", git_dir, e))?;
    let dir = git.workdir().unwrap_or(git_dir).to_owned();
    let objects_dir = git.path().join("objects");
    let pack_dir = objects_dir.join("pack");
    let mut loose = Vec::new();
    let mut merged = Vec::new();
    for line in plan.lines() {
        let line = line.map_err(|e| io_err("read the packing plan for", git_dir, e))?;
        let bad = || {
            let why = format!("{line:?} is not a line of a packing plan (`loose <id>` or `pack <id>`)");
            io_err(
                "read the packing plan for",
                git_dir,
                std::io::Error::new(std::io::ErrorKind::InvalidData, why),
            )
        };
        let (kind, hex) = line.split_once(' ').ok_or_else(bad)?;
        let id = Oid::from_str(hex).ok().filter(|_| hex.len() == 40).ok_or_else(bad)?;
        match kind {
            "loose" => loose.push((id, gc::loose_path(&objects_dir, id))),
            // A pack that is gone or unreadable stops the merge there, as in the plan
            // (`gc::pack_geometric` merges only a run of the newest packs).
            "pack" => match gc::planned_pack(&pack_dir, id) {
                Some(pack) => merged.push(pack),
                None => break,
            },
            _ => return Err(bad()),
        }
    }
    if !parent_alive(parent) {
        return Ok(PackReport::default());
    }
    let Some(written) = gc::delta_merge(&git, &dir, loose, merged, started)? else {
        return Ok(PackReport::default());
    };
    if !parent_alive(parent) {
        return Ok(PackReport { objects: written.objects(), ..PackReport::default() });
    }
    Ok(written.retire(&pack_dir))
}

/// Whether process `parent` is still this process's parent (an orphan is adopted by
/// another process). Where that cannot be told, true.
fn parent_alive(parent: u32) -> bool {
    #[cfg(unix)]
    {
        std::os::unix::process::parent_id() == parent
    }
    #[cfg(not(unix))]
    {
        let _ = parent;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreError;

    #[test]
    fn the_report_line_round_trips() {
        let report = PackReport { objects: 12, loose_removed: 3, packs_removed: 4 };
        let back = parse_report(&format!("{}\n", format_report(&report))).expect("parses");
        assert_eq!((back.objects, back.loose_removed, back.packs_removed), (12, 3, 4));
        assert!(parse_report("packed objects=x").is_none());
        assert!(parse_report("hello objects=1").is_none());
        assert!(parse_report("packed colour=1").is_none());
    }

    #[cfg(unix)]
    #[test]
    fn a_plan_line_naming_a_path_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        git2::Repository::init(dir.path()).expect("init");
        let git_dir = dir.path().join(".git");
        for line in ["pack ../../etc/passwd", "loose 12", "tree 0123456789012345678901234567890123456789"] {
            let err = serve_pack_merge(&git_dir, std::os::unix::process::parent_id(), line.as_bytes());
            assert!(
                matches!(&err, Err(StoreError::Io { step, .. }) if step.contains("plan")),
                "{line}: {err:?}"
            );
        }
    }
}
