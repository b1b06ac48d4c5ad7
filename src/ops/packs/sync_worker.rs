//! Background sync for `engram serve --sync-on-start / --sync-interval`.
//!
//! One thread per server: it syncs every pack with a remote at start (when
//! asked), every interval, and soon after tool calls that left local commits
//! the remote has not seen. Tool calls only send a message on a channel
//! ([`SyncWorker::poke`]); network work never runs on a tool's thread and never
//! holds a pack's lock (the merge commit takes it briefly, like any write).

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::ops::{Caller, Damage, Engram};

/// Handle to the background sync thread.
pub struct SyncWorker {
    tx: Mutex<mpsc::Sender<()>>,
}

/// How long the worker waits without an interval (effectively: until poked).
const IDLE: Duration = Duration::from_secs(24 * 3600);

fn caller() -> Caller {
    Caller { tool: "sync".into(), client: Some("engram-serve".into()) }
}

/// The damaged packs a sync of all packs left out, then its results.
fn log_all((results, damaged): (Vec<(String, crate::ops::Result<crate::ops::SyncReport>)>, Vec<Damage>)) {
    for d in damaged {
        eprintln!("engram: sync skipped {}", d.note());
    }
    log_results(results);
}

fn log_results(results: Vec<(String, crate::ops::Result<crate::ops::SyncReport>)>) {
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
                log_all(engram.sync_all(&caller()));
            }
            loop {
                match rx.recv_timeout(interval.unwrap_or(IDLE)) {
                    Ok(()) => {
                        // Coalesce a burst of tool calls into one push.
                        while rx.try_recv().is_ok() {}
                        let results = engram
                            .packs_to_push()
                            .into_iter()
                            .map(|name| {
                                let r = engram.sync_pack(&name, &caller());
                                (name, r)
                            })
                            .collect();
                        log_results(results);
                    }
                    Err(RecvTimeoutError::Timeout) => {
                        if interval.is_some() {
                            log_all(engram.sync_all(&caller()));
                        }
                    }
                    Err(RecvTimeoutError::Disconnected) => break,
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
