//! Optional semantic re-ranking with static word vectors (off by default).
//!
//! The model is a **text word-vector file** in the word2vec/GloVe/fastText
//! text format: an optional header line `<count> <dims>`, then one line per
//! token, `token v1 v2 … vD` (space-separated). fastText publishes such files
//! (`cc.zh.300.vec`, `wiki-news-300d-1M.vec`), GloVe too (`glove.6B.100d.txt`),
//! and a model2vec model can be written out in it. Nothing is ever downloaded:
//! the user names a file (`--embeddings PATH`).
//!
//! A text is embedded as the mean of the vectors of its tokens: lower-cased
//! words as written (not stemmed), and for CJK runs every character bigram
//! and character the vocabulary knows. The search re-ranks its lexical top
//! [`RERANK_DEPTH`] hits by `lexical / best lexical + weight × cosine`.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

use super::tokenize::is_cjk;

/// How many lexical hits are re-ranked.
pub const RERANK_DEPTH: usize = 50;
/// Weight of the cosine similarity against the normalised lexical score.
pub const RERANK_WEIGHT: f32 = 0.5;
/// Largest dimension accepted (a guard against a file that is not vectors).
const MAX_DIMS: usize = 4096;

/// Why a word-vector file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddingsError {
    /// The file could not be read.
    #[error("无法读取词向量文件 (cannot read the word-vector file) {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A line is not `token v1 … vD`.
    #[error("词向量文件格式错误 (not a text word-vector file) {path}, line {line}: {reason}")]
    Format {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
}

/// Static word vectors, unit length, by token.
pub struct Embeddings {
    dims: usize,
    vectors: HashMap<String, Box<[f32]>>,
}

impl std::fmt::Debug for Embeddings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embeddings").field("tokens", &self.vectors.len()).field("dims", &self.dims).finish()
    }
}

impl Embeddings {
    /// Loads a text word-vector file (see the module docs).
    pub fn load(path: &Path) -> Result<Self, EmbeddingsError> {
        let shown = path.display().to_string();
        let file =
            std::fs::File::open(path).map_err(|source| EmbeddingsError::Io { path: shown.clone(), source })?;
        Self::read(std::io::BufReader::new(file), &shown)
    }

    /// Reads vectors from any reader (`name` is used in errors).
    pub fn read(reader: impl BufRead, name: &str) -> Result<Self, EmbeddingsError> {
        let mut dims = 0usize;
        let mut vectors = HashMap::new();
        for (i, line) in reader.lines().enumerate() {
            let line = line.map_err(|source| EmbeddingsError::Io { path: name.to_owned(), source })?;
            let bad = |reason: String| EmbeddingsError::Format { path: name.to_owned(), line: i + 1, reason };
            let mut parts = line.split_ascii_whitespace();
            let Some(token) = parts.next() else { continue };
            let values: Vec<f32> = parts
                .map(|p| p.parse::<f32>().map_err(|_| bad(format!("{p:?} is not a number"))))
                .collect::<Result<_, _>>()?;
            if i == 0 && values.len() == 1 && token.parse::<u64>().is_ok() {
                continue; // the `<count> <dims>` header
            }
            if values.is_empty() || values.len() > MAX_DIMS {
                return Err(bad(format!("{} values; expected 1 to {MAX_DIMS}", values.len())));
            }
            if dims == 0 {
                dims = values.len();
            } else if values.len() != dims {
                return Err(bad(format!("{} values where the file's vectors have {dims}", values.len())));
            }
            let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt();
            if norm > 0.0 && norm.is_finite() {
                let unit: Box<[f32]> = values.iter().map(|v| v / norm).collect();
                vectors.entry(token.to_lowercase()).or_insert(unit);
            }
        }
        Ok(Self { dims, vectors })
    }

    /// Number of tokens with a vector.
    pub fn len(&self) -> usize {
        self.vectors.len()
    }

    /// Whether no token has a vector.
    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }

    /// The unit mean vector of the known tokens of `text` (`None`: none known).
    pub fn embed(&self, text: &str) -> Option<Vec<f32>> {
        let mut sum = vec![0f32; self.dims];
        let mut any = false;
        let mut add = |token: &str| {
            if let Some(v) = self.vectors.get(token) {
                for (s, x) in sum.iter_mut().zip(v.iter()) {
                    *s += x;
                }
                any = true;
            }
        };
        let lower = text.to_lowercase();
        let mut word = String::new();
        let mut run: Vec<char> = Vec::new();
        let mut buf = String::new();
        for c in lower.chars().chain(std::iter::once(' ')) {
            if c.is_alphanumeric() && !is_cjk(c) {
                word.push(c);
                continue;
            }
            if !word.is_empty() {
                add(&word);
                word.clear();
            }
            if is_cjk(c) {
                run.push(c);
                continue;
            }
            for (k, &ch) in run.iter().enumerate() {
                buf.clear();
                buf.push(ch);
                add(&buf);
                if let Some(&next) = run.get(k + 1) {
                    buf.push(next);
                    add(&buf);
                }
            }
            run.clear();
        }
        if !any {
            return None;
        }
        let norm = sum.iter().map(|v| v * v).sum::<f32>().sqrt();
        (norm > 0.0).then(|| sum.into_iter().map(|v| v / norm).collect())
    }
}

/// Cosine of two unit vectors.
pub(super) fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODEL: &str = "5 3\ncat 1 0 0\nkitten 0.9 0.1 0\ndog 0 1 0\n猫 1 0.1 0\n小猫 0.95 0 0.05\n";

    #[test]
    fn reads_the_text_format_and_embeds_words_and_chinese() {
        let e = Embeddings::read(MODEL.as_bytes(), "model").expect("model");
        assert_eq!(e.len(), 5);
        let cat = e.embed("Cat!").expect("cat");
        let kitten = e.embed("a kitten").expect("kitten");
        let dog = e.embed("dog").expect("dog");
        assert!(cosine(&cat, &kitten) > 0.9 && cosine(&cat, &dog) < 0.1);
        let zh = e.embed("我的小猫").expect("zh");
        assert!(cosine(&zh, &cat) > 0.9);
        assert!(e.embed("nothing known").is_none());
    }

    #[test]
    fn rejects_what_is_not_vectors() {
        let err = Embeddings::read("cat 1 0\ndog 1\n".as_bytes(), "m").expect_err("ragged");
        assert!(err.to_string().contains("line 2"), "{err}");
        let err = Embeddings::read("cat one two\n".as_bytes(), "m").expect_err("words");
        assert!(err.to_string().contains("not a number"), "{err}");
    }
}
