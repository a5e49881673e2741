//! The engines sbx runs on. The engines stay Docker's: sbx only talks to
//! them through the docker CLI, each with its own `--context` or `--host`.
//! - `engine_spec`: the `--engine` values;
//! - `pool`: each engine set up (where, how candidates reach it, its
//!   images), pinged, and per-engine work run on all at once;
//! - `isolation`: each engine's `--isolate` mode for an eval;
//! - `bake`: candidates baked into a throwaway image for a remote engine;
//! - `clean`: what a run left on an engine, removed;
//! - `started`: an eval's engines made ready to judge, and the guard that
//!   cleans them on every path out.

pub(crate) mod bake;
pub(crate) mod clean;
pub(crate) mod engine_spec;
pub(crate) mod isolation;
pub(crate) mod pool;
pub(crate) mod started;
