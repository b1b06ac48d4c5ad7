//! Encrypted remotes (`engram remote add <pack> <url> --encrypt`, issue #38): the remote is an
//! ordinary git repository reached by any transport, but it holds only opaque files.
//!
//! The remote's branch [`CIPHER_BRANCH`] holds `manifest` and `p/<id>`: each `p/<id>` is one
//! git packfile of the pack's history (the commits the previous manifest did not cover),
//! sealed with the pack's key, and `manifest` is the sealed list of those files with the
//! plain branch's tip. Its commits have a fixed author and message, and their depth on the
//! branch as their time. Sealing is ChaCha20-Poly1305 (ring) with a random nonce per object;
//! the plain text is padded to a size bucket first, so a memory's size shows only to within
//! the bucket.
//!
//! Every device keeps a plain repository: a fetch decrypts and indexes the pack files it
//! lacks into the pack's object database and sets `refs/remotes/<remote>/<branch>` to the
//! manifest's tip, so integration (and everything after it) is the plain remote's. The
//! sealed objects live in a bare repository of their own, `.git/engram-encrypted-<remote>`,
//! never in the pack's refs. Whatever fails to open (a wrong key, an object changed or cut
//! short on the remote) is refused before anything is written to the pack.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use git2::{ErrorCode, FetchOptions, Oid, PushOptions, Repository};
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};

use super::{Credentials, Session};
use crate::store::{PackRepo, PushOutcome, StoreError};

/// The branch an encrypted remote holds (and the only one engram pushes there).
pub const CIPHER_BRANCH: &str = "refs/heads/engram-encrypted";

/// The key of `.git/config` marking a remote as encrypted: `remote.<name>.engram-encrypt`.
const CONFIG_FLAG: &str = "engram-encrypt";

/// Where the cache repository keeps the remote's branch as of the last fetch or push.
const CACHE_REF: &str = "refs/engram/remote";

/// First bytes of every sealed object; also bound into its authentication.
const MAGIC: &[u8; 8] = b"ENGRAMX1";

/// The message of every commit on the cipher branch.
const CIPHER_MESSAGE: &str = "engram encrypted pack\n";

/// The largest sealed object a fetch reads (by its object header, before reading it): a
/// remote someone without the key filled with a huge object costs no memory.
const MAX_SEALED_BYTES: usize = 1 << 30;

/// Bytes of a key.
const KEY_LEN: usize = 32;

/// The first line of a key file, before the key in hex.
const KEY_HEADER: &str = "engram-pack-key-1";

/// Errors of encrypted remotes. No message ever holds a key.
#[derive(Debug, thiserror::Error)]
pub enum CryptError {
    /// The pack has no key on this device.
    #[error(
        "{pack} syncs with an encrypted remote but this device has no key for it ({path} is missing): copy the key file from a device that has it and run `engram key import {pack} FILE`. Nothing was written"
    )]
    NoKey {
        /// The pack.
        pack: String,
        /// Where the key was looked for.
        path: PathBuf,
    },
    /// A key file cannot be read or is not a key.
    #[error("{path} is not an engram pack key: {reason}")]
    BadKey {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A sealed object did not open: the wrong key, or the object was changed or cut short.
    #[error(
        "the remote's {what} does not open with this pack's key: the key is not the one the pack was encrypted with, or the object was changed or cut short on the remote. Nothing was changed locally"
    )]
    Refused {
        /// Which object (`manifest`, `pack file <id>`).
        what: String,
    },
    /// A remote holds an encrypted pack and was used without the key.
    #[error(
        "{url} holds an encrypted pack: install it with `engram install {url} --key FILE` (the key file comes from a device that has the pack). Nothing was installed"
    )]
    NeedsKey {
        /// The remote.
        url: String,
    },
    /// `install --key` from a remote that holds no encrypted pack.
    #[error("{url} holds no encrypted pack (no branch engram-encrypted): install it without --key")]
    NotEncrypted {
        /// The remote.
        url: String,
    },
    /// A file of the pack is larger than engram reads.
    #[error("{} is {} bytes; a pack file may be at most {} bytes (engram would not read it)", .0.path, .0.size, .0.max)]
    Oversized(Oversized),
    /// A git step failed.
    #[error("{step} ({dir}): {source}")]
    Git {
        /// What was being done.
        step: &'static str,
        /// The repository.
        dir: PathBuf,
        /// The cause.
        #[source]
        source: git2::Error,
    },
    /// A file could not be read or written.
    #[error("cannot {step} {path}: {source}")]
    Io {
        /// What was being done.
        step: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The store or the transport failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A file too large to install, by its object header.
#[derive(Debug)]
pub struct Oversized {
    /// The file.
    pub path: String,
    /// Its size.
    pub size: usize,
    /// The limit.
    pub max: usize,
}

type Result<T> = std::result::Result<T, CryptError>;

fn git<'a>(step: &'static str, dir: &'a Path) -> impl FnOnce(git2::Error) -> CryptError + 'a {
    move |source| CryptError::Git { step, dir: dir.to_owned(), source }
}

/// A pack's key: 32 random bytes, kept in a file of mode 600 outside the pack.
pub struct Key([u8; KEY_LEN]);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(..)")
    }
}

