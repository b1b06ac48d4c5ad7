//! The secret guard: finds credentials in text before it enters a pack's history.
//!
//! Pure: no git, no files. [`crate::store::PackRepo::write`] scans the lines a
//! commit adds (and hand edits before engram commits them); the git pre-commit
//! hook scans staged additions. The rules aim at credentials that have a
//! recognisable shape (private keys, AWS/GitHub/Slack/OpenAI/Anthropic/Google
//! keys, JWTs) plus values assigned to password/secret/token-like names that
//! look random. They do not fire on prose, Chinese text, commit ids or UUIDs.

use std::sync::OnceLock;

use regex::{Regex, RegexSet};

mod tokens;

/// One credential found in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What kind of credential (e.g. `AWS access key id`).
    pub kind: &'static str,
    /// The file it was found in (filled by the caller; empty for bare text).
    pub path: String,
    /// 1-based line number in the scanned text.
    pub line: usize,
    /// The credential with most of it masked, e.g. `AKIA…MPLE (20 chars)`.
    pub masked: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            write!(f, "line {}: {} `{}`", self.line, self.kind, self.masked)
        } else {
            write!(f, "{} line {}: {} `{}`", self.path, self.line, self.kind, self.masked)
        }
    }
}

/// Renders findings as the list an error message shows.
pub fn describe(findings: &[Finding]) -> String {
    let mut out = String::new();
    for f in findings.iter().take(10) {
        out.push_str("\n- ");
        out.push_str(&f.to_string());
    }
    if findings.len() > 10 {
        out.push_str(&format!("\n… (+{} more)", findings.len() - 10));
    }
    out
}

/// Kinds the token stage reports (the regex rules name their own).
const HIGH_ENTROPY: &str = "high-entropy token";
const KEY_BODY: &str = "private key body";

/// How deep base64 inside base64 is decoded.
const MAX_DEPTH: usize = 2;

/// A rule's match in its line, for checks that look at what surrounds it.
struct Hit<'a> {
    value: &'a str,
    before: &'a str,
    after: &'a str,
}

