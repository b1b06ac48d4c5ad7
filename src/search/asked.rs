//! How much of a text is asked rather than told.
//!
//! A memory that is mostly a question ("What's your favourite team?") holds the
//! words of the topic but not what was said about it: the answer is in the
//! memories that tell. Ranking discounts a hit by the share of its body that
//! is questions (see [`super::params::ASKED_DISCOUNT`]).

/// The share (0 to 1) of `text`'s letters and digits that lie in sentences
/// ending with a question mark (`?`, `？`).
pub(super) fn asked_share(text: &str) -> f32 {
    let mut total = 0usize;
    let mut asked = 0usize;
    let mut sentence = 0usize;
    for ch in text.chars() {
        if ch.is_alphanumeric() {
            sentence += 1;
            continue;
        }
        if matches!(ch, '?' | '？') {
            asked += sentence;
        }
        if matches!(ch, '?' | '？' | '.' | '!' | '。' | '！' | '\n' | ';' | '；') {
            total += sentence;
            sentence = 0;
        }
    }
    total += sentence;
    if total == 0 { 0.0 } else { asked as f32 / total as f32 }
}

#[cfg(test)]
mod tests {
    use super::asked_share;

    #[test]
    fn questions_are_asked_and_statements_told() {
        assert_eq!(asked_share("Who's your favorite player?"), 1.0);
        assert_eq!(asked_share("I bought it a year ago in Paris."), 0.0);
        assert_eq!(asked_share(""), 0.0);
        let mixed = asked_share("I went camping last week. How about you?");
        assert!(mixed > 0.2 && mixed < 0.5, "{mixed}");
        assert_eq!(asked_share("你什么时候去的？"), 1.0);
    }
}