impl Key {
    /// A new random key.
    pub fn generate() -> Result<Self> {
        let mut bytes = [0u8; KEY_LEN];
        SystemRandom::new().fill(&mut bytes).map_err(|_| CryptError::BadKey {
            path: PathBuf::new(),
            reason: "the system's random number generator failed".into(),
        })?;
        Ok(Self(bytes))
    }

    /// Reads a key file.
    pub fn read(path: &Path) -> Result<Self> {
        let text = fs::read_to_string(path).map_err(|source| CryptError::Io {
            step: "read",
            path: path.to_owned(),
            source,
        })?;
        let bad = |reason: &str| CryptError::BadKey { path: path.to_owned(), reason: reason.to_owned() };
        let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'));
        if lines.next() != Some(KEY_HEADER) {
            return Err(bad("its first line is not `engram-pack-key-1`"));
        }
        let hex = lines.next().ok_or_else(|| bad("the key line is missing"))?;
        if hex.len() != KEY_LEN * 2 {
            return Err(bad("the key line is not 64 hexadecimal digits"));
        }
        let mut bytes = [0u8; KEY_LEN];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)
                .map_err(|_| bad("the key line is not 64 hexadecimal digits"))?;
        }
        Ok(Self(bytes))
    }

    /// Writes the key to a new file of mode 600 (its directory made with mode 700); an
    /// existing file is never replaced.
    pub fn write_new(&self, path: &Path) -> Result<()> {
        let io = |step, source| CryptError::Io { step, path: path.to_owned(), source };
        if let Some(dir) = path.parent() {
            let mut builder = fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder.create(dir).map_err(|e| io("create the directory of", e))?;
        }
        let mut options = fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(path).map_err(|e| io("create", e))?;
        let hex: String = self.0.iter().map(|b| format!("{b:02x}")).collect();
        let text = format!(
            "# The key of an engram pack's encrypted remote. Keep it secret: whoever has it reads the pack.\n{KEY_HEADER}\n{hex}\n"
        );
        file.write_all(text.as_bytes()).and_then(|()| file.sync_all()).map_err(|e| io("write", e))
    }

    fn aead(&self) -> LessSafeKey {
        LessSafeKey::new(UnboundKey::new(&CHACHA20_POLY1305, &self.0).expect("a 32-byte ChaCha20 key"))
    }
}

/// Whether `remote` of the pack in `pack_dir` is encrypted (`remote.<name>.engram-encrypt`).
pub fn is_encrypted(pack_dir: &Path, remote: &str) -> bool {
    Repository::open(pack_dir)
        .and_then(|r| r.config())
        .and_then(|c| c.get_bool(&format!("remote.{remote}.{CONFIG_FLAG}")))
        .unwrap_or(false)
}

/// Marks `remote` of the pack in `pack_dir` as encrypted, in `.git/config` (never committed).
pub fn set_encrypted(pack_dir: &Path, remote: &str) -> Result<()> {
    let repo = Repository::open(pack_dir).map_err(git("opening the pack", pack_dir))?;
    let mut config = repo.config().map_err(git("reading config", pack_dir))?;
    config.set_bool(&format!("remote.{remote}.{CONFIG_FLAG}"), true).map_err(git("writing config", pack_dir))
}

/// The plain text of a manifest.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Manifest {
    /// The plain branch (`main`), for an install.
    branch: String,
    /// The plain branch's tip.
    tip: String,
    /// The live pack files, oldest first: together they hold every object of `tip`.
    packs: Vec<PackEntry>,
}

/// One live pack file: the objects of `tip` that the pack files before it do not hold.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct PackEntry {
    /// The git id of its sealed blob (its name under `p/`).
    id: String,
    /// The plain commit it brings the history up to.
    tip: String,
    /// Its plain size.
    bytes: u64,
}

