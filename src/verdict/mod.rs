//! Judging one run, as pure decisions on what happened:
//! - `matcher`: a task's expected output against the program's stdout;
//! - `outcome`: a finished run (and the engine's record of it) to a
//!   verdict, and `sbx run`'s exit code.

pub(crate) mod matcher;
pub(crate) mod outcome;
