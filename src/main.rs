//! The `engram` binary: parses the command line and hands over to [`engram::cli`].

use std::process::ExitCode;

fn main() -> ExitCode {
    engram::cli::main()
}
