//! `engram sync` over https: `git http-backend` behind the distribution's nginx (through
//! fcgiwrap), with TLS from a test certificate authority made by `openssl` and basic
//! auth, started by the test on a free loopback port with its own configuration.
//! Also the `conflict/<host>` path: what cannot be merged is pushed on that branch.

use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::sync::{branch, capture, device, head, run_ok, text, two_devices_offline_then_sync};

/// The token the server accepts (the password of user `x-access-token`).
pub(crate) const TOKEN: &str = "ghp-test-token-for-loopback";

/// nginx + fcgiwrap + git http-backend serving bare repositories; both killed on drop.
pub(crate) struct HttpsServer {
    nginx: Child,
    fcgi: Child,
    dir: tempfile::TempDir,
    port: u16,
}

fn run(cmd: &str, args: &[&str], cwd: &Path) -> String {
    let out = Command::new(cmd)
        .args(args)
        .envs(git_env())
        .current_dir(cwd)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(out.status.success(), "{cmd} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn which(cmd: &str) -> Option<PathBuf> {
    ["/usr/sbin", "/usr/bin", "/sbin", "/bin"].iter().map(|d| Path::new(d).join(cmd)).find(|p| p.exists())
}

/// Waits until `ready` holds, or the child exits, or 20 s pass.
fn wait_until(what: &str, child: &mut Child, log: &Path, ready: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ready() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited ({status}):\n{}", std::fs::read_to_string(log).unwrap_or_default());
        }
        assert!(Instant::now() < deadline, "{what} did not start");
        std::thread::yield_now();
    }
}

