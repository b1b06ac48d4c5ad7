//! libgit2 calls made again when a git command working beside engram made them fail for a
//! moment. Git itself waits out the same moments; each call here is idempotent (an object's
//! name is its content; a fetch or push made again moves nothing twice), so it is simply
//! made again, a bounded number of times, and a failure that lasts is reported as it is.

use std::time::Duration;

use git2::{ErrorClass, ErrorCode};

/// One way a git command beside engram fails a libgit2 call for a moment.
struct Race {
    /// True for the error this race causes.
    is: fn(&git2::Error) -> bool,
    /// How many times the call is made at most.
    tries: u32,
    /// The pause between tries.
    pause: Duration,
}

/// `git gc` moved an object into a new pack between libgit2's look at the loose objects and
/// its one rescan of the packs (or removed a pack the rescan listed): the next rescan finds it.
const MOVED_OBJECT: Race = Race {
    is: |e| e.code() == ErrorCode::NotFound && e.class() == ErrorClass::Odb,
    tries: 4,
    pause: Duration::ZERO,
};

/// `git prune-packed` removed an `objects/xx/` folder it had emptied between libgit2 creating
/// it and renaming a new object into it ("failed to rename lockfile … No such file or
/// directory"); git writes its temporary file inside the folder and never loses this race.
const REMOVED_FOLDER: Race = Race {
    is: |e| e.class() == ErrorClass::Os && e.message().contains("failed to rename lockfile"),
    tries: 10,
    pause: Duration::ZERO,
};

/// A ref's lock is held by git's `pack-refs` (run by `git gc`) or a person's git; git waits
/// for one too (`core.filesRefLockTimeout`).
const HELD_REF_LOCK: Race =
    Race { is: |e| e.code() == ErrorCode::Locked, tries: 10, pause: Duration::from_millis(200) };

fn again<T>(race: &Race, mut call: impl FnMut() -> Result<T, git2::Error>) -> Result<T, git2::Error> {
    let mut tried = 1;
    loop {
        match call() {
            Err(e) if tried < race.tries && (race.is)(&e) => {
                tried += 1;
                std::thread::sleep(race.pause);
            }
            done => return done,
        }
    }
}

/// An object read, made again while the object is missing (see [`MOVED_OBJECT`]).
pub(super) fn reread<T>(read: impl FnMut() -> Result<T, git2::Error>) -> Result<T, git2::Error> {
    again(&MOVED_OBJECT, read)
}

/// An object write, made again while its folder was removed under it (see [`REMOVED_FOLDER`]).
pub(super) fn rewrite<T>(write: impl FnMut() -> Result<T, git2::Error>) -> Result<T, git2::Error> {
    again(&REMOVED_FOLDER, write)
}

/// A fetch or push, made again while a ref it moves is locked (see [`HELD_REF_LOCK`]).
pub(super) fn while_a_ref_is_locked<T>(op: impl FnMut() -> Result<T, git2::Error>) -> Result<T, git2::Error> {
    again(&HELD_REF_LOCK, op)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn missing_object() -> git2::Error {
        git2::Error::new(ErrorCode::NotFound, ErrorClass::Odb, "object not found - no match for id")
    }

    #[test]
    fn a_missed_object_is_looked_up_again_a_bounded_number_of_times() {
        let mut calls = 0;
        let found = reread(|| {
            calls += 1;
            if calls < 3 { Err(missing_object()) } else { Ok(calls) }
        });
        assert_eq!(found.expect("found on the third read"), 3);

        let mut calls = 0;
        let missing: Result<(), _> = reread(|| {
            calls += 1;
            Err(missing_object())
        });
        assert!(missing.is_err());
        assert_eq!(calls, MOVED_OBJECT.tries);
    }

    #[test]
    fn other_errors_are_not_retried() {
        let mut calls = 0;
        let missing_ref: Result<(), _> = reread(|| {
            calls += 1;
            Err(git2::Error::new(ErrorCode::NotFound, ErrorClass::Reference, "no such ref"))
        });
        assert!(missing_ref.is_err());
        assert_eq!(calls, 1);
    }

    /// The read libgit2 answers for an id no pack holds is one `reread` retries.
    #[test]
    fn libgit2s_miss_is_a_missing_object() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let repo = git2::Repository::init(tmp.path()).expect("init");
        let absent = git2::Oid::hash_object(git2::ObjectType::Blob, b"never written").expect("hash");
        let e = repo.find_blob(absent).expect_err("absent");
        assert!((MOVED_OBJECT.is)(&e), "{e:?}");
        let e = repo.revparse_single("refs/heads/nothing").expect_err("no ref");
        assert!(!(MOVED_OBJECT.is)(&e), "{e:?}");
    }
}
