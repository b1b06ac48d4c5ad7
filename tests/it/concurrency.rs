//! Several processes on one pack.