struct Rule {
    kind: &'static str,
    /// The kind when the credential was found inside base64.
    encoded: &'static str,
    re: Regex,
    /// Capture group holding the secret (0 = whole match).
    group: usize,
    /// Extra check on the captured value.
    check: fn(&Hit<'_>) -> bool,
}

fn always(_: &Hit<'_>) -> bool {
    true
}

/// The rules, and one set of all their patterns that tells which of them can
/// match a line (most lines match none: one pass instead of one per rule).
struct Rules {
    rules: Vec<Rule>,
    any: RegexSet,
}

/// Makes the word boundaries of a rule's pattern ASCII ones: every credential
/// is ASCII, a key glued to Chinese text is still a key, and an ASCII `\b`
/// keeps the regex engine on its fast automaton for non-ASCII lines (a
/// Unicode `\b` sends such lines to a slower engine).
fn ascii_boundaries(pattern: &str) -> String {
    pattern.replace(r"\b", r"(?-u:\b)")
}

/// Password-like names: `password`, `DB_PASSWORD`, `dbPassword`, `DB_PASS`, `pw`
/// (`_` before the name is a separator in `.env` names, not part of a word).
const PASSWORD_NAME: &str = r"(?:(?:\b|_)(?i:password|passwd|passphrase|passcode|pwd|pw)|[a-z0-9](?:Password|Passwd|Passphrase|Passcode|Pwd)|_(?i:pass))";
/// Secret-like names, in the same three spellings.
const SECRET_NAME: &str = r"(?:(?:\b|_)(?i:api[_-]?key|apikey|secret[_-]?access[_-]?key|secret[_-]?key|secret|client[_-]?secret|access[_-]?key(?:[_-]?id)?|auth[_-]?token|access[_-]?token|refresh[_-]?token|token|private[_-]?key|credentials?)|[a-z0-9](?:ApiKey|SecretKey|Secret|ClientSecret|AccessKey|AccessKeyId|AuthToken|AccessToken|RefreshToken|Token|PrivateKey|Credentials?)|_(?i:key))";
/// `=` or `:` (ASCII or full-width) between a name and its value, with quotes.
const ASSIGN: &str = r#"["']?\s*(?:=|:|：|＝)\s*["'“「]?"#;
/// Chinese names of a password (密码, 口令, 暗号) and of a key or token.
const CHINESE_PASSWORD: &str = "(?:密码|口令|暗号)";
const CHINESE_SECRET: &str = "(?:密钥|秘钥|私钥|令牌|凭证|凭据)";
/// A password value: printable ASCII (a full-width comma or Chinese text ends it).
const PASSWORD_VALUE: &str = r#"([[:graph:]&&[^"'`,;<>]]{6,})"#;

macro_rules! rule {
    ($kind:literal, $pattern:expr, $group:expr, $check:expr) => {
        Rule {
            kind: $kind,
            encoded: concat!("base64-encoded ", $kind),
            re: Regex::new(&ascii_boundaries(&$pattern))
                .unwrap_or_else(|e| panic!("secret rule {}: {e}", $kind)),
            group: $group,
            check: $check,
        }
    };
}

fn rules() -> &'static Rules {
    static RULES: OnceLock<Rules> = OnceLock::new();
    RULES.get_or_init(|| {
        // Keys with a recognisable prefix need no word boundary before them: a key
        // glued to a word (`keyAKIA…`, `tokenghp_…`) is still the key.
        let rules = vec![
            rule!("private key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----", 0, always),
            rule!("AWS access key id", r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}", 0, aws_key_id),
            rule!("GitHub token", r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}", 0, always),
            rule!("GitHub token", r"github_pat_[A-Za-z0-9_]{22,255}", 0, always),
            rule!("Slack token", r"xox[abposr]-[A-Za-z0-9-]{10,}", 0, always),
            rule!(
                "Slack webhook",
                r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+",
                0,
                always
            ),
            rule!("Anthropic API key", r"sk-ant-(?:api|admin)[0-9]{2}-[A-Za-z0-9_-]{20,}", 0, always),
            // `sk-` alone is the end of many words (`task-`, `risk-`): a boundary there.
            rule!(
                "OpenAI API key",
                r"(?:\bsk-(?:proj-|svcacct-|admin-)?|sk-(?:proj|svcacct|admin)-)[A-Za-z0-9_-]{32,}",
                0,
                openai_like
            ),
            rule!("Google API key", r"AIza[0-9A-Za-z_-]{35}", 0, always),
            rule!("Google OAuth client secret", r"GOCSPX-[A-Za-z0-9_-]{28}", 0, always),
            rule!("JSON Web Token", r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}", 0, always),
            rule!("password assignment", format!("{PASSWORD_NAME}{ASSIGN}{PASSWORD_VALUE}"), 1, labelled_password),
            rule!(
                "password assignment",
                format!(r#"{CHINESE_PASSWORD}\s*[:：=＝]\s*["'“「『]?{PASSWORD_VALUE}"#),
                1,
                labelled_password
            ),
            rule!(
                "password in prose",
                format!(r#"{CHINESE_PASSWORD}\s*(?:是|为|為)\s*["'“「『]?{PASSWORD_VALUE}"#),
                1,
                password_in_prose
            ),
            rule!(
                "password in prose",
                format!(
                    r#"(?i:{PASSWORD_NAME}(?:\s+(?:for|of|to|on)(?:\s+[[:graph:]]{{1,40}}){{1,3}})?\s+(?:is|was)(?:\s+now)?(?:\s*:\s*|\s+)["'`“]?){PASSWORD_VALUE}"#
                ),
                1,
                password_in_prose
            ),
            rule!(
                "secret assignment",
                format!(r"{SECRET_NAME}{ASSIGN}([A-Za-z0-9_\-+/=.]{{16,}})"),
                1,
                looks_random
            ),
            rule!(
                "secret assignment",
                format!(r#"{CHINESE_SECRET}\s*[:：=＝]\s*["'“「『]?{PASSWORD_VALUE}"#),
                1,
                labelled_password
            ),
            rule!(
                "secret assignment",
                format!(r#"{CHINESE_SECRET}\s*(?:是|为|為)\s*["'“「『]?{PASSWORD_VALUE}"#),
                1,
                password_in_prose
            ),
            rule!("bearer token", r"(?i)\bbearer\s+([A-Za-z0-9_\-+/=.]{20,})", 1, looks_random),
            rule!(
                "credentials in a URL",
                r"\b[a-z][a-z0-9+.-]*://[^\s:/@]{1,64}:([^\s:/@]{6,128})@[A-Za-z0-9.-]+",
                1,
                labelled_password
            ),
        ];
        let any = RegexSet::new(rules.iter().map(|r| r.re.as_str()))
            .unwrap_or_else(|e| panic!("secret rules as a set: {e}"));
        Rules { rules, any }
    })
}

/// Scans a text; `line` numbers are 1-based lines of `text`.
///
/// A single-line text (a path, a commit subject, a trailer value) is scanned
/// the same way: its findings are on line 1.
pub fn scan(text: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        scan_line(line, i + 1, &mut out);
    }
    out
}

/// Scans one line, appending findings numbered `line_no`.
///
/// The line is first normalised when it holds characters that could hide a
/// key (zero-width characters are removed, full-width `ＡＫＩＡ` becomes
/// `AKIA`: NFKC); masked values are shown as normalised.
pub fn scan_line(line: &str, line_no: usize, out: &mut Vec<Finding>) {
    let line = tokens::normalise(line);
    scan_normalised(&line, line_no, 0, out);
}

fn scan_normalised(line: &str, line_no: usize, depth: usize, out: &mut Vec<Finding>) {
    // Cheap pre-filter: every rule needs an ASCII run of 6+ credential characters.
    if !tokens::has_run(line) {
        return;
    }
    let Rules { rules, any } = rules();
    let mut taken: Vec<(usize, usize)> = Vec::new();
    let candidates = any.matches(line);
    for rule in candidates.iter().map(|i| &rules[i]) {
        for caps in rule.re.captures_iter(line) {
            let Some(m) = caps.get(rule.group) else { continue };
            let hit = Hit { value: m.as_str(), before: &line[..m.start()], after: &line[m.end()..] };
            if !(rule.check)(&hit) {
                continue;
            }
            if taken.iter().any(|&(s, e)| m.start() < e && s < m.end()) {
                continue;
            }
            taken.push((m.start(), m.end()));
            out.push(Finding {
                kind: rule.kind,
                path: String::new(),
                line: line_no,
                masked: mask(m.as_str()),
            });
        }
    }
    for (start, end) in tokens::long_tokens(line) {
        if taken.iter().any(|&(s, e)| start < e && s < end) {
            continue;
        }
        if let Some(kind) = judge_token(line, start, end, depth) {
            out.push(Finding { kind, path: String::new(), line: line_no, masked: mask(&line[start..end]) });
        }
    }
}

/// What a long token of the base64 alphabets hides, if anything: a
/// credential in its base64-decoded text, or randomness itself (a key, a
/// private key's body) when it is not text. Randomness in a URL is a name.
fn judge_token(line: &str, start: usize, end: usize, depth: usize) -> Option<&'static str> {
    let token = &line[start..end];
    let in_url = tokens::in_url(line, start);
    if in_url && token.contains('/') {
        // A URL's path: names, and no base64 text (its `/` would split the path).
        return None;
    }
    if let Some(bytes) = tokens::decode_base64(token) {
        if let Some(text) = tokens::as_text(&bytes) {
            // Text in base64 is judged by what it says: ordinary text passes.
            if depth >= MAX_DEPTH {
                return None;
            }
            let mut inner = Vec::new();
            for l in text.lines() {
                scan_normalised(&tokens::normalise(l), 0, depth + 1, &mut inner);
                if let Some(f) = inner.first() {
                    return Some(encoded_kind(f.kind));
                }
            }
            return None;
        }
        if bytes.starts_with(b"openssh-key-v1\0") {
            return Some(KEY_BODY);
        }
        if tokens::is_known_binary(&bytes) {
            return None;
        }
    }
    if in_url
        || !tokens::looks_random_token(token)
        || is_placeholder(token)
        || tokens::is_id_value(line, start)
    {
        return None;
    }
    // A whole line of base64 as wide as PEM (64) or OpenSSH (70) wraps it.
    let whole_line = line.trim().trim_end_matches('=') == token;
    Some(if whole_line && matches!(token.len(), 64 | 70 | 76) { KEY_BODY } else { HIGH_ENTROPY })
}

/// The kind of a credential found inside base64.
fn encoded_kind(kind: &str) -> &'static str {
    match kind {
        HIGH_ENTROPY => "base64-encoded high-entropy token",
        KEY_BODY => "base64-encoded private key body",
        _ => rules().rules.iter().find(|r| r.kind == kind).map_or("base64-encoded credential", |r| r.encoded),
    }
}

/// Masks a secret: keeps at most 4 characters at each end of long values.
pub fn mask(secret: &str) -> String {
    let chars: Vec<char> = secret.chars().collect();
    let n = chars.len();
    if secret.starts_with("-----BEGIN") {
        return secret.to_owned();
    }
    let keep = if n >= 16 {
        4
    } else if n >= 8 {
        2
    } else {
        0
    };
    let head: String = chars[..keep].iter().collect();
    let tail: String = chars[n - keep..].iter().collect();
    format!("{head}…{tail} ({n} chars)")
}

fn openai_like(hit: &Hit<'_>) -> bool {
    // `sk-` names in prose (`sk-learn-style-…-2024`) are words; keys are random
    // mixed-case text with digits.
    let body = hit.value.trim_start_matches("sk-");
    body.bytes().any(|b| b.is_ascii_digit())
        && body.bytes().any(|b| b.is_ascii_uppercase())
        && body.bytes().any(|b| b.is_ascii_lowercase())
}

/// An AWS key id glued to a word is still one (`keyAKIA…`), but not the middle
/// of an upper-case run (`SLOVAKIA…`); glued on the right to more capitals it
/// must hold a digit, as generated ids nearly always do.
fn aws_key_id(hit: &Hit<'_>) -> bool {
    let caps_or_digit = |c: Option<char>| c.is_some_and(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    if caps_or_digit(hit.before.chars().next_back()) {
        return false;
    }
    !caps_or_digit(hit.after.chars().next()) || hit.value[4..].bytes().any(|b| b.is_ascii_digit())
}

fn is_placeholder(v: &str) -> bool {
    let l = v.to_ascii_lowercase();
    let words = [
        "your",
        "example",
        "placeholder",
        "changeme",
        "change_me",
        "redacted",
        "xxxx",
        "****",
        "...",
        "…",
        "dummy",
        "sample",
        "secret_here",
        "password_here",
    ];
    let exact = ["env", "null", "none", "true", "false", "required", "optional", "string"];
    l.starts_with('$')
        || l.starts_with('%')
        || l.starts_with('{')
        || l.contains("${")
        || l.contains("{{")
        || words.iter().any(|w| l.contains(w))
        || exact.contains(&l.as_str())
        || v.chars().all(|c| c == v.chars().next().unwrap_or(' '))
}

fn is_hex(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 5 && parts.iter().zip([8, 4, 4, 4, 12]).all(|(p, n)| p.len() == n && is_hex(p))
}

/// A value that is a path or a URL (`pwd: /home/me`, `password: https://vault/…`).
fn is_path_or_url(v: &str) -> bool {
    v.starts_with(['/', '~', '.']) || v.contains("://")
}

/// The value after a password-like label (`password=`, `DB_PASSWORD:`, `密码：`):
/// not a placeholder, a path or a plain word; six digits or more are a PIN.
fn labelled_password(hit: &Hit<'_>) -> bool {
    let v = hit.value.trim_end_matches(['.', ')', ']']);
    if v.len() < 6 || is_placeholder(v) || is_path_or_url(v) {
        return false;
    }
    let has_digit = v.bytes().any(|b| b.is_ascii_digit());
    let has_alpha = v.bytes().any(|b| b.is_ascii_alphabetic());
    let has_symbol = v.bytes().any(|b| !b.is_ascii_alphanumeric());
    let mixed_case = v.bytes().any(|b| b.is_ascii_uppercase()) && v.bytes().any(|b| b.is_ascii_lowercase());
    (has_alpha && (has_digit || has_symbol || mixed_case)) || v.len() >= 12 || !has_alpha && !has_symbol
}

/// The value in "the password is …" (`密码是…`): a sentence goes on with
/// words (`is required`, `is case-sensitive`, `is Incorrect!`,
/// `is PostgreSQL-compatible`), so only a value no word looks like counts:
/// one with a digit, or letters with a symbol other than `-`.
fn password_in_prose(hit: &Hit<'_>) -> bool {
    let v = hit.value.trim_end_matches(['.', ')', ']', '?', '!', ':']);
    if v.len() < 6 || is_placeholder(v) || is_path_or_url(v) {
        return false;
    }
    let has_digit = v.bytes().any(|b| b.is_ascii_digit());
    let has_alpha = v.bytes().any(|b| b.is_ascii_alphabetic());
    let odd_symbol = v.bytes().any(|b| !b.is_ascii_alphanumeric() && b != b'-');
    has_digit || (has_alpha && odd_symbol)
}

/// A value after `token=`/`api_key:`: random-looking, not a commit id, hash or UUID.
fn looks_random(hit: &Hit<'_>) -> bool {
    let v = hit.value.trim_end_matches(['.', '=']);
    if v.len() < 16 || is_placeholder(v) || is_uuid(v) {
        return false;
    }
    if is_hex(v) {
        // Commit ids (7–40, 64) and content hashes are not credentials.
        return v.len() >= 32 && v.len() != 40 && v.len() != 64 && tokens::entropy(v) >= 3.0;
    }
    let has_digit = v.bytes().any(|b| b.is_ascii_digit());
    let has_alpha = v.bytes().any(|b| b.is_ascii_alphabetic());
    // Dotted or dashed identifiers (`com.example.app`, `my-long-setting-name`) are names.
    let is_name = v.split(['.', '-', '_', '/']).all(|p| p.bytes().all(|b| b.is_ascii_lowercase()));
    has_digit && has_alpha && !is_name && tokens::entropy(v) >= 3.5
}

#[cfg(test)]
mod tests;

/// Masks the credentials of every URL in `text`: `https://user:pass@host` becomes
/// `https://user:***@host`, and `https://token@host` (a token as the user name) becomes
/// `https://***@host`. The one masking of URLs: sync status, remote lists and every error
/// text a tool, the CLI or the page shows.
pub fn mask_url_credentials(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("://") || !text.contains('@') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let scheme_start = rest[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |i| i + 1);
        let scheme = &rest[scheme_start..at];
        let after = at + 3;
        out.push_str(&rest[..after]);
        let tail = &rest[after..];
        let end = tail
            .find(|c: char| {
                matches!(c, '/' | '?' | '#') || c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | ')')
            })
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(userinfo_end) => {
                let userinfo = &authority[..userinfo_end];
                match userinfo.split_once(':') {
                    Some((user, _)) => {
                        out.push_str(user);
                        out.push_str(":***");
                    }
                    None if matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") => {
                        out.push_str("***")
                    }
                    None => out.push_str(userinfo),
                }
                out.push_str(&authority[userinfo_end..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod url_mask_tests {
    use super::mask_url_credentials as m;

    #[test]
    fn url_credentials_are_masked() {
        assert_eq!(m("https://user:pass@host/x.git"), "https://user:***@host/x.git");
        assert_eq!(m("fetch https://tok@github.com/o/r failed"), "fetch https://***@github.com/o/r failed");
        assert_eq!(m("ssh://git@host/r (x) http://a:b@c"), "ssh://git@host/r (x) http://a:***@c");
        assert_eq!(m("no url here: a@b"), "no url here: a@b");
        assert_eq!(m("https://host/p@q"), "https://host/p@q");
        assert_eq!(m("'https://u:p%40ss@h'"), "'https://u:***@h'");
    }
}
