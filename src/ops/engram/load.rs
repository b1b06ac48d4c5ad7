//! `load_engram` and `read_engram_file` — reads, which never commit and show a
//! folder that is not a repository yet as it is — plus the expiry pass: a load
//! hides expired entries (showing the hot index as the pass will leave it),
//! and the next memory write moves them in a commit of its own.

use std::fs;
use std::path::Path;

use chrono::NaiveDate;

use crate::memlog::{CategoryLog, FullIndex, HOT_INDEX, same_meta_rank};
use crate::memory::{self, CONSOLIDATE_HINT_THRESHOLD};
use crate::ops::{Caller, Engram, EngramError, Result, limits};
use crate::pack_path::PackPath;
use crate::pack_root::{Found, Kind, PackRoot};
use crate::store::{Changes, Edit, PackRepo, Snapshot};

/// What this process knows about a pack's pending expiries, per HEAD commit.
#[derive(Debug, Clone)]
pub(in crate::ops) struct ExpiryState {
    /// HEAD the state was computed for.
    pub head: String,
    /// The earliest `expires:` date among index lines (None: no expiring entry).
    pub earliest: Option<NaiveDate>,
    /// Proof that HEAD is still `head` without asking git (None: ask git).
    pub stamps: Option<HeadStamps>,
    /// When the expiry pass has work to do at `head` (entries expired by that day, or the
    /// full index still to be migrated): the day, and the hot index as the pass will leave
    /// it, which loads show until a write makes the pass.
    pub pending: Option<Pending>,
}

/// A hot index the expiry pass will write, for the day it was computed.
type Pending = (NaiveDate, std::sync::Arc<String>);

/// The hot index a load shows for a memory root.
#[derive(Debug, Clone)]
enum HotIndex {
    /// The file as it is (nothing expired, or not a repository yet: expired lines filtered).
    File,
    /// The text the expiry pass will leave (not committed yet).
    Pending(std::sync::Arc<String>),
}

/// What the expiry pass would do on a snapshot.
struct ExpiryPlan {
    /// The changes and the commit subject, when something expired (or the full index needs
    /// migrating).
    changes: Option<(Changes, String)>,
    /// How many entries expired.
    expired: usize,
    /// The earliest expiry date left.
    earliest: Option<NaiveDate>,
}

/// The expiry pass on `snap` for `today`: expired entries move to `<category>-expired.md`,
/// an old full index is migrated, the indexes are regenerated. Pure: nothing is committed.
fn expiry_plan(snap: &Snapshot<'_>, today: NaiveDate) -> Result<ExpiryPlan> {
    // Most packs have no entry with an expiry date: a look for the marker, file by file,
    // spares parsing every index line of the pack (tens of MB held at once at 100,000 entries).
    if FullIndex::any_file_contains(snap, EXPIRES_MARK)? == Some(false) {
        return Ok(ExpiryPlan { changes: None, expired: 0, earliest: None });
    }
    let mut index = FullIndex::load(snap)?;
    let entries = index.entries();
    let expired: Vec<usize> = entries
        .iter()
        .enumerate()
        .filter(|(_, (pos, _))| memory::is_expired(index.line(*pos), today))
        .map(|(i, _)| i)
        .collect();
    if expired.is_empty() && !index.migrated {
        return Ok(ExpiryPlan { changes: None, expired: 0, earliest: earliest_expiry(&index) });
    }
    let mut changes = Changes::for_memory();
    let mut by_category: std::collections::BTreeMap<String, CategoryLog> = Default::default();
    let mut moved: std::collections::BTreeMap<String, String> = Default::default();
    for &i in &expired {
        let (pos, entry) = &entries[i];
        let rank = same_meta_rank(&entries, i);
        if !by_category.contains_key(&entry.category) {
            by_category.insert(entry.category.clone(), CategoryLog::load(snap, &entry.category)?);
        }
        let log = by_category.get_mut(&entry.category).expect("inserted above");
        let text = match log.find(entry, rank) {
            Some(bp) => log.block(bp).text.clone(),
            None => format!("[index-only] {}", index.line(*pos).trim()),
        };
        moved.entry(entry.category.clone()).or_default().push_str(&format!("\n---\n{text}\n"));
    }
    // Remove blocks after all lookups (ranks refer to the original order).
    for &i in expired.iter().rev() {
        let (_, entry) = &entries[i];
        let rank = same_meta_rank(&entries, i);
        if let Some(log) = by_category.get_mut(&entry.category)
            && let Some(bp) = log.find(entry, rank)
        {
            log.remove(bp);
        }
    }
    for &i in expired.iter().rev() {
        index.remove(entries[i].0);
    }
    for log in by_category.values() {
        log.write(&mut changes);
    }
    for (category, text) in &moved {
        let path = format!("memory/{category}-expired.md");
        let old = snap.read_text(&path)?.unwrap_or_default();
        changes.put(path, format!("{old}{text}"));
    }
    index.write(&mut changes, false);
    let subject = if expired.is_empty() {
        "index: migrate memory/_index.md to _index_full.md".to_owned()
    } else {
        format!("expire: {} entries moved to -expired.md", expired.len())
    };
    Ok(ExpiryPlan {
        changes: Some((changes, subject)),
        expired: expired.len(),
        earliest: earliest_expiry(&index),
    })
}

