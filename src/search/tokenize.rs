//! Text normalisation and tokenisation.
//!
//! Text is NFKC-normalised and lowercased (so full-width `Ｒｕｓｔ` becomes
//! `rust`), then split into:
//! * **words**: runs of letters/digits outside CJK scripts, stemmed with
//!   [`super::stem`] and flagged when they are English stopwords;
//! * **CJK**: every Han, kana or Hangul character as a unigram, plus every
//!   pair of adjacent CJK characters as a bigram (so no dictionary is needed
//!   and a one-character query still matches);
//! * **symbols**: each emoji is a token of its own (skin-tone modifiers,
//!   variation selectors and joiners are dropped);
//! * everything else (punctuation, spaces) separates tokens.
//!
//! Every token carries the byte span of the *original* text it came from, so
//! snippets can be cut from the text as written.

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

use super::stem::stem_into;
use super::stopwords::is_stopword;

/// Bumped whenever tokenisation changes, so stale snapshots are rejected.
pub const TOKENIZER_VERSION: u32 = 2;

/// Words longer than this many characters (hashes, base64…) are not indexed.
const MAX_WORD_CHARS: usize = 40;

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// A (stemmed) word of letters and possibly digits.
    Word,
    /// A run of digits.
    Number,
    /// A single CJK character.
    CjkUnigram,
    /// Two adjacent CJK characters.
    CjkBigram,
    /// An emoji or pictographic symbol.
    Symbol,
}

/// One token, borrowed from the tokenizer's buffers for the duration of a callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token<'a> {
    /// Normalised (and for words, stemmed) text used as the index term.
    pub text: &'a str,
    /// Byte offset in the original text where the token starts.
    pub start: usize,
    /// Byte offset in the original text where the token ends.
    pub end: usize,
    /// What kind of token this is.
    pub kind: TokenKind,
    /// Whether the token is an English stopword.
    pub stop: bool,
}

/// An owned copy of a [`Token`], handy for tests and callers that collect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedToken {
    /// Index term.
    pub text: String,
    /// Start byte offset in the original text.
    pub start: usize,
    /// End byte offset in the original text.
    pub end: usize,
    /// Token kind.
    pub kind: TokenKind,
    /// Whether the token is an English stopword.
    pub stop: bool,
}

/// A normalised character with the byte span of the original text it came from.
#[derive(Debug, Clone, Copy)]
struct NormChar {
    c: char,
    start: usize,
    end: usize,
}

/// Whether `c` belongs to a script written without spaces that we bigram
/// (Han, kana, Hangul).
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3005..=0x3007      // 々 〆 〇
        | 0x3040..=0x30FF    // hiragana, katakana
        | 0x31F0..=0x31FF    // katakana phonetic extensions
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0x1100..=0x11FF    // Hangul jamo
        | 0x3130..=0x318F    // Hangul compatibility jamo
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0x20000..=0x3134F) // CJK extensions B–G
}

/// Whether `c` is an emoji / pictograph that should be a token by itself.
fn is_symbol(c: char) -> bool {
    let u = c as u32;
    if (0x1F3FB..=0x1F3FF).contains(&u) {
        return false; // skin-tone modifiers
    }
    matches!(u,
        0x1F000..=0x1FAFF | 0x2600..=0x27BF | 0x2300..=0x23FF | 0x2B00..=0x2BFF)
}

fn is_apostrophe(c: char) -> bool {
    matches!(c, '\'' | '\u{2019}' | '\u{02BC}')
}

/// NFKC-normalises and lowercases `text` and folds traditional Chinese characters to
/// simplified ones ([`super::hanzi`]), keeping the original span of each char.
fn normalize(text: &str, out: &mut Vec<NormChar>) {
    out.clear();
    let mut iter = text.char_indices().peekable();
    let mut cluster = String::new();
    while let Some((start, c)) = iter.next() {
        if c.is_ascii() && !iter.peek().is_some_and(|&(_, m)| is_combining_mark(m)) {
            out.push(NormChar {
                c: c.to_ascii_lowercase(),
                start,
                end: start + 1,
            });
            continue;
        }
        // A base char and the combining marks after it normalise together.
        cluster.clear();
        cluster.push(c);
        let mut end = start + c.len_utf8();
        while let Some(&(i, m)) = iter.peek() {
            if !is_combining_mark(m) {
                break;
            }
            cluster.push(m);
            end = i + m.len_utf8();
            iter.next();
        }
        for n in cluster.nfkc() {
            for l in n.to_lowercase() {
                out.push(NormChar { c: super::hanzi::simplified(l), start, end });
            }
        }
    }
}

