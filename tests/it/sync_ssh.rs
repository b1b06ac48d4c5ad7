//! `engram sync` over ssh against the distribution's OpenSSH server, started by the test
//! on a free loopback port with its own configuration, a generated host key and a
//! generated user key (it never touches the system's sshd). Host keys are checked
//! against `known_hosts` in the device's HOME.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::sync::{branch, device, head, run_ok, text, two_devices_offline_then_sync};

const SSHD: &str = "/usr/sbin/sshd";

/// An OpenSSH server serving bare repositories under a temporary directory; killed on drop.
pub(crate) struct SshServer {
    child: Child,
    dir: tempfile::TempDir,
    port: u16,
    user: String,
}

fn run(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).envs(git_env()).output().unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(out.status.success(), "{cmd} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A new ed25519 key pair without a passphrase at `path` (and `path.pub`).
pub(crate) fn keygen(path: &Path) {
    run(
        "ssh-keygen",
        &["-q", "-t", "ed25519", "-N", "", "-C", "engram-test", "-f", &path.display().to_string()],
    );
}

/// Starts sshd with the configuration in `d` and waits until it listens on `port`.
fn spawn_sshd(d: &Path, port: u16) -> Child {
    let log = std::fs::OpenOptions::new().create(true).append(true).open(d.join("sshd.log")).expect("log");
    let mut child = Command::new(SSHD)
        .arg("-D")
        .arg("-e")
        .arg("-f")
        .arg(d.join("sshd_config"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start sshd");
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read_to_string(d.join("sshd.log")).unwrap_or_default();
            panic!("sshd exited ({status}):\n{log}");
        }
        assert!(Instant::now() < deadline, "sshd did not start listening on {port}");
        std::thread::yield_now();
    }
    child
}

/// A free loopback port below Linux's ephemeral range (32768–60999). [`SshServer::stop`] frees
/// the port until [`SshServer::resume`]; a port from the ephemeral range could meanwhile be
/// handed to another test's `bind(0)` (a git daemon, an HTTP server), and a client of the
/// stopped server would then talk to that one (seen: a sync waiting forever for an ssh banner
/// from an HTTP server, beside the full suite).
/// Each call of this process starts further on, so that servers started at once never pick
/// the same port before either has bound it.
fn port_outside_the_ephemeral_range() -> u16 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let first = std::process::id() % 12_000 + NEXT.fetch_add(97, std::sync::atomic::Ordering::Relaxed);
    (0..12_000u32)
        .map(|i| 20_000 + ((first + i) % 12_000) as u16)
        .find(|&p| TcpListener::bind(("127.0.0.1", p)).is_ok())
        .expect("a free port below 32000")
}

impl SshServer {
    /// Starts sshd, or `None` (with a message) when OpenSSH's server is not installed.
    pub(crate) fn start() -> Option<Self> {
        if !Path::new(SSHD).exists() || Command::new("ssh-keygen").arg("-?").output().is_err() {
            eprintln!("skipping: OpenSSH's server is not installed (apt-get install openssh-server)");
            return None;
        }
        let user = run("id", &["-un"]);
        if run("id", &["-u"]) == "0" {
            // sshd started by root insists on its privilege-separation directory.
            let _ = std::fs::create_dir_all("/run/sshd");
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        keygen(&d.join("host_key"));
        keygen(&d.join("user_key"));
        std::fs::copy(d.join("user_key.pub"), d.join("authorized_keys")).expect("authorized_keys");
        std::fs::create_dir_all(d.join("srv")).expect("mkdir");
        let port = port_outside_the_ephemeral_range();
        let config = format!(
            "ListenAddress 127.0.0.1:{port}\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
             PidFile {d}/sshd.pid\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\n\
             AllowUsers {user}\nLogLevel VERBOSE\n",
            d = d.display()
        );
        std::fs::write(d.join("sshd_config"), config).expect("sshd_config");
        let child = spawn_sshd(d, port);
        Some(Self { child, dir, port, user })
    }

    /// Stops the server: the remote is unreachable (connections are refused) until [`Self::resume`].
    pub(crate) fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the server again on the same port, with the same keys and repositories.
    pub(crate) fn resume(&mut self) {
        self.child = spawn_sshd(self.dir.path(), self.port);
    }

    /// Creates an empty bare repository whose HEAD names `branch`; returns its ssh URL.
    pub(crate) fn bare(&self, name: &str, branch: &str) -> String {
        let path = self.repo(name);
        run(
            "git",
            &["init", "--bare", "-q", &format!("--initial-branch={branch}"), &path.display().to_string()],
        );
        format!("ssh://{}@127.0.0.1:{}{}", self.user, self.port, path.display())
    }

    pub(crate) fn repo(&self, name: &str) -> PathBuf {
        self.dir.path().join("srv").join(format!("{name}.git"))
    }

    /// The private key the server accepts.
    pub(crate) fn user_key(&self) -> PathBuf {
        self.dir.path().join("user_key")
    }

    /// The server's `known_hosts` line.
    pub(crate) fn known_hosts_line(&self) -> String {
        let public = std::fs::read_to_string(self.dir.path().join("host_key.pub")).expect("host key");
        let mut fields = public.split_whitespace();
        let (ty, key) = (fields.next().expect("type"), fields.next().expect("key"));
        format!("[127.0.0.1]:{} {ty} {key}\n", self.port)
    }

    /// What sshd logged (for failure messages).
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }
}

