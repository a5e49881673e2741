//! A validated `sbx eval` request (built from the command line by
//! `config`).

use std::path::PathBuf;

use super::tasks::Task;
use crate::engines::spec::EngineSpec;
use crate::session::Sandbox;
use crate::spec::{DeliverChoice, IsolateMode};

/// A validated `sbx eval` request.
#[derive(Debug, Clone)]
pub struct EvalRequest {
    pub tasks: Vec<Task>,
    pub gen: PathBuf,
    pub jobs: usize,
    pub interpreter: Option<Vec<String>>,
    pub max_output: usize,
    /// Stop a multi-case task at its first failing case.
    pub fail_fast: bool,
    /// The k of pass@k for multi-sample tasks (empty: 1, and 10 where n >= 10).
    pub ks: Vec<usize>,
    /// Where judged results are cached, if anywhere.
    pub cache: Option<PathBuf>,
    pub junit: Option<PathBuf>,
    /// The engines to spread the tasks over (empty: the current context).
    pub engines: Vec<EngineSpec>,
    pub deliver: DeliverChoice,
    /// What one container holds (`--isolate`).
    pub isolate: IsolateMode,
    /// RLIMIT_CPU of each case, in seconds (runner modes only).
    pub cpu_limit: Option<u64>,
    pub sandbox: Sandbox,
}
