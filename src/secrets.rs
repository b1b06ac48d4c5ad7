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

struct Rule {
    kind: &'static str,
    re: Regex,
    /// Capture group holding the secret (0 = whole match).
    group: usize,
    /// Extra check on the captured value.
    check: fn(&str) -> bool,
}

fn always(_: &str) -> bool {
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

fn rules() -> &'static Rules {
    static RULES: OnceLock<Rules> = OnceLock::new();
    RULES.get_or_init(|| {
        let rule = |kind, pattern: &str, group, check| Rule {
            kind,
            re: Regex::new(&ascii_boundaries(pattern)).unwrap_or_else(|e| panic!("secret rule {kind}: {e}")),
            group,
            check,
        };
        let rules = vec![
            rule("private key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----", 0, always),
            rule("AWS access key id", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b", 0, always),
            rule("GitHub token", r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b", 0, always),
            rule("GitHub token", r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b", 0, always),
            rule("Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", 0, always),
            rule(
                "Slack webhook",
                r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+",
                0,
                always,
            ),
            rule("Anthropic API key", r"\bsk-ant-(?:api|admin)[0-9]{2}-[A-Za-z0-9_-]{20,}", 0, always),
            rule("OpenAI API key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}", 0, openai_like),
            rule("Google API key", r"\bAIza[0-9A-Za-z_-]{35}\b", 0, always),
            rule("Google OAuth client secret", r"\bGOCSPX-[A-Za-z0-9_-]{28}\b", 0, always),
            rule("JSON Web Token", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}", 0, always),
            // The value is printable ASCII: a full-width comma or any Chinese
            // text right after a password ends it.
            rule(
                "password assignment",
                r#"(?i)\b(?:password|passwd|passphrase|pwd)["']?\s*(?:=|:)\s*["']?([[:graph:]&&[^"'`,;<>]]{6,})"#,
                1,
                looks_like_password,
            ),
            rule(
                "secret assignment",
                r#"(?i)\b(?:api[_-]?key|apikey|secret[_-]?key|secret|client[_-]?secret|access[_-]?key(?:[_-]?id)?|auth[_-]?token|access[_-]?token|refresh[_-]?token|token|private[_-]?key|credentials?)["']?\s*(?:=|:)\s*["']?([A-Za-z0-9_\-+/=.]{16,})"#,
                1,
                looks_random,
            ),
            rule("bearer token", r"(?i)\bbearer\s+([A-Za-z0-9_\-+/=.]{20,})", 1, looks_random),
            rule(
                "credentials in a URL",
                r"\b[a-z][a-z0-9+.-]*://[^\s:/@]{1,64}:([^\s:/@]{6,128})@[A-Za-z0-9.-]+",
                1,
                looks_like_password,
            ),
        ];
        let any = RegexSet::new(rules.iter().map(|r| r.re.as_str()))
            .unwrap_or_else(|e| panic!("secret rules as a set: {e}"));
        Rules { rules, any }
    })
}

/// Scans a text; `line` numbers are 1-based lines of `text`.
pub fn scan(text: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        scan_line(line, i + 1, &mut out);
    }
    out
}

/// Scans one line, appending findings numbered `line_no`.
pub fn scan_line(line: &str, line_no: usize, out: &mut Vec<Finding>) {
    // Cheap pre-filter: every rule needs an ASCII run of 6+ credential characters.
    if !has_token_run(line) {
        return;
    }
    let Rules { rules, any } = rules();
    let candidates = any.matches(line);
    if !candidates.matched_any() {
        return;
    }
    let mut taken: Vec<(usize, usize)> = Vec::new();
    for rule in candidates.iter().map(|i| &rules[i]) {
        for caps in rule.re.captures_iter(line) {
            let Some(m) = caps.get(rule.group) else { continue };
            if !(rule.check)(m.as_str()) {
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
}

fn has_token_run(line: &str) -> bool {
    let mut run = 0;
    for b in line.bytes() {
        if b.is_ascii_alphanumeric() || b"-_+/=.".contains(&b) {
            run += 1;
            if run >= 6 {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
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

fn openai_like(s: &str) -> bool {
    // `sk-` names in prose (sk-learn-…) are words; keys mix letters and digits.
    let body = s.trim_start_matches("sk-");
    body.bytes().any(|b| b.is_ascii_digit()) && body.bytes().any(|b| b.is_ascii_alphabetic())
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

/// A value after `password=`: not a placeholder, not a plain word.
fn looks_like_password(v: &str) -> bool {
    let v = v.trim_end_matches(['.', ')', ']']);
    if v.chars().count() < 6 || is_placeholder(v) || !v.is_ascii() {
        return false;
    }
    let has_digit = v.bytes().any(|b| b.is_ascii_digit());
    let has_alpha = v.bytes().any(|b| b.is_ascii_alphabetic());
    let has_symbol = v.bytes().any(|b| !b.is_ascii_alphanumeric());
    let mixed_case = v.bytes().any(|b| b.is_ascii_uppercase()) && v.bytes().any(|b| b.is_ascii_lowercase());
    (has_alpha && (has_digit || has_symbol || mixed_case)) || v.len() >= 12
}

/// Shannon entropy in bits per character.
fn entropy(s: &str) -> f64 {
    let mut counts = [0usize; 256];
    for b in s.bytes() {
        counts[b as usize] += 1;
    }
    let n = s.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

/// A value after `token=`/`api_key:`: random-looking, not a commit id, hash or UUID.
fn looks_random(v: &str) -> bool {
    let v = v.trim_end_matches(['.', '=']);
    if v.len() < 16 || is_placeholder(v) || is_uuid(v) {
        return false;
    }
    if is_hex(v) {
        // Commit ids (7–40, 64) and content hashes are not credentials.
        return v.len() >= 32 && v.len() != 40 && v.len() != 64 && entropy(v) >= 3.0;
    }
    let has_digit = v.bytes().any(|b| b.is_ascii_digit());
    let has_alpha = v.bytes().any(|b| b.is_ascii_alphabetic());
    // Dotted or dashed identifiers (`com.example.app`, `my-long-setting-name`) are names.
    let is_name = v.split(['.', '-', '_', '/']).all(|p| p.bytes().all(|b| b.is_ascii_lowercase()));
    has_digit && has_alpha && !is_name && entropy(v) >= 3.5
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<&'static str> {
        scan(text).into_iter().map(|f| f.kind).collect()
    }

    #[test]
    fn finds_credentials_with_a_shape() {
        let aws = ["AKIA", "IOSFODNN7EXAMPLE"].concat();
        assert_eq!(kinds(&format!("key {aws} here")), ["AWS access key id"]);
        assert_eq!(kinds("-----BEGIN OPENSSH PRIVATE KEY-----"), ["private key"]);
        assert_eq!(kinds("-----BEGIN RSA PRIVATE KEY-----"), ["private key"]);
        let gh = ["ghp_", "1234567890abcdefghijABCDEFGHIJ123456"].concat();
        assert_eq!(kinds(&gh), ["GitHub token"]);
        let slack = ["xoxb-", "123456789012-1234567890123-AbCdEfGhIjKl"].concat();
        assert_eq!(kinds(&slack), ["Slack token"]);
        let openai = ["sk-proj-", "Ab3dEf6hIj9lMn2pQr5tUv8xYz1bCd4fGh7j"].concat();
        assert_eq!(kinds(&openai), ["OpenAI API key"]);
        let anthropic = ["sk-ant-api03-", "Ab3dEf6hIj9lMn2pQr5tUv8xYz1bCd4f"].concat();
        assert_eq!(kinds(&anthropic), ["Anthropic API key"]);
        let google = ["AIza", "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"].concat();
        assert_eq!(kinds(&google), ["Google API key"]);
        let jwt =
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        assert_eq!(kinds(jwt), ["JSON Web Token"]);
    }

    #[test]
    fn finds_keys_glued_to_chinese_text() {
        let aws = ["AKIA", "IOSFODNN7EXAMPLE"].concat();
        assert_eq!(kinds(&format!("密钥{aws}已过期")), ["AWS access key id"]);
        let gh = ["ghp_", "1234567890abcdefghijABCDEFGHIJ123456"].concat();
        assert_eq!(kinds(&format!("令牌：{gh}。")), ["GitHub token"]);
        assert_eq!(kinds("数据库password=hunter2x，别忘了"), ["password assignment"]);
    }

    #[test]
    fn finds_assignments() {
        assert_eq!(kinds("db password=hunter2x"), ["password assignment"]);
        assert_eq!(kinds("password: Seventeen-envoy-9"), ["password assignment"]);
        assert_eq!(kinds(r#"{"password": "S3cure!pass"}"#), ["password assignment"]);
        assert_eq!(kinds("api_key: 9fQ2xLm7Tz4KpW8rVb3N"), ["secret assignment"]);
        assert_eq!(kinds("Authorization: Bearer 9fQ2xLm7Tz4KpW8rVb3NqR5s"), ["bearer token"]);
        assert_eq!(kinds("postgres://admin:s3cretPw9@db.local/app"), ["credentials in a URL"]);
    }

    #[test]
    fn ordinary_text_is_not_a_secret() {
        for text in [
            "用户喜欢早上训练，每周三次，目标是减脂。密码学是一门有趣的学科。",
            "commit 2fef455a1b2c3d4e5f60718293a4b5c6d7e8f901 fixed the bug",
            "id 123e4567-e89b-12d3-a456-426614174000",
            "token: 2fef455a1b2c3d4e5f60718293a4b5c6d7e8f901",
            "The password must be at least 8 characters long.",
            "password: <your password>",
            "password = ${DB_PASSWORD}",
            "password: ********",
            "max_tokens: 4096, api_key: your-api-key-here",
            "token: com.example.my-application-name",
            "We use sk-learn-style pipelines and scikit-learn.",
            "secret: 这是一个秘密，不要告诉别人",
            "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        ] {
            assert!(scan(text).is_empty(), "false positive on {text:?}: {:?}", scan(text));
        }
    }

    #[test]
    fn masks_keep_little() {
        assert_eq!(mask("AKIAIOSFODNN7EXAMPLE"), "AKIA…MPLE (20 chars)");
        assert_eq!(mask("hunter2x"), "hu…2x (8 chars)");
        assert!(!mask("abcdefghijklmnopqrstuvwxyz").contains("efgh"));
    }
}
