//! Stored catalogues: fetched from npm, saved from an instance, and the order that picks one.

mod fake_npm;
mod fetch;
mod from_n8n;
mod resolve;
