//! Who we are to a remote and who the remote is to us: ssh keys (a key file, the agent,
//! `~/.ssh/id_*`), the ssh host key checked against `known_hosts`, https tokens or git's
//! credential helper, and an extra certificate authority for https.
//!
//! Every fetch, push and clone goes through one [`Session`]: its callbacks answer
//! libgit2, and its [`Session::error`] turns a failure into a message that says what to do.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::Duration;

use git2::{CertificateCheckStatus, CredentialType, ErrorCode, RemoteCallbacks};

use crate::store::{Result, StoreError};
use known_hosts::HostKeyVerdict;

pub mod encrypted;
mod known_hosts;
mod tls_ca;

/// How to authenticate to remotes, and which hosts and authorities to trust.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    /// A token for https remotes (sent as the password), e.g. a GitHub token.
    pub token: Option<String>,
    /// User name sent with the token (`x-access-token` when not set).
    pub username: Option<String>,
    /// The ssh private key to use (`ENGRAM_SSH_KEY`); when set, the only one tried.
    pub ssh_key: Option<PathBuf>,
    /// Whether an ssh agent is running (`SSH_AUTH_SOCK` is set): tried first otherwise.
    pub ssh_agent: bool,
    /// Key files tried after the agent, those that exist (`~/.ssh/id_ed25519`, …).
    pub ssh_default_keys: Vec<PathBuf>,
    /// `known_hosts` files the ssh host key must be in (`~/.ssh/known_hosts`, the system's).
    pub known_hosts: Vec<PathBuf>,
    /// A certificate authority (PEM file) trusted for https besides the system's
    /// (`ENGRAM_GIT_CA`; else git's `http.sslCAInfo`).
    pub ca_file: Option<PathBuf>,
    /// The home directory, to write `~` in messages.
    pub home: Option<PathBuf>,
    /// How long connecting may take, and a remote may stay silent, before a fetch, push or
    /// clone fails (`ENGRAM_NET_TIMEOUT`); `None` waits forever. Git servers send a
    /// keep-alive every few seconds while they work, so only a dead or stalled peer reaches it.
    pub net_timeout: Option<Duration>,
}

/// libgit2 calls the credentials callback again after a failure: give up after this many.
const MAX_AUTH_TRIES: u32 = 8;

/// One conversation with a remote: the callbacks handed to libgit2 and what they saw.
pub(super) struct Session<'a> {
    creds: &'a Credentials,
    url: &'a str,
    /// The certificate authority trusted for https besides the system's.
    ca: Option<PathBuf>,
    /// Why the host was refused, in words (libgit2 replaces the callback's message).
    host_problem: RefCell<Option<String>>,
    /// Why the configured authority did not vouch for the https server's certificate.
    ca_problem: RefCell<Option<String>>,
}

impl<'a> Session<'a> {
    /// A session with `url`, trusting the configured certificate authority (`ENGRAM_GIT_CA`,
    /// else `http.sslCAInfo` from `config`) for https.
    pub(super) fn new(creds: &'a Credentials, url: &'a str, config: Option<&git2::Config>) -> Result<Self> {
        let ca = creds.ca_file.clone().or_else(|| config.and_then(|c| c.get_path("http.sslCAInfo").ok()));
        if let Some(ca) = &ca
            && url.starts_with("https://")
            && !ca.is_file()
        {
            return Err(StoreError::Remote {
                step: "reaching",
                url: url.to_owned(),
                message: format!(
                    "the certificate authority {} (ENGRAM_GIT_CA or http.sslCAInfo) is not a file",
                    ca.display()
                ),
            });
        }
        set_timeouts_once(creds.net_timeout);
        Ok(Self { creds, url, ca, host_problem: RefCell::new(None), ca_problem: RefCell::new(None) })
    }

