//! The rules on credentials, on evasions and on ordinary text that must pass.

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
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
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

/// Deterministic pseudo-random text for test credentials (xorshift).
struct Noise(u64);

impl Noise {
    fn byte(&mut self) -> u8 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 24) as u8
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.byte()).collect()
    }

    /// `n` characters of `alphabet`.
    fn text(&mut self, alphabet: &str, n: usize) -> String {
        let a = alphabet.as_bytes();
        (0..n).map(|_| a[usize::from(self.byte()) % a.len()] as char).collect()
    }
}

const BASE62: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

fn base64(bytes: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            out.push(if i <= chunk.len() { A[(n >> (18 - 6 * i) & 63) as usize] as char } else { '=' });
        }
    }
    out
}

#[test]
fn env_style_names_and_labels_are_assignments() {
    let mut noise = Noise(7);
    let aws_secret = noise.text(BASE62, 40);
    let token = noise.text(BASE62, 40);
    let api_key = noise.text(BASE62, 32);
    for (text, kind) in [
        ("DB_PASSWORD=Tr0ub4dor&3".to_owned(), "password assignment"),
        ("POSTGRES_PASSWORD: s3cr3t-Pg-pass".to_owned(), "password assignment"),
        ("MYSQL_ROOT_PASSWORD=my-r00t-pw".to_owned(), "password assignment"),
        ("export REDIS_PASS=\"Tr0ub4dor&3\"".to_owned(), "password assignment"),
        ("const dbPassword = \"S3cure!pass\";".to_owned(), "password assignment"),
        ("pw=hunter2x".to_owned(), "password assignment"),
        (format!("AWS_SECRET_ACCESS_KEY={aws_secret}"), "secret assignment"),
        (format!("GITHUB_TOKEN={token}"), "secret assignment"),
        (format!("X_API_KEY={api_key}"), "secret assignment"),
        (format!("STRIPE_KEY: {api_key}"), "secret assignment"),
        (format!("{{\"apiKey\": \"{api_key}\"}}"), "secret assignment"),
        ("密码：Tr0ub4dor&3".to_owned(), "password assignment"),
        ("数据库密码: hunter2x".to_owned(), "password assignment"),
        ("口令：hunter2x！".to_owned(), "password assignment"),
        ("wifi 密码是 88886666".to_owned(), "password in prose"),
        ("管理员密码为Tr0ub4dor&3，别外传".to_owned(), "password in prose"),
        (format!("密钥：{api_key}"), "secret assignment"),
        (format!("令牌是{api_key}。"), "secret assignment"),
        ("the password is hunter2X!".to_owned(), "password in prose"),
        ("The root password is Tr0ub4dor&3.".to_owned(), "password in prose"),
        ("password for admin@db1 is hunter2x".to_owned(), "password in prose"),
        ("My PIN password is 480916".to_owned(), "password in prose"),
    ] {
        assert_eq!(kinds(&text), [kind], "{text}");
    }
}

#[test]
fn evasions_are_seen_through() {
    let mut noise = Noise(11);
    let aws = ["AKIA", "Q3EXAMPLEKEY7Z2W"].concat();
    let gh = ["ghp_", &noise.text(BASE62, 36)].concat();
    let aws_secret = noise.text(BASE62, 40);
    // Base64 of a key, of a token, of an assignment; base64 inside base64.
    assert_eq!(kinds(&base64(aws.as_bytes())), ["base64-encoded AWS access key id"]);
    assert_eq!(kinds(&format!("ci: {}", base64(gh.as_bytes()))), ["base64-encoded GitHub token"]);
    assert_eq!(kinds(&base64(aws_secret.as_bytes())), ["base64-encoded high-entropy token"]);
    let assignment = format!("DB_PASSWORD=Tr0ub4dor&3\nAPI_KEY={aws_secret}\n");
    assert_eq!(kinds(&base64(assignment.as_bytes())), ["base64-encoded password assignment"]);
    assert_eq!(kinds(&base64(base64(gh.as_bytes()).as_bytes())), ["base64-encoded credential"]);
    let url_safe = base64(gh.as_bytes()).replace('+', "-").replace('/', "_");
    assert_eq!(kinds(url_safe.trim_end_matches('=')), ["base64-encoded GitHub token"]);
    // A private key's body without its BEGIN line: whole lines of random base64.
    let body = base64(&noise.bytes(48 * 4));
    for line in body.as_bytes().chunks(64).map(|l| std::str::from_utf8(l).expect("ascii")) {
        assert_eq!(kinds(line), ["private key body"], "{line}");
    }
    let openssh = base64(&[b"openssh-key-v1\0".as_slice(), &noise.bytes(40)].concat());
    assert_eq!(kinds(&openssh[..70]), ["private key body"]);
    // A random key on its own, or in a sentence.
    assert_eq!(kinds(&format!("use {aws_secret} for the bucket")), ["high-entropy token"]);
    // Zero-width and full-width characters inside a key.
    for zw in ['\u{200B}', '\u{200C}', '\u{200D}', '\u{2060}', '\u{FEFF}', '\u{00AD}'] {
        let hidden: String = aws.chars().flat_map(|c| [c, zw]).collect();
        assert_eq!(kinds(&format!("密钥 {hidden}")), ["AWS access key id"], "{zw:?}");
        assert_eq!(scan(&hidden)[0].masked, mask(&aws));
    }
    let full_width: String =
        gh.chars().map(|c| char::from_u32(c as u32 - 0x21 + 0xFF01).unwrap_or(c)).collect();
    assert_eq!(kinds(&format!("token {full_width}")), ["GitHub token"]);
    assert_eq!(kinds("ＤＢ＿ＰＡＳＳＷＯＲＤ＝Ｔｒ０ｕｂ４ｄｏｒ＆３"), ["password assignment"]);
    // A key glued to a word, on either side.
    assert_eq!(kinds(&format!("deploykey{aws}")), ["AWS access key id"]);
    assert_eq!(kinds(&format!("deploykey{aws}backup")), ["AWS access key id"]);
    assert_eq!(kinds(&format!("token{gh}")), ["GitHub token"]);
    assert_eq!(kinds(&format!("CI_{gh}_OLD")), ["GitHub token"]);
}

