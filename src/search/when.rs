//! Time expressions in a query, resolved to spans of time: "yesterday",
//! "last Tuesday", "last week", "two months ago", "in May", "7 May", "the week before
//! 9 June 2023", "last summer", "昨天", "上周二", "去年", "去年夏天", "三天前", "5月", "5月7号"…
//!
//! Seasons are the northern hemisphere's (summer is June–August). A time relative to an
//! event the query does not date ("two weeks before the wedding") makes no span: the
//! event's date is in the memories, and the words match as words.
//!
//! Relative expressions are resolved against an *anchor* day the caller
//! chooses (the search uses the time of the request, or the newest matching
//! entry when nothing is that recent, see `rank.rs`). Dates written in full
//! ("8 May 2023", "2023年5月") are handled by [`super::dates`] as index terms;
//! here they only anchor "before"/"after" phrases. Weeks start on Monday;
//! days are UTC days. The spans feed a soft boost, never a filter.

use super::dates::{Date, civil_from_days, day_of, days_from_civil, explicit_dates, month_of, query_words, year_of};

const DAY: i64 = 86_400;

/// A span of time `[start, end)` in unix seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeSpan {
    /// First second of the span.
    pub start: i64,
    /// First second after the span.
    pub end: i64,
}

impl TimeSpan {
    fn days(first: i64, count: i64) -> Self {
        Self { start: first * DAY, end: (first + count) * DAY }
    }

    /// Whether `t` (unix seconds) lies in the span.
    pub fn contains(&self, t: i64) -> bool {
        self.start <= t && t < self.end
    }
}

const WEEKDAYS: [&str; 7] = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];

/// Monday = 0 … Sunday = 6 of a day count since 1970-01-01 (a Thursday).
fn weekday(day: i64) -> i64 {
    (day + 3).rem_euclid(7)
}

fn weekday_of(word: &str) -> Option<i64> {
    WEEKDAYS.iter().position(|d| *d == word || (word.len() >= 3 && d.starts_with(word) && word != "sun")).map(|i| i as i64)
}

fn small_number(word: &str) -> Option<i64> {
    const WORDS: [&str; 13] =
        ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"];
    match word {
        "a" | "an" => Some(1),
        "couple" => Some(2),
        "few" | "several" => Some(3),
        _ => WORDS.iter().position(|w| *w == word).map(|i| i as i64).or_else(|| {
            let n: i64 = word.parse().ok()?;
            (1..=400).contains(&n).then_some(n)
        }),
    }
}

fn month_span(y: i64, m: u32) -> TimeSpan {
    let first = days_from_civil(y, m, 1);
    let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    TimeSpan::days(first, days_from_civil(ny, nm, 1) - first)
}

fn year_span(y: i64) -> TimeSpan {
    let first = days_from_civil(y, 1, 1);
    TimeSpan::days(first, days_from_civil(y + 1, 1, 1) - first)
}

/// The seasons as months of the northern hemisphere: spring is March–May, summer June–August,
/// autumn September–November, winter December (of the year named) to February.
const SEASONS: [(&str, u32); 5] = [("spring", 3), ("summer", 6), ("autumn", 9), ("fall", 9), ("winter", 12)];

fn season_of(word: &str) -> Option<u32> {
    SEASONS.iter().find(|(w, _)| *w == word).map(|s| s.1)
}

/// The three months from month `first` of year `y`.
fn season_span(y: i64, first: u32) -> TimeSpan {
    let start = days_from_civil(y, first, 1);
    let (ey, em) = if first + 3 > 12 { (y + 1, first + 3 - 12) } else { (y, first + 3) };
    TimeSpan::days(start, days_from_civil(ey, em, 1) - start)
}

/// The season starting in month `first` that `day` is in, or the latest one before it;
/// `back` seasons of that name earlier (`last summer` in May is the summer of last year).
fn recent_season(day: i64, first: u32, back: i64) -> TimeSpan {
    let (y, _, _) = civil_from_days(day);
    let this = season_span(y, first);
    let y = if this.start <= day * DAY { y } else { y - 1 };
    let y = if back > 0 && season_span(y, first).contains(day * DAY) { y - back } else { y - (back - 1).max(0) };
    season_span(y, first)
}

/// The month `back` months before the month of `day`.
fn month_back(day: i64, back: i64) -> TimeSpan {
    let (y, m, _) = civil_from_days(day);
    let idx = y * 12 + i64::from(m) - 1 - back;
    month_span(idx.div_euclid(12), (idx.rem_euclid(12) + 1) as u32)
}