    /// Callbacks answering credential requests and checking the remote's identity.
    pub(super) fn callbacks<'s>(&'s self) -> RemoteCallbacks<'s> {
        let mut cb = RemoteCallbacks::new();
        let creds = self.creds;
        let url = self.url;
        let (mut tries, mut ssh_tries, mut pass_tries) = (0, 0, 0);
        cb.credentials(move |_url, user, allowed| {
            tries += 1;
            if tries > MAX_AUTH_TRIES {
                return Err(git2::Error::from_str(
                    "authentication failed: the remote refused every credential",
                ));
            }
            if allowed.contains(CredentialType::USERNAME) {
                return git2::Cred::username(user.unwrap_or("git"));
            }
            if allowed.contains(CredentialType::SSH_KEY) {
                ssh_tries += 1;
                return ssh_credential(creds, url, user.unwrap_or("git"), ssh_tries);
            }
            if allowed.contains(CredentialType::USER_PASS_PLAINTEXT) {
                pass_tries += 1;
                return password_credential(creds, url, user, pass_tries);
            }
            if allowed.contains(CredentialType::DEFAULT) {
                return git2::Cred::default();
            }
            Err(git2::Error::from_str("the remote asks for a kind of credentials engram cannot give"))
        });
        let problem = &self.host_problem;
        let ca = self.ca.as_deref();
        let ca_problem = &self.ca_problem;
        cb.certificate_check(move |cert, host| {
            // https: a certificate the configured authority issued is accepted; otherwise
            // OpenSSL's verdict (the system's authorities) stands.
            if let Some(x509) = cert.as_x509() {
                return Ok(match ca.map(|ca| (ca, tls_ca::verify(ca, x509.data(), host))) {
                    Some((_, Ok(()))) => CertificateCheckStatus::CertificateOk,
                    Some((ca, Err(why))) => {
                        *ca_problem.borrow_mut() = Some(format!("not issued by {}: {why}", ca.display()));
                        CertificateCheckStatus::CertificatePassthrough
                    }
                    None => CertificateCheckStatus::CertificatePassthrough,
                });
            }
            let Some(hostkey) = cert.as_hostkey() else {
                return Ok(CertificateCheckStatus::CertificatePassthrough);
            };
            let verdict = match hostkey.hostkey() {
                Some(key) => {
                    known_hosts::check(&known_hosts::read_files(&creds.known_hosts), host, url_port(url), key)
                }
                None => HostKeyVerdict::Unknown,
            };
            if verdict == HostKeyVerdict::Known {
                return Ok(CertificateCheckStatus::CertificateOk);
            }
            let shown = hostkey.hash_sha256().map(known_hosts::fingerprint).unwrap_or_default();
            let text = host_key_refusal(creds, host, url_port(url), &verdict, &shown);
            *problem.borrow_mut() = Some(text.clone());
            Err(git2::Error::new(ErrorCode::Certificate, git2::ErrorClass::Ssh, text))
        });
        cb
    }

    /// The error of a failed `step` (`fetching`, `pushing`, `cloning`), with what to do.
    pub(super) fn error(&self, step: &'static str, e: &git2::Error) -> StoreError {
        let mut message = match self.host_problem.borrow().as_ref() {
            Some(why) => why.clone(),
            None => remote_message(self.url, e),
        };
        if let Some(why) = self.ca_problem.borrow().as_ref()
            && (e.code() == ErrorCode::Certificate || e.class() == git2::ErrorClass::Ssl)
        {
            message.push_str(&format!(" (the certificate is {why})"));
        }
        StoreError::Remote { step, url: self.url.to_owned(), message }
    }
}

/// Hands the network timeout to libgit2 (its sockets, and libssh2's session over them),
/// once per process, before the first fetch, push or clone: libgit2 keeps it in globals
/// that a running transfer reads, so it is never changed while one may run.
#[allow(unsafe_code)]
fn set_timeouts_once(timeout: Option<Duration>) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let ms = timeout.map_or(0, |t| t.as_millis().clamp(1, i32::MAX as u128) as i32);
        // SAFETY: no libgit2 network operation runs yet (every one starts from a `Session`,
        // and this runs as the first one is made), so nothing reads the globals meanwhile.
        unsafe {
            let _ = git2::opts::set_server_connect_timeout_in_milliseconds(ms);
            let _ = git2::opts::set_server_timeout_in_milliseconds(ms);
        }
    });
}

/// libgit2's message, with advice when the remote's identity could not be verified or it
/// stopped answering.
pub(super) fn remote_message(url: &str, e: &git2::Error) -> String {
    let mut message = e.message().to_owned();
    // libssh2 says "timed out"; OpenSSL passes on the socket's EAGAIN (its receive timeout).
    let lower = message.to_ascii_lowercase();
    if e.code() == ErrorCode::Timeout
        || lower.contains("timed out")
        || lower.contains("resource temporarily unavailable")
    {
        message.push_str(
            " — the remote did not answer within the network timeout (ENGRAM_NET_TIMEOUT, default 30 s)",
        );
    }
    if e.code() == ErrorCode::Certificate || e.class() == git2::ErrorClass::Ssl {
        message.push_str(&certificate_advice(url, e.class() == git2::ErrorClass::Ssh));
    }
    message
}

