//! LiveCodeBench's files as a drop-in: its problems (`code_generation_lite`
//! JSONL), its samples (`custom_evaluator`'s JSON) and its result files,
//! each sample judged in the sandbox. Its files are read in `input/`
//! (`input::livecodebench`) and planned in `plan/` (`plan::livecodebench`);
//! here, one task per problem (`tasks`) and:
//! - `compare`: LiveCodeBench's rule for a stdin problem's output;
//! - `functional`: a LeetCode problem's values, judged outside its process;
//! - `results`: LiveCodeBench's three result files.
//!
//! A stdin problem's tests are cases read from the spool one at a time
//! (`Tests`, a `CaseStream`), each a fresh process with its input on
//! stdin, run by `stdin.py` after LiveCodeBench's imports (`prelude.py`).
//! A functional problem's tests are one case: one process, `call.py`,
//! calls one `Solution` with each test's arguments.

pub(crate) mod compare;
pub(crate) mod functional;
pub(crate) mod results;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::eval::input::livecodebench::{Files, Kind, Problem};
use crate::eval::input::spool;
use crate::eval::input::tasks::{CaseStream, Task, TaskCase};
use crate::verdict::matcher::{External, Matcher};

/// The Python that runs a stdin problem's program: `python3 -c STDIN PATH`
/// (LiveCodeBench's import block is the runner's, which its zygote runs
/// once: `sbx_runner::LIVECODEBENCH_BLOCK`).
pub(crate) fn stdin_harness() -> String {
    [
        "import sys\n",
        sbx_runner::LIVECODEBENCH_BLOCK,
        include_str!("prelude.py"),
        include_str!("stdin.py"),
    ]
    .concat()
}

/// The Python that runs a functional problem's tests: `python3 -c CALL
/// LIMIT_MS PATH` (see `call.py`).
pub(crate) fn call_harness() -> String {
    [
        "import sys\n",
        include_str!("../sealed/codec.py"),
        sbx_runner::LIVECODEBENCH_BLOCK,
        include_str!("prelude.py"),
        include_str!("call.py"),
    ]
    .concat()
}

/// One task per problem of `files`, in their order, its tests read from
/// the spool as they are judged.
pub(crate) fn tasks(files: &Files, image: &str) -> Vec<Task> {
    let per_test = files.per_test;
    files
        .problems
        .iter()
        .map(|problem| {
            let tests = Tests {
                path: problem.tests.clone(),
                count: problem.count,
                kind: problem.kind.clone(),
                sha256: problem.tests_sha256.clone(),
            };
            // A functional problem's tests share one process: its limit is
            // each test's, for every test and for the set-up.
            let timeout = match problem.kind {
                Kind::Stdin => per_test,
                Kind::Functional(_) => per_test.saturating_mul(problem.count as u32 + 1),
            };
            Task {
                id: problem.question_id.clone(),
                cases: Vec::new(),
                multi_case: true,
                timeout,
                image: image.to_string(),
                function: None,
                stream: Some(Arc::new(tests)),
            }
        })
        .collect()
}

/// The words after the interpreter that run a sample of `problem`.
pub(crate) fn runner_args(problem: &Problem, per_test: Duration) -> Vec<String> {
    match problem.kind {
        Kind::Stdin => vec!["-c".into(), stdin_harness()],
        Kind::Functional(_) => vec![
            "-c".into(),
            call_harness(),
            per_test.as_millis().max(1).to_string(),
        ],
    }
}

/// A problem's tests, read from the spool as they are judged.
struct Tests {
    path: PathBuf,
    count: usize,
    kind: Kind,
    /// The SHA-256 of the spool file.
    sha256: String,
}

/// What the tests are, not where they are: `--partition`'s shares compare
/// their tasks' `Debug` forms, and each share's spool is a folder of its
/// own (their content is in the request's `source_sha256`).
impl std::fmt::Debug for Tests {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tests")
            .field("count", &self.count)
            .field("kind", &self.kind)
            .finish()
    }
}

impl CaseStream for Tests {
    fn key(&self) -> String {
        format!(
            "livecodebench:{:?}:{}:{}",
            self.kind, self.count, self.sha256
        )
    }

    fn count(&self) -> usize {
        match self.kind {
            Kind::Stdin => self.count,
            Kind::Functional(_) => 1,
        }
    }

    fn cases(&self) -> Box<dyn Iterator<Item = Result<TaskCase, String>> + '_> {
        let reader = match spool::Reader::open(&self.path) {
            Ok(reader) => reader,
            Err(e) => return Box::new(std::iter::once(Err(e))),
        };
        match &self.kind {
            Kind::Stdin => Box::new(reader.map(|test| {
                test.map(|(input, output)| TaskCase {
                    stdin: Arc::from(input.into_bytes()),
                    matcher: Matcher::External(External {
                        name: "livecodebench".into(),
                        check: Arc::new(move |actual: &[u8]| compare::mismatch(&output, actual)),
                    }),
                })
            })),
            Kind::Functional(name) => Box::new(std::iter::once(functional_case(reader, name))),
        }
    }
}

/// A functional problem's one case: every test's arguments on its stdin,
/// its expected values kept here, in the matcher.
fn functional_case(reader: spool::Reader, name: &str) -> Result<TaskCase, String> {
    let mut inputs = Vec::new();
    let mut expected = Vec::new();
    for test in reader {
        let (input, output) = test?;
        inputs.push(input);
        expected.push(functional::expected(&output)?);
    }
    let token = crate::eval::humaneval::in_process::fresh_token()
        .map_err(|e| format!("cannot read /dev/urandom for a token: {e}"))?;
    let stdin = functional::stdin(&token, name, &inputs);
    Ok(TaskCase {
        stdin: Arc::from(stdin),
        matcher: Matcher::External(External {
            name: "livecodebench functional".into(),
            check: Arc::new(move |stdout: &[u8]| {
                functional::judge(stdout, &token, &expected).map(|f| f.text())
            }),
        }),
    })
}
