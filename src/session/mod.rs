//! The path from a candidate file to a supervised container, shared by
//! `sbx run`, `sbx eval` and `sbx doctor`:
//! - `run_id`: the run id and its run lock;
//! - `staging`: the session itself (its staging directory and what its
//!   containers share) and reading candidate files;
//! - `container`: one candidate's container, its arguments built and run.
//!
//! The names every caller uses are re-exported here.

pub(crate) mod container;
pub(crate) mod run_id;
pub(crate) mod staging;

pub(crate) use container::{ContainerArgs, Delivery, StagedCandidate};
pub(crate) use run_id::{forget_run, run_is_live, validate_run_id, validate_run_id_from};
pub(crate) use staging::{
    is_directly_executable, open_candidate, read_header, staging_run_id, Sandbox, Session, Staged,
};