/// The most recent month `m` not after the month of `day`.
fn recent_month(day: i64, m: u32) -> TimeSpan {
    let (y, am, _) = civil_from_days(day);
    month_span(if m <= am { y } else { y - 1 }, m)
}

/// The most recent day with this weekday strictly before `day` (`strict`) or not after it.
fn recent_weekday(day: i64, wd: i64, strict: bool) -> i64 {
    let mut back = (weekday(day) - wd).rem_euclid(7);
    if back == 0 && strict {
        back = 7;
    }
    day - back
}

/// Spans of the relative time expressions in `text`, resolved against the
/// day of `anchor` (unix seconds). Each expression yields one span.
pub fn query_time_spans(text: &str, anchor: i64) -> Vec<TimeSpan> {
    let today = anchor.div_euclid(DAY);
    let mut out = english(text, today);
    // Written in traditional characters ("上週二", "兩個月前"), read as simplified ones.
    let simplified: String = text.chars().map(super::hanzi::simplified).collect();
    out.extend(chinese(&simplified, today));
    out.dedup();
    out
}

fn english(text: &str, today: i64) -> Vec<TimeSpan> {
    let words = query_words(text);
    let w = |i: usize| words.get(i).map_or("", String::as_str);
    let monday = today - weekday(today);
    let explicit = explicit_dates(&words);
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let word = w(i);
        // "the day/week/weekend before|after <date>", "N days before <date>"
        let (count, unit_at) = match small_number(word) {
            Some(n) if ["day", "days", "week", "weeks"].contains(&w(i + 1)) => (n, i + 1),
            _ => (1, i),
        };
        let unit = w(unit_at);
        if ["day", "days", "week", "weeks", "weekend"].contains(&unit)
            && matches!(w(unit_at + 1), "before" | "after")
            && let Some((_, date)) = explicit.iter().find(|(at, _)| *at == unit_at + 2)
        {
            let base = match *date {
                Date::Day(y, m, d) => days_from_civil(y, m, d),
                Date::Month(y, m) => days_from_civil(y, m, 1),
            };
            let before = w(unit_at + 1) == "before";
            let len = if unit.starts_with("week") { 7 * count } else { count };
            out.push(match (unit, before) {
                ("weekend", true) => TimeSpan::days(recent_weekday(base, 5, true), 2),
                ("weekend", false) => {
                    let ahead = (5 - weekday(base)).rem_euclid(7);
                    TimeSpan::days(base + if ahead == 0 { 7 } else { ahead }, 2)
                }
                (_, true) => TimeSpan::days(base - len, len),
                (_, false) => TimeSpan::days(base + 1, len),
            });
            i = unit_at + 3;
            continue;
        }
        match word {
            "today" | "tonight" => out.push(TimeSpan::days(today, 1)),
            "yesterday" => {
                let back = if i >= 2 && w(i - 1) == "before" && w(i - 2) == "day" { 2 } else { 1 };
                if back == 2 {
                    out.retain(|s| *s != TimeSpan::days(today - 1, 1));
                }
                out.push(TimeSpan::days(today - back, 1));
            }
            "last" | "past" | "previous" | "this" => {
                let last = word != "this";
                let next = w(i + 1);
                let span = match next {
                    "week" => Some(TimeSpan::days(if last { monday - 7 } else { monday }, 7)),
                    "weekend" => Some(TimeSpan::days(if last { monday - 2 } else { monday + 5 }, 2)),
                    "month" => Some(month_back(today, i64::from(last))),
                    "year" => {
                        let (y, _, _) = civil_from_days(today);
                        Some(year_span(if last { y - 1 } else { y }))
                    }
                    "night" if last => Some(TimeSpan::days(today - 1, 1)),
                    season if season_of(season).is_some() => season_of(season).map(|first| {
                        if last {
                            recent_season(today, first, 1)
                        } else {
                            season_span(civil_from_days(today).0, first)
                        }
                    }),
                    other => weekday_of(other).map(|wd| {
                        if last {
                            TimeSpan::days(recent_weekday(today, wd, true), 1)
                        } else {
                            TimeSpan::days(monday + wd, 1)
                        }
                    }),
                };
                if let Some(s) = span {
                    out.push(s);
                    i += 2;
                    continue;
                }
            }
            "on" => {
                if let Some(wd) = weekday_of(w(i + 1)) {
                    out.push(TimeSpan::days(recent_weekday(today, wd, false), 1));
                    i += 2;
                    continue;
                }
            }
            "in" | "during" => {
                // "in May" without a year: the most recent May.
                if let Some(m) = month_of(w(i + 1))
                    && !explicit.iter().any(|(at, _)| *at == i + 1)
                    && day_of(w(i + 2)).is_none()
                {
                    out.push(recent_month(today, m));
                    i += 2;
                    continue;
                }
            }
            _ => {}
        }
        // "summer 2022", "the summer of 2022"; a season alone ("in the summer"): the latest one.
        if let Some(first) = season_of(word) {
            let j = if w(i + 1) == "of" { i + 2 } else { i + 1 };
            match year_of(w(j)) {
                Some(y) => {
                    out.push(season_span(y, first));
                    i = j + 1;
                }
                // A season word alone is a time only after "in the", "during", "over the"…
                // ("I fall asleep", "spring rolls" name none).
                None if i > 1 && w(i - 1) == "the" && ["in", "during", "over"].contains(&w(i - 2)) => {
                    out.push(recent_season(today, first, 0));
                    i += 1;
                }
                None => i += 1,
            }
            continue;
        }
        // "7 May", "May 7th" without a year: that day of the most recent such month (a date
        // with its year is a term of the index, see `dates.rs`).
        if explicit.is_empty() && !words.iter().any(|w| year_of(w).is_some()) {
            let day_month = day_of(word).zip(month_of(w(i + 1)));
            let month_day = month_of(word).zip(day_of(w(i + 1))).map(|(m, d)| (d, m));
            if let Some((d, m)) = day_month.or(month_day).filter(|_| year_of(w(i + 2)).is_none()) {
                let month = recent_month(today, m);
                let (y, _, _) = civil_from_days(month.start.div_euclid(DAY));
                out.push(TimeSpan::days(days_from_civil(y, m, d), 1));
                i += 2;
                continue;
            }
        }
        // "<n> days/weeks/months/years ago"
        if let Some(n) = small_number(word) {
            let j = if w(i + 1) == "of" { i + 2 } else { i + 1 };
            let unit = w(j);
            if w(j + 1) == "ago" {
                let span = match unit.trim_end_matches('s') {
                    "day" => Some(TimeSpan::days(today - n, 1)),
                    "week" => Some(TimeSpan::days(today - 7 * n - 3, 7)),
                    "month" => Some(month_back(today, n)),
                    "year" => Some(year_span(civil_from_days(today).0 - n)),
                    _ => None,
                };
                if let Some(s) = span {
                    out.push(s);
                    i = j + 2;
                    continue;
                }
            }
        }
        i += 1;
    }
    out
}

