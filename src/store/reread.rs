//! Object reads that a concurrent pack merge cannot fail.
//!
//! libgit2 looks an object up in the packs its object database has listed; on a
//! miss it rescans `objects/pack` once and looks again. A packing job (`gc`)
//! installs its new pack before it deletes the packs that pack covers, so every
//! object is in some pack on disk at every moment. Yet a reader can still miss
//! one: its one rescan lists a pack that is about to be merged away (the new pack
//! is not there yet, or a directory listing taken while files are renamed in and
//! out skips it), and by the time the reader opens that pack's index the merge
//! has deleted it. The object is there, in the new pack, and the next rescan
//! finds it. (The likeliest cause of a failure seen once in CI and not
//! reproduced here: a snapshot of `HEAD` taken right after a write answered
//! "unknown commit" while the write's packing job ran.)
//!
//! The read paths (snapshots and the object cache, revisions, history) read
//! objects through [`reread`]: a read that misses an object is made again, each
//! time with libgit2's rescan, a few times at most. An object that is really
//! missing costs those rescans (a few directory listings) and is reported as
//! before. (Packing and repair code reads objects it has just listed, under the
//! gc lock, and does not need it.)

use git2::{ErrorClass, ErrorCode};

/// How many more times a read that missed an object is made.
const EXTRA_READS: usize = 3;

/// Runs `read`, and again while it fails because an object was not found, at
/// most [`EXTRA_READS`] more times (each failed libgit2 lookup rescans the packs).
pub(super) fn reread<T>(mut read: impl FnMut() -> Result<T, git2::Error>) -> Result<T, git2::Error> {
    let mut extra = 0;
    loop {
        match read() {
            Err(e) if is_missing_object(&e) && extra < EXTRA_READS => extra += 1,
            done => return done,
        }
    }
}

/// An object the object database did not find (not a missing ref or path).
fn is_missing_object(e: &git2::Error) -> bool {
    e.code() == ErrorCode::NotFound && e.class() == ErrorClass::Odb
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
        assert_eq!(calls, 1 + EXTRA_READS);
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
        assert!(is_missing_object(&e), "{e:?}");
        let e = repo.revparse_single("refs/heads/nothing").expect_err("no ref");
        assert!(!is_missing_object(&e), "{e:?}");
    }
}
