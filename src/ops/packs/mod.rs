//! Packs as a whole: install, init and the registry, sync with a remote (and
//! the background sync worker), `engram doctor`, each pack's health, and the packs engram creates
//! for itself (notes, workspace).

pub(super) mod doctor;
pub(super) mod health;
pub(super) mod install;
pub(super) mod own_pack;
pub(super) mod registry;
pub(super) mod review;
pub(super) mod sync;
pub(super) mod sync_page;
pub(super) mod sync_worker;
