//! SHA-1 checksums of whole files git reads (pack trailer, pack index, git
//! index). These are integrity checks, not object ids, so they use the `sha1`
//! crate, which runs on the CPU's SHA instructions where there are some (object
//! ids stay with libgit2's collision-detecting SHA-1).

use sha1::Digest as _;

/// The SHA-1 of `bytes`.
pub(super) fn sha1(bytes: &[u8]) -> [u8; 20] {
    sha1::Sha1::digest(bytes).into()
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_digest() {
        let hex: String = super::sha1(b"abc").iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "a9993e364706816aba3e25717850c26c9cd0d89d");
    }
}