/// The ssh key to offer on the `n`th request (1-based): `ENGRAM_SSH_KEY` alone when set,
/// else the agent, then each default key file that exists.
fn ssh_credential(
    creds: &Credentials,
    url: &str,
    user: &str,
    n: usize,
) -> std::result::Result<git2::Cred, git2::Error> {
    enum Source<'p> {
        Agent,
        File(&'p Path),
    }
    let mut sources = Vec::new();
    match &creds.ssh_key {
        Some(key) => sources.push(Source::File(key)),
        None => {
            if creds.ssh_agent {
                sources.push(Source::Agent);
            }
            sources.extend(creds.ssh_default_keys.iter().filter(|p| p.is_file()).map(|p| Source::File(p)));
        }
    }
    let home = creds.home.as_deref();
    match sources.get(n - 1) {
        Some(Source::Agent) => git2::Cred::ssh_key_from_agent(user),
        Some(Source::File(key)) => {
            let public = key.with_extension(match key.extension() {
                Some(e) => format!("{}.pub", e.to_string_lossy()),
                None => "pub".to_owned(),
            });
            let public = public.is_file().then_some(public);
            git2::Cred::ssh_key(user, public.as_deref(), key, None)
        }
        None if sources.is_empty() => Err(git2::Error::from_str(&format!(
            "ssh to {} needs a key: set ENGRAM_SSH_KEY to a private key file, create ~/.ssh/id_ed25519, or start ssh-agent",
            remote_host(url)
        ))),
        None => {
            let tried: Vec<String> = sources
                .iter()
                .map(|s| match s {
                    Source::Agent => "the ssh agent".to_owned(),
                    Source::File(p) => known_hosts::display_path(p, home),
                })
                .collect();
            Err(git2::Error::from_str(&format!(
                "ssh authentication as {user} to {} failed (tried {}): the server does not accept these keys (or a key needs a passphrase: load it into ssh-agent)",
                remote_host(url),
                tried.join(", ")
            )))
        }
    }
}

/// The token (or git's credential helper) for the `n`th password request; a second
/// request means the first was refused.
fn password_credential(
    creds: &Credentials,
    url: &str,
    user: Option<&str>,
    n: usize,
) -> std::result::Result<git2::Cred, git2::Error> {
    if let Some(token) = &creds.token {
        let name = creds.username.as_deref().or(user).unwrap_or("x-access-token");
        if n > 1 {
            return Err(git2::Error::new(
                ErrorCode::Auth,
                git2::ErrorClass::Http,
                format!(
                    "{} refused the token in ENGRAM_GIT_TOKEN (user {name}): check that it is current and may read and write this repository",
                    remote_host(url)
                ),
            ));
        }
        return git2::Cred::userpass_plaintext(name, token);
    }
    if n > 1 {
        return Err(git2::Error::new(
            ErrorCode::Auth,
            git2::ErrorClass::Http,
            format!(
                "{} asks for a password: set ENGRAM_GIT_TOKEN (and ENGRAM_GIT_USERNAME if the host needs one), or configure a git credential helper",
                remote_host(url)
            ),
        ));
    }
    #[cfg(feature = "net")]
    {
        let helper = git2::Config::open_default().and_then(|c| git2::Cred::credential_helper(&c, url, user));
        helper.map_err(|_| {
            git2::Error::new(
                ErrorCode::Auth,
                git2::ErrorClass::Http,
                format!(
                    "{} asks for a password and no git credential helper has one: set ENGRAM_GIT_TOKEN (and ENGRAM_GIT_USERNAME if the host needs one)",
                    remote_host(url)
                ),
            )
        })
    }
    #[cfg(not(feature = "net"))]
    Err(git2::Error::from_str("this engram was built without https support"))
}

/// Why an ssh host was refused, and what to do about it.
fn host_key_refusal(
    creds: &Credentials,
    host: &str,
    port: u16,
    verdict: &HostKeyVerdict,
    shown: &str,
) -> String {
    let home = creds.home.as_deref();
    let name = known_hosts::host_entry_name(host, port);
    let keyscan =
        if port == 22 { format!("ssh-keyscan {host}") } else { format!("ssh-keyscan -p {port} {host}") };
    let files = match creds.known_hosts.first() {
        Some(p) => known_hosts::display_path(p, home),
        None => "~/.ssh/known_hosts".to_owned(),
    };
    match verdict {
        HostKeyVerdict::Changed { file, line } => format!(
            "REFUSED: the ssh host key of {name} ({shown}) is not the one recorded in {}:{line}. The server changed its key, or someone is between you and it (man-in-the-middle). Nothing was sent or changed. If the change is expected, compare the new fingerprint with the one the host publishes, remove the old line (`ssh-keygen -R '{name}'`) and add the new key (`{keyscan} >> {files}`)",
            known_hosts::display_path(file, home)
        ),
        HostKeyVerdict::Revoked { file, line } => format!(
            "REFUSED: the ssh host key of {name} ({shown}) is revoked in {}:{line}. Nothing was sent or changed",
            known_hosts::display_path(file, home)
        ),
        HostKeyVerdict::Unknown | HostKeyVerdict::Known => format!(
            "the ssh host key of {name} ({shown}) is not in {files}: engram does not connect to unknown hosts. Compare the fingerprint with the one your git host publishes, then accept it once with `ssh -T {}{}` (or `{keyscan} >> {files}`) and sync again. Nothing in the pack is damaged",
            if port == 22 { String::new() } else { format!("-p {port} ") },
            host
        ),
    }
}