/// How long after its last change a file's `stat` stamp is trusted to change again when the
/// file does: file times come from a clock that ticks every jiffy (at most 10 ms on Linux),
/// so a change in the same tick as the stamp could keep it (git's "racily clean" entries).
/// Twice the coarsest tick; a file system whose times have no sub-second part is never
/// trusted (see [`FileStamp::settled`]).
const SETTLED: std::time::Duration = std::time::Duration::from_millis(20);

/// `stat` stamp of a file: identity, size and both change times (ctime cannot be set back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileStamp {
    fn of(path: &Path) -> Option<Self> {
        Self::probe(path).flatten()
    }

    /// `Some(None)` when `path` does not exist, `None` when it cannot be stamped.
    fn probe(path: &Path) -> Option<Option<Self>> {
        use std::os::unix::fs::MetadataExt;
        let m = match fs::symlink_metadata(path) {
            Ok(m) if m.is_file() => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(None),
            _ => return None,
        };
        Some(Some(Self {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }))
    }

    /// True when the file last changed at least [`SETTLED`] before `before`, on a file system
    /// with sub-second times (a change time of exactly `.000000000` says they are coarse).
    fn settled(&self, before: std::time::SystemTime) -> bool {
        if self.ctime.1 == 0 {
            return false;
        }
        let Some(limit) = before.checked_sub(SETTLED) else { return false };
        let Ok(limit) = limit.duration_since(std::time::UNIX_EPOCH) else { return false };
        let limit = (i64::try_from(limit.as_secs()).unwrap_or(i64::MAX), i64::from(limit.subsec_nanos()));
        self.ctime < limit
    }
}

/// Stamps of `.git/HEAD` and of the ref it names (its loose file, or `packed-refs` while it
/// has none): while all are unchanged, HEAD names the same commit. Every ref update writes a
/// new file and renames it into place, packing refs rewrites `packed-refs` and deletes the
/// loose file, so each move of HEAD changes a stamp. A few `stat` calls instead of reading
/// the files through libgit2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::ops) struct HeadStamps {
    head: FileStamp,
    reference: Option<RefStamps>,
}

/// Where a branch ref lives, stamped.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RefStamps {
    loose_path: std::path::PathBuf,
    /// `Some`: the loose file (which wins over `packed-refs`); `None`: no loose file.
    loose: Option<FileStamp>,
    /// `packed-refs`, when there is no loose file.
    packed: Option<FileStamp>,
}

impl RefStamps {
    fn take(git: &Path, name: &str) -> Option<Self> {
        let loose_path = git.join(name);
        let loose = FileStamp::probe(&loose_path)?;
        let packed = match loose {
            Some(_) => None,
            None => Some(FileStamp::probe(&git.join("packed-refs"))??),
        };
        Some(Self { loose_path, loose, packed })
    }

    fn settled(&self, before: std::time::SystemTime) -> bool {
        self.loose.is_none_or(|s| s.settled(before)) && self.packed.is_none_or(|s| s.settled(before))
    }
}

impl HeadStamps {
    /// Stamps HEAD of the repository at `root/.git`, when they can be trusted: the files
    /// settled before `before`. Take them *before* reading HEAD, so a change after this call
    /// shows as a changed stamp.
    fn take(root: &Path, before: std::time::SystemTime) -> Option<Self> {
        let git = root.join(".git");
        let head_file = git.join("HEAD");
        let head = FileStamp::of(&head_file)?;
        let text = fs::read_to_string(&head_file).ok()?;
        let reference = match text.strip_prefix("ref: ") {
            Some(name) => {
                let name = name.trim();
                if !name.starts_with("refs/") || name.split('/').any(|p| p.is_empty() || p.starts_with('.')) {
                    return None;
                }
                Some(RefStamps::take(&git, name)?)
            }
            None => None,
        };
        let stamps = Self { head, reference };
        (stamps.head.settled(before) && stamps.reference.as_ref().is_none_or(|r| r.settled(before)))
            .then_some(stamps)
    }

    /// True when no stamped file changed since the stamps were taken.
    fn unchanged(&self, root: &Path) -> bool {
        let git = root.join(".git");
        FileStamp::of(&git.join("HEAD")) == Some(self.head)
            && self.reference.as_ref().is_none_or(|r| {
                FileStamp::probe(&r.loose_path) == Some(r.loose)
                    && r.packed.is_none_or(|p| FileStamp::of(&git.join("packed-refs")) == Some(p))
            })
    }
}

