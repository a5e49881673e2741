//! The host's side of the in-container runner. The runner itself (sbx as a
//! container's PID 1, `sbx __runner`), its reset and the framed protocol
//! both sides speak are the crate `sbx_runner` (crates/sbx-runner), the
//! trust boundary: sbx uses only its `protocol`, its constants and its
//! `main` (tests/quick/layers.rs checks it).
//!
//! - `host`: sbx's side, `RunnerSession`.

pub mod host;
