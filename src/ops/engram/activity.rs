//! A pack's activity for the web page: commits per day over the last days, by the client
//! that made them (the `Engram-Client` trailer; `git` for commits made without engram), and
//! who wrote what. Read from the branch's history, newest first, down to the first day only.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, NaiveDate, Utc};

use crate::ops::{Engram, Result};
use crate::store::LogQuery;

/// The label of commits no engram client made (a person's git, another tool).
pub const BY_HAND: &str = "git";

/// Commits of one client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Writer {
    /// The client's name (`Engram-Client`), `engram` for tool commits without one, or
    /// [`BY_HAND`].
    pub client: String,
    /// Its commits in the period.
    pub commits: usize,
    /// Its newest commit's time (seconds since the epoch).
    pub last: i64,
}

/// What [`Engram::activity`] finds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activity {
    /// The first day of the period (UTC); `days[i]` is that day plus `i`.
    pub first_day: NaiveDate,
    /// Per day, oldest first: commits by client.
    pub days: Vec<BTreeMap<String, usize>>,
    /// Every client of the period, most commits first.
    pub writers: Vec<Writer>,
}

impl Activity {
    /// The most commits of one day (0 for a quiet period).
    pub fn busiest_day(&self) -> usize {
        self.days.iter().map(|d| d.values().sum::<usize>()).max().unwrap_or(0)
    }
}

/// Who made a commit, from its trailers.
fn client_of(trailers: &[(String, String)]) -> String {
    let get = |key: &str| trailers.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    match (get("Engram-Client"), get("Engram-Tool")) {
        (Some(client), _) => client,
        (None, Some(_)) => "engram".to_owned(),
        (None, None) => BY_HAND.to_owned(),
    }
}

impl Engram {
    /// Commits per day of pack `name` over the last `days` days (today included) by client,
    /// and who wrote what: a walk of the history back to the period's first day, commits read
    /// without their files.
    pub fn activity(&self, name: &str, days: u32) -> Result<Activity> {
        let days = days.clamp(1, 366);
        let pack = self.packs().resolve_for_repair(name)?;
        let today = self.now().date_naive();
        let first_day = today - Duration::days(i64::from(days) - 1);
        let since = first_day.and_hms_opt(0, 0, 0).map_or(0, |t| t.and_utc().timestamp());
        let query = LogQuery { since: Some(since), ..LogQuery::default() };
        let commits = self.with_existing_repo(&pack.dir, |r| Ok(r.log(&query)?))?.unwrap_or_default();
        let mut per_day = vec![BTreeMap::new(); days as usize];
        let mut writers: BTreeMap<String, Writer> = BTreeMap::new();
        for c in &commits {
            let Some(day) = DateTime::<Utc>::from_timestamp(c.time, 0).map(|t| t.date_naive()) else {
                continue;
            };
            let Ok(i) = usize::try_from((day - first_day).num_days()) else { continue };
            let client = client_of(&c.trailers);
            if let Some(slot) = per_day.get_mut(i) {
                *slot.entry(client.clone()).or_insert(0) += 1;
            }
            let w = writers.entry(client.clone()).or_insert(Writer { client, commits: 0, last: c.time });
            w.commits += 1;
            w.last = w.last.max(c.time);
        }
        let mut writers: Vec<Writer> = writers.into_values().collect();
        writers.sort_by(|a, b| b.commits.cmp(&a.commits).then(b.last.cmp(&a.last)));
        Ok(Activity { first_day, days: per_day, writers })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_is_credited_to_its_client_then_to_engram_then_to_git() {
        let t = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
        };
        assert_eq!(
            client_of(&t(&[("Engram-Tool", "capture_memory"), ("Engram-Client", "cursor")])),
            "cursor"
        );
        assert_eq!(client_of(&t(&[("Engram-Tool", "build")])), "engram");
        assert_eq!(client_of(&[]), BY_HAND);
    }
}