/// The smallest sealed pack file. With [`PAD_STEP`] a push of one memory shows its size only
/// to within 1 KiB (docs/encrypted-remotes.md weighs this against the remote's size).
const MIN_PACK_BYTES: usize = 1024;

/// The smallest sealed manifest (its size only says how many pack files are live).
const MIN_MANIFEST_BYTES: usize = 512;

/// The finest padding step: sizes under 16 KiB are padded to a multiple of 1 KiB.
const PAD_STEP: usize = 1024;

/// The size a sealed plain text of `n` bytes (with its length prefix) is padded to: at least
/// `min`, then a multiple of [`PAD_STEP`] or of 1/16 of the power of two below it, whichever
/// is larger (at most 1 KiB more under 16 KiB, at most 6.25 % more above).
fn bucket(n: usize, min: usize) -> usize {
    if n <= min {
        return min;
    }
    let step = (1usize << (usize::BITS - 1 - n.leading_zeros() - 4)).max(PAD_STEP);
    n.div_ceil(step) * step
}

/// `MAGIC ‖ nonce ‖ ChaCha20-Poly1305(len ‖ plain ‖ zeros)`, authenticated with `kind`.
fn seal(key: &Key, kind: &str, plain: &[u8], min: usize) -> Result<Vec<u8>> {
    let mut nonce = [0u8; NONCE_LEN];
    SystemRandom::new().fill(&mut nonce).map_err(|_| CryptError::BadKey {
        path: PathBuf::new(),
        reason: "the system's random number generator failed".into(),
    })?;
    let padded = bucket(plain.len() + 8, min);
    let mut body = Vec::with_capacity(padded + 16);
    body.extend_from_slice(&(plain.len() as u64).to_le_bytes());
    body.extend_from_slice(plain);
    body.resize(padded, 0);
    key.aead()
        .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), aad(kind), &mut body)
        .expect("sealing a buffer in memory");
    let mut out = Vec::with_capacity(MAGIC.len() + NONCE_LEN + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&body);
    Ok(out)
}

/// The plain text of a sealed object, or `Refused` naming `what`.
fn open(key: &Key, kind: &str, sealed: &[u8], what: impl Fn() -> String) -> Result<Vec<u8>> {
    let refused = || CryptError::Refused { what: what() };
    let head = MAGIC.len() + NONCE_LEN;
    if sealed.len() < head + 16 + 8 || &sealed[..MAGIC.len()] != MAGIC {
        return Err(refused());
    }
    let nonce = Nonce::try_assume_unique_for_key(&sealed[MAGIC.len()..head]).map_err(|_| refused())?;
    let mut body = sealed[head..].to_vec();
    let plain = key.aead().open_in_place(nonce, aad(kind), &mut body).map_err(|_| refused())?;
    let len = u64::from_le_bytes(plain[..8].try_into().expect("eight bytes")) as usize;
    if len > plain.len() - 8 {
        return Err(refused());
    }
    Ok(plain[8..8 + len].to_vec())
}

fn aad(kind: &str) -> Aad<Vec<u8>> {
    let mut bytes = MAGIC.to_vec();
    bytes.extend_from_slice(kind.as_bytes());
    Aad::from(bytes)
}

/// The bare repository holding what the remote holds, `.git/engram-encrypted-<remote>`.
fn cache_repo(repo: &PackRepo, remote: &str) -> Result<Repository> {
    let dir = repo.cache_file(&format!("encrypted-{remote}"));
    match Repository::open_bare(&dir) {
        Ok(r) => Ok(r),
        Err(e) if e.code() == ErrorCode::NotFound => {
            Repository::init_bare(&dir).map_err(git("creating the encrypted remote's cache", &dir))
        }
        Err(e) => Err(git("opening the encrypted remote's cache", &dir)(e)),
    }
}

fn remote_url(repo: &PackRepo, remote: &str) -> Result<String> {
    Ok(repo.remotes()?.into_iter().find(|r| r.name == remote).map(|r| r.url).unwrap_or_default())
}