#[test]
fn the_masked_value_is_what_the_person_must_find() {
    let aws = ["AKIA", "Q3EXAMPLEKEY7Z2W"].concat();
    let encoded = base64(aws.as_bytes());
    let f = &scan(&format!("x {encoded}"))[0];
    assert_eq!(f.masked, mask(encoded.trim_end_matches('=')));
    assert!(!f.masked.contains(&aws[4..]) && !f.masked.contains(&encoded[4..24]));
}

#[test]
fn ordinary_text_of_every_kind_passes() {
    let mut noise = Noise(3);
    let ssh_public = base64(&[b"\0\0\0\x0bssh-ed25519\0\0\0\x20".as_slice(), &noise.bytes(32)].concat());
    let png = base64(&[b"\x89PNG\r\n\x1a\n".as_slice(), &noise.bytes(120)].concat());
    let texts = [
        // Commit ids, hashes, UUIDs, numbers and times.
        "fixed in 2fef455a1b2c3d4e5f60718293a4b5c6d7e8f901 (short 2fef455)".to_owned(),
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".to_owned(),
        "md5 5d41402abc4b2a76b9719d911017c592, addr 0x7ffd5e8c1a2b3c4d5e6f7a8b9c0d1e2f".to_owned(),
        "session 123e4567-e89b-12d3-a456-426614174000 / F9168C5E-CEB2-4FAA-B6BF-329BF39FA1E4".to_owned(),
        "at 2024-05-01T08:30:00+08:00, 2024-05-01T00:30:00.123456Z, 20240501T083000Z, 1714523400000".to_owned(),
        "order 20240501083000123456789, phone +86-138-0013-8000, card 6222 0202 0000 1234".to_owned(),
        // Ids are random by design: labelled ones, and single-case ones (ULIDs).
        "[2024-05-01 08:30] type:note conv:aB3dE6fGh9iJ2kLm5nOp8qRs1tUv".to_owned(),
        "{\"id\": \"aB3dE6fGh9iJ2kLm5nOp8qRs\", \"sessionId\": \"Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2\"}".to_owned(),
        "request_id=aB3dE6fGh9iJ2kLm5nOp8qRs1tUv, run 01HX3K9Z8Y7W6V5T4S3R2Q1P0N".to_owned(),
        // Prose.
        "用户喜欢早上训练，每周三次，目标是减脂。密码学是一门有趣的学科；密码至少 8 位。".to_owned(),
        "密码：请向管理员索取。密钥：见保险柜。口令是什么？令牌已过期。".to_owned(),
        "The password is required. The password is case-sensitive and the password is Incorrect!".to_owned(),
        "the password is PostgreSQL-compatible; 密码是 PostgreSQL 的默认设置".to_owned(),
        "Your password is at least 8 characters long; the password was changed yesterday.".to_owned(),
        "We use sk-learn-style-pipelines-and-more-2024 and risk-management-framework-for-the-2024-cycle.".to_owned(),
        "Use a token-bucket rate limiter with refill-rate-per-second and burst-capacity settings.".to_owned(),
        "We compared AbstractSingletonProxyFactoryBean with WillNotFixUpPastStackLimit(usize).".to_owned(),
        // Names in code.
        "call commit_hand_edits_if_any() then release_waker_on_rx_drop; see MAX_CONCURRENT_REQUESTS_PER_HOST".to_owned(),
        "NL80211_ATTR_P2P_CTWINDOW, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, _mm256_permute2x128_si256".to_owned(),
        "getHTTPResponseCode2XX and parseISO8601DateTimeWithZone in DefaultKafkaConsumerFactoryBuilder".to_owned(),
        "org.springframework.boot.autoconfigure.web.servlet.DispatcherServletAutoConfiguration".to_owned(),
        "@typescript-eslint/eslint-plugin@8.0.0-alpha.30 and v1.2.3-beta.4+build.567".to_owned(),
        "2024-05-01-weekly-planning-meeting-notes-for-the-platform-team".to_owned(),
        // Paths and URLs.
        "/home/user/projects/engram/src/store/guard.rs and C:\\Users\\Zhang\\AppData\\Local\\Programs".to_owned(),
        "src/components/UserProfileCard/UserProfileCardContainer.tsx, ~/.config/engram/settings.toml".to_owned(),
        "spec: https://docs.google.com/document/d/1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms/edit?usp=sharing".to_owned(),
        "img https://encrypted-tbn0.gstatic.com/images?q=tbn:ANd9GcQ_Tnd67jTFU3qlXn69Kt_Fm60e2ZKQpgEkgg&usqp=CAU".to_owned(),
        "see github.com/tokio-rs/tokio/blob/925c614c89d0a26777a334612e2ed6ad0e7935c3/tokio/src/task/coop/mod.rs".to_owned(),
        "Reset the password at https://accounts.example.com/reset-password?user=zhang".to_owned(),
        // Markdown.
        "## 训练计划\n\n| day | plan |\n|-----|------|\n| Mon | **squat** 5x5 |\n\n```rust\nlet x = 1;\n```\n- [x] done\n==========".to_owned(),
        "[the docs](https://example.com/docs/getting-started#install) and ![logo](images/logo-dark@2x.png)".to_owned(),
        // Configuration that names a secret without holding one.
        "DB_PASSWORD=${DB_PASSWORD}\nPOSTGRES_PASSWORD: changeme\nGITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}".to_owned(),
        "max_tokens: 4096, next_page_token: null, pwd: /home/user/project, password_min_length: 12".to_owned(),
        // Base64 of ordinary text: judged by what it says.
        format!("note {}", base64("hello world, this is an ordinary note about training".as_bytes())),
        base64("用户喜欢早上训练，每周三次。".as_bytes()),
        // Hashes and public material that are not secrets.
        "integrity sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC".to_owned(),
        format!("ssh-ed25519 {ssh_public} zhang@laptop"),
        format!("![chart](data:image/png;base64,{png})"),
    ];
    for text in &texts {
        assert!(scan(text).is_empty(), "false positive on {text:?}: {:?}", scan(text));
    }
}