/// What `load_engram` reads a pack through: the working tree, or a commit's tree (`as_of`).
pub(super) struct PackView<'a> {
    /// Reads a text file by pack-relative path; `None` if missing.
    pub read: &'a dyn Fn(&str) -> Result<Option<String>>,
    /// True when the pack has a `memory/` directory.
    pub has_memory_dir: bool,
    /// The reference's onboarding test.
    pub onboarded: bool,
    /// The day expiry is judged against.
    pub today: NaiveDate,
}

/// The hot index without expired lines, and the number of entry lines kept.
pub(super) fn active_lines(text: &str, today: NaiveDate) -> (String, usize) {
    let bytes = text.as_bytes();
    if memchr::memmem::find(bytes, b"expires:").is_none() && memchr::memchr(b'\r', bytes).is_none() {
        // Nothing can expire and `lines()` would strip nothing: the same text, and the entry
        // lines counted where they start (the text's start, or after a newline).
        let n = usize::from(bytes.starts_with(b"- `memory/"))
            + memchr::memmem::find_iter(bytes, b"\n- `memory/").count();
        return (text.trim().to_owned(), n);
    }
    let lines: Vec<&str> = text.lines().filter(|l| !memory::is_expired(l, today)).collect();
    let n = lines.iter().filter(|l| l.starts_with("- `memory/")).count();
    (lines.join("\n").trim().to_owned(), n)
}

/// File bytes as text: invalid UTF-8 replaced, CRLF line ends made LF.
fn text_of(bytes: &[u8]) -> String {
    // SIMD validation: std's validator was the largest single cost of a load on CJK text.
    let text = match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    };
    if memchr::memchr(b'\r', text.as_bytes()).is_some() { text.replace("\r\n", "\n") } else { text }
}

/// `text` without leading and trailing whitespace, copied only when there is any.
fn trimmed(text: String) -> String {
    let t = text.trim();
    if t.len() == text.len() { text } else { t.to_owned() }
}

/// Reads `rel` of a pack (or of the global memory root) as text: `None` when it is missing,
/// not a regular file, or reached through a symbolic link (never followed, see
/// [`crate::pack_root`]).
pub(crate) fn read_pack_text(root: &PackRoot, rel: &str) -> Result<Option<String>> {
    let path = PackPath::parse(rel)
        .map_err(|e| EngramError::BadPath { path: rel.to_owned(), reason: e.to_string() })?;
    match root.read(&path, text_of) {
        Ok(Found::Here(text)) => Ok(Some(text)),
        Ok(_) => Ok(None),
        Err(e) => Err(EngramError::Unreadable {
            path: root.full(&path).display().to_string(),
            reason: e.to_string(),
        }),
    }
}

/// Opens the handle every read of a pack goes through.
pub(crate) fn open_root(dir: &Path) -> Result<PackRoot> {
    PackRoot::open(dir)
        .map_err(|e| EngramError::Unreadable { path: dir.display().to_string(), reason: e.to_string() })
}

/// A fixed pack-relative path of engram's own layout.
fn fixed(path: &'static str) -> PackPath {
    PackPath::parse(path).unwrap_or_else(|e| unreachable!("{path} is a plain relative path: {e}"))
}

/// The reference's onboarding test: `_onboarded` exists, or memory/ holds another file.
fn onboarded(root: &PackRoot) -> bool {
    if matches!(root.stat(&fixed("memory/_onboarded")), Ok(Found::Here(_))) {
        return true;
    }
    let Ok(Found::Here(entries)) = root.list(Some(&fixed("memory"))) else { return false };
    entries.iter().any(|(name, kind)| {
        *kind == Kind::File && !matches!(name.as_str(), "_index.md" | "_index_full.md" | "_onboarded")
    })
}

/// What marks an index line's expiry date (`expires:YYYY-MM-DD`).
const EXPIRES_MARK: &str = "expires:";

fn earliest_expiry(index: &FullIndex) -> Option<NaiveDate> {
    index
        .entry_lines()
        .iter()
        .filter_map(|l| {
            let pos = l.find(EXPIRES_MARK)?;
            let date = l.get(pos + 8..pos + 18)?;
            NaiveDate::parse_from_str(date, "%Y-%m-%d").ok()
        })
        .min()
}