/// Fetches the remote's cipher branch into `cache`; returns its tip, `None` when the remote
/// has no encrypted pack yet.
fn fetch_cipher(
    cache: &Repository,
    url: &str,
    creds: &Credentials,
    config: Option<&git2::Config>,
) -> Result<Option<Oid>> {
    let session = Session::new(creds, url, config)?;
    let mut remote = cache.remote_anonymous(url).map_err(git("reading a remote", cache.path()))?;
    let mut opts = FetchOptions::new();
    opts.remote_callbacks(session.callbacks());
    opts.download_tags(git2::AutotagOption::None);
    // Nothing reads the cache's FETCH_HEAD: writing it costs two files per sync.
    opts.update_fetchhead(false);
    let spec = format!("+{CIPHER_BRANCH}:{CACHE_REF}");
    remote.fetch(&[spec.as_str()], Some(&mut opts), None).map_err(|e| session.error("fetching", &e))?;
    let has_branch =
        remote.list().map(|heads| heads.iter().any(|h| h.name() == CIPHER_BRANCH)).unwrap_or(false);
    if !has_branch {
        // A remote emptied since the last fetch: the next push starts it again from nothing.
        if let Ok(mut stale) = cache.find_reference(CACHE_REF) {
            stale.delete().map_err(git("removing a stale ref", cache.path()))?;
        }
        return Ok(None);
    }
    Ok(cache.refname_to_id(CACHE_REF).ok())
}

/// The manifest at `cipher_tip` of `cache`, opened.
fn read_manifest(cache: &Repository, cipher_tip: Oid, key: &Key) -> Result<Manifest> {
    let refused = || CryptError::Refused { what: "manifest".into() };
    let commit = cache.find_commit(cipher_tip).map_err(|_| refused())?;
    let tree = commit.tree().map_err(|_| refused())?;
    let entry = tree.get_name("manifest").ok_or_else(refused)?;
    let blob = cache.find_blob(entry.id()).map_err(|_| refused())?;
    let plain = open(key, "manifest", blob.content(), || "manifest".into())?;
    serde_json::from_slice(&plain).map_err(|_| refused())
}

/// Fetches an encrypted remote: the pack files the pack lacks are opened and indexed into
/// its object database, and `refs/remotes/<remote>/<branch>` is set to the manifest's tip.
/// Returns that tip, or `None` when the remote has no encrypted pack yet. A pack file or
/// manifest that does not open leaves the pack as it was.
pub fn fetch(repo: &PackRepo, remote: &str, key: &Key, creds: &Credentials) -> Result<Option<String>> {
    let plain = Repository::open(repo.dir()).map_err(git("opening the pack", repo.dir()))?;
    let cache = cache_repo(repo, remote)?;
    let url = remote_url(repo, remote)?;
    let before = cache.refname_to_id(CACHE_REF).ok();
    let res = fetch_cipher(&cache, &url, creds, plain.config().ok().as_ref())
        .and_then(|tip| tip.map(|tip| import(&plain, &cache, tip, key)).transpose());
    let tip = match res {
        Ok(tip) => tip,
        Err(e) => {
            // The next push builds on what the remote held when it last opened.
            let _ = match before {
                Some(old) => cache.reference(CACHE_REF, old, true, "engram: refused fetch").map(drop),
                None => cache.find_reference(CACHE_REF).and_then(|mut r| r.delete()),
            };
            return Err(e);
        }
    };
    let Some(tip) = tip else { return Ok(None) };
    let tracking = repo.tracking_ref(remote)?;
    plain
        .reference(&tracking, tip, true, "engram sync: fetch (encrypted)")
        .map_err(git("updating the remote-tracking branch", repo.dir()))?;
    Ok(Some(tip.to_string()))
}

/// Opens the manifest at `cipher_tip` and every pack file `plain` lacks, then indexes them.
/// Nothing is written unless every one of them opened.
fn import(plain: &Repository, cache: &Repository, cipher_tip: Oid, key: &Key) -> Result<Oid> {
    let manifest = read_manifest(cache, cipher_tip, key)?;
    let refused = || CryptError::Refused { what: "manifest".into() };
    let tip = Oid::from_str(&manifest.tip).map_err(|_| refused())?;
    if plain.find_commit(tip).is_ok() {
        return Ok(tip);
    }
    // A pack file whose tip the pack has brought nothing the pack lacks (every object of a
    // commit the pack holds is in it): only the others are opened and indexed.
    let mut opened = Vec::new();
    for entry in &manifest.packs {
        let what = || format!("pack file {}", entry.id);
        let covered = Oid::from_str(&entry.tip).is_ok_and(|t| plain.find_commit(t).is_ok());
        if covered {
            continue;
        }
        let oid = Oid::from_str(&entry.id).map_err(|_| CryptError::Refused { what: what() })?;
        let size = cache.odb().and_then(|odb| odb.read_header(oid)).map(|(size, _)| size);
        if !size.is_ok_and(|size| size <= MAX_SEALED_BYTES) {
            return Err(CryptError::Refused { what: what() });
        }
        let blob = cache.find_blob(oid).map_err(|_| CryptError::Refused { what: what() })?;
        opened.push(open(key, "pack", blob.content(), what)?);
    }
    let odb = plain.odb().map_err(git("opening the object database", plain.path()))?;
    for bytes in opened {
        let mut writer = odb.packwriter().map_err(git("indexing a fetched pack file", plain.path()))?;
        writer.write_all(&bytes).map_err(|source| CryptError::Io {
            step: "index a pack file in",
            path: plain.path().to_owned(),
            source,
        })?;
        writer.commit().map_err(git("indexing a fetched pack file", plain.path()))?;
    }
    if plain.find_commit(tip).is_err() {
        return Err(refused());
    }
    Ok(tip)
}