/// What to do when the remote's identity cannot be verified: nothing in the
/// pack is wrong, the host's key (ssh) or certificate (https) is not trusted.
pub(super) fn certificate_advice(url: &str, ssh: bool) -> String {
    let host = remote_host(url);
    if ssh {
        format!(
            " — the ssh host key of {host} is not in ~/.ssh/known_hosts, or it changed. Compare it with the fingerprints your git host publishes, accept it once with `ssh -T {host}` (or `ssh-keyscan {host} >> ~/.ssh/known_hosts`), then sync again. Nothing in the pack is damaged."
        )
    } else {
        format!(
            " — the TLS certificate of {host} is not trusted by this machine (a proxy, a self-signed or expired certificate). If your server uses its own certificate authority, set ENGRAM_GIT_CA (or git's http.sslCAInfo) to its PEM file. Nothing in the pack is damaged."
        )
    }
}

/// The host of a remote URL (`ssh://user@host:22/p`, `user@host:p`, `https://host/p`).
pub(super) fn remote_host(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', ':']).next().unwrap_or(rest);
    authority.rsplit('@').next().unwrap_or(authority).to_owned()
}

/// The ssh port of a remote URL: `ssh://host:2222/p` → 2222; scp-like `host:p` → 22.
fn url_port(url: &str) -> u16 {
    let Some(rest) = url.strip_prefix("ssh://").or_else(|| url.strip_prefix("ssh+git://")) else { return 22 };
    let authority = rest.split('/').next().unwrap_or(rest);
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    authority.rsplit_once(':').and_then(|(_, p)| p.parse().ok()).unwrap_or(22)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An unknown ssh host key is not damage: the message says what to do about
    /// the host, and never points to `engram doctor`.
    #[test]
    fn an_unknown_host_key_says_so_and_blames_no_damage() {
        let e = git2::Error::new(
            ErrorCode::Certificate,
            git2::ErrorClass::Ssh,
            "invalid or unknown remote ssh hostkey",
        );
        let err = StoreError::Remote {
            step: "fetching",
            url: "git@github.com:me/coach.git".into(),
            message: remote_message("git@github.com:me/coach.git", &e),
        };
        let engram = crate::ops::EngramError::from(err);
        let text = engram.to_string();
        assert!(text.contains("ssh host key of github.com") && text.contains("ssh -T github.com"), "{text}");
        assert!(!text.contains("engram doctor"), "{text}");
        assert_eq!(remote_host("ssh://git@host.example:2222/x.git"), "host.example");
        assert_eq!(remote_host("https://gitlab.com/a/b"), "gitlab.com");
        assert_eq!(url_port("ssh://git@host.example:2222/x.git"), 2222);
        assert_eq!(url_port("git@host.example:me/x.git"), 22);
        assert_eq!(url_port("ssh://host.example/x.git"), 22);
    }

    #[test]
    fn a_changed_host_key_is_refused_in_words() {
        let creds = Credentials {
            known_hosts: vec![PathBuf::from("/home/me/.ssh/known_hosts")],
            home: Some(PathBuf::from("/home/me")),
            ..Credentials::default()
        };
        let verdict = HostKeyVerdict::Changed { file: PathBuf::from("/home/me/.ssh/known_hosts"), line: 3 };
        let text = host_key_refusal(&creds, "127.0.0.1", 2222, &verdict, "SHA256:abc");
        assert!(text.starts_with("REFUSED") && text.contains("~/.ssh/known_hosts:3"), "{text}");
        assert!(
            text.contains("man-in-the-middle") && text.contains("ssh-keygen -R '[127.0.0.1]:2222'"),
            "{text}"
        );
        assert!(!text.contains("engram doctor") && !text.contains("/home/me"), "{text}");
    }
}
