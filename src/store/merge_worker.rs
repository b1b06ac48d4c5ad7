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
//! job thread (gc lock held, plan claimed: gc::Claims)
//!     │ writes the plan into the gc lock file
//!     └─ the locked file as stdin ──► engram pack-merge GIT_DIR   (idle class)
//!                              holds the gc lock through its stdin
//!                              gc::delta_merge ─► pack in place ─► delete what it covers
//!        ◄── "packed objects=… loose_removed=… packs_removed=…" ── exits
//! ```
//!
//! The child's standard input is the job's own open gc lock file (`flock` locks belong
//! to the open file, which the child then shares): the gc lock is held until the job
//! *and* the child are done. So a child whose parent was killed mid-merge (an MCP
//! client stops its server a few seconds after closing its input) still finishes
//! the merge and deletes what it covers: no other job can start until it exits.
//! Before, such an orphan had to leave its new pack beside the packs it covered,
//! duplicates that were the larger part of a repository stopped mid-merge.
//! The plan names objects and packs by id only: the child builds every path itself,
//! inside the repository it was given, and merges only when its standard input is
//! that repository's gc lock file and holds the lock.
//!
//! The child then goes on with the rest of the job (`housekeeping::pack_while_due`,
//! its merges made in its own process) in two cases:
//! - its parent is no longer the server the plan names (`server <pid>`): the server was
//!   killed, and the job's later runs died with it (a burst's 125 packs were left so, at
//!   7.4× the text);
//! - the plan says `finish`: a process that is exiting handed it the job
//!   ([`hand_off`], from `housekeeping::end_background_packing`), and does not wait.
//!
//! Library users and unit tests register no worker: their delta merges run in
//! their own process, as before.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
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
/// caller merges in this process then). `gc_lock` is the job's locked gc lock file:
/// the plan is written into it and it becomes the worker's standard input. Unix only:
/// the worker shares the job's lock through the inherited open file, which is how
/// `flock` works; elsewhere the merge runs in this process.
pub(super) fn merge_in_worker(
    git_dir: &Path,
    gc_lock: &File,
    loose: &[(Oid, PathBuf)],
    merged: &[(PackFile, Vec<Oid>)],
) -> Option<Result<PackReport>> {
    let exe = WORKER.get().filter(|_| cfg!(unix))?;
    // The server's pid: a worker whose parent is no longer it finishes the job (see the module doc).
    let mut plan = format!("server {}\n", std::process::id());
    for (id, _) in loose {
        plan.push_str(&format!("loose {id}\n"));
    }
    for id in merged.iter().filter_map(|(pack, _)| gc::pack_id(pack)) {
        plan.push_str(&format!("pack {id}\n"));
    }
    let stdin = match write_plan(gc_lock, &plan) {
        Ok(stdin) => stdin,
        Err(e) => {
            eprintln!(
                "engram: cannot hand the packing plan of {} to a worker: {e}; packing here",
                git_dir.display()
            );
            return None;
        }
    };
    let child = worker_command(exe, git_dir, stdin).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
    let child = match child {
        Ok(child) => child,
        Err(e) => {
            eprintln!("engram: cannot start the packing worker {}: {e}; packing here", exe.display());
            return None;
        }
    };
    Some(worker_report(git_dir, child.wait_with_output()))
}

/// Whether this process makes its delta merges in a worker process (the `engram`
/// binary on Unix), and so can hand a packing job over ([`hand_off`]).
pub(super) fn has_worker() -> bool {
    cfg!(unix) && WORKER.get().is_some()
}

/// Hands the rest of a packing job to a worker process that outlives this one (its plan:
/// `finish`; see the module doc), and returns true, once the worker started; false when
/// this process has no worker or it cannot start (the job goes on here then). `gc_lock` is
/// the job's locked gc lock file, which becomes the worker's standard input: the lock is
/// held until the worker is done. Nothing waits for the worker, and nothing reads what it
/// writes (a packing failure it meets is left for the next job, or `engram doctor`).
pub(super) fn hand_off(git_dir: &Path, gc_lock: &File) -> bool {
    let Some(exe) = WORKER.get().filter(|_| cfg!(unix)) else { return false };
    let Ok(stdin) = write_plan(gc_lock, "finish\n") else { return false };
    worker_command(exe, git_dir, stdin).stdout(Stdio::null()).stderr(Stdio::null()).spawn().is_ok()
}