/// How many live pack files of one size class a push merges with its own (a base-4 counter:
/// at most 3 live files per class, each object sealed again once per class it climbs).
const MERGE_RUN: usize = 3;

/// The unit of size classes: class k holds files of 4^k − 1 up to 4^(k+1) − 1 units, so class 0
/// is under 3 KiB. A class about as small as a one-memory push keeps runs of such pushes from
/// being merged and sealed again several times before their file leaves the class.
const LEVEL_UNIT: u64 = 1024;

/// The size class of a pack file of `bytes` plain bytes: 0 under 3 KiB, then one per factor 4.
fn level(bytes: u64) -> u32 {
    (bytes / LEVEL_UNIT + 1).ilog(4)
}

/// How many of `packs` (the live files, oldest first) a new file of `held` plain bytes leaves
/// live: while the newest ones of its size class or below number [`MERGE_RUN`], it takes them
/// over and its size class is taken again with their bytes.
fn merge_start(packs: &[PackEntry], mut held: u64) -> usize {
    let mut keep = packs.len();
    loop {
        let small = packs[..keep].iter().rev().take_while(|p| level(p.bytes) <= level(held));
        let (run, run_bytes) = small.fold((0, 0), |(n, b), p| (n + 1, b + p.bytes));
        if run < MERGE_RUN {
            return keep;
        }
        keep -= run;
        held += run_bytes;
    }
}

