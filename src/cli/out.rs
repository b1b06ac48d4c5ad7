//! Standard output of the CLI. `engram stats | head -1` closes the pipe after one line:
//! the rest of the output has no reader, which is the reader's choice, not an error, so
//! engram stops quietly (exit 0) instead of panicking the way `outln!` does.

use std::fmt;
use std::io::{ErrorKind, Write as _};

/// Like `outln!`, but a closed standard output ends engram quietly (see the module).
macro_rules! outln {
    () => {
        $crate::cli::out::write(format_args!(""), true)
    };
    ($($arg:tt)*) => {
        $crate::cli::out::write(format_args!($($arg)*), true)
    };
}

/// Like `print!`, but a closed standard output ends engram quietly (see the module).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::out::write(format_args!($($arg)*), false)
    };
}

/// Writes `args` (and a newline) to standard output. When the reader has gone, the process
/// exits with status 0 and prints nothing; any other write error ends it with a message.
pub(crate) fn write(args: fmt::Arguments<'_>, newline: bool) {
    let mut stdout = std::io::stdout().lock();
    let res = stdout
        .write_fmt(args)
        .and_then(|()| if newline { stdout.write_all(b"\n") } else { Ok(()) })
        .and_then(|()| stdout.flush());
    if let Err(e) = res {
        if e.kind() == ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("engram: writing to standard output: {e}");
        std::process::exit(1);
    }
}