/// A Chinese number of at most two digits (一…九十九, 两, 几 = 3) or ASCII digits.
fn zh_number(s: &[char]) -> Option<(i64, usize)> {
    let digits: String = s.iter().take_while(|c| c.is_ascii_digit()).collect();
    if !digits.is_empty() {
        return digits.parse().ok().map(|n| (n, digits.len()));
    }
    let unit = |c: char| "一二三四五六七八九".find(c).map(|i| (i / 3 + 1) as i64).or((c == '两').then_some(2));
    match s {
        ['十', b, ..] if unit(*b).is_some() => Some((10 + unit(*b)?, 2)),
        ['十', ..] => Some((10, 1)),
        [a, '十', b, ..] if unit(*a).is_some() && unit(*b).is_some() => Some((unit(*a)? * 10 + unit(*b)?, 3)),
        [a, '十', ..] if unit(*a).is_some() => Some((unit(*a)? * 10, 2)),
        ['几', ..] => Some((3, 1)),
        [a, ..] => unit(*a).map(|n| (n, 1)),
        [] => None,
    }
}

fn zh_weekday(c: char) -> Option<i64> {
    match c {
        '一' => Some(0),
        '二' => Some(1),
        '三' => Some(2),
        '四' => Some(3),
        '五' => Some(4),
        '六' => Some(5),
        '日' | '天' => Some(6),
        _ => None,
    }
}