/// Pushes the pack's current branch to an encrypted remote, never forced: one new sealed pack
/// file of the commits the remote's manifest (as of the last fetch) does not cover, and a new
/// manifest. A remote that moved since that fetch refuses it, as a plain push is refused.
///
/// When the newest live files of the new file's size class or below number [`MERGE_RUN`], the
/// new file takes them over (a geometric repack, as git's), so a pack pushed after every write
/// has a few live files per size class, not one per push: the manifest and the tree stay small
/// and an install indexes few files, while each object is sealed again once per size class.
pub fn push(repo: &PackRepo, remote: &str, key: &Key, creds: &Credentials) -> Result<PushOutcome> {
    let plain = Repository::open(repo.dir()).map_err(git("opening the pack", repo.dir()))?;
    let cache = cache_repo(repo, remote)?;
    let url = remote_url(repo, remote)?;
    let branch = repo.branch_name()?;
    let head = plain
        .refname_to_id(&format!("refs/heads/{branch}"))
        .map_err(git("reading the branch", repo.dir()))?;
    let parent = cache.refname_to_id(CACHE_REF).ok().map(|id| cache.find_commit(id)).transpose();
    let parent = parent.map_err(git("reading the encrypted remote's cache", cache.path()))?;
    let mut manifest = match &parent {
        Some(c) => read_manifest(&cache, c.id(), key)?,
        None => Manifest::default(),
    };
    let previous = Oid::from_str(&manifest.tip).ok();
    if let Some(previous) = previous {
        if previous == head {
            return Ok(PushOutcome::Pushed);
        }
        if !plain.graph_descendant_of(head, previous).unwrap_or(false) {
            return Ok(PushOutcome::Rejected(format!(
                "{CIPHER_BRANCH}: the remote moved since the last fetch (another device pushed first)"
            )));
        }
    }
    // Where the new file starts: first as if it were empty (a run it would merge with only
    // grows with its size), then again with its size, so a merging push builds it once.
    let mut keep = manifest.packs.len();
    let mut pack: Option<Vec<u8>> = None;
    loop {
        let held = pack.as_ref().map_or(0, |p| p.len() as u64);
        let start = merge_start(&manifest.packs[..keep], held);
        if pack.is_some() && start == keep {
            break;
        }
        keep = start;
        let base = match keep.checked_sub(1) {
            Some(i) if keep < manifest.packs.len() => Some(
                Oid::from_str(&manifest.packs[i].tip)
                    .map_err(|_| CryptError::Refused { what: "manifest".into() })?,
            ),
            Some(_) => previous,
            None => None,
        };
        pack = Some(build_pack(&plain, head, base)?);
    }
    let pack = pack.unwrap_or_default();
    manifest.packs.truncate(keep);
    let sealed = seal(key, "pack", &pack, MIN_PACK_BYTES)?;
    let pack_id = cache.blob(&sealed).map_err(git("writing a sealed pack file", cache.path()))?;
    manifest.branch = branch;
    manifest.tip = head.to_string();
    manifest.packs.push(PackEntry {
        id: pack_id.to_string(),
        tip: head.to_string(),
        bytes: pack.len() as u64,
    });
    let manifest_json = serde_json::to_vec(&manifest).expect("a manifest serializes");
    let manifest_id = cache
        .blob(&seal(key, "manifest", &manifest_json, MIN_MANIFEST_BYTES)?)
        .map_err(git("writing the manifest", cache.path()))?;
    let commit = cipher_commit(&cache, parent.as_ref(), manifest_id, &manifest.packs)?;
    // Pushed by its id: no local branch is written for it (the cache's ref moves only once
    // the remote took it).
    let outcome = push_cipher(&cache, &url, &commit.to_string(), creds, plain.config().ok().as_ref())?;
    if outcome == PushOutcome::Pushed {
        cache
            .reference(CACHE_REF, commit, true, "engram: pushed")
            .map_err(git("writing a ref", cache.path()))?;
        let tracking = repo.tracking_ref(remote)?;
        plain
            .reference(&tracking, head, true, "engram sync: push (encrypted)")
            .map_err(git("updating the remote-tracking branch", repo.dir()))?;
    }
    Ok(outcome)
}

/// A git packfile of the objects of `head` that `previous` does not reach.
fn build_pack(plain: &Repository, head: Oid, previous: Option<Oid>) -> Result<Vec<u8>> {
    let dir = plain.path();
    let mut walk = plain.revwalk().map_err(git("listing commits to push", dir))?;
    walk.push(head).map_err(git("listing commits to push", dir))?;
    if let Some(previous) = previous {
        walk.hide(previous).map_err(git("listing commits to push", dir))?;
    }
    let mut builder = plain.packbuilder().map_err(git("building a pack file", dir))?;
    builder.insert_walk(&mut walk).map_err(git("building a pack file", dir))?;
    let mut buf = git2::Buf::new();
    builder.write_buf(&mut buf).map_err(git("building a pack file", dir))?;
    Ok(buf.to_vec())
}

/// A commit on the cipher branch: `manifest` and `p/<id>` for every live pack file, with a
/// fixed author and message and its depth on the branch as its time.
fn cipher_commit(
    cache: &Repository,
    parent: Option<&git2::Commit<'_>>,
    manifest: Oid,
    packs: &[PackEntry],
) -> Result<Oid> {
    let dir = cache.path();
    let mut files = cache.treebuilder(None).map_err(git("writing a tree", dir))?;
    for pack in packs {
        let id = Oid::from_str(&pack.id).map_err(|_| CryptError::Refused { what: "manifest".into() })?;
        files.insert(&pack.id, id, 0o100644).map_err(git("writing a tree", dir))?;
    }
    let files = files.write().map_err(git("writing a tree", dir))?;
    let mut root = cache.treebuilder(None).map_err(git("writing a tree", dir))?;
    root.insert("manifest", manifest, 0o100644).map_err(git("writing a tree", dir))?;
    root.insert("p", files, 0o040000).map_err(git("writing a tree", dir))?;
    let tree = cache
        .find_tree(root.write().map_err(git("writing a tree", dir))?)
        .map_err(git("writing a tree", dir))?;
    // The time is the commit's depth on the branch (its parent's time plus one), not a clock:
    // a revision walk (a push's, a server's) stops a few commits past the remote's tip only
    // when times fall along the branch; with equal times it reads the whole branch every push.
    let depth = parent.map_or(0, |p| p.time().seconds().max(0)).saturating_add(1);
    let who = git2::Signature::new("engram", "engram@invalid", &git2::Time::new(depth, 0))
        .map_err(git("writing a commit", dir))?;
    let parents: Vec<&git2::Commit<'_>> = parent.into_iter().collect();
    cache.commit(None, &who, &who, CIPHER_MESSAGE, &tree, &parents).map_err(git("writing a commit", dir))
}