impl Drop for SshServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes a file under the device's `~/.ssh` (0600, like ssh wants).
pub(crate) fn put_ssh_file(env: &TestEnv, name: &str, content: &[u8]) {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = env.dir.path().join(".ssh");
    std::fs::create_dir_all(&dir).expect("mkdir .ssh");
    std::fs::write(dir.join(name), content).expect("write");
    std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(0o600)).expect("chmod");
}

/// A device trusting the server's host key, authenticating with the key at `~/.ssh/id_ed25519`.
pub(crate) fn device_with_default_key(host: &str, server: &SshServer) -> TestEnv {
    let env = device(host);
    put_ssh_file(&env, "id_ed25519", &std::fs::read(server.user_key()).expect("key"));
    put_ssh_file(&env, "known_hosts", server.known_hosts_line().as_bytes());
    env
}

/// A device trusting the server's host key, authenticating with `ENGRAM_SSH_KEY`.
fn device_with_key_variable(host: &str, server: &SshServer) -> TestEnv {
    let mut env = device(host);
    env.vars.push(("ENGRAM_SSH_KEY".into(), server.user_key().display().to_string()));
    put_ssh_file(&env, "known_hosts", server.known_hosts_line().as_bytes());
    env
}

#[tokio::test]
async fn two_devices_offline_then_sync_over_ssh() {
    let Some(server) = SshServer::start() else { return };
    // One device uses ~/.ssh/id_ed25519, the other ENGRAM_SSH_KEY.
    let a = device_with_default_key("laptop", &server);
    let b = device_with_key_variable("desktop", &server);
    a.init("coach");
    let url = server.bare("coach", &branch(&a.pack("coach")));
    two_devices_offline_then_sync(&a, &b, &url, &server.repo("coach")).await;
    let log = server.log();
    assert!(log.contains("Accepted publickey"), "sshd saw no key login:\n{log}");
}

/// A pack whose sync must fail: HEAD, the remote-tracking refs and the server stay as they were.
fn assert_refused(env: &TestEnv, server: &SshServer, wanted: &[&str]) -> String {
    let pack = env.pack("coach");
    let before = head(&pack);
    let out = env.cli(&["sync", "coach"]);
    let t = text(&out);
    assert!(!out.status.success(), "sync succeeded:\n{t}");
    for w in wanted {
        assert!(t.contains(w), "{w:?} missing:\n{t}");
    }
    assert!(!t.contains("engram doctor") && !t.contains("damaged:"), "{t}");
    assert_eq!(head(&pack), before);
    assert!(git(&pack, &["for-each-ref", "refs/remotes"]).trim().is_empty(), "a tracking ref appeared");
    assert!(git(&server.repo("coach"), &["for-each-ref"]).trim().is_empty(), "the server got a branch");
    assert_clean(&pack);
    t
}

#[test]
fn a_changed_or_unknown_host_key_or_a_wrong_user_key_is_refused() {
    let Some(server) = SshServer::start() else { return };
    let env = device("laptop");
    env.init("coach");
    let url = server.bare("coach", &branch(&env.pack("coach")));
    run_ok(&env, &["remote", "add", "coach", &url]);
    put_ssh_file(&env, "id_ed25519", &std::fs::read(server.user_key()).expect("key"));

    // Unknown host: no known_hosts at all.
    let t = assert_refused(&env, &server, &["not in ~/.ssh/known_hosts", "ssh-keyscan -p"]);
    assert!(t.contains("SHA256:"), "the fingerprint is shown: {t}");

    // Changed host key: known_hosts holds another ed25519 key for [127.0.0.1]:port.
    let other = env.dir.path().join("other_host_key");
    keygen(&other);
    let public = std::fs::read_to_string(other.with_extension("pub")).expect("pub");
    let mut f = public.split_whitespace();
    let line = format!(
        "# an older key\n{} {} {}\n",
        server.known_hosts_line().split_whitespace().next().expect("name"),
        f.next().expect("type"),
        f.next().expect("key")
    );
    put_ssh_file(&env, "known_hosts", line.as_bytes());
    assert_refused(&env, &server, &["REFUSED", "~/.ssh/known_hosts:2", "man-in-the-middle", "ssh-keygen -R"]);

    // The right host key, a user key the server does not accept.
    put_ssh_file(&env, "known_hosts", server.known_hosts_line().as_bytes());
    put_ssh_file(&env, "id_ed25519", &std::fs::read(&other).expect("key"));
    assert_refused(&env, &server, &["ssh authentication", "~/.ssh/id_ed25519"]);

    // No key at all.
    std::fs::remove_file(env.dir.path().join(".ssh/id_ed25519")).expect("rm");
    assert_refused(&env, &server, &["needs a key", "ENGRAM_SSH_KEY"]);

    // With the right key, the same pack syncs.
    put_ssh_file(&env, "id_ed25519", &std::fs::read(server.user_key()).expect("key"));
    let out = run_ok(&env, &["sync", "coach"]);
    assert!(out.contains("pushed"), "{out}");
    assert_eq!(
        git(&server.repo("coach"), &["rev-parse", &branch(&env.pack("coach"))]).trim(),
        head(&env.pack("coach"))
    );
}

