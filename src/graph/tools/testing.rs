//! Test harness: runs calls like the core would (parse, run, commit, update
//! the cached snapshot) and checks after every write that the updated
//! snapshot equals one built from scratch.

use serde_json::Value;

use crate::graph::call::GraphCall;
use crate::graph::files::GraphChanges;
use crate::graph::mem_files::MemFiles;
use crate::graph::output::ToolOutput;
use crate::graph::snapshot::GraphSnapshot;

/// Files, a cached snapshot and a clock.
pub struct Harness {
    /// The committed files.
    pub files: MemFiles,
    /// The snapshot kept current with `apply`.
    pub snapshot: GraphSnapshot,
    now_ms: u64,
}

impl Harness {
    /// Returns an empty graph.
    pub fn new() -> Self {
        Self::with_files(MemFiles::new())
    }

    /// Returns a graph made of `files`.
    pub fn with_files(files: MemFiles) -> Self {
        let snapshot = GraphSnapshot::build(&files).expect("memory files never fail");
        Self { files, snapshot, now_ms: 1_763_769_600_000 }
    }

    /// Calls `tool` with `arguments`, committing what it changes.
    pub fn call(&mut self, tool: &str, arguments: Value) -> ToolOutput {
        self.call_raw(tool, Some(&arguments))
    }

    /// Calls `tool` with `arguments`, returning the changes too.
    pub fn write(&mut self, tool: &str, arguments: Value) -> (ToolOutput, GraphChanges) {
        self.run(tool, Some(&arguments))
    }

    /// Calls `tool` with optional raw arguments.
    pub fn call_raw(&mut self, tool: &str, arguments: Option<&Value>) -> ToolOutput {
        self.run(tool, arguments).0
    }

    fn run(&mut self, tool: &str, arguments: Option<&Value>) -> (ToolOutput, GraphChanges) {
        match GraphCall::parse(tool, arguments).expect("a graph tool") {
            Err(output) => (output, GraphChanges::default()),
            Ok(GraphCall::Read(call)) => (call.run(&self.snapshot), GraphChanges::default()),
            Ok(GraphCall::Write(call)) => {
                self.now_ms += 1;
                let (output, changes) = call.run(&self.files, self.now_ms).expect("memory files never fail");
                self.files.apply(&changes);
                self.snapshot.apply(&changes);
                self.assert_consistent();
                (output, changes)
            }
        }
    }

    /// Asserts that the cached snapshot equals a fresh build.
    pub fn assert_consistent(&self) {
        let fresh = GraphSnapshot::build(&self.files).expect("memory files never fail");
        assert_eq!(fresh.entities().collect::<Vec<_>>(), self.snapshot.entities().collect::<Vec<_>>());
        assert_eq!(fresh.relations().collect::<Vec<_>>(), self.snapshot.relations().collect::<Vec<_>>());
        assert_eq!(fresh.problems(), self.snapshot.problems());
    }
}
