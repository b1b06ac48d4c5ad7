//! The Engram toolset (the default tools and `knowledge`): load and read a
//! pack, capture and correct memories, knowledge files, search, history and
//! undo, the system prompt and the hook texts.

pub(super) mod activity;
pub(super) mod chapters;
pub(super) mod entry_history;
pub(super) mod history;
pub(super) mod hooks;
pub(super) mod knowledge;
pub(super) mod load;
pub(super) mod memory_files;
pub(super) mod memory_items;
pub(super) mod memory_tools;
pub(super) mod prompt;
pub(super) mod search;
