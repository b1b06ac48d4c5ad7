//! What kind of trouble a store error is, so the message at the edge says the
//! right thing: a damaged pack (`engram doctor` finds the cause), a full disk,
//! or something passing — another program's git lock, a branch that kept
//! moving, the network — where pointing at damage would send people looking
//! for a fault that is not there.

use super::StoreError;

impl StoreError {
    /// True when the disk (or the user's quota) is full.
    pub fn is_disk_full(&self) -> bool {
        match self {
            Self::Io { source, .. } => io_full(source),
            Self::Git { source, .. } | Self::Open { source, .. } => text_full(source.message()),
            Self::Remote { message, .. } => text_full(message),
            _ => false,
        }
    }

    /// True for a failure that trying again can cure: a file another program
    /// changed or removed while it was read, a git lock another program held.
    pub fn is_passing(&self) -> bool {
        match self {
            Self::Git { source, .. } => git_passing(source),
            Self::Contention { .. } => true,
            _ => false,
        }
    }

    /// True when the pack's repository or files may be damaged, so that
    /// `engram doctor` is worth running; false for a full disk, a lock or a race
    /// with another program, the network, and refusals.
    pub fn may_be_damage(&self) -> bool {
        if self.is_disk_full() {
            return false;
        }
        match self {
            Self::Open { .. } | Self::NotAFile { .. } => true,
            Self::Git { source, .. } => git_damage(source),
            Self::Io { source, .. } => io_damage(source),
            // A lock or a race, the network, a refusal.
            _ => false,
        }
    }
}

fn io_full(e: &std::io::Error) -> bool {
    // An error libgit2 raised inside an io call (the indexer) carries only its text.
    matches!(e.kind(), std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded)
        || text_full(&e.to_string())
}

/// libgit2 words an OS error with the system's text.
fn text_full(message: &str) -> bool {
    message.contains("No space left on device") || message.contains("Disk quota exceeded")
}

/// Permissions, a read-only file system, something missing or of the wrong
/// kind in the pack: doctor checks all of these.
fn io_damage(e: &std::io::Error) -> bool {
    use std::io::ErrorKind as K;
    matches!(
        e.kind(),
        K::NotFound
            | K::PermissionDenied
            | K::ReadOnlyFilesystem
            | K::NotADirectory
            | K::IsADirectory
            | K::InvalidData
            | K::UnexpectedEof
    )
}

/// What libgit2 says when a file it reads is removed or swapped meanwhile (an OS error).
const OS_RACES: [&str; 4] = [
    "read file into stream",
    "No such file or directory",
    "error reading file for hashing",
    "cannot read symlink",
];

/// A git lock another program held, or a file it changed, removed or swapped (a folder for a
/// link, a person's checkout) while libgit2 read it.
fn git_passing(e: &git2::Error) -> bool {
    let os_race = e.class() == git2::ErrorClass::Os && OS_RACES.iter().any(|t| e.message().contains(t));
    e.code() == git2::ErrorCode::Locked || e.class() == git2::ErrorClass::Filesystem || os_race
}

fn git_damage(e: &git2::Error) -> bool {
    use git2::{ErrorClass as C, ErrorCode as K};
    // Passing, a conflict, the network, a callback.
    !git_passing(e)
        && !matches!(e.code(), K::Modified | K::Exists | K::Directory | K::Auth | K::Certificate | K::User)
        && !matches!(e.class(), C::Net | C::Ssh | C::Http | C::Ssl | C::Callback | C::Thread)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn git(code: git2::ErrorCode, class: git2::ErrorClass, message: &str) -> StoreError {
        StoreError::Git {
            step: "writing",
            dir: PathBuf::from("p"),
            source: git2::Error::new(code, class, message),
        }
    }

    #[test]
    fn locks_races_and_full_disks_are_not_damage() {
        use git2::{ErrorClass as C, ErrorCode as K};
        let locked = git(
            K::Locked,
            C::Index,
            "the index is locked; this might be due to a concurrent or crashed process",
        );
        assert!(!locked.may_be_damage() && !locked.is_disk_full());
        let changed = git(K::GenericError, C::Filesystem, "file changed before we could read it");
        assert!(!changed.may_be_damage());
        // A file removed between git's directory walk and its read (a folder swapped for a link).
        let vanished = git(K::GenericError, C::Os, "error reading file for hashing: ");
        assert!(vanished.is_passing() && !vanished.may_be_damage());
        // A file that became a directory between the walk and the read: a swap, not damage.
        let swapped = git(K::Directory, C::Odb, "cannot create blob from 'k/race': it is a directory");
        assert!(!swapped.may_be_damage());
        let full = git(K::GenericError, C::Os, "could not write 'x': No space left on device");
        assert!(full.is_disk_full() && !full.may_be_damage());
        let io = StoreError::Io {
            step: "write",
            path: PathBuf::from("x"),
            source: std::io::Error::from(std::io::ErrorKind::StorageFull),
        };
        assert!(io.is_disk_full() && !io.may_be_damage());
        let raced = StoreError::Contention {
            dir: PathBuf::from("p"),
            attempts: 3,
            waited: std::time::Duration::from_secs(10),
        };
        let hostkey =
            StoreError::Remote { step: "fetching", url: "ssh://h/x".into(), message: "hostkey".into() };
        assert!(!hostkey.may_be_damage());
        let busy = StoreError::Busy {
            dir: PathBuf::from("p"),
            what: "index.lock",
            waited: std::time::Duration::from_secs(10),
        };
        let replaced = StoreError::Replaced {
            dir: PathBuf::from("p"),
            paths: vec!["a.md replaced by a directory".into()],
        };
        for e in [busy, replaced, raced] {
            assert!(!e.may_be_damage(), "{e}");
            let text = crate::ops::EngramError::from(e).to_string();
            assert!(!text.contains("doctor") && text.contains("retry"), "{text}");
        }
        let missing = git(K::NotFound, C::Odb, "object not found - no match for id");
        assert!(missing.may_be_damage());
    }
}
