//! Writes that refuse to wait for a lock.
//!
//! A stdio server runs its event loop on one thread. Handing a write to a
//! blocking thread costs two thread wake-ups (a tenth of a millisecond on a
//! busy 2-core machine, a tenth of a capture), so short writes run on the loop
//! itself — but the loop must never sleep on a lock that another process (or
//! a long call on a blocking thread) holds: it would stop reading requests
//! and cancellations meanwhile. Inside [`without_waiting`], every place that
//! would wait for a pack's locks fails with [`StoreError::WouldWait`] instead,
//! before anything is written, and the caller hands the call to a blocking
//! thread, where it runs again from the start and waits as usual.

use std::cell::Cell;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, TryLockError};

use super::{Result, StoreError};

thread_local! {
    static NO_WAITING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` on this thread with lock waits turned into [`StoreError::WouldWait`].
pub fn without_waiting<T>(f: impl FnOnce() -> T) -> T {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            NO_WAITING.with(|c| c.set(self.0));
        }
    }
    let _reset = Reset(NO_WAITING.with(|c| c.replace(true)));
    f()
}

/// True unless this thread runs inside [`without_waiting`].
pub(super) fn waiting_allowed() -> bool {
    !NO_WAITING.with(Cell::get)
}

/// Locks `mutex` (a pack's repository, for this process): waits for it, or
/// inside [`without_waiting`] fails with [`StoreError::WouldWait`] when it is held.
pub fn hold<'a, T>(mutex: &'a Mutex<T>, dir: &Path) -> Result<MutexGuard<'a, T>> {
    if waiting_allowed() {
        return Ok(mutex.lock().unwrap_or_else(|p| p.into_inner()));
    }
    match mutex.try_lock() {
        Ok(guard) => Ok(guard),
        Err(TryLockError::Poisoned(p)) => Ok(p.into_inner()),
        Err(TryLockError::WouldBlock) => Err(StoreError::WouldWait { dir: dir.to_owned() }),
    }
}

/// Takes the exclusive `flock` on `file` (the lock of the pack at `dir`): waits for
/// it, or inside [`without_waiting`] fails with [`StoreError::WouldWait`] when another
/// holds it. `io` says what failed when the lock cannot be taken at all.
pub(super) fn lock_exclusive(
    file: &std::fs::File,
    dir: &Path,
    io: impl FnOnce(std::io::Error) -> StoreError,
) -> Result<()> {
    if waiting_allowed() {
        return fs4::fs_std::FileExt::lock_exclusive(file).map_err(io);
    }
    match fs4::fs_std::FileExt::try_lock_exclusive(file).map_err(io)? {
        true => Ok(()),
        false => Err(StoreError::WouldWait { dir: dir.to_owned() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_is_refused_only_inside_the_scope_and_the_scope_ends() {
        let tmp = tempfile::tempdir().expect("tmp");
        let path = tmp.path().join("lock");
        let holder = std::fs::File::create(&path).expect("create");
        fs4::fs_std::FileExt::lock_exclusive(&holder).expect("lock");
        let other = std::fs::File::open(&path).expect("open");
        let io = |e| super::super::io_err("lock", tmp.path(), e);
        let refused = without_waiting(|| lock_exclusive(&other, tmp.path(), io));
        assert!(matches!(refused, Err(StoreError::WouldWait { .. })));
        assert!(waiting_allowed(), "the scope ends with the call");

        let mutex = Mutex::new(1);
        let guard = mutex.lock().expect("lock");
        assert!(matches!(without_waiting(|| hold(&mutex, tmp.path())), Err(StoreError::WouldWait { .. })));
        drop(guard);
        assert_eq!(*without_waiting(|| hold(&mutex, tmp.path())).expect("free"), 1);

        // A free flock is taken inside the scope as outside it.
        fs4::fs_std::FileExt::unlock(&holder).expect("unlock");
        assert!(without_waiting(|| lock_exclusive(&other, tmp.path(), io)).is_ok());
    }
}
