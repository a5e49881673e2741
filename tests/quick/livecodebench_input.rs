//! LiveCodeBench's files refused before anything runs: a bad gzip, bad
//! base64, a hostile pickle, missing fields, samples of no problem. Each is
//! one line on stderr naming the file (and the problem), and exit 2; no
//! engine is reached (none is needed).

use crate::common;

use std::fs;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

fn line(id: &str, private: &str) -> String {
    serde_json::json!({
        "question_title": "t", "question_content": "c", "platform": "atcoder",
        "question_id": id, "contest_id": "x", "contest_date": "2025-01-01T00:00:00",
        "starter_code": "", "difficulty": "easy",
        "public_test_cases": r#"[{"input": "1\n", "output": "1\n", "testtype": "stdin"}]"#,
        "private_test_cases": private, "metadata": "{}",
    })
    .to_string()
}

fn zlib_base64(bytes: &[u8]) -> String {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(bytes).expect("zlib in memory");
    let data = z.finish().expect("zlib");
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            out.push(if i <= chunk.len() {
                A[(n >> (18 - 6 * i)) as usize & 63] as char
            } else {
                '='
            });
        }
    }
    out
}

/// `sbx eval` on these problems (bytes) and samples: its exit code and stderr.
fn refused(dir: &Path, problems: &[u8], samples: &str) -> (i32, String) {
    let p = dir.join("problems.jsonl");
    let s = dir.join("samples.json");
    fs::write(&p, problems).expect("write problems");
    fs::write(&s, samples).expect("write samples");
    let mut cmd = common::sbx(None);
    cmd.arg("eval")
        .arg("--problems")
        .arg(&p)
        .arg("--samples")
        .arg(&s);
    // Nothing is judged: a docker that cannot exist proves no engine was used.
    cmd.env("SBX_DOCKER", dir.join("no-docker"));
    let out = common::finish(cmd, None, Duration::from_secs(60));
    (out.code(), out.stderr)
}

#[test]
fn malformed_files_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let samples = r#"[{"question_id": "a", "code_list": ["print(1)"]}]"#;
    let hostile = zlib_base64(
        b"\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00\x8c\x02os\x8c\x06system\x93\x8c\x02id\x85R.",
    );
    let cases: Vec<(Vec<u8>, &str, &str)> = vec![
        (b"\x1f\x8b\x08\x00\x00\x00\x00\x00garbage".to_vec(), samples, "not a valid gzip file"),
        (line("a", "abcde").into_bytes(), samples, "problem `a`: `private_test_cases`: not JSON, and not valid base64"),
        (line("a", &hostile).into_bytes(), samples, "problem `a`: `private_test_cases`: pickle opcode 0x93 (STACK_GLOBAL) at byte 23 is not allowed"),
        (br#"{"question_id": "a", "public_test_cases": "[]"}"#.to_vec(), samples, "problem `a`: missing `private_test_cases`"),
        (line("a", "[]").into_bytes(), r#"[{"question_id": "b", "code_list": ["x"]}]"#, "samples.json: entry 1: question_id `b` is not among the problems"),
        (line("a", "[]").into_bytes(), r#"[{"question_id": "a"}]"#, "missing `code_list`"),
        (line("a", "[]").into_bytes(), r#"[{"question_id": "a", "code_list": []}]"#, "has no samples"),
    ];
    for (problems, samples, want) in cases {
        let (code, stderr) = refused(dir.path(), &problems, samples);
        assert_eq!(code, 2, "{want}: {stderr}");
        assert!(stderr.contains(want), "{stderr:?} lacks {want:?}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr:?}");
    }
}

/// `--list` needs no engine: each problem and its samples; `--only` with
/// an id that is no problem is refused in one line, naming the nearest.
#[test]
fn list_and_only_read_livecodebenchs_files_without_an_engine() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let p = dir.path().join("problems.jsonl");
    let s = dir.path().join("samples.json");
    let problems = format!("{}\n{}\n", line("abc", "[]"), line("abd", "[]"));
    fs::write(&p, problems).expect("write problems");
    fs::write(
        &s,
        r#"[{"question_id": "abd", "code_list": ["print(1)", "print(2)"]}]"#,
    )
    .expect("write samples");
    let run = |args: &[&str]| {
        let mut cmd = common::sbx(None);
        cmd.arg("eval")
            .arg("--problems")
            .arg(&p)
            .arg("--samples")
            .arg(&s)
            .args(args);
        cmd.env("SBX_DOCKER", dir.path().join("no-docker"));
        common::finish(cmd, None, Duration::from_secs(60))
    };
    let list = run(&["--list"]);
    assert_eq!(list.code(), 0, "{list:?}");
    assert_eq!(list.stdout, "abc\t0\nabd\t2\n", "{list:?}");
    let unknown = run(&["--only", "abe"]);
    assert_eq!(unknown.code(), 2, "{unknown:?}");
    assert!(
        unknown.stderr.contains("--only `abe`: no such problem"),
        "{unknown:?}"
    );
    assert_eq!(unknown.stderr.trim_end().lines().count(), 1, "{unknown:?}");
}