/// Pushes `local` (a ref or a commit id) of `cache` to the remote's cipher branch, never forced.
fn push_cipher(
    cache: &Repository,
    url: &str,
    local: &str,
    creds: &Credentials,
    config: Option<&git2::Config>,
) -> Result<PushOutcome> {
    let session = Session::new(creds, url, config)?;
    let mut remote = cache.remote_anonymous(url).map_err(git("reading a remote", cache.path()))?;
    let mut rejected: Option<String> = None;
    {
        let mut callbacks = session.callbacks();
        callbacks.push_update_reference(|name, status| {
            if let Some(msg) = status {
                rejected = Some(format!("{name}: {msg}"));
            }
            Ok(())
        });
        let mut opts = PushOptions::new();
        opts.remote_callbacks(callbacks);
        let spec = format!("{local}:{CIPHER_BRANCH}");
        match remote.push(&[spec.as_str()], Some(&mut opts)) {
            Ok(()) => {}
            Err(e) if e.code() == ErrorCode::NotFastForward => {
                return Ok(PushOutcome::Rejected(format!(
                    "{CIPHER_BRANCH}: the remote moved since the last fetch (another device pushed first)"
                )));
            }
            Err(e) => return Err(session.error("pushing", &e).into()),
        }
    }
    Ok(match rejected {
        Some(m) => PushOutcome::Rejected(m),
        None => PushOutcome::Pushed,
    })
}

/// Whether the repository at `url` holds an encrypted pack (its cipher branch), asked over
/// the network; `false` when it cannot be reached.
pub fn holds_encrypted_pack(url: &str, creds: &Credentials) -> bool {
    let config = git2::Config::open_default().ok();
    let Ok(session) = Session::new(creds, url, config.as_ref()) else { return false };
    let Ok(mut remote) = git2::Remote::create_detached(url) else { return false };
    if remote.connect_auth(git2::Direction::Fetch, Some(session.callbacks()), None).is_err() {
        return false;
    }
    remote.list().is_ok_and(|heads| heads.iter().any(|h| h.name() == CIPHER_BRANCH))
}