#[test]
fn random_tokens_are_found_and_names_are_not() {
    let mut noise = Noise(5);
    let mut found = 0;
    for _ in 0..200 {
        let t = noise.text(BASE62, 40);
        found += usize::from(!scan(&t).is_empty());
    }
    assert!(found >= 190, "only {found} of 200 random 40-character tokens were found");
}

/// Prints what a scan costs (no assertion on time): a capture's block and
/// 1 MB of Chinese and of English prose. Run with
/// `cargo test --release --lib secrets::tests::scan_cost -- --ignored --nocapture`.
#[test]
#[ignore = "prints timings"]
fn scan_cost() {
    let block = "## prefs\n\n<!-- 2024-05-01T08:30:00+08:00 [训练, morning] -->\n用户喜欢早上训练，每周三次，目标是减脂。The user prefers short sessions (30 min) and logs them at https://example.com/sheets/fitness-log.\n摘要：早上训练，每周三次\n";
    let zh = "用户喜欢早上训练，每周三次，目标是减脂；教练建议先做动态拉伸（10 分钟），再做深蹲 5x5。密码学是一门有趣的学科。\n";
    let en = "The user prefers short sessions in the morning and tracks progress in a spreadsheet; commit 2fef455a1b2c3d4e5f60718293a4b5c6d7e8f901 fixed the export.\n";
    let mb = |line: &str| line.repeat((1 << 20) / line.len() + 1);
    for (label, text, reps) in [
        ("capture block", block.to_owned(), 20_000),
        ("1 MB Chinese", mb(zh), 20),
        ("1 MB English", mb(en), 20),
    ] {
        let mut findings = scan(&text).len();
        let mut best = std::time::Duration::MAX;
        for _ in 0..reps {
            let t = std::time::Instant::now();
            findings += scan(std::hint::black_box(&text)).len();
            best = best.min(t.elapsed());
        }
        println!("{label:<14} {:>8} bytes  best of {reps}: {best:?}  ({findings} findings)", text.len());
    }
}
