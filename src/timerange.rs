//! Time ranges as the personal tools accept them (`time_range`): named
//! ranges relative to now, calendar periods, and explicit `START..END`.
//!
//! Every range is half-open, `[start, end)`, in UTC.

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, TimeZone, Utc};

/// The forms [`parse`] accepts, for error messages.
pub const ACCEPTED_FORMS: &str = "last_week, last_month, last_year, YYYY, YYYY-MM, YYYY-MM-DD, START..END \
(START/END: YYYY, YYYY-MM, YYYY-MM-DD or an ISO 8601 time; either side may be empty)";

/// A `time_range` that is none of the accepted forms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("无效的时间范围 (invalid time_range) {input:?}: {reason}. Accepted forms: {ACCEPTED_FORMS}")]
pub struct TimeRangeError {
    /// What was given.
    pub input: String,
    /// Why it was refused.
    pub reason: String,
}

fn error(input: &str, reason: impl Into<String>) -> TimeRangeError {
    TimeRangeError { input: input.to_owned(), reason: reason.into() }
}

fn day_start(date: NaiveDate) -> DateTime<Utc> {
    Utc.from_utc_datetime(&date.and_hms_opt(0, 0, 0).unwrap_or_default())
}

/// A calendar period (`YYYY`, `YYYY-MM`, `YYYY-MM-DD`) as `[start, end)`.
fn period(s: &str) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let parts: Vec<&str> = s.split('-').collect();
    match parts.as_slice() {
        [y] if y.len() == 4 && digits(y) => {
            let year: i32 = y.parse().ok()?;
            let start = NaiveDate::from_ymd_opt(year, 1, 1)?;
            let end = NaiveDate::from_ymd_opt(year + 1, 1, 1)?;
            Some((day_start(start), day_start(end)))
        }
        [y, m] if y.len() == 4 && m.len() == 2 && digits(y) && digits(m) => {
            let (year, month): (i32, u32) = (y.parse().ok()?, m.parse().ok()?);
            let start = NaiveDate::from_ymd_opt(year, month, 1)?;
            let end = if month == 12 {
                NaiveDate::from_ymd_opt(year + 1, 1, 1)?
            } else {
                NaiveDate::from_ymd_opt(year, month + 1, 1)?
            };
            Some((day_start(start), day_start(end)))
        }
        [y, m, d] if y.len() == 4 && m.len() == 2 && d.len() == 2 && digits(y) && digits(m) && digits(d) => {
            let start = NaiveDate::from_ymd_opt(y.parse().ok()?, m.parse().ok()?, d.parse().ok()?)?;
            let end = start.succ_opt()?;
            Some((day_start(start), day_start(end)))
        }
        _ => None,
    }
}

/// Parses an ISO 8601 timestamp; a date without a time is that day's start.
/// A time without an offset is UTC.
fn parse_instant(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    for fmt in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%d %H:%M"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, fmt) {
            return Some(Utc.from_utc_datetime(&t));
        }
    }
    period(s).filter(|_| s.len() == 10).map(|(start, _)| start)
}

/// One side of `START..END`: a period (its start, or its end for `END`) or an instant.
fn bound(s: &str, is_end: bool) -> Option<DateTime<Utc>> {
    if let Some((start, end)) = period(s) {
        return Some(if is_end { end } else { start });
    }
    parse_instant(s)
}

/// Parses a time range relative to `now` into a half-open `[start, end)`.
///
/// `last_week`/`last_month`/`last_year` are the 7/30/365 days before now
/// (end = now + 1 ns, so "now" is included); `YYYY`, `YYYY-MM`,
/// `YYYY-MM-DD` are that calendar period; `START..END` runs from the start
/// of START to the end of END (a period END is included whole), with an
/// empty side meaning unbounded.
pub fn parse(s: &str, now: DateTime<Utc>) -> Result<(DateTime<Utc>, DateTime<Utc>), TimeRangeError> {
    let t = s.trim();
    if t.is_empty() {
        return Err(error(s, "empty"));
    }
    let until_now = now + Duration::nanoseconds(1);
    match t {
        "last_week" => return Ok((now - Duration::days(7), until_now)),
        "last_month" => return Ok((now - Duration::days(30), until_now)),
        "last_year" => return Ok((now - Duration::days(365), until_now)),
        _ => {}
    }
    if let Some((a, b)) = t.split_once("..") {
        let (a, b) = (a.trim(), b.trim());
        if a.is_empty() && b.is_empty() {
            return Err(error(s, "both sides of `..` are empty"));
        }
        let start = if a.is_empty() {
            DateTime::<Utc>::MIN_UTC
        } else {
            bound(a, false).ok_or_else(|| error(s, format!("cannot read the start {a:?}")))?
        };
        let end = if b.is_empty() {
            DateTime::<Utc>::MAX_UTC
        } else {
            bound(b, true).ok_or_else(|| error(s, format!("cannot read the end {b:?}")))?
        };
        if end <= start {
            return Err(error(s, "the end is not after the start"));
        }
        return Ok((start, end));
    }
    if let Some(range) = period(t) {
        return Ok(range);
    }
    let hint = if t.parse::<i64>().is_ok() || t.chars().any(|c| c.is_ascii_digit()) {
        "not a valid calendar date".to_owned()
    } else {
        "unknown form".to_owned()
    };
    Err(error(s, hint))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        parse_instant("2026-11-22T10:00:00Z").unwrap_or_default()
    }

    fn t(s: &str) -> DateTime<Utc> {
        parse_instant(s).unwrap_or_default()
    }

    #[test]
    fn named_ranges_end_now() {
        let (a, b) = parse("last_week", now()).expect("ok");
        assert_eq!(a, t("2026-11-15T10:00:00Z"));
        assert!(b > now() && a < now());
        assert_eq!(parse("last_month", now()).expect("ok").0, t("2026-10-23T10:00:00Z"));
        assert_eq!(parse("last_year", now()).expect("ok").0, t("2025-11-22T10:00:00Z"));
    }

    #[test]
    fn calendar_periods_are_half_open() {
        assert_eq!(parse("2026", now()).expect("ok"), (t("2026-01-01"), t("2027-01-01")));
        assert_eq!(parse("2026-12", now()).expect("ok"), (t("2026-12-01"), t("2027-01-01")));
        assert_eq!(parse("2024-02-29", now()).expect("ok"), (t("2024-02-29"), t("2024-03-01")));
    }

    #[test]
    fn explicit_ranges_include_a_whole_end_period() {
        assert_eq!(parse("2026-01..2026-03", now()).expect("ok"), (t("2026-01-01"), t("2026-04-01")));
        assert_eq!(
            parse("2026-01-01T08:00:00Z..2026-01-02", now()).expect("ok"),
            (t("2026-01-01T08:00:00Z"), t("2026-01-03"))
        );
        assert_eq!(parse("..2026", now()).expect("ok").1, t("2027-01-01"));
    }

    #[test]
    fn bad_ranges_list_the_accepted_forms() {
        for bad in ["yesterday", "2026-13", "2023-02-29", "2026-03..2026-01", "..", "", "26-01"] {
            let e = parse(bad, now()).expect_err(bad);
            assert!(e.to_string().contains("last_week, last_month, last_year, YYYY"), "{e}");
        }
    }
}
