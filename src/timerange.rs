//! Time ranges as tools accept them: `last_week`, `last_month`, `last_year`,
//! `today`, `YYYY`, `YYYY-MM`, `YYYY-MM-DD`, and `START..END` where each side
//! is one of the calendar forms (or empty for an open end).
//!
//! Self-contained (depends on `chrono` only) so every toolset can share it.
//! Ranges are half-open `[start, end)` in seconds since the epoch, in UTC. A
//! calendar form covers its whole period: `2024-03` is March 2024, and
//! `2024-01..2024-03` runs from 1 January to the end of March.

use chrono::{DateTime, Datelike, Duration, NaiveDate, Utc};

/// A half-open time range `[start, end)` in seconds since the epoch (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TimeRange {
    /// Inclusive lower bound; `None` means unbounded.
    pub start: Option<i64>,
    /// Exclusive upper bound; `None` means unbounded.
    pub end: Option<i64>,
}

impl TimeRange {
    /// Whether `t` (seconds since the epoch) lies in the range.
    pub fn contains(&self, t: i64) -> bool {
        self.start.is_none_or(|s| t >= s) && self.end.is_none_or(|e| t < e)
    }
}

/// Why a time range could not be parsed. The message lists the accepted forms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "无法识别的时间范围 (unrecognised time range) {input:?}: {reason}; accepted: last_week, last_month, last_year, today, YYYY, YYYY-MM, YYYY-MM-DD, START..END (e.g. 2024-01..2024-03, 2024-05-01.., ..2023)"
)]
pub struct TimeRangeError {
    /// The text given.
    pub input: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Parses a time range relative to `now`.
///
/// Relative forms end at no bound (so entries stamped slightly in the future
/// still count): `last_week` is the last 7 days, `last_month` the last 30,
/// `last_year` the last 365; `today` is the current UTC day.
pub fn parse(input: &str, now: DateTime<Utc>) -> Result<TimeRange, TimeRangeError> {
    let text = input.trim();
    let err = |reason: &str| TimeRangeError { input: input.to_owned(), reason: reason.to_owned() };
    let days_back = |d: i64| TimeRange { start: Some((now - Duration::days(d)).timestamp()), end: None };
    match text.to_ascii_lowercase().replace(['-', ' '], "_").as_str() {
        "" => return Err(err("empty")),
        "last_week" | "past_week" | "last_7_days" => return Ok(days_back(7)),
        "last_month" | "past_month" | "last_30_days" => return Ok(days_back(30)),
        "last_year" | "past_year" | "last_365_days" => return Ok(days_back(365)),
        "today" => {
            let day = now.date_naive();
            return Ok(TimeRange { start: Some(day_start(day)), end: Some(day_start(day) + 86_400) });
        }
        _ => {}
    }
    if let Some((a, b)) = text.split_once("..") {
        let start = match a.trim() {
            "" => None,
            a => Some(calendar(a).ok_or_else(|| err("the start is not YYYY, YYYY-MM or YYYY-MM-DD"))?.0),
        };
        let end = match b.trim() {
            "" => None,
            b => Some(calendar(b).ok_or_else(|| err("the end is not YYYY, YYYY-MM or YYYY-MM-DD"))?.1),
        };
        if start.is_none() && end.is_none() {
            return Err(err("both ends are empty"));
        }
        if let (Some(s), Some(e)) = (start, end)
            && s >= e
        {
            return Err(err("the start is after the end"));
        }
        return Ok(TimeRange { start, end });
    }
    let (start, end) = calendar(text).ok_or_else(|| err("not a known form"))?;
    Ok(TimeRange { start: Some(start), end: Some(end) })
}

/// Parses a date `YYYY-MM-DD` into the half-open range of that UTC day.
pub fn parse_day(text: &str) -> Option<(i64, i64)> {
    let text = text.trim();
    (text.len() == 10).then(|| calendar(text)).flatten()
}

/// `YYYY`, `YYYY-MM` or `YYYY-MM-DD` → the `[start, end)` of that period.
fn calendar(text: &str) -> Option<(i64, i64)> {
    let parts: Vec<&str> = text.split('-').collect();
    let num = |s: &str, len: usize| -> Option<u32> {
        (s.len() == len && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
    };
    match parts[..] {
        [y] => {
            let y = num(y, 4)? as i32;
            let start = NaiveDate::from_ymd_opt(y, 1, 1)?;
            let end = NaiveDate::from_ymd_opt(y + 1, 1, 1)?;
            Some((day_start(start), day_start(end)))
        }
        [y, m] => {
            let (y, m) = (num(y, 4)? as i32, num(m, 2)?);
            let start = NaiveDate::from_ymd_opt(y, m, 1)?;
            let end = if m == 12 {
                NaiveDate::from_ymd_opt(y + 1, 1, 1)?
            } else {
                NaiveDate::from_ymd_opt(y, m + 1, 1)?
            };
            Some((day_start(start), day_start(end)))
        }
        [y, m, d] => {
            let day = NaiveDate::from_ymd_opt(num(y, 4)? as i32, num(m, 2)?, num(d, 2)?)?;
            Some((day_start(day), day_start(day) + 86_400))
        }
        _ => None,
    }
}

fn day_start(day: NaiveDate) -> i64 {
    day.and_hms_opt(0, 0, 0).map_or(0, |t| t.and_utc().timestamp())
}

/// The UTC day (`YYYY-MM-DD`) of a time, for messages.
pub fn format_day(t: i64) -> String {
    DateTime::<Utc>::from_timestamp(t, 0)
        .map_or_else(|| t.to_string(), |d| format!("{:04}-{:02}-{:02}", d.year(), d.month(), d.day()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-22T10:00:00Z").map(|t| t.with_timezone(&Utc)).expect("time")
    }

    fn ts(s: &str) -> i64 {
        DateTime::parse_from_rfc3339(s).expect("time").timestamp()
    }

    #[test]
    fn relative_ranges_count_back_from_now() {
        let r = parse("last_week", now()).expect("parses");
        assert_eq!(r.start, Some(ts("2026-11-15T10:00:00Z")));
        assert_eq!(r.end, None);
        assert_eq!(parse("last_month", now()).expect("ok").start, Some(ts("2026-10-23T10:00:00Z")));
        assert_eq!(parse("Last-Year", now()).expect("ok").start, Some(ts("2025-11-22T10:00:00Z")));
        let today = parse("today", now()).expect("ok");
        assert!(today.contains(ts("2026-11-22T00:00:00Z")) && !today.contains(ts("2026-11-23T00:00:00Z")));
    }

    #[test]
    fn calendar_forms_cover_their_whole_period() {
        let y = parse("2024", now()).expect("ok");
        assert_eq!((y.start, y.end), (Some(ts("2024-01-01T00:00:00Z")), Some(ts("2025-01-01T00:00:00Z"))));
        let m = parse("2024-12", now()).expect("ok");
        assert_eq!((m.start, m.end), (Some(ts("2024-12-01T00:00:00Z")), Some(ts("2025-01-01T00:00:00Z"))));
        let d = parse("2024-02-29", now()).expect("ok");
        assert_eq!((d.start, d.end), (Some(ts("2024-02-29T00:00:00Z")), Some(ts("2024-03-01T00:00:00Z"))));
    }

    #[test]
    fn intervals_include_the_end_period_and_may_be_open() {
        let r = parse("2024-01..2024-03", now()).expect("ok");
        assert_eq!((r.start, r.end), (Some(ts("2024-01-01T00:00:00Z")), Some(ts("2024-04-01T00:00:00Z"))));
        let open = parse("2024-05-01..", now()).expect("ok");
        assert_eq!((open.start, open.end), (Some(ts("2024-05-01T00:00:00Z")), None));
        let upto = parse("..2023", now()).expect("ok");
        assert_eq!((upto.start, upto.end), (None, Some(ts("2024-01-01T00:00:00Z"))));
    }

    #[test]
    fn bad_ranges_say_what_is_accepted() {
        for bad in ["", "yesterday-ish", "2024-13", "2023-02-29", "24-01", "2024..2023", "..", "2024-1-1"] {
            let e = parse(bad, now()).expect_err(bad);
            assert!(e.to_string().contains("last_week"), "{e}");
        }
    }

    #[test]
    fn days_parse_for_as_of() {
        assert_eq!(parse_day("2026-01-02"), Some((ts("2026-01-02T00:00:00Z"), ts("2026-01-03T00:00:00Z"))));
        assert_eq!(parse_day("2026-01"), None);
        assert_eq!(format_day(ts("2026-01-02T23:59:00Z")), "2026-01-02");
    }
}