/// `exe pack-merge GIT_DIR`, its standard input the job's gc lock file holding the plan.
fn worker_command(exe: &Path, git_dir: &Path, gc_lock: File) -> Command {
    let mut command = Command::new(exe);
    command.arg(PACK_MERGE_COMMAND).arg(git_dir).stdin(Stdio::from(gc_lock));
    command
}

/// Replaces the content of the locked gc lock file with `plan` and returns a second
/// handle of the same open file (sharing its lock), positioned at the plan's start.
fn write_plan(gc_lock: &File, plan: &str) -> std::io::Result<File> {
    let mut file = gc_lock.try_clone()?;
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(plan.as_bytes())?;
    file.seek(SeekFrom::Start(0))?;
    Ok(file)
}

/// The report of a finished worker, or why it failed.
fn worker_report(git_dir: &Path, output: std::io::Result<std::process::Output>) -> Result<PackReport> {
    let failed = |why: String| io_err("merge the packs of", git_dir, std::io::Error::other(why));
    let output = output.map_err(|e| io_err("wait for the packing worker of", git_dir, e))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(failed(format!("the packing worker {}: {}", output.status, stderr.trim())));
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

/// The worker's side (`engram pack-merge GIT_DIR`, its standard input the packing
/// job's gc lock file): moves this process to the idle scheduling class, checks that
/// `gc_lock` is the repository's gc lock file and holds its lock, reads the plan in it
/// (`loose <id>` and `pack <id>` lines) and makes the delta merge, then deletes what
/// the new pack covers. Then, when the plan says `finish` or its parent is no longer the
/// plan's `server <pid>`, it runs the rest of the packing job (see the module doc). A
/// plan line of no such form is refused before anything is written.
pub fn serve_pack_merge(git_dir: &Path, gc_lock: &File) -> Result<PackReport> {
    super::housekeeping::lower_priority();
    let started = SystemTime::now();
    let git = git2::Repository::open(git_dir).map_err(|e| git_err("opening the repository", git_dir, e))?;
    hold_gc_lock(git_dir, gc_lock)?;
    let dir = git.workdir().unwrap_or(git_dir).to_owned();
    let objects_dir = git.path().join("objects");
    let pack_dir = objects_dir.join("pack");
    let read_failed = |e| io_err("read the packing plan for", git_dir, e);
    let mut plan = gc_lock;
    plan.seek(SeekFrom::Start(0)).map_err(read_failed)?;
    let mut loose = Vec::new();
    let mut merged = Vec::new();
    let mut server = None;
    let mut finish = false;
    let mut pack_gone = false;
    for line in BufReader::new(plan).lines() {
        let line = line.map_err(read_failed)?;
        let bad = || {
            let why = format!(
                "{line:?} is not a line of a packing plan \
                 (`loose <id>`, `pack <id>`, `server <pid>` or `finish`)"
            );
            read_failed(std::io::Error::new(std::io::ErrorKind::InvalidData, why))
        };
        if line == "finish" {
            finish = true;
            continue;
        }
        let (kind, value) = line.split_once(' ').ok_or_else(bad)?;
        if kind == "server" {
            server = Some(value.parse::<u32>().map_err(|_| bad())?);
            continue;
        }
        let id = Oid::from_str(value).ok().filter(|_| value.len() == 40).ok_or_else(bad)?;
        match kind {
            "loose" => loose.push((id, gc::loose_path(&objects_dir, id))),
            // A pack that is gone or unreadable stops the merge there, as in the plan
            // (`gc::pack_geometric` merges only a run of the newest packs).
            "pack" if pack_gone => {}
            "pack" => match gc::planned_pack(&pack_dir, id) {
                Some(pack) => merged.push(pack),
                None => pack_gone = true,
            },
            _ => return Err(bad()),
        }
    }
    let report = match gc::delta_merge(&git, &dir, loose, merged, started)? {
        Some(written) => written.retire(&pack_dir),
        None => PackReport::default(),
    };
    // The job this merge was part of goes on here when it was handed over, or when its
    // server is gone (killed mid-merge: its parent is no longer the server that planned it).
    if finish || server.is_some_and(|pid| !is_parent(pid)) {
        super::housekeeping::pack_while_due(&git, &dir, &gc::Claims::default(), gc_lock, &|| false)?;
    }
    Ok(report)
}

/// Whether process `pid` is this process's parent (an orphan has another: init, or a
/// subreaper). Elsewhere than on Unix, where no worker runs, always true.
fn is_parent(pid: u32) -> bool {
    #[cfg(unix)]
    return std::os::unix::process::parent_id() == pid;
    #[cfg(not(unix))]
    return {
        let _ = pid;
        true
    };
}

/// Checks that `file` is the gc lock file of the repository at `git_dir` and that it
/// holds the lock: the packing job's, shared through the file it handed down, or (no
/// job holds it) taken now. Either way no other packing runs until this process exits.
fn hold_gc_lock(git_dir: &Path, file: &File) -> Result<()> {
    let path = super::housekeeping::gc_lock_path(git_dir);
    let refused = |why: &str| io_err("hold the packing lock", &path, std::io::Error::other(why.to_owned()));
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let ours = file.metadata().map_err(|e| io_err("hold the packing lock", &path, e))?;
        let lock = std::fs::metadata(&path).map_err(|e| io_err("hold the packing lock", &path, e))?;
        if (ours.dev(), ours.ino()) != (lock.dev(), lock.ino()) {
            return Err(refused("the worker's standard input is not this repository's packing lock file"));
        }
    }
    match fs4::fs_std::FileExt::try_lock_exclusive(file) {
        Ok(true) => Ok(()),
        Ok(false) => Err(refused("another process is packing this repository")),
        Err(e) => Err(io_err("hold the packing lock", &path, e)),
    }
}

