//! Everything that talks to the docker CLI, bottom of the tree:
//! - `argv`: the pure argument vectors (and the `Docker` handle that adds
//!   the engine's global options); no process is started there;
//! - `process`: the only place that spawns, waits for, kills and drains a
//!   process (a run's attached client, short control commands, and the
//!   long-lived event streams);
//! - `control`: named short commands (image present, create, remove a run);
//! - `events`: what the engine recorded about each container (create,
//!   start, oom, die, destroy), read from one event stream per engine.

pub mod argv;
pub(crate) mod control;
pub(crate) mod events;
pub(crate) mod process;

pub use argv::{Docker, Endpoint};
