//! Compatibility with the reference packs.