impl HttpsServer {
    /// Starts the servers, or `None` (with a message) when nginx or fcgiwrap is missing.
    pub(crate) fn start() -> Option<Self> {
        let (Some(nginx), Some(fcgiwrap)) = (which("nginx"), which("fcgiwrap")) else {
            eprintln!("skipping: nginx or fcgiwrap is not installed (apt-get install nginx fcgiwrap)");
            return None;
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        // A test certificate authority and a server certificate for 127.0.0.1.
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
        let mut ca = vec!["req", "-x509"];
        ca.extend(ec);
        ca.extend(["-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=engram test CA"]);
        run("openssl", &ca, d);
        let mut csr = vec!["req"];
        csr.extend(ec);
        csr.extend(["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"]);
        run("openssl", &csr, d);
        std::fs::write(
            d.join("ext"),
            "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
        )
        .expect("ext");
        run(
            "openssl",
            &[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "server.pem",
                "-days",
                "2",
                "-extfile",
                "ext",
            ],
            d,
        );
        let hash = run("openssl", &["passwd", "-apr1", TOKEN], d);
        std::fs::write(d.join("htpasswd"), format!("x-access-token:{hash}\n")).expect("htpasswd");
        std::fs::create_dir_all(d.join("srv")).expect("mkdir");

        let socket = d.join("fcgi.sock");
        let fcgi_log = d.join("fcgiwrap.log");
        // One process (`-c 1`: no preforked workers that would outlive a kill); it runs one
        // git http-backend at a time, enough for devices that sync one after another.
        let mut fcgi = Command::new(fcgiwrap)
            .arg("-c")
            .arg("1")
            .arg("-s")
            .arg(format!("unix:{}", socket.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&fcgi_log).expect("log"))
            .spawn()
            .expect("start fcgiwrap");
        wait_until("fcgiwrap", &mut fcgi, &fcgi_log, || UnixStream::connect(&socket).is_ok());

        let port = TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
        let exec_path = run("git", &["--exec-path"], d);
        let user = if run("id", &["-u"], d) == "0" { "user root;\n" } else { "" };
        let config = format!(
            "daemon off;\nmaster_process off;\n{user}pid {d}/nginx.pid;\nerror_log {d}/nginx.log;\n\
             events {{ worker_connections 64; }}\n\
             http {{\n access_log off;\n client_max_body_size 0;\n\
              client_body_temp_path {d}/t_body;\n fastcgi_temp_path {d}/t_fcgi;\n proxy_temp_path {d}/t_proxy;\n\
              uwsgi_temp_path {d}/t_uwsgi;\n scgi_temp_path {d}/t_scgi;\n\
              server {{\n  listen 127.0.0.1:{port} ssl;\n  ssl_certificate {d}/server.pem;\n\
               ssl_certificate_key {d}/server.key;\n\
               location / {{\n   auth_basic \"git\";\n   auth_basic_user_file {d}/htpasswd;\n\
                fastcgi_pass unix:{sock};\n\
                fastcgi_param SCRIPT_FILENAME {exec_path}/git-http-backend;\n\
                fastcgi_param GIT_PROJECT_ROOT {d}/srv;\n   fastcgi_param GIT_HTTP_EXPORT_ALL 1;\n\
                fastcgi_param GIT_CONFIG_NOSYSTEM 1;\n   fastcgi_param REMOTE_USER $remote_user;\n\
                fastcgi_param PATH_INFO $uri;\n   fastcgi_param QUERY_STRING $query_string;\n\
                fastcgi_param REQUEST_METHOD $request_method;\n   fastcgi_param CONTENT_TYPE $content_type;\n\
                fastcgi_param CONTENT_LENGTH $content_length;\n  }}\n }}\n}}\n",
            d = d.display(),
            sock = socket.display(),
        );
        std::fs::write(d.join("nginx.conf"), config).expect("nginx.conf");
        let nginx_log = d.join("nginx.log");
        let mut nginx = Command::new(nginx)
            .arg("-p")
            .arg(d)
            .arg("-c")
            .arg(d.join("nginx.conf"))
            .arg("-e")
            .arg(&nginx_log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nginx");
        wait_until("nginx", &mut nginx, &nginx_log, || TcpStream::connect(("127.0.0.1", port)).is_ok());
        Some(Self { nginx, fcgi, dir, port })
    }

    /// Creates an empty bare repository whose HEAD names `branch`; returns its https URL.
    pub(crate) fn bare(&self, name: &str, branch: &str) -> String {
        let path = self.repo(name);
        run(
            "git",
            &["init", "--bare", "-q", &format!("--initial-branch={branch}"), &path.display().to_string()],
            self.dir.path(),
        );
        format!("https://127.0.0.1:{}/{name}.git", self.port)
    }

    pub(crate) fn repo(&self, name: &str) -> PathBuf {
        self.dir.path().join("srv").join(format!("{name}.git"))
    }

    pub(crate) fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }
}

impl Drop for HttpsServer {
    fn drop(&mut self) {
        for child in [&mut self.nginx, &mut self.fcgi] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A device with the token and the test CA in `ENGRAM_GIT_CA`.
pub(crate) fn device_with_ca_variable(host: &str, server: &HttpsServer, token: &str) -> TestEnv {
    let mut env = device(host);
    env.vars.push(("ENGRAM_GIT_TOKEN".into(), token.into()));
    env.vars.push(("ENGRAM_GIT_CA".into(), server.ca().display().to_string()));
    env
}

#[tokio::test]
async fn two_devices_offline_then_sync_over_https() {
    let Some(server) = HttpsServer::start() else { return };
    let a = device_with_ca_variable("laptop", &server, TOKEN);
    // The other device names the CA the way git does: http.sslCAInfo in ~/.gitconfig.
    let mut b = device("desktop");
    b.vars.push(("ENGRAM_GIT_TOKEN".into(), TOKEN.into()));
    std::fs::write(
        b.dir.path().join(".gitconfig"),
        format!("[http]\n\tsslCAInfo = {}\n", server.ca().display()),
    )
    .expect("gitconfig");
    a.init("coach");
    let url = server.bare("coach", &branch(&a.pack("coach")));
    two_devices_offline_then_sync(&a, &b, &url, &server.repo("coach")).await;
}

#[test]
fn a_wrong_token_or_an_untrusted_certificate_is_a_clear_error_and_changes_nothing() {
    let Some(server) = HttpsServer::start() else { return };
    let env = device_with_ca_variable("laptop", &server, TOKEN);
    env.init("coach");
    let pack = env.pack("coach");
    let url = server.bare("coach", &branch(&pack));
    run_ok(&env, &["remote", "add", "coach", &url]);
    run_ok(&env, &["sync", "coach"]);
    let synced = head(&pack);
    let tracking = git(&pack, &["for-each-ref", "refs/remotes"]);

    let check = |env: &TestEnv, wanted: &[&str]| {
        let out = env.cli(&["sync", "coach"]);
        let t = text(&out);
        assert!(!out.status.success(), "sync succeeded:\n{t}");
        for w in wanted {
            assert!(t.contains(w), "{w:?} missing:\n{t}");
        }
        assert!(!t.contains("engram doctor") && !t.contains(TOKEN), "{t}");
        assert_eq!(head(&env.pack("coach")), synced);
        assert_eq!(git(&env.pack("coach"), &["for-each-ref", "refs/remotes"]), tracking);
        assert_clean(&env.pack("coach"));
    };
    // A wrong token: refused in words, nothing changes.
    let mut wrong_env = device_with_ca_variable("laptop", &server, "not-the-token");
    wrong_env.packs = env.packs.clone();
    check(&wrong_env, &["refused the token in ENGRAM_GIT_TOKEN", "x-access-token", "127.0.0.1"]);
    // No token at all: says how to give one.
    let mut no_token = device("laptop");
    no_token.vars.push(("ENGRAM_GIT_CA".into(), server.ca().display().to_string()));
    no_token.packs = env.packs.clone();
    check(&no_token, &["ENGRAM_GIT_TOKEN"]);
    // The right token, but the server's certificate authority is not trusted.
    let mut no_ca = device("laptop");
    no_ca.vars.push(("ENGRAM_GIT_TOKEN".into(), TOKEN.into()));
    no_ca.packs = env.packs.clone();
    check(&no_ca, &["TLS certificate of 127.0.0.1 is not trusted", "ENGRAM_GIT_CA"]);

    // Installing with a wrong token leaves no pack and no staging directory behind.
    let fresh = device_with_ca_variable("desktop", &server, "not-the-token");
    let out = fresh.cli(&["install", &url]);
    let t = text(&out);
    assert!(!out.status.success() && t.contains("refused the token"), "{t}");
    let left: Vec<_> =
        std::fs::read_dir(&fresh.packs).expect("packs").flatten().map(|e| e.file_name()).collect();
    assert!(left.is_empty(), "install left {left:?}");
}

#[tokio::test]
async fn what_cannot_be_merged_goes_to_a_conflict_branch_on_the_server() {
    let Some(server) = HttpsServer::start() else { return };
    let env = device_with_ca_variable("laptop", &server, TOKEN);
    env.init("coach");
    let pack = env.pack("coach");
    let main = branch(&pack);
    let url = server.bare("coach", &main);
    run_ok(&env, &["remote", "add", "coach", &url]);
    run_ok(&env, &["sync", "coach"]);
    // Someone else pushes a symbolic link, which engram never merges into a pack.
    let other = env.dir.path().join("other");
    let bare = server.repo("coach");
    let g = |args: &[&str]| {
        let out = git_command_as("other", "other@example.invalid").args(args).output().expect("git");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    g(&["clone", "-q", &bare.display().to_string(), &other.display().to_string()]);
    std::os::unix::fs::symlink("/etc/passwd", other.join("knowledge/link.md")).expect("symlink");
    g(&["-C", &other.display().to_string(), "add", "knowledge/link.md"]);
    g(&["-C", &other.display().to_string(), "commit", "-qm", "a link"]);
    g(&["-C", &other.display().to_string(), "push", "-q", "origin", &format!("HEAD:{main}")]);
    let theirs = git(&bare, &["rev-parse", &main]).trim().to_owned();
    {
        let c = env.client().await;
        ok(&c, "capture_memory", capture("coach", "facts", "written while the link came", "local fact"))
            .await;
    }
    let local = head(&pack);

    let out = env.cli(&["sync", "coach"]);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(t.contains("NOT merged") && t.contains("knowledge/link.md is a symbolic link"), "{t}");
    assert!(t.contains("saved on branch conflict/laptop (pushed to origin)"), "{t}");
    // The server has the local state on conflict/laptop; its main branch is untouched.
    assert_eq!(git(&bare, &["rev-parse", "refs/heads/conflict/laptop"]).trim(), local);
    assert_eq!(git(&bare, &["rev-parse", &main]).trim(), theirs);
    // Locally nothing moved, the memory is there, and no link entered the working tree.
    assert_eq!(head(&pack), local);
    assert!(env.read("coach", "memory/facts.md").contains("written while the link came"));
    assert!(std::fs::symlink_metadata(pack.join("knowledge/link.md")).is_err());
    assert_clean(&pack);
    assert_fsck(&pack);
}
