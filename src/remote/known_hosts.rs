//! OpenSSH `known_hosts` files: is the key an ssh server shows the one recorded for it?
//!
//! Pure (the caller reads the files). Understands what `ssh` and `ssh-keyscan` write:
//! comma-separated host patterns (`host`, `[host]:port` for ports other than 22, `*`/`?`
//! wildcards, `!` negations), hashed names (`|1|salt|hmac`, as `HashKnownHosts yes`
//! writes them) and the `@revoked` marker. `@cert-authority` lines are skipped: engram
//! does not verify host certificates.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use sha1::Digest as _;

/// What the known_hosts files say about a host and the key it showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostKeyVerdict {
    /// The key is recorded for this host.
    Known,
    /// No line names this host with a key of this type.
    Unknown,
    /// The host is recorded with another key of the same type: it changed, or someone
    /// is in between.
    Changed {
        /// The file holding the old key.
        file: PathBuf,
        /// Its line (1-based).
        line: usize,
    },
    /// The key is marked `@revoked`.
    Revoked {
        /// The file that revokes it.
        file: PathBuf,
        /// Its line (1-based).
        line: usize,
    },
}

/// The name `known_hosts` uses for a host on a port (`host`, or `[host]:port`).
pub fn host_entry_name(host: &str, port: u16) -> String {
    if port == 22 { host.to_owned() } else { format!("[{host}]:{port}") }
}

/// The key type named inside a public-key blob (`ssh-ed25519`, `ecdsa-sha2-nistp256`, …).
pub fn key_type(blob: &[u8]) -> Option<&str> {
    let len = u32::from_be_bytes(blob.get(..4)?.try_into().ok()?) as usize;
    std::str::from_utf8(blob.get(4..4 + len)?).ok()
}

/// OpenSSH's fingerprint of a key: `SHA256:` and the unpadded base64 of its SHA-256 hash.
pub fn fingerprint(sha256: &[u8; 32]) -> String {
    format!("SHA256:{}", base64::engine::general_purpose::STANDARD_NO_PAD.encode(sha256))
}

/// Checks `key` (the server's public-key blob) for `host` on `port` against the files
/// (path and text), in order.
pub fn check(files: &[(PathBuf, String)], host: &str, port: u16, key: &[u8]) -> HostKeyVerdict {
    let name = host_entry_name(host, port);
    let ty = key_type(key);
    let mut changed = None;
    let mut known = false;
    for (path, text) in files {
        for (i, raw) in text.lines().enumerate() {
            let Some(entry) = parse_line(raw) else { continue };
            if !entry.matches(&name) {
                continue;
            }
            let same_key = entry.key.as_deref() == Some(key);
            match entry.marker {
                Marker::Revoked if same_key => {
                    return HostKeyVerdict::Revoked { file: path.clone(), line: i + 1 };
                }
                Marker::Revoked | Marker::CertAuthority => {}
                Marker::None if same_key => known = true,
                Marker::None => {
                    if changed.is_none() && ty.is_some() && Some(entry.key_type) == ty {
                        changed = Some((path.clone(), i + 1));
                    }
                }
            }
        }
    }
    match (known, changed) {
        (true, _) => HostKeyVerdict::Known,
        (false, Some((file, line))) => HostKeyVerdict::Changed { file, line },
        (false, None) => HostKeyVerdict::Unknown,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    None,
    Revoked,
    CertAuthority,
}

struct Entry<'t> {
    marker: Marker,
    hosts: &'t str,
    key_type: &'t str,
    key: Option<Vec<u8>>,
}

fn parse_line(raw: &str) -> Option<Entry<'_>> {
    let line = raw.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let mut fields = line.split_whitespace();
    let mut first = fields.next()?;
    let marker = match first {
        "@revoked" => Marker::Revoked,
        "@cert-authority" => Marker::CertAuthority,
        m if m.starts_with('@') => return None,
        _ => Marker::None,
    };
    if marker != Marker::None {
        first = fields.next()?;
    }
    let key_type = fields.next()?;
    let key = fields.next().and_then(|k| STANDARD.decode(k).ok());
    Some(Entry { marker, hosts: first, key_type, key })
}

impl Entry<'_> {
    /// True when a positive pattern matches `name` and no negated one does.
    fn matches(&self, name: &str) -> bool {
        if let Some(hashed) = self.hosts.strip_prefix("|1|") {
            return hashed_matches(hashed, name);
        }
        let mut hit = false;
        for pattern in self.hosts.split(',') {
            match pattern.strip_prefix('!') {
                Some(neg) if glob(neg, name) => return false,
                Some(_) => {}
                None => hit |= glob(pattern, name),
            }
        }
        hit
    }
}