/// Reusable tokenizer state (buffers), so tokenising many texts allocates little.
#[derive(Debug, Default, Clone)]
pub struct Tokenizer {
    chars: Vec<NormChar>,
    word: String,
    stemmed: String,
}

impl Tokenizer {
    /// Creates a tokenizer with empty buffers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Tokenises `text`, calling `emit` for every token in text order
    /// (for CJK runs: each unigram, then the bigram starting at it).
    pub fn tokenize(&mut self, text: &str, mut emit: impl FnMut(Token<'_>)) {
        normalize(text, &mut self.chars);
        let chars = &self.chars;
        let mut i = 0;
        let mut after_apostrophe = false;
        while i < chars.len() {
            let c = chars[i].c;
            if is_cjk(c) {
                let s = i;
                while i < chars.len() && is_cjk(chars[i].c) {
                    i += 1;
                }
                let mut buf = [0u8; 8];
                for k in s..i {
                    let a = chars[k].c.encode_utf8(&mut buf).len();
                    emit(Token {
                        text: std::str::from_utf8(&buf[..a]).unwrap_or_default(),
                        start: chars[k].start,
                        end: chars[k].end,
                        kind: TokenKind::CjkUnigram,
                        stop: false,
                    });
                    if k + 1 < i {
                        let b = chars[k + 1].c.encode_utf8(&mut buf[a..]).len();
                        emit(Token {
                            text: std::str::from_utf8(&buf[..a + b]).unwrap_or_default(),
                            start: chars[k].start,
                            end: chars[k + 1].end,
                            kind: TokenKind::CjkBigram,
                            stop: false,
                        });
                    }
                }
                after_apostrophe = false;
            } else if c.is_alphanumeric() {
                let s = i;
                self.word.clear();
                while i < chars.len() && chars[i].c.is_alphanumeric() && !is_cjk(chars[i].c) {
                    self.word.push(chars[i].c);
                    i += 1;
                }
                let n_chars = i - s;
                let contraction = after_apostrophe
                    && matches!(
                        self.word.as_str(),
                        "s" | "t" | "d" | "m" | "ll" | "re" | "ve"
                    );
                // "caroline's" → "caroline" (+ dropped "s"); "o'brien" keeps "brien".
                after_apostrophe = i + 1 < chars.len()
                    && is_apostrophe(chars[i].c)
                    && chars[i + 1].c.is_alphabetic();
                if contraction || n_chars > MAX_WORD_CHARS {
                    continue;
                }
                let (start, end) = (chars[s].start, chars[i - 1].end);
                if self.word.bytes().all(|b| b.is_ascii_digit()) {
                    emit(Token {
                        text: &self.word,
                        start,
                        end,
                        kind: TokenKind::Number,
                        stop: false,
                    });
                } else {
                    let stop = is_stopword(&self.word);
                    stem_into(&self.word, &mut self.stemmed);
                    emit(Token {
                        text: &self.stemmed,
                        start,
                        end,
                        kind: TokenKind::Word,
                        stop,
                    });
                }
            } else if is_symbol(c) {
                let mut buf = [0u8; 4];
                emit(Token {
                    text: c.encode_utf8(&mut buf),
                    start: chars[i].start,
                    end: chars[i].end,
                    kind: TokenKind::Symbol,
                    stop: false,
                });
                i += 1;
            } else {
                // Separator; an apostrophe keeps `after_apostrophe` for the next word.
                if !is_apostrophe(c) {
                    after_apostrophe = false;
                }
                i += 1;
            }
        }
    }

    /// Tokenises `text` into owned tokens.
    pub fn tokens(&mut self, text: &str) -> Vec<OwnedToken> {
        let mut out = Vec::new();
        self.tokenize(text, |t| {
            out.push(OwnedToken {
                text: t.text.to_owned(),
                start: t.start,
                end: t.end,
                kind: t.kind,
                stop: t.stop,
            })
        });
        out
    }
}

/// Tokenises `text` with a fresh [`Tokenizer`] (convenience for one-off use).
pub fn tokens(text: &str) -> Vec<OwnedToken> {
    Tokenizer::new().tokens(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(s: &str) -> Vec<String> {
        tokens(s).into_iter().map(|t| t.text).collect()
    }

    fn of_kind(s: &str, kind: TokenKind) -> Vec<String> {
        tokens(s)
            .into_iter()
            .filter(|t| t.kind == kind)
            .map(|t| t.text)
            .collect()
    }

    #[test]
    fn english_is_lowercased_and_stemmed() {
        assert_eq!(
            texts("Melanie PAINTED two Sunsets"),
            ["melani", "paint", "two", "sunset"]
        );
    }

    #[test]
    fn chinese_gets_unigrams_and_bigrams() {
        assert_eq!(
            texts("机器学习"),
            ["机", "机器", "器", "器学", "学", "学习", "习"]
        );
        assert_eq!(
            of_kind("我喜欢跑步", TokenKind::CjkBigram),
            ["我喜", "喜欢", "欢跑", "跑步"]
        );
    }

    #[test]
    fn mixed_chinese_english() {
        let t = texts("用Rust写MCP服务器");
        assert_eq!(
            t,
            ["用", "rust", "写", "mcp", "服", "服务", "务", "务器", "器"]
        );
    }

    #[test]
    fn japanese_and_korean() {
        assert_eq!(
            of_kind("東京の寿司", TokenKind::CjkBigram),
            // Kanji fold as traditional Chinese characters do, in documents and queries alike.
            ["东京", "京の", "の寿", "寿司"]
        );
        assert_eq!(of_kind("カレー", TokenKind::CjkBigram), ["カレ", "レー"]);
        assert_eq!(of_kind("서울 여행", TokenKind::CjkBigram), ["서울", "여행"]);
        assert_eq!(
            of_kind("서울 여행", TokenKind::CjkUnigram),
            ["서", "울", "여", "행"]
        );
    }

    #[test]
    fn full_width_letters_are_folded() {
        assert_eq!(texts("Ｒｕｓｔ ＭＣＰ １２３"), ["rust", "mcp", "123"]);
        // Half-width katakana become full width.
        assert_eq!(of_kind("ｶﾚｰ", TokenKind::CjkBigram), ["カレ", "レー"]);
    }

    #[test]
    fn emoji_are_tokens_and_modifiers_dropped() {
        let t = tokens("I love 🐱! 👍🏽 ❤️");
        let syms: Vec<_> = t
            .iter()
            .filter(|t| t.kind == TokenKind::Symbol)
            .map(|t| t.text.as_str())
            .collect();
        assert_eq!(syms, ["🐱", "👍", "❤"]);
    }

    #[test]
    fn punctuation_separates_and_possessives_drop() {
        assert_eq!(
            texts("Caroline's dog, (Max)—isn't he cute?!"),
            ["carolin", "dog", "max", "isn", "he", "cut"]
        );
        assert!(texts("...!!! ，。、；").is_empty());
        assert!(texts("").is_empty());
    }

    #[test]
    fn stopwords_are_flagged() {
        let t = tokens("what did the dog eat");
        let stops: Vec<bool> = t.iter().map(|t| t.stop).collect();
        assert_eq!(stops, [true, true, true, false, false]);
    }

    #[test]
    fn spans_point_into_original_text() {
        let s = "Ｒｕｓｔ和 café";
        for t in tokens(s) {
            assert!(s.is_char_boundary(t.start) && s.is_char_boundary(t.end));
        }
        let t = tokens(s);
        assert_eq!(&s[t[0].start..t[0].end], "Ｒｕｓｔ");
        let cafe = t
            .iter()
            .find(|t| t.text == "café")
            .map(|t| &s[t.start..t.end]);
        assert_eq!(cafe, Some("café"));
    }

    #[test]
    fn combining_marks_compose() {
        assert_eq!(texts("cafe\u{301}"), ["café"]);
    }

    #[test]
    fn overlong_words_are_skipped() {
        let long = "a".repeat(60);
        assert!(texts(&long).is_empty());
    }
}