/// An `ssh-agent` on a socket in a temporary directory, killed on drop.
struct Agent {
    child: Child,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Agent {
    /// Starts an agent holding `key`.
    fn with_key(key: &Path) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("agent.sock");
        let mut child = Command::new("ssh-agent")
            .arg("-D")
            .arg("-a")
            .arg(&socket)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start ssh-agent");
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::os::unix::net::UnixStream::connect(&socket).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("ssh-agent exited: {status}");
            }
            assert!(Instant::now() < deadline, "ssh-agent did not start");
            std::thread::yield_now();
        }
        let out = Command::new("ssh-add").arg(key).env("SSH_AUTH_SOCK", &socket).output().expect("ssh-add");
        assert!(out.status.success(), "ssh-add: {}", String::from_utf8_lossy(&out.stderr));
        Self { child, socket, _dir: dir }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_ssh_agent_is_used_when_no_key_file_is_set() {
    let Some(server) = SshServer::start() else { return };
    let agent = Agent::with_key(&server.user_key());
    // No ENGRAM_SSH_KEY and no ~/.ssh/id_*: only the agent holds the key.
    let mut env = device("laptop");
    env.vars.push(("SSH_AUTH_SOCK".into(), agent.socket.display().to_string()));
    put_ssh_file(&env, "known_hosts", server.known_hosts_line().as_bytes());
    env.init("coach");
    let url = server.bare("coach", &branch(&env.pack("coach")));
    run_ok(&env, &["remote", "add", "coach", &url]);
    let out = run_ok(&env, &["sync", "coach"]);
    assert!(out.contains("pushed"), "{out}");
    assert_eq!(
        git(&server.repo("coach"), &["rev-parse", &branch(&env.pack("coach"))]).trim(),
        head(&env.pack("coach"))
    );
    // Without the agent the same device has no key at all.
    env.vars.clear();
    assert_refused_after_push(&env, &["needs a key"]);
}

/// A sync that fails and leaves HEAD where it was.
fn assert_refused_after_push(env: &TestEnv, wanted: &[&str]) {
    let before = head(&env.pack("coach"));
    let out = env.cli(&["sync", "coach"]);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    for w in wanted {
        assert!(t.contains(w), "{w:?} missing:\n{t}");
    }
    assert_eq!(head(&env.pack("coach")), before);
}

/// A remote that accepts the connection and never says a word (a stalled server, a
/// firewall that swallows replies, another program on the port): `engram sync` gives up
/// after `ENGRAM_NET_TIMEOUT`, says so, and changes nothing; it does not wait forever.
#[test]
fn a_remote_that_never_answers_fails_after_the_network_timeout() {
    let listener = TcpListener::bind(("127.0.0.1", 0)).expect("bind");
    let port = listener.local_addr().expect("addr").port();
    // Accepts every connection and keeps it open, silent, until the test ends.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().flatten() {
            held.push(conn);
        }
    });
    let mut env = device("laptop");
    env.vars.push(("ENGRAM_NET_TIMEOUT".into(), "2".into()));
    env.init("coach");
    let before = head(&env.pack("coach"));
    for url in
        [format!("ssh://git@127.0.0.1:{port}/coach.git"), format!("https://127.0.0.1:{port}/coach.git")]
    {
        let _ = env.cli(&["remote", "remove", "coach"]);
        run_ok(&env, &["remote", "add", "coach", &url]);
        let out = env.cli_within(&["sync", "coach"], Duration::from_secs(120));
        let t = text(&out);
        assert!(!out.status.success(), "sync to {url} succeeded:\n{t}");
        assert!(t.contains("did not answer within the network timeout (ENGRAM_NET_TIMEOUT"), "{url}:\n{t}");
        assert_eq!(head(&env.pack("coach")), before);
        assert!(git(&env.pack("coach"), &["for-each-ref", "refs/remotes"]).trim().is_empty());
    }
}