/// This process's standard input as a file (for `engram pack-merge`, whose standard
/// input is the packing job's gc lock file): a second handle of the same open file.
pub fn stdin_file() -> std::io::Result<File> {
    #[cfg(unix)]
    let owned = std::os::fd::AsFd::as_fd(&std::io::stdin()).try_clone_to_owned()?;
    #[cfg(windows)]
    let owned = std::os::windows::io::AsHandle::as_handle(&std::io::stdin()).try_clone_to_owned()?;
    Ok(File::from(owned))
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

    /// A locked gc lock file of the repository at `git_dir` holding `plan`, as a job hands it down.
    fn handed_down(git_dir: &Path, plan: &str) -> File {
        let lock = crate::store::housekeeping::gc_lock(git_dir, false).expect("lock").expect("free");
        write_plan(&lock, plan).expect("plan")
    }

    #[test]
    fn a_plan_line_naming_a_path_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        git2::Repository::init(dir.path()).expect("init");
        let git_dir = dir.path().join(".git");
        let lines = [
            "pack ../../etc/passwd",
            "loose 12",
            "tree 0123456789012345678901234567890123456789",
            "server -1",
            "finish now",
        ];
        for line in lines {
            let err = serve_pack_merge(&git_dir, &handed_down(&git_dir, line));
            assert!(
                matches!(&err, Err(StoreError::Io { step, .. }) if step.contains("plan")),
                "{line}: {err:?}"
            );
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_worker_merges_only_holding_the_repositorys_gc_lock() {
        let dir = tempfile::tempdir().expect("tempdir");
        git2::Repository::init(dir.path()).expect("init");
        let git_dir = dir.path().join(".git");
        // Another file as standard input: refused.
        let other = dir.path().join("plan.txt");
        std::fs::write(&other, "").expect("write");
        let err = serve_pack_merge(&git_dir, &File::open(&other).expect("open"));
        assert!(matches!(&err, Err(StoreError::Io { step, .. }) if step.contains("lock")), "{err:?}");
        // The lock file, while another open of it holds the lock: refused.
        let job = crate::store::housekeeping::gc_lock(&git_dir, false).expect("lock").expect("free");
        let path = crate::store::housekeeping::gc_lock_path(&git_dir);
        let err = serve_pack_merge(&git_dir, &File::open(&path).expect("open"));
        assert!(matches!(&err, Err(StoreError::Io { step, .. }) if step.contains("lock")), "{err:?}");
        // The job's own open file, handed down: its lock is shared, the (empty) plan runs.
        let report = serve_pack_merge(&git_dir, &write_plan(&job, "").expect("plan")).expect("merges");
        assert_eq!(report.objects, 0);
    }
}
