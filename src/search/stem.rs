//! A light English suffix stemmer.
//!
//! Hand-written rather than a full Porter/Snowball stemmer: it only folds the
//! inflections that matter most for recall (plurals, `-ed`, `-ing`, `-ly`, a
//! trailing `-y`/`-e`) and leaves derivational suffixes (`-ness`, `-ation`, …)
//! alone, so it rarely merges unrelated words. Only words made of ASCII
//! lowercase letters and longer than three letters are stemmed.
//!
//! The stems are not always real words (`hiking`, `hikes`, `hike` → `hik`);
//! they only need to be the same for the same word family.

/// Writes the stem of `word` into `out` (which is cleared first).
///
/// `word` is expected to be lowercase already; other words are copied as is.
pub fn stem_into(word: &str, out: &mut String) {
    out.clear();
    out.push_str(word);
    if word.len() <= 3 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return;
    }
    // The word is ASCII, so byte-wise editing of `out` is char-boundary safe.
    strip_plural(out);
    strip_ed_ing(out);
    strip_ly(out);
    y_to_i(out);
    strip_final_e(out);
}

/// Returns the stem of `word` as a new string.
pub fn stem(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    stem_into(word, &mut out);
    out
}

fn is_vowel(b: u8) -> bool {
    matches!(b, b'a' | b'e' | b'i' | b'o' | b'u')
}

/// Whether `s` has a vowel (or a non-initial `y`).
fn has_vowel(s: &[u8]) -> bool {
    s.iter()
        .enumerate()
        .any(|(i, &b)| is_vowel(b) || (b == b'y' && i > 0))
}

fn strip_plural(w: &mut String) {
    // "classes" → "class", "parties" → "parti".
    if w.ends_with("sses") || (w.ends_with("ies") && w.len() > 4) {
        w.truncate(w.len() - 2);
    } else if w.ends_with("ss") || w.ends_with("us") || w.ends_with("is") {
        // "class", "bus", "this": not plurals.
    } else if w.ends_with('s') {
        w.truncate(w.len() - 1);
    }
}

fn strip_ed_ing(w: &mut String) {
    if w.ends_with("eed") {
        if w.len() > 4 {
            w.truncate(w.len() - 1);
        }
        return;
    }
    let cut = if w.ends_with("ed") {
        2
    } else if w.ends_with("ing") {
        3
    } else {
        return;
    };
    let stem_len = w.len() - cut;
    if stem_len < 3 || !has_vowel(&w.as_bytes()[..stem_len]) {
        return;
    }
    w.truncate(stem_len);
    // Undouble a final consonant: "running" → "run", but keep "fall", "miss", "buzz".
    let b = w.as_bytes();
    let n = b.len();
    if n >= 2
        && b[n - 1] == b[n - 2]
        && !is_vowel(b[n - 1])
        && !matches!(b[n - 1], b'l' | b's' | b'z')
    {
        w.truncate(n - 1);
    }
}

fn strip_ly(w: &mut String) {
    if w.ends_with("ly") && w.len() >= 7 {
        w.truncate(w.len() - 2);
    }
}

fn y_to_i(w: &mut String) {
    let b = w.as_bytes();
    let n = b.len();
    if n > 3 && b[n - 1] == b'y' && !is_vowel(b[n - 2]) {
        w.truncate(n - 1);
        w.push('i');
    }
}

fn strip_final_e(w: &mut String) {
    if w.len() > 3 && w.ends_with('e') && !w.ends_with("ee") {
        w.truncate(w.len() - 1);
    }
}

#[cfg(test)]
mod tests {
    use super::stem;

    #[test]
    fn folds_common_inflections() {
        for (family, expected) in [
            (
                &["paint", "paints", "painted", "painting", "paintings"][..],
                "paint",
            ),
            (&["hike", "hikes", "hiked", "hiking"][..], "hik"),
            (&["run", "runs", "running"][..], "run"),
            (&["study", "studies", "studied"][..], "studi"),
            (&["class", "classes"][..], "class"),
            (&["play", "plays", "played", "playing"][..], "play"),
            (&["adopt", "adopted", "adopting"][..], "adopt"),
        ] {
            for w in family {
                assert_eq!(stem(w), expected, "stem of {w}");
            }
        }
    }

    #[test]
    fn leaves_short_and_non_ascii_words() {
        assert_eq!(stem("bus"), "bus");
        assert_eq!(stem("is"), "is");
        assert_eq!(stem("café"), "café");
        assert_eq!(stem("thing"), "thing");
        assert_eq!(stem("need"), "need");
    }
}
