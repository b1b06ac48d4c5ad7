//! Date terms: a document's `time` is indexed as synthetic terms for its
//! year, month and day, and dates written in a query ("October 3, 2023",
//! "8 May 2023", "May 2023", "2023-05-08", "2023年5月8日") become the same terms.
//!
//! The terms contain a `:`, which the tokenizer never emits, so they cannot
//! collide with words. Days are computed in UTC.

/// Prefix of every date term.
const PREFIX: &str = "date:";

/// English month names, January first (lower case).
pub const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// The month (1–12) named by `word` (full name or common abbreviation).
pub(super) fn month_of(word: &str) -> Option<u32> {
    if word == "sept" {
        return Some(9);
    }
    MONTHS
        .iter()
        .position(|m| *m == word || (word.len() == 3 && m.starts_with(word)))
        .map(|i| i as u32 + 1)
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let m = i64::from(m);
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Civil date (year, month, day) of a count of days since 1970-01-01.
pub(super) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn year_term(y: i64) -> String {
    format!("{PREFIX}{y:04}")
}

fn month_term(y: i64, m: u32) -> String {
    format!("{PREFIX}{y:04}-{m:02}")
}

fn day_term(y: i64, m: u32, d: u32) -> String {
    format!("{PREFIX}{y:04}-{m:02}-{d:02}")
}

/// Year, month and day terms of a unix time in seconds.
pub fn doc_date_terms(unix_seconds: i64) -> [String; 3] {
    let (y, m, d) = civil_from_days(unix_seconds.div_euclid(86_400));
    [year_term(y), month_term(y, m), day_term(y, m, d)]
}

/// The year a four-digit word names (1900–2199).
pub(super) fn year_of(word: &str) -> Option<i64> {
    let y: i64 = word.parse().ok()?;
    (word.len() == 4 && (1900..=2199).contains(&y)).then_some(y)
}

/// The day of the month a word names (`7`, `7th`).
pub(super) fn day_of(word: &str) -> Option<u32> {
    let digits = word
        .strip_suffix("st")
        .or_else(|| word.strip_suffix("nd"))
        .or_else(|| word.strip_suffix("rd"))
        .or_else(|| word.strip_suffix("th"))
        .unwrap_or(word);
    let d: u32 = digits.parse().ok()?;
    (1..=31).contains(&d).then_some(d)
}

fn month_num(word: &str) -> Option<u32> {
    let m: u32 = word.parse().ok()?;
    (1..=12).contains(&m).then_some(m)
}

/// A date written in full in a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Date {
    /// Year, month, day.
    Day(i64, u32, u32),
    /// Year, month.
    Month(i64, u32),
}

/// The lower-cased words of a query (ASCII letters/digits); `年月日号` and
/// `-`/`/` are words of their own so numeric dates can be recognised.
pub(super) fn query_words(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let mut words: Vec<String> = Vec::new();
    let mut cur = String::new();
    for c in lower.chars() {
        if c.is_ascii_alphanumeric() {
            cur.push(c);
            continue;
        }
        if !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        if matches!(c, '年' | '月' | '日' | '号' | '-' | '/') {
            words.push(c.to_string());
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// The dates written in full among `words`, with the index of their first word.
pub(super) fn explicit_dates(words: &[String]) -> Vec<(usize, Date)> {
    let w = |i: usize| words.get(i).map_or("", String::as_str);
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        if let Some(m) = month_of(w(i)) {
            // "October 3, 2023" / "October 3rd 2023" / "October 2023"
            if let (Some(d), Some(y)) = (day_of(w(i + 1)), year_of(w(i + 2))) {
                out.push((i, Date::Day(y, m, d)));
                i += 3;
                continue;
            }
            if let Some(y) = year_of(w(i + 1)) {
                out.push((i, Date::Month(y, m)));
                i += 2;
                continue;
            }
        }
        if let Some(d) = day_of(w(i)) {
            // "8 May 2023" / "8th of May, 2023"
            let j = if w(i + 1) == "of" { i + 2 } else { i + 1 };
            if let (Some(m), Some(y)) = (month_of(w(j)), year_of(w(j + 1))) {
                out.push((i, Date::Day(y, m, d)));
                i = j + 2;
                continue;
            }
        }
        if let Some(y) = year_of(w(i)) {
            let sep = w(i + 1);
            if matches!(sep, "-" | "/" | "年")
                && let Some(m) = month_num(w(i + 2))
            {
                let sep2 = w(i + 3);
                let day_sep_ok = match sep {
                    "年" => sep2 == "月",
                    s => sep2 == s,
                };
                if day_sep_ok && let Some(d) = day_of(w(i + 4)) {
                    out.push((i, Date::Day(y, m, d)));
                    i += 5;
                    continue;
                }
                if sep != "年" || sep2 == "月" {
                    out.push((i, Date::Month(y, m)));
                    i += 3;
                    continue;
                }
            }
        }
        i += 1;
    }
    out
}

/// Date terms for the dates written in a query. A full date yields its day
/// and month terms; a month with a year yields the month term.
pub fn query_date_terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (_, date) in explicit_dates(&query_words(text)) {
        match date {
            Date::Day(y, m, d) => {
                out.push(day_term(y, m, d));
                out.push(month_term(y, m));
            }
            Date::Month(y, m) => out.push(month_term(y, m)),
        }
    }
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doc_terms_of_a_time() {
        // 2023-05-08T13:56:00Z
        assert_eq!(
            doc_date_terms(1_683_554_160),
            ["date:2023", "date:2023-05", "date:2023-05-08"]
        );
        assert_eq!(doc_date_terms(-1)[2], "date:1969-12-31");
    }

    #[test]
    fn query_dates_in_many_spellings() {
        let day = ["date:2023-10-03", "date:2023-10"];
        assert_eq!(
            query_date_terms("Which city was Calvin at on October 3, 2023?"),
            day
        );
        assert_eq!(query_date_terms("on 3 Oct 2023"), day);
        assert_eq!(query_date_terms("the 3rd of October, 2023"), day);
        assert_eq!(query_date_terms("2023-10-03 的会议"), day);
        assert_eq!(query_date_terms("2023年10月3日去了哪里"), day);
        assert_eq!(
            query_date_terms("what happened in May 2023"),
            ["date:2023-05"]
        );
        assert_eq!(query_date_terms("2023年10月"), ["date:2023-10"]);
        assert!(query_date_terms("may I go in 2023").is_empty());
        assert!(query_date_terms("no dates here").is_empty());
    }

    #[test]
    fn one_day_in_every_written_form_is_one_term() {
        let day = ["date:2023-05-07", "date:2023-05"];
        for written in ["2023-05-07", "2023/05/07", "2023/5/7", "May 7, 2023", "7 May 2023", "the 7th of May 2023", "2023年5月7日", "2023年5月7号"] {
            assert_eq!(query_date_terms(written), day, "{written}");
        }
    }
}