/// The reference's onboarding regex `##\s+Onboarding\s*\n(.*?)(?=\n##|\Z)` (DOTALL), by hand.
pub(super) fn onboarding_section(rules: &str) -> Option<String> {
    let mut from = 0;
    while let Some(off) = rules[from..].find("##") {
        let start = from + off;
        from = start + 1;
        let after_hashes = &rules[start + 2..];
        let ws: usize = after_hashes.chars().take_while(|c| c.is_whitespace()).map(char::len_utf8).sum();
        if ws == 0 {
            continue;
        }
        let Some(after_word) = after_hashes[ws..].strip_prefix("Onboarding") else { continue };
        let ws_run: usize = after_word.chars().take_while(|c| c.is_whitespace()).map(char::len_utf8).sum();
        // Greedy `\s*` then `\n`: the group starts after the last newline of the run.
        let Some(nl) = after_word[..ws_run].rfind('\n') else { continue };
        let body = &after_word[nl + 1..];
        let end = body.find("\n##").unwrap_or(body.len());
        return Some(body[..end].trim().to_owned());
    }
    None
}

/// The hot index as the expiry pass would leave `snap` for `today` (`None` when the pass has
/// nothing to do), and the earliest expiry date left.
fn pending_hot_index(snap: &Snapshot<'_>, today: NaiveDate) -> Result<(Option<Pending>, Option<NaiveDate>)> {
    let ExpiryPlan { changes, earliest, .. } = expiry_plan(snap, today)?;
    let Some((changes, _)) = changes else { return Ok((None, earliest)) };
    let text = match changes.get(HOT_INDEX) {
        Some(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        None => snap.read_text(HOT_INDEX)?.unwrap_or_default(),
    };
    Ok((Some((today, std::sync::Arc::new(text))), earliest))
}

/// The hot index a load shows when `state` (for the current HEAD) settles it for `today`:
/// `None` when the expiry pass must look again (something expired since it looked).
fn settled_view(state: &ExpiryState, today: NaiveDate) -> Option<HotIndex> {
    match &state.pending {
        Some((day, text)) if *day == today => Some(HotIndex::Pending(text.clone())),
        Some(_) => None,
        None => state.earliest.is_none_or(|d| d >= today).then_some(HotIndex::File),
    }
}

impl Engram {
    /// The expiry pass, run by the memory tools before they write (reads never commit): when
    /// something expired, or the full index still needs to be migrated, expired entries move
    /// to `<category>-expired.md` in one commit of their own. `repo` is the repository of
    /// `memory_root`, held by the caller.
    ///
    /// Costs nothing on the common write: this process remembers, per memory root, the
    /// earliest expiry date as of the HEAD it last wrote or read; a commit by someone else
    /// between two of its writes drops that (see [`Engram::note_expiry_after_write`]), so the
    /// pass looks again at the next write.
    pub(super) fn expire_before_write(
        &self,
        repo: &PackRepo,
        memory_root: &Path,
        caller: &Caller,
    ) -> Result<()> {
        // A read-only server never commits; expired entries are hidden from answers anyway.
        if self.config.store.read_only {
            return Ok(());
        }
        let today = self.now().date_naive();
        {
            let cache = self.expiry_cache.lock().unwrap_or_else(|p| p.into_inner());
            if cache
                .get(memory_root)
                .is_some_and(|s| s.pending.is_none() && s.earliest.is_none_or(|d| d >= today))
            {
                return Ok(());
            }
        }
        let now = self.now();
        let (_, earliest) = repo.write(|snap| {
            let plan = expiry_plan(snap, today)?;
            let (changes, subject) = match plan.changes {
                Some(c) if plan.expired > 0 => c,
                // A full index still to be migrated is migrated by the memory write itself
                // (until then a load shows the migrated hot index: remember nothing here).
                Some(_) => return Ok::<_, EngramError>(Edit::Nothing(None)),
                None => return Ok(Edit::Nothing(Some(plan.earliest))),
            };
            let message = caller.commit_message(subject, now.timestamp());
            Ok(Edit::Commit { changes, message, value: Some(plan.earliest) })
        })?;
        let Some(earliest) = earliest else { return Ok(()) };
        let head = repo.head_id().unwrap_or_default();
        self.expiry_cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(memory_root.to_owned(), ExpiryState { head, earliest, stamps: None, pending: None });
        Ok(())
    }

    /// What a load shows of `memory_root`'s hot index (callers check that `memory/` is a
    /// directory): the file, or — when entries expired, or the full index still needs
    /// migrating — the hot index as the expiry pass will leave it, computed on HEAD and not
    /// committed (the next memory write commits it). Reads git; never writes.
    fn hot_index_of(&self, root: &PackRoot) -> Result<HotIndex> {
        let memory_root = root.path();
        let today = self.now().date_naive();
        let known = {
            let cache = self.expiry_cache.lock().unwrap_or_else(|p| p.into_inner());
            cache.get(memory_root).cloned()
        };
        // HEAD without asking git when the stamps of its files prove it did not move.
        let proven = known.as_ref().filter(|k| k.stamps.as_ref().is_some_and(|s| s.unchanged(memory_root)));
        let (head, stamps, proven) = match proven {
            Some(state) => (state.head.clone(), state.stamps.clone(), true),
            None => {
                let stamps = HeadStamps::take(memory_root, std::time::SystemTime::now());
                // Not a repository yet: read as it is, and no repository is made.
                let Some(head) =
                    self.with_existing_repo(memory_root, |r| Ok(r.head_id().unwrap_or_default()))?
                else {
                    let (hot, _) = crate::store::read_folder(memory_root, "memory", |snap| {
                        pending_hot_index(snap, today)
                    })?;
                    return Ok(hot.map_or(HotIndex::File, |(_, text)| HotIndex::Pending(text)));
                };
                (head, stamps, false)
            }
        };
        if let Some(state) = known.filter(|s| s.head == head)
            && let Some(view) = settled_view(&state, today)
        {
            if !proven {
                let mut cache = self.expiry_cache.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(entry) = cache.get_mut(memory_root).filter(|s| s.head == head) {
                    entry.stamps = stamps;
                }
            }
            return Ok(view);
        }
        let plan = self.with_existing_repo(memory_root, |repo| {
            repo.read_head(|snap| -> Result<_> {
                let (hot, earliest) = pending_hot_index(snap, today)?;
                Ok((snap.head().unwrap_or_default(), hot, earliest))
            })
        })?;
        let Some((at, pending, earliest)) = plan else { return Ok(HotIndex::File) };
        // Stamps taken before HEAD was read prove only that commit.
        let stamps = if at == head { stamps } else { None };
        let view = match &pending {
            Some((_, text)) => HotIndex::Pending(text.clone()),
            None => HotIndex::File,
        };
        self.expiry_cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(memory_root.to_owned(), ExpiryState { head: at, earliest, stamps, pending });
        Ok(view)
    }

    /// Records what this process knows after its own write (keeps loads O(1)).
    /// `expiry_ran`: the write ran the expiry pass first; a write that did not (a tool trace)
    /// while expired entries were waiting forgets what it knew, so the next load hides them
    /// again and the next write moves them.
    pub(super) fn note_expiry_after_write(
        &self,
        root: &Path,
        old_head: &str,
        new_head: &str,
        added: Option<&str>,
        expiry_ran: bool,
    ) {
        let today = self.now().date_naive();
        let mut cache = self.expiry_cache.lock().unwrap_or_else(|p| p.into_inner());
        let Some(state) = cache
            .get(root)
            .filter(|s| s.head == old_head)
            .filter(|s| expiry_ran || (s.pending.is_none() && s.earliest.is_none_or(|d| d >= today)))
            .cloned()
        else {
            cache.remove(root);
            return;
        };
        let added = added.and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok());
        let earliest = match (state.earliest, added) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        cache.insert(
            root.to_owned(),
            ExpiryState { head: new_head.to_owned(), earliest, stamps: None, pending: None },
        );
    }

    /// What this process knows, from stamps alone (no git, no lock), about the hot index a
    /// load shows: `None` when it must look (HEAD moved or was never looked at).
    fn hot_index_if_known(&self, root: &PackRoot) -> Option<HotIndex> {
        let today = self.now().date_naive();
        let cache = self.expiry_cache.lock().unwrap_or_else(|p| p.into_inner());
        let state = cache.get(root.path())?;
        if !state.stamps.as_ref().is_some_and(|s| s.unchanged(root.path())) {
            return None;
        }
        settled_view(state, today)
    }

    /// `load_engram`. Never commits: expired entries are hidden (the hot index is shown as
    /// the expiry pass will leave it), and the next memory write moves them.
    pub fn load_engram(&self, name: &str, query: &str) -> Result<String> {
        if let Some(text) = self.load_engram_proposed(name, query)? {
            return Ok(text);
        }
        let text = self.load_with(name, query, &|root| self.hot_index_of(root).map(Some))?;
        Ok(text.unwrap_or_default())
    }

    /// `load_engram` when it needs neither git nor a lock: the answer, or `None` when this
    /// process has not looked at the pack's HEAD since it last moved and
    /// [`Engram::load_engram`] must run. Reads a few small files and nothing else, so a server
    /// may answer on its own thread instead of handing the call to a blocking one.
    pub fn load_engram_if_settled(&self, name: &str, query: &str) -> Option<Result<String>> {
        self.load_with(name, query, &|root| {
            Ok(if self.proposes_at(root.path()) { None } else { self.hot_index_if_known(root) })
        })
        .transpose()
    }

    /// `load_engram` with the hot index of a memory root given: `hot(root)` answers `None`
    /// to give up.
    fn load_with(
        &self,
        name: &str,
        query: &str,
        hot: &dyn Fn(&PackRoot) -> Result<Option<HotIndex>>,
    ) -> Result<Option<String>> {
        limits::check_query("query", query)?;
        let packs = self.packs();
        let (pack, meta) = packs.resolve_with_meta(name)?;
        let root = open_root(&pack.dir)?;
        let has_memory_dir = root.is_dir(&fixed("memory"));
        let pack_hot = if has_memory_dir {
            match hot(&root)? {
                Some(h) => h,
                None => return Ok(None),
            }
        } else {
            HotIndex::File
        };
        let today = self.now().date_naive();
        let Some(global_text) = self.global_memory_text(hot, today)? else { return Ok(None) };
        let read = |rel: &str| match (&pack_hot, rel == HOT_INDEX) {
            (HotIndex::Pending(text), true) => Ok(Some(text.as_ref().clone())),
            _ => read_pack_text(&root, rel),
        };
        let view = PackView { read: &read, has_memory_dir, onboarded: onboarded(&root), today };
        let mut text = self.render_load_with_meta(name, query, &view, &global_text, Some(&meta))?;
        if let Some(hidden) = packs.shadowed_by(&pack) {
            text.push_str(&format!(
                "\n\n⚠ 同名包被遮蔽 (shadowed): this is {}; the pack {} of the same name is hidden, and memories go to this one (rename one directory to use both)",
                pack.dir.display(),
                hidden.display()
            ));
        }
        Ok(Some(text))
    }

    /// The global memory a load shows (its hot index without expired lines; empty without
    /// one); `None` when `hot` gives up.
    fn global_memory_text(
        &self,
        hot: &dyn Fn(&PackRoot) -> Result<Option<HotIndex>>,
        today: NaiveDate,
    ) -> Result<Option<String>> {
        let global = self.config.packs_dir.join(crate::pack::GLOBAL_DIR);
        let Some(global) = PackRoot::open(&global).ok().filter(|g| g.is_dir(&fixed("memory"))) else {
            return Ok(Some(String::new()));
        };
        let Some(global_hot) = hot(&global)? else { return Ok(None) };
        let text = match global_hot {
            HotIndex::File => read_pack_text(&global, HOT_INDEX)?.unwrap_or_default(),
            HotIndex::Pending(text) => text.as_ref().clone(),
        };
        Ok(Some(active_lines(&text, today).0))
    }

    /// The global memory a load shows today (see [`Engram::load_engram`]).
    pub(super) fn global_memory_for_load(&self, today: NaiveDate) -> Result<String> {
        Ok(self.global_memory_text(&|root| self.hot_index_of(root).map(Some), today)?.unwrap_or_default())
    }

    /// Renders `load_engram`'s text from a view of the pack (working tree or a past commit).
    pub(super) fn render_load(
        &self,
        name: &str,
        query: &str,
        view: &PackView<'_>,
        global_text: &str,
    ) -> Result<String> {
        self.render_load_with_meta(name, query, view, global_text, None)
    }

    /// [`Engram::render_load`] with the pack's `meta.json` already parsed (`None`: read it
    /// through the view).
    fn render_load_with_meta(
        &self,
        name: &str,
        query: &str,
        view: &PackView<'_>,
        global_text: &str,
        meta: Option<&serde_json::Map<String, serde_json::Value>>,
    ) -> Result<String> {
        let read = |rel: &str| -> Result<String> { Ok(trimmed((view.read)(rel)?.unwrap_or_default())) };
        // The answer is written into one buffer: the header, then each non-empty section after
        // a blank line, then the footer (no section at all: the "no context" answer instead).
        let mut out = String::with_capacity(16 * 1024);
        for part in ["# 已加载 Engram: ", name, "\n\n## 用户关注方向\n", query] {
            out.push_str(part);
        }
        let header = out.len();
        let section = |out: &mut String, parts: &[&str]| {
            out.push_str("\n\n");
            parts.iter().for_each(|p| out.push_str(p));
        };
        let mut rules = String::new();
        for (title, file) in [("角色", "role.md"), ("工作流程", "workflow.md"), ("规则", "rules.md")]
        {
            let text = read(file)?;
            if !text.is_empty() {
                section(&mut out, &["## ", title, "\n", &text]);
            }
            if file == "rules.md" {
                rules = text;
            }
        }
        let read_meta;
        let meta = match meta {
            Some(meta) => meta,
            None => {
                read_meta = serde_json::from_str(&read("meta.json")?).unwrap_or_default();
                &read_meta
            }
        };
        if let Some(parent) = meta.get("extends").and_then(|v| v.as_str()).filter(|s| !s.is_empty())
            && let Some(parent_dir) = self.packs().resolve_dir_name(parent)
        {
            let text = read_pack_text(&open_root(&parent_dir)?, "knowledge/_index.md")?.unwrap_or_default();
            if !text.trim().is_empty() {
                section(&mut out, &["## 继承知识索引（来自 ", parent, "）\n", text.trim()]);
            }
        }
        for (title, file) in [("知识索引", "knowledge/_index.md"), ("案例索引", "examples/_index.md")]
        {
            let text = read(file)?;
            if !text.is_empty() {
                section(&mut out, &["## ", title, "\n", &text]);
            }
        }
        if view.has_memory_dir {
            let (active, n) = active_lines(&(view.read)(HOT_INDEX)?.unwrap_or_default(), view.today);
            if !active.is_empty() {
                section(&mut out, &["## 动态记忆\n<memory>\n", &active, "\n</memory>"]);
                if n >= CONSOLIDATE_HINT_THRESHOLD {
                    out.push_str(&format!(
                        "\n💡 当前共 {n} 条记忆，建议对条目较多的 category 调用 consolidate_memory 压缩。"
                    ));
                }
            }
        }
        if !global_text.is_empty() {
            section(&mut out, &["## 全局用户记忆\n<global_memory>\n", global_text, "\n</global_memory>"]);
        }
        if !view.onboarded
            && let Some(text) = onboarding_section(&rules)
            && !text.is_empty()
        {
            section(
                &mut out,
                &["## 首次引导\n> 这是用户首次使用此专家，请在对话中自然地了解以下信息并记录：\n\n", &text],
            );
        }
        // Every section starts with a heading: the sections are blank only when there are none.
        if out.len() == header {
            return Ok(format!("Engram {name} 没有可用上下文。"));
        }
        out.push_str(
            "\n\n## 下一步\n请查看知识索引中的摘要，按需调用 read_engram_file(name, path) 读取完整知识或案例。",
        );
        Ok(out)
    }

    /// `read_engram_file`.
    pub fn read_engram_file(&self, name: &str, path: &str) -> Result<String> {
        // The reference answers every unreachable path with 未找到文件; keep that, and say why.
        let rel = crate::ops::user_path(path).map_err(|e| match e {
            EngramError::BadPath { path, reason } => {
                EngramError::FileNotFound { path: format!("{path} ({reason})") }
            }
            other => other,
        })?;
        let pack = self.resolve(name)?;
        if let Some(tip) = self.proposal_read_target(&pack.dir)? {
            return self.read_engram_file_as_of(name, path, &tip);
        }
        let unreadable =
            |e: std::io::Error| EngramError::Unreadable { path: path.to_owned(), reason: e.to_string() };
        let root = PackRoot::open(&pack.dir).map_err(unreadable)?;
        let file = match root.open_file(&rel).map_err(unreadable)? {
            Found::Here(file) => file,
            Found::Link => {
                return Err(EngramError::FileNotFound {
                    path: format!("{path} (goes through a symbolic link, which is never followed)"),
                });
            }
            Found::Missing | Found::NotDir => {
                return Err(EngramError::FileNotFound { path: path.to_owned() });
            }
        };
        let meta = file.metadata().map_err(unreadable)?;
        if !meta.is_file() {
            return Err(EngramError::FileNotFound { path: path.to_owned() });
        }
        if meta.len() as usize > limits::MAX_READ_BYTES {
            return Err(EngramError::Unreadable {
                path: path.to_owned(),
                reason: format!(
                    "file is {} bytes; the limit is {} bytes",
                    meta.len(),
                    limits::MAX_READ_BYTES
                ),
            });
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        std::io::Read::read_to_end(
            &mut std::io::Read::take(&file, limits::MAX_READ_BYTES as u64 + 1),
            &mut bytes,
        )
        .map_err(unreadable)?;
        let text = String::from_utf8(bytes).map_err(|_| EngramError::Unreadable {
            path: path.to_owned(),
            reason: "not UTF-8 text (binary file?)".into(),
        })?;
        Ok(render_file(path, &text))
    }
}

/// `read_engram_file`'s text for a file's content.
pub(super) fn render_file(path: &str, text: &str) -> String {
    let text = text.replace("\r\n", "\n");
    let text = text.trim();
    if text.is_empty() {
        return format!("文件为空: {path}");
    }
    format!("## {path}\n{text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_lines_counts_entry_lines_as_the_line_by_line_rule_does() {
        let today = NaiveDate::from_ymd_opt(2026, 11, 24).expect("date");
        let by_lines = |t: &str| t.lines().filter(|l| l.starts_with("- `memory/")).count();
        for text in [
            "",
            "- `memory/a.md` [2026-11-01 10:00] [fact] first line is an entry",
            "## 分类摘要\n- `a` 2 条\n\n## 最近\n- `memory/a.md` [x] one\n- `memory/b.md` [x] two\n",
            "not an entry - `memory/a.md`\n  - `memory/indented.md`\n- `memory/c.md` three",
        ] {
            let (active, n) = active_lines(text, today);
            assert_eq!(n, by_lines(text), "{text:?}");
            assert_eq!(active, text.trim());
        }
        // With an expiring entry, the expired line is dropped and not counted.
        let text = "- `memory/a.md` [2026-01-01 10:00] [fact] [expires:2026-02-01] old\n- `memory/b.md` [2026-11-01 10:00] [fact] kept";
        let (active, n) = active_lines(text, today);
        assert_eq!((active.as_str(), n), ("- `memory/b.md` [2026-11-01 10:00] [fact] kept", 1));
    }

    #[test]
    fn onboarding_regex_quirks() {
        assert_eq!(onboarding_section("## Onboarding\n- a\n- b\n## Next\nx").as_deref(), Some("- a\n- b"));
        assert_eq!(onboarding_section("### Onboarding\n- a\n### sub\n").as_deref(), Some("- a"));
        assert_eq!(onboarding_section("## onboarding\n- a"), None);
        assert_eq!(onboarding_section("##Onboarding\n- a"), None);
        assert_eq!(onboarding_section("## Onboarding 首次\n- a"), None);
        // An empty section followed by blank lines captures the next heading.
        assert_eq!(onboarding_section("## Onboarding\n\n## Next\nbody").as_deref(), Some("## Next\nbody"));
    }

    fn git(dir: &Path, args: &[&str]) {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
            .args(args)
            .current_dir(dir)
            .output()
            .expect("git");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    #[test]
    fn head_stamps_change_whenever_head_moves() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path();
        git(root, &["init", "-q", "-b", "main"]);
        git(root, &["commit", "-q", "--allow-empty", "-m", "one"]);
        let later = || std::time::SystemTime::now() + std::time::Duration::from_secs(1);
        // Just written: not settled yet, so not trusted.
        assert!(HeadStamps::take(root, std::time::SystemTime::now() - SETTLED * 10).is_none());
        let stamps = HeadStamps::take(root, later()).expect("stamps of a loose ref");
        assert!(stamps.unchanged(root));
        git(root, &["commit", "-q", "--allow-empty", "-m", "two"]);
        assert!(!stamps.unchanged(root), "a commit rewrites the loose ref");
        // Packed refs: the loose file goes away, then comes back with the next commit.
        let stamps = HeadStamps::take(root, later()).expect("stamps");
        git(root, &["pack-refs", "--all"]);
        assert!(!stamps.unchanged(root), "packing deletes the loose ref");
        let packed = HeadStamps::take(root, later()).expect("stamps of a packed ref");
        assert!(packed.unchanged(root));
        git(root, &["commit", "-q", "--allow-empty", "-m", "three"]);
        assert!(!packed.unchanged(root), "a commit writes a loose ref again");
        // Another branch checked out, and a detached HEAD.
        let stamps = HeadStamps::take(root, later()).expect("stamps");
        git(root, &["checkout", "-q", "-b", "other"]);
        assert!(!stamps.unchanged(root), "HEAD names another branch");
        git(root, &["checkout", "-q", "--detach"]);
        let detached = HeadStamps::take(root, later()).expect("stamps of a detached HEAD");
        git(root, &["commit", "-q", "--allow-empty", "-m", "four"]);
        assert!(!detached.unchanged(root));
    }

    #[test]
    fn pack_files_read_plainly_and_links_read_as_missing() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let (pack, outside) = (tmp.path().join("pack"), tmp.path().join("outside"));
        fs::create_dir_all(pack.join("memory")).expect("mkdir");
        fs::create_dir_all(&outside).expect("mkdir");
        fs::write(pack.join("role.md"), "a\r\nb\r\n").expect("write");
        fs::write(pack.join("memory/_index.md"), "m").expect("write");
        fs::write(outside.join("x.md"), "outside").expect("write");
        std::os::unix::fs::symlink(outside.join("x.md"), pack.join("out.md")).expect("link");
        std::os::unix::fs::symlink(&outside, pack.join("knowledge")).expect("link");
        std::os::unix::fs::symlink(pack.join("role.md"), pack.join("in.md")).expect("link");
        let root = PackRoot::open(&pack).expect("open");
        let read = |rel: &str| read_pack_text(&root, rel).expect("read");
        assert_eq!(read("role.md").as_deref(), Some("a\nb\n"));
        assert_eq!(read("memory/_index.md").as_deref(), Some("m"));
        assert_eq!(read("in.md"), None, "a link is never followed, not even inside the pack");
        assert_eq!(read("out.md"), None);
        assert_eq!(read("knowledge/x.md"), None);
        assert_eq!(read("memory"), None);
        assert_eq!(read("missing/_index.md"), None);
        assert_eq!(read("role.md/x"), None);
        assert!(read_pack_text(&root, ".git/config").is_err(), "not a pack path");
    }

    #[test]
    fn relative_paths_are_checked() {
        assert_eq!(
            crate::ops::user_path("knowledge\\a.md").ok().map(PackPath::into_string).as_deref(),
            Some("knowledge/a.md")
        );
        for bad in ["../x", "/etc/passwd", ".git/config", "a/../../b", "", "C:/x"] {
            assert!(crate::ops::user_path(bad).is_err(), "{bad}");
        }
    }
}
