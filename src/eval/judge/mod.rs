//! One candidate judged on one engine:
//! - `cases`: its cases run and compared, each in a fresh container
//!   (`--isolate case`), the result made; what the runner modes share;
//! - `isolate`: the same in sbx's runner (`--isolate candidate|worker`);
//! - `compile`: a compiled candidate's compile step, once for all its cases;
//! - `build_archive`: a compiled candidate's build, read for the runner;
//! - `saved`: `--save-output`, each run's whole stdout and stderr in files;
//! - `hint`: `toolchain_missing` for a missing interpreter.

pub(crate) mod build_archive;
pub(crate) mod cases;
pub(crate) mod compile;
pub(crate) mod hint;
pub(crate) mod isolate;
pub(crate) mod saved;
