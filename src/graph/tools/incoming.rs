//! Keeping the incoming-relation index in step with relation writes.

use crate::graph::error::GraphError;
use crate::graph::key::FileKind;
use crate::graph::record::IncomingFile;
use crate::graph::tx::{Slot, Tx};

/// Records that `from` has a relation to `to`.
pub fn add(tx: &mut Tx<'_>, to: &str, from: &str) -> Result<(), GraphError> {
    match tx.find::<IncomingFile>(FileKind::Incoming, to)? {
        Slot::Found { path, mut record, .. } => {
            if record.insert(from) {
                tx.put(&path, &record);
            }
        }
        Slot::Vacant { path } => {
            let mut record = IncomingFile::new(to);
            record.insert(from);
            tx.put(&path, &record);
        }
    }
    Ok(())
}

/// Records that `from` has no relation to `to` any more.
pub fn remove(tx: &mut Tx<'_>, to: &str, from: &str) -> Result<(), GraphError> {
    if let Slot::Found { path, probe, mut record } = tx.find::<IncomingFile>(FileKind::Incoming, to)?
        && record.remove(from)
    {
        if record.from.is_empty() {
            tx.remove(FileKind::Incoming, to, probe)?;
        } else {
            tx.put(&path, &record);
        }
    }
    Ok(())
}
