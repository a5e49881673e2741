//! `--save-output DIR`: every run's whole stdout and stderr (as far as
//! `--max-output` kept them) in files of DIR, one pair per task, sample and
//! case, named so that no id can leave DIR or clash with another: each byte
//! but `A-Z a-z 0-9 - _` is written `%HH` (so a name holds no `/`, no `.`
//! of its own and never starts with a dot), and the parts are joined by
//! `.`: `hello.stdout`, `HumanEval%2F0.sample-3.stderr`, `upper.case-2.stdout`.
//! A name too long for the file system ends with a digest of the whole.
//! Each file is written whole (`files::write_whole`): a symlink found at
//! its path is replaced, never written through.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::files::{self, WriteStop};
use crate::report::result::SavedOutput;

/// A file name's stem is kept below this many bytes (255 is the usual
/// limit, and `.stdout` and the temporary file's affixes need room).
const STEM_MAX: usize = 200;

/// Makes `dir` (and its parents) a folder to save into; refuses a path
/// that is a symlink or not a folder. Its absolute path.
pub(crate) fn make_dir(dir: &Path) -> Result<PathBuf> {
    let bad = |why: String| {
        Error::Usage(format!(
            "--save-output `{}`: {why}",
            crate::escape::path(dir)
        ))
    };
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(bad("is a symlink; give the folder itself".into()))
        }
        Ok(meta) if !meta.is_dir() => return Err(bad("is not a folder".into())),
        Ok(_) => {}
        Err(_) => fs::create_dir_all(dir).map_err(|e| bad(format!("cannot create it: {e}")))?,
    }
    fs::canonicalize(dir).map_err(|e| bad(e.to_string()))
}

/// The stem of a run's files: the task, its sample, its case (1-based; a
/// task of one case has none).
pub(crate) fn stem(task: &str, sample: Option<&str>, case: Option<usize>) -> String {
    let mut stem = encode(task);
    if let Some(sample) = sample {
        stem.push_str(".sample-");
        stem.push_str(&encode(sample));
    }
    if let Some(case) = case {
        stem.push_str(&format!(".case-{case}"));
    }
    if stem.len() > STEM_MAX {
        let digest = Sha256::digest(stem.as_bytes());
        let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        // The stem is ASCII; a `%HH` is never split.
        let mut keep = STEM_MAX - hex.len() - 1;
        if let Some(at) = stem[..keep].rfind('%').filter(|&at| at + 3 > keep) {
            keep = at;
        }
        stem = format!("{}~{hex}", &stem[..keep]);
    }
    stem
}

/// Each byte outside `A-Z a-z 0-9 - _` as `%HH`.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Writes `STEM.stdout` and `STEM.stderr` in `dir`; the paths written, or
/// why not.
pub(crate) fn save(
    dir: &Path,
    stem: &str,
    stdout: &[u8],
    stderr: &[u8],
) -> std::result::Result<SavedOutput, String> {
    let write = |suffix: &str, bytes: &[u8]| {
        let path = dir.join(format!("{stem}.{suffix}"));
        files::write_whole(&path, |w| w.write_all(bytes).map_err(WriteStop::Io)).map_err(
            |stop| {
                format!(
                    "`{}`: {}",
                    crate::escape::path(&path),
                    files::stop_error(stop)
                )
            },
        )?;
        Ok::<String, String>(crate::escape::os_name(path.as_os_str()))
    };
    Ok(SavedOutput {
        stdout: write("stdout", stdout)?,
        stderr: write("stderr", stderr)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_in_the_folder_and_apart() {
        assert_eq!(stem("hello", None, None), "hello");
        assert_eq!(
            stem("HumanEval/0", Some("3"), None),
            "HumanEval%2F0.sample-3"
        );
        assert_eq!(stem("up", None, Some(2)), "up.case-2");
        assert_eq!(stem("../x", None, None), "%2E%2E%2Fx");
        assert_eq!(stem(".hidden", None, None), "%2Ehidden");
        // A task named like another's sample file stays apart from it.
        assert_ne!(stem("a.sample-1", None, None), stem("a", Some("1"), None));
        assert_eq!(stem("é", None, None), "%C3%A9");
    }

    #[test]
    fn long_names_are_cut_with_a_digest() {
        let long = "x/".repeat(300);
        let a = stem(&long, None, None);
        let b = stem(&format!("{long}y"), None, None);
        assert!(a.len() <= STEM_MAX, "{}", a.len());
        assert_ne!(a, b);
        assert!(!a.contains('/'));
    }

    #[test]
    fn saves_replace_a_planted_symlink() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("precious");
        fs::write(&target, "keep").unwrap();
        let dir = make_dir(&root.path().join("out")).unwrap();
        std::os::unix::fs::symlink(&target, dir.join("t.stdout")).unwrap();
        let saved = save(&dir, "t", b"out", b"err").unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep");
        assert_eq!(fs::read_to_string(&saved.stdout).unwrap(), "out");
        assert_eq!(fs::read_to_string(&saved.stderr).unwrap(), "err");
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(make_dir(&link).is_err());
    }
}
