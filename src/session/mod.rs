//! The path from a candidate file to a supervised container, shared by
//! `sbx run`, `sbx eval` and `sbx doctor`:
//! - `run_id`: the run id and its run lock;
//! - `staging`: the session itself (its staging directory and what its
//!   containers share) and reading candidate files;
//! - `container`: one candidate's container, prepared and run.
//!
//! The names every caller uses are re-exported here.

pub mod container;
pub mod run_id;
pub mod staging;

pub use container::{Delivery, Prepared, StagedCandidate};
pub use run_id::{forget_run, run_is_live, validate_run_id, validate_run_id_from, RUN_ID_ENV};
pub use staging::{
    is_directly_executable, open_candidate, read_header, staging_run_id, Sandbox, Session, Staged,
    BAKED_DIR,
};
