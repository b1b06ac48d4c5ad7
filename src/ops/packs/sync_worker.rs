//! Background sync for `engram serve --sync-on-start / --sync-interval`.
//!
//! One thread per server: it syncs every pack with a remote at start (when
//! asked), every interval, and soon after tool calls that left local commits
//! the remote has not seen. Tool calls only send a message on a channel
//! ([`SyncWorker::poke`]); network work never runs on a tool's thread and never
//! holds a pack's lock (the merge commit takes it briefly, like any write).
//!
//! A push that lost a race (the remote moved since the fetch) is retried at once, after a
//! short random pause: the retry fetches the winner's commits, merges them and pushes again,
//! so several servers sharing one remote converge in seconds rather than intervals.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::ops::{Caller, Engram};

/// Handle to the background sync thread.
pub struct SyncWorker {
    tx: Mutex<mpsc::Sender<()>>,
}

/// How long the worker waits without an interval (effectively: until poked).
const IDLE: Duration = Duration::from_secs(24 * 3600);

fn caller() -> Caller {
    Caller { tool: "sync".into(), client: Some("engram-serve".into()) }
}

/// How many times a push that lost a race is tried again in one round.
const RACE_RETRIES: u32 = 3;

/// `result` of a pack's sync, or, while its push lost a race, that of a new sync after a
/// short pause (each lost try is logged).
fn retry_lost_races(engram: &Engram, name: &str, mut result: SyncResult) -> SyncResult {
    for _ in 0..RACE_RETRIES {
        if !matches!(&result, Ok(report) if report.push_lost_a_race()) {
            break;
        }
        log_results(vec![(name.to_owned(), result)]);
        std::thread::sleep(race_pause());
        result = engram.sync_pack(name, &caller());
    }
    result
}

/// 20–220 ms, different in every process: two servers that lost to each other do not
/// collide again in step.
fn race_pause() -> Duration {
    use std::hash::{BuildHasher as _, Hasher as _};
    let random = std::collections::hash_map::RandomState::new().build_hasher().finish();
    Duration::from_millis(20 + random % 200)
}

type SyncResult = crate::ops::Result<crate::ops::SyncReport>;

/// Syncs every pack with a remote (retrying lost races) and logs the damaged packs left out.
fn sync_all(engram: &Engram) {
    let (results, damaged) = engram.sync_all(&caller());
    for d in damaged {
        eprintln!("engram: sync skipped {}", d.note());
    }
    let results = results
        .into_iter()
        .map(|(name, r)| {
            let r = retry_lost_races(engram, &name, r);
            (name, r)
        })
        .collect();
    log_results(results);
}

fn log_results(results: Vec<(String, SyncResult)>) {
    for (pack, r) in results {
        match r {
            Ok(report) => {
                let first = report.render();
                let summary = first.lines().next().unwrap_or_default().to_owned();
                eprintln!("engram: {summary}");
                if !report.is_success() {
                    eprintln!("{first}");
                }
            }
            Err(e) => eprintln!("engram: sync of {pack} failed: {e}"),
        }
    }
}

impl SyncWorker {
    /// Starts the thread. `on_start`: sync every pack with a remote now;
    /// `interval`: sync them all again every so often.
    pub fn start(engram: Arc<Engram>, on_start: bool, interval: Option<Duration>) -> Arc<Self> {
        let (tx, rx) = mpsc::channel::<()>();
        let spawned = std::thread::Builder::new().name("engram-sync".into()).spawn(move || {
            if on_start {
                sync_all(&engram);
            }
            // The interval runs from one full sync to the next whatever the tool calls do: a
            // client that calls a tool more often than the interval (every call pokes) must
            // not hold back the pulls, nor the retries of a failed sync.
            let mut next_full = interval.map(|i| Instant::now() + i);
            loop {
                let wait = next_full.map_or(IDLE, |at| at.saturating_duration_since(Instant::now()));
                let poked = match rx.recv_timeout(wait) {
                    Ok(()) => true,
                    Err(RecvTimeoutError::Timeout) => false,
                    Err(RecvTimeoutError::Disconnected) => break,
                };
                // Coalesce a burst of tool calls into one push.
                while rx.try_recv().is_ok() {}
                if let (Some(interval), Some(at)) = (interval, next_full)
                    && Instant::now() >= at
                {
                    sync_all(&engram);
                    next_full = Some(Instant::now() + interval);
                } else if poked {
                    let results = engram
                        .packs_to_push()
                        .into_iter()
                        .map(|name| {
                            let r = engram.sync_pack(&name, &caller());
                            let r = retry_lost_races(&engram, &name, r);
                            (name, r)
                        })
                        .collect();
                    log_results(results);
                }
            }
        });
        if let Err(e) = spawned {
            eprintln!("engram: cannot start the background sync thread: {e}");
        }
        Arc::new(Self { tx: Mutex::new(tx) })
    }

    /// Asks the worker to push packs with unpushed commits. Never blocks on the network.
    pub fn poke(&self) {
        let tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        let _ = tx.send(());
    }
}
