//! The benchmark harness's integration tests, one binary.

mod checksums;
mod cli;
mod load;