/// `salt|hash` (both base64): HMAC-SHA1 of the name keyed with the salt.
fn hashed_matches(hashed: &str, name: &str) -> bool {
    let Some((salt, hash)) = hashed.split_once('|') else { return false };
    let (Ok(salt), Ok(hash)) = (STANDARD.decode(salt), STANDARD.decode(hash)) else { return false };
    hmac_sha1(&salt, name.as_bytes()).as_slice() == hash.as_slice()
}

/// HMAC (RFC 2104) over SHA-1, the hash of hashed known_hosts names.
fn hmac_sha1(key: &[u8], message: &[u8]) -> [u8; 20] {
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..20].copy_from_slice(&sha1::Sha1::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = sha1::Sha1::new();
    inner.update(block.map(|b| b ^ 0x36));
    inner.update(message);
    let mut outer = sha1::Sha1::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

/// Case-insensitive match with `*` (any run) and `?` (one character).
fn glob(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.to_lowercase().chars().collect();
    let n: Vec<char> = name.to_lowercase().chars().collect();
    let (mut pi, mut ni, mut star, mut mark) = (0, 0, None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Reads the files that exist (a missing or unreadable file counts as empty).
pub fn read_files(paths: &[PathBuf]) -> Vec<(PathBuf, String)> {
    paths.iter().filter_map(|p| Some((p.clone(), std::fs::read_to_string(p).ok()?))).collect()
}

/// `~` for the home directory in messages, when the path is under it.
pub fn display_path(path: &Path, home: Option<&Path>) -> String {
    match home.and_then(|h| path.strip_prefix(h).ok()) {
        Some(rest) => format!("~/{}", rest.display()),
        None => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(ty: &str, body: &[u8]) -> Vec<u8> {
        let mut b = (ty.len() as u32).to_be_bytes().to_vec();
        b.extend_from_slice(ty.as_bytes());
        b.extend_from_slice(body);
        b
    }

    fn line(hosts: &str, key: &[u8]) -> String {
        format!("{hosts} {} {}\n", key_type(key).unwrap(), STANDARD.encode(key))
    }

    #[test]
    fn known_unknown_changed_and_revoked_keys() {
        let ours = blob("ssh-ed25519", b"one");
        let other = blob("ssh-ed25519", b"two");
        let rsa = blob("ssh-rsa", b"three");
        let f = |text: String| vec![(PathBuf::from("kh"), text)];
        let name = "[127.0.0.1]:2222";
        assert_eq!(check(&f(line(name, &ours)), "127.0.0.1", 2222, &ours), HostKeyVerdict::Known);
        // The same host on port 22 is another entry.
        assert_eq!(check(&f(line("127.0.0.1", &ours)), "127.0.0.1", 2222, &ours), HostKeyVerdict::Unknown);
        assert_eq!(
            check(&f(format!("# c\n{}", line(name, &other))), "127.0.0.1", 2222, &ours),
            HostKeyVerdict::Changed { file: PathBuf::from("kh"), line: 2 }
        );
        // Known only with another key type: unknown, not changed.
        assert_eq!(check(&f(line(name, &rsa)), "127.0.0.1", 2222, &ours), HostKeyVerdict::Unknown);
        let revoked = format!("{}@revoked * {}", line(name, &ours), line("", &ours).trim());
        assert!(matches!(
            check(&f(revoked), "127.0.0.1", 2222, &ours),
            HostKeyVerdict::Revoked { line: 2, .. }
        ));
    }

    #[test]
    fn patterns_negations_and_hashed_names() {
        let key = blob("ssh-ed25519", b"k");
        let f = |hosts: &str| vec![(PathBuf::from("kh"), line(hosts, &key))];
        assert_eq!(
            check(&f("*.example.com,!bad.example.com"), "git.example.com", 22, &key),
            HostKeyVerdict::Known
        );
        assert_eq!(
            check(&f("*.example.com,!bad.example.com"), "bad.example.com", 22, &key),
            HostKeyVerdict::Unknown
        );
        assert_eq!(check(&f("gi?.Example.com"), "git.example.com", 22, &key), HostKeyVerdict::Known);
        // What `ssh-keygen -H` writes for github.com with this salt (RFC 2202 test keys aside).
        let salt = [7u8; 20];
        let hash = hmac_sha1(&salt, b"github.com");
        let hashed = format!("|1|{}|{}", STANDARD.encode(salt), STANDARD.encode(hash));
        assert_eq!(check(&f(&hashed), "github.com", 22, &key), HostKeyVerdict::Known);
        assert_eq!(check(&f(&hashed), "gitlab.com", 22, &key), HostKeyVerdict::Unknown);
    }

    #[test]
    fn hmac_sha1_matches_rfc_2202() {
        let mac = hmac_sha1(b"Jefe", b"what do ya want for nothing?");
        let hex: String = mac.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
        assert_eq!(fingerprint(&[0; 32]), "SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
    }
}
