//! Every unit of an eval judged on the engines' workers:
//! - `warm`: the sealed prepare step, with runner containers warming
//!   meanwhile;
//! - `workers`: every unit judged on the engines' workers, with progress;
//! - `queue`: the work queue the engines' workers share;
//! - `attempt`: one unit on one engine, and the retry policy;
//! - `cache`: judged results kept between evals.

pub(crate) mod attempt;
pub(crate) mod cache;
pub(crate) mod queue;
pub(crate) mod warm;
pub(crate) mod workers;