fn chinese(text: &str, today: i64) -> Vec<TimeSpan> {
    let s: Vec<char> = text.chars().collect();
    let monday = today - weekday(today);
    let (year, _, _) = civil_from_days(today);
    let at = |i: usize, p: &str| p.chars().enumerate().all(|(k, c)| s.get(i + k) == Some(&c));
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        // Week words, optionally followed by a weekday: 上周二, 这个星期五, 周六.
        let weeks: [(&str, i64); 11] = [
            ("上个星期", -7),
            ("上星期", -7),
            ("上礼拜", -7),
            ("上周", -7),
            ("这个星期", 0),
            ("这星期", 0),
            ("本周", 0),
            ("这周", 0),
            ("星期", 99),
            ("礼拜", 99),
            ("周", 99),
        ];
        if let Some(&(p, shift)) = weeks.iter().find(|(p, _)| at(i, p)) {
            let n = p.chars().count();
            let wd = s.get(i + n).copied().and_then(zh_weekday);
            // 一周三次 is "three times a week", not a Wednesday.
            let counted = i > 0 && "一二两三四五六七八九十几每个0123456789".contains(s[i - 1]);
            let span = match (shift, wd) {
                (99, _) if counted => None,
                (99, Some(wd)) => Some(TimeSpan::days(recent_weekday(today, wd, false), 1)),
                (99, None) => None,
                (shift, Some(wd)) => Some(TimeSpan::days(monday + shift + wd, 1)),
                (shift, None) => Some(TimeSpan::days(monday + shift, 7)),
            };
            if let Some(span) = span {
                out.push(span);
                i += n + usize::from(wd.is_some());
                continue;
            }
        }
        let fixed: [(&str, TimeSpan); 12] = [
            ("大前天", TimeSpan::days(today - 3, 1)),
            ("前天", TimeSpan::days(today - 2, 1)),
            ("昨天", TimeSpan::days(today - 1, 1)),
            ("昨日", TimeSpan::days(today - 1, 1)),
            ("昨晚", TimeSpan::days(today - 1, 1)),
            ("今天", TimeSpan::days(today, 1)),
            ("上个月", month_back(today, 1)),
            ("上月", month_back(today, 1)),
            ("这个月", month_back(today, 0)),
            ("本月", month_back(today, 0)),
            ("去年", year_span(year - 1)),
            ("前年", year_span(year - 2)),
        ];
        // 去年夏天, 今年春季, 前年冬天; a season alone (夏天): the latest one.
        let years: [(&str, i64); 4] = [("去年", 1), ("今年", 0), ("前年", 2), ("", -1)];
        if let Some((p, back, first)) = years.iter().filter(|(p, _)| at(i, p)).find_map(|&(p, back)| {
            let n = p.chars().count();
            let first = match s.get(i + n) {
                Some('春') => 3,
                Some('夏') => 6,
                Some('秋') => 9,
                Some('冬') => 12,
                _ => return None,
            };
            matches!(s.get(i + n + 1), Some('天' | '季')).then_some((p, back, first))
        }) {
            out.push(match back {
                -1 => recent_season(today, first, 0),
                back => season_span(year - back, first),
            });
            i += p.chars().count() + 2;
            continue;
        }
        if let Some((p, span)) = fixed.iter().find(|(p, _)| at(i, p)) {
            out.push(*span);
            i += p.chars().count();
            continue;
        }
        if at(i, "今年") {
            out.push(year_span(year));
            i += 2;
            continue;
        }
        // N天前 / N周前 / N个星期前 / N个月前 / N年前; M月 (no year before it).
        if let Some((n, len)) = zh_number(&s[i..]) {
            let j = i + len;
            let ago: [(&str, i64); 6] = [("天前", 0), ("周前", 1), ("个星期前", 1), ("星期前", 1), ("个月前", 2), ("年前", 3)];
            if let Some((p, unit)) = ago.iter().find(|(p, _)| at(j, p)) {
                out.push(match unit {
                    0 => TimeSpan::days(today - n, 1),
                    1 => TimeSpan::days(today - 7 * n - 3, 7),
                    2 => month_back(today, n),
                    _ => year_span(year - n),
                });
                i = j + p.chars().count();
                continue;
            }
            let after_year = i > 0 && s[i - 1] == '年';
            if at(j, "月") && !after_year && (1..=12).contains(&n) && !at(j, "月前") {
                // M月D日 without a year: that day of the most recent such month.
                let month = recent_month(today, n as u32);
                let day = zh_number(&s[j + 1..])
                    .filter(|&(d, l)| (1..=31).contains(&d) && matches!(s.get(j + 1 + l), Some('日' | '号')));
                match day {
                    Some((d, l)) => {
                        let (y, _, _) = civil_from_days(month.start.div_euclid(DAY));
                        out.push(TimeSpan::days(days_from_civil(y, n as u32, d as u32), 1));
                        i = j + 2 + l;
                    }
                    None => {
                        out.push(month);
                        i = j + 1;
                    }
                }
                continue;
            }
            i = j.max(i + 1);
            continue;
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Thursday 2023-05-25, noon UTC.
    const ANCHOR: i64 = 1_685_016_000;

    fn day(y: i64, m: u32, d: u32) -> i64 {
        days_from_civil(y, m, d)
    }

    fn spans(text: &str) -> Vec<(i64, i64)> {
        query_time_spans(text, ANCHOR).into_iter().map(|s| (s.start / DAY, (s.end - s.start) / DAY)).collect()
    }

    #[test]
    fn anchor_is_a_thursday() {
        assert_eq!(weekday(ANCHOR / DAY), 3);
        assert_eq!(ANCHOR / DAY, day(2023, 5, 25));
    }

    #[test]
    fn english_days() {
        assert_eq!(spans("what did I eat yesterday?"), [(day(2023, 5, 24), 1)]);
        assert_eq!(spans("what did we decide today"), [(day(2023, 5, 25), 1)]);
        assert_eq!(spans("the day before yesterday"), [(day(2023, 5, 23), 1)]);
        assert_eq!(spans("What did Caroline do last Tuesday?"), [(day(2023, 5, 23), 1)]);
        assert_eq!(spans("last Thursday"), [(day(2023, 5, 18), 1)]);
        assert_eq!(spans("the meeting on Monday"), [(day(2023, 5, 22), 1)]);
        assert_eq!(spans("three days ago"), [(day(2023, 5, 22), 1)]);
        assert_eq!(spans("2 days ago"), [(day(2023, 5, 23), 1)]);
    }

    #[test]
    fn english_weeks_months_years() {
        assert_eq!(spans("what happened last week"), [(day(2023, 5, 15), 7)]);
        assert_eq!(spans("this week"), [(day(2023, 5, 22), 7)]);
        assert_eq!(spans("last weekend"), [(day(2023, 5, 20), 2)]);
        assert_eq!(spans("a week ago"), [(day(2023, 5, 15), 7)]);
        assert_eq!(spans("last month"), [(day(2023, 4, 1), 30)]);
        assert_eq!(spans("two months ago"), [(day(2023, 3, 1), 31)]);
        assert_eq!(spans("last year"), [(day(2022, 1, 1), 365)]);
        assert_eq!(spans("a couple of years ago"), [(day(2021, 1, 1), 365)]);
        assert_eq!(spans("in May"), [(day(2023, 5, 1), 31)]);
        assert_eq!(spans("during August"), [(day(2022, 8, 1), 31)]);
    }

    #[test]
    fn english_relative_to_a_written_date() {
        assert_eq!(spans("the week before 9 June 2023"), [(day(2023, 6, 2), 7)]);
        assert_eq!(spans("the day after October 3, 2023"), [(day(2023, 10, 4), 1)]);
        assert_eq!(spans("the weekend before 9 June 2023"), [(day(2023, 6, 3), 2)]);
        assert_eq!(spans("two days before 8 May 2023"), [(day(2023, 5, 6), 2)]);
    }

    #[test]
    fn english_without_time_words() {
        assert!(spans("May I ask what Melanie painted?").is_empty());
        assert!(spans("in May 2023").is_empty(), "a written date is a term, not a span");
        assert!(spans("the last time we talked").is_empty());
        assert!(spans("no dates here").is_empty());
    }

    #[test]
    fn chinese_days_and_weeks() {
        assert_eq!(spans("我昨天吃了什么"), [(day(2023, 5, 24), 1)]);
        assert_eq!(spans("前天的会议"), [(day(2023, 5, 23), 1)]);
        assert_eq!(spans("今天"), [(day(2023, 5, 25), 1)]);
        assert_eq!(spans("上周讨论了什么"), [(day(2023, 5, 15), 7)]);
        assert_eq!(spans("上周二跑步了吗"), [(day(2023, 5, 16), 1)]);
        assert_eq!(spans("上个星期五"), [(day(2023, 5, 19), 1)]);
        assert_eq!(spans("这周"), [(day(2023, 5, 22), 7)]);
        assert_eq!(spans("周一的复盘"), [(day(2023, 5, 22), 1)]);
        assert_eq!(spans("三天前"), [(day(2023, 5, 22), 1)]);
        assert_eq!(spans("两周前"), [(day(2023, 5, 8), 7)]);
        assert!(spans("一周三次训练").is_empty());
        assert!(spans("周末").is_empty());
    }

    #[test]
    fn chinese_in_traditional_characters() {
        assert_eq!(spans("上週二跑步了嗎"), spans("上周二跑步了吗"));
        assert_eq!(spans("兩個月前"), spans("两个月前"));
        assert_eq!(spans("去年夏天"), [(day(2022, 6, 1), 92)]);
        assert_eq!(spans("去年夏天"), spans("去年夏天去哪兒玩了"));
    }

    #[test]
    fn chinese_months_and_years() {
        assert_eq!(spans("去年的体检"), [(day(2022, 1, 1), 365)]);
        assert_eq!(spans("前年"), [(day(2021, 1, 1), 365)]);
        assert_eq!(spans("今年的目标"), [(day(2023, 1, 1), 365)]);
        assert_eq!(spans("上个月"), [(day(2023, 4, 1), 30)]);
        assert_eq!(spans("三个月前"), [(day(2023, 2, 1), 28)]);
        assert_eq!(spans("十二月的计划"), [(day(2022, 12, 1), 31)]);
        assert_eq!(spans("5月3日"), [(day(2023, 5, 3), 1)]);
        assert!(spans("2023年5月").is_empty(), "a written month is a term, not a span");
        assert!(spans("没有时间").is_empty());
    }

    #[test]
    fn seasons_in_chinese_and_english() {
        // The anchor is 25 May 2023: last summer is 2022's, this summer 2023's.
        let summer_2022 = (day(2022, 6, 1), 92);
        assert_eq!(spans("去年夏天去了哪里"), [summer_2022]);
        assert_eq!(spans("今年春天"), [(day(2023, 3, 1), 92)]);
        assert_eq!(spans("前年冬季"), [(day(2021, 12, 1), 90)]);
        assert_eq!(spans("夏天吃什么"), [summer_2022], "the latest summer");
        assert_eq!(spans("春天"), [(day(2023, 3, 1), 92)], "the spring the anchor is in");
        assert_eq!(spans("what did we do last summer"), [summer_2022]);
        assert_eq!(spans("this summer"), [(day(2023, 6, 1), 92)]);
        assert_eq!(spans("in the summer"), [summer_2022]);
        assert_eq!(spans("the summer of 2021"), [(day(2021, 6, 1), 92)]);
        assert_eq!(spans("winter 2022"), [(day(2022, 12, 1), 90)]);
        assert_eq!(spans("last winter"), [(day(2022, 12, 1), 90)]);
        assert!(spans("I fall asleep early").is_empty());
        assert!(spans("spring rolls recipe").is_empty());
    }

    #[test]
    fn days_written_without_a_year() {
        let may_7 = [(day(2023, 5, 7), 1)];
        assert_eq!(spans("what happened on 7 May"), may_7);
        assert_eq!(spans("May 7th"), may_7);
        assert_eq!(spans("in May 7"), may_7);
        assert_eq!(spans("5月7号"), may_7);
        assert_eq!(spans("5月7日做了什么"), may_7);
        assert_eq!(spans("7 June"), [(day(2022, 6, 7), 1)], "the latest June");
        // With a year the date is a term of the index (`dates.rs`), not a span.
        for written in ["2023-05-07", "May 7, 2023", "7 May 2023", "2023年5月7日", "2023/05/07"] {
            assert!(spans(written).is_empty(), "{written}");
        }
    }

    #[test]
    fn a_time_relative_to_an_event_is_left_to_the_words() {
        // "two weeks before the wedding": the wedding's date is in the memories, not in the
        // query; no span is made (a filter or a boost around the anchor would be wrong), the
        // words "wedding" and "weeks" match as words.
        assert!(spans("what did she buy two weeks before the wedding").is_empty());
        assert!(spans("the day after the concert").is_empty());
        // With a written date it is a span.
        assert_eq!(spans("two weeks before 9 June 2023"), [(day(2023, 5, 26), 14)]);
    }
}