/// Makes `target` a plain repository of the encrypted pack at `url`: a new repository whose
/// `origin` is `url` (marked encrypted), fetched, decrypted and checked out on the manifest's
/// branch. The caller removes `target` on failure.
pub fn clone(url: &str, target: &Path, key: &Key, creds: &Credentials) -> Result<()> {
    let repo = Repository::init(target).map_err(git("creating the repository", target))?;
    repo.remote("origin", url).map_err(git("adding the remote", target))?;
    set_encrypted(target, "origin")?;
    let cache_dir = target.join(".git").join("engram-encrypted-origin");
    let cache = Repository::init_bare(&cache_dir)
        .map_err(git("creating the encrypted remote's cache", &cache_dir))?;
    let config = repo.config().ok();
    let Some(cipher_tip) = fetch_cipher(&cache, url, creds, config.as_ref())? else {
        return Err(CryptError::NotEncrypted { url: url.to_owned() });
    };
    let tip = import(&repo, &cache, cipher_tip, key)?;
    let manifest = read_manifest(&cache, cipher_tip, key)?;
    let branch = if git2::Reference::is_valid_name(&format!("refs/heads/{}", manifest.branch)) {
        manifest.branch
    } else {
        "main".to_owned()
    };
    let head = format!("refs/heads/{branch}");
    repo.reference(&head, tip, true, "engram install (encrypted)")
        .map_err(git("writing the branch", target))?;
    repo.reference(&format!("refs/remotes/origin/{branch}"), tip, true, "engram install (encrypted)")
        .map_err(git("writing the branch", target))?;
    repo.set_head(&head).map_err(git("writing HEAD", target))?;
    // As a plain install: no file is written out before every file is known to be readable.
    let max = crate::pack_root::MAX_PACK_FILE_BYTES;
    let tree = repo.find_commit(tip).and_then(|c| c.tree()).map_err(git("reading the pack", target))?;
    let odb = repo.odb().map_err(git("reading the pack", target))?;
    let mut oversized = None;
    tree.walk(git2::TreeWalkMode::PreOrder, |root, entry| match odb.read_header(entry.id()) {
        Ok((size, git2::ObjectType::Blob)) if size > max => {
            oversized = Some(Oversized { path: format!("{root}{}", entry.name().unwrap_or("?")), size, max });
            git2::TreeWalkResult::Abort
        }
        _ => git2::TreeWalkResult::Ok,
    })
    .or_else(|e| if oversized.is_some() { Ok(()) } else { Err(e) })
    .map_err(git("reading the pack", target))?;
    if let Some(oversized) = oversized {
        return Err(CryptError::Oversized(oversized));
    }
    let mut files = git2::build::CheckoutBuilder::new();
    files.force();
    repo.checkout_head(Some(&mut files)).map_err(git("checking out the pack", target))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_objects_open_only_with_their_key_and_kind() {
        let key = Key::generate().expect("random");
        let other = Key::generate().expect("random");
        let sealed = seal(&key, "pack", b"memory text", MIN_PACK_BYTES).expect("seal");
        assert_eq!(sealed.len(), MAGIC.len() + NONCE_LEN + 1024 + 16);
        assert!(!sealed.windows(6).any(|w| w == b"memory"));
        assert_eq!(open(&key, "pack", &sealed, String::new).expect("opens"), b"memory text");
        assert!(open(&other, "pack", &sealed, String::new).is_err());
        assert!(open(&key, "manifest", &sealed, String::new).is_err());
        for i in [0, 9, 30, sealed.len() - 1] {
            let mut flipped = sealed.clone();
            flipped[i] ^= 1;
            assert!(open(&key, "pack", &flipped, String::new).is_err(), "byte {i}");
        }
        assert!(open(&key, "pack", &sealed[..sealed.len() - 1], String::new).is_err());
    }

    #[test]
    fn padding_buckets_hide_small_sizes_and_cost_at_most_a_kib_or_a_sixteenth() {
        assert_eq!(bucket(1, MIN_PACK_BYTES), 1024);
        assert_eq!(bucket(1024, MIN_PACK_BYTES), 1024);
        assert_eq!(bucket(1025, MIN_PACK_BYTES), 2048);
        assert_eq!(bucket(600, MIN_MANIFEST_BYTES), 1024);
        // Under 16 KiB every size of one 1 KiB step looks the same.
        for k in 1..16 {
            let sizes: Vec<usize> =
                (k * 1024 + 1..=(k + 1) * 1024).map(|n| bucket(n, MIN_PACK_BYTES)).collect();
            assert!(sizes.iter().all(|&b| b == (k + 1) * 1024), "step {k}");
        }
        for n in [5000, 16_385, 70_000, 1_000_000, 33_554_433] {
            let b = bucket(n, MIN_PACK_BYTES);
            assert!(b >= n && b - n <= (n / 16).max(1023), "{n} → {b}");
        }
    }

    fn entry(bytes: u64) -> PackEntry {
        PackEntry { id: String::new(), tip: String::new(), bytes }
    }

    #[test]
    fn small_pushes_merge_like_a_base_four_counter() {
        // Three one-memory files and a fourth push: it takes all three over.
        let packs = [entry(800_000), entry(2000), entry(2000), entry(2000)];
        assert_eq!(merge_start(&packs, 0), 1);
        assert_eq!(merge_start(&packs[..3], 2000), 3);
        // 256 pushes of 2 KB, each merged file as large as what it took over: a few live files
        // per size class, and a byte sealed again about once per class it climbs (five here).
        let mut live: Vec<PackEntry> = Vec::new();
        let mut sealed = 0u64;
        for _ in 0..256 {
            let keep = merge_start(&live, 2000);
            let bytes = 2000 + live[keep..].iter().map(|p| p.bytes).sum::<u64>();
            live.truncate(keep);
            live.push(entry(bytes));
            sealed += bytes;
        }
        assert!(live.len() <= 3 * 5, "{} live files", live.len());
        assert!(sealed <= 256 * 2000 * 6, "{sealed} bytes sealed for {} pushed", 256 * 2000);
    }

    #[test]
    fn a_key_file_round_trips_and_is_private() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(".keys").join("coach.key");
        let key = Key::generate().expect("random");
        key.write_new(&path).expect("written");
        assert_eq!(Key::read(&path).expect("read").0, key.0);
        assert!(key.write_new(&path).is_err(), "an existing key is never replaced");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&path).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(format!("{key:?}"), "Key(..)");
    }
}
