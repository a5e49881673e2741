//! Candidates in the gen folder: `gen/<id>.<ext>` (see `spec::languages`), or a folder of
//! samples `gen/<id>/`; nothing outside the folder is followed or read.

use std::fs;
use std::path::{Path, PathBuf};

use crate::report::{Status, TaskResult};
use crate::spec;

/// The largest candidate sbx judges, in bytes, in every mode: checked by
/// `stat` before anything reads it (and again on the staged copy before a
/// runner mode loads it), so that a candidate's size gives the same verdict
/// in every mode and sbx's memory stays bounded (a runner mode sends the
/// program in one frame). Far above any program a model writes; a larger
/// one is the candidate's failure, `candidate_too_large`.
pub(crate) const MAX_CANDIDATE_BYTES: u64 = 8 << 20;

/// The reason of a candidate above [`MAX_CANDIDATE_BYTES`].
pub(crate) const TOO_LARGE: &str = "candidate_too_large";

/// The `fail` entry of a candidate of `size` bytes, above the limit.
pub(crate) fn too_large(id: &str, size: u64) -> TaskResult {
    TaskResult {
        reason: Some(TOO_LARGE.into()),
        message: Some(format!(
            "the candidate is {size} bytes, above the limit of {MAX_CANDIDATE_BYTES} bytes (8 MiB); it was not run"
        )),
        ..TaskResult::bare(id, Status::Fail)
    }
}

/// What was found for a task in the gen folder.
#[derive(Debug)]
pub(crate) enum Found {
    Missing,
    /// A regular file above [`MAX_CANDIDATE_BYTES`] (its size): `fail`.
    TooLarge(u64),
    Refused {
        reason: &'static str,
        message: String,
    },
    Ready {
        /// The candidate's real path (inside the gen folder).
        path: PathBuf,
        interpreter: Vec<String>,
    },
}

/// Where a task's candidates are.
#[derive(Debug)]
pub(crate) enum Source {
    /// `gen/<id>.py` (or `.sh`, `.js`): one candidate, judged as the task.
    Single(Found),
    /// `gen/<id>/`: several samples of the task, by file name, sorted.
    Samples(Vec<(String, Found)>),
}

/// A folder `gen/<id>/` holds samples; otherwise `<id>.py`, `<id>.sh`,
/// `<id>.js` in that order. Nothing that leads outside the gen folder is
/// followed or read.
pub(crate) fn find_source(gen_root: &Path, id: &str, interpreter: Option<&Vec<String>>) -> Source {
    let dir = gen_root.join(id);
    if fs::symlink_metadata(&dir).is_ok() {
        match fs::canonicalize(&dir) {
            Ok(real) if real.is_dir() && !real.starts_with(gen_root) => {
                return Source::Single(outside(&dir))
            }
            Ok(real) if real.is_dir() => {
                return Source::Samples(samples_in(gen_root, &real, interpreter))
            }
            _ => {}
        }
    }
    for ext in spec::languages::candidate_extensions() {
        let path = gen_root.join(format!("{id}.{ext}"));
        if fs::symlink_metadata(&path).is_ok() {
            return Source::Single(load(gen_root, &path, interpreter));
        }
    }
    Source::Single(Found::Missing)
}

/// The samples of a folder: every entry but hidden ones, by name.
pub(crate) fn samples_in(
    gen_root: &Path,
    dir: &Path,
    interpreter: Option<&Vec<String>>,
) -> Vec<(String, Found)> {
    // The real names: a name that is not UTF-8 is opened by its own bytes
    // and shown with those bytes escaped (`\xfe.py`), so two such names
    // never become one file or look alike.
    let mut names: Vec<std::ffi::OsString> = match fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name())
            .filter(|name| !name.as_encoded_bytes().starts_with(b"."))
            .collect(),
        Err(e) => {
            let message = format!("cannot read the samples folder `{}`: {e}", dir.display());
            let found = Found::Refused {
                reason: "unreadable_candidate",
                message,
            };
            return vec![(".".to_string(), found)];
        }
    };
    // Natural order: s8 before s10.
    names.sort_by(|a, b| super::natural::natural_cmp(a.as_encoded_bytes(), b.as_encoded_bytes()));
    names
        .into_iter()
        .map(|name| {
            let found = load(gen_root, &dir.join(&name), interpreter);
            (crate::escape::os_name(&name), found)
        })
        .collect()
}

/// The first of a task's candidates that is not a `.py` file, if any (a
/// function test runs Python only): a sample of `gen/<id>/`, or the file
/// `find_source` would take.
pub(crate) fn not_python(gen_root: &Path, id: &str) -> Option<PathBuf> {
    let dir = gen_root.join(id);
    if dir.is_dir() {
        let mut names: Vec<PathBuf> = fs::read_dir(&dir)
            .ok()?
            .filter_map(|e| e.ok())
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .map(|e| e.path())
            .collect();
        names.sort_by(|a, b| {
            super::natural::natural_cmp(
                a.as_os_str().as_encoded_bytes(),
                b.as_os_str().as_encoded_bytes(),
            )
        });
        return names
            .into_iter()
            .find(|p| p.extension().and_then(|e| e.to_str()) != Some("py"));
    }
    spec::CANDIDATE_EXTENSIONS
        .iter()
        .map(|ext| gen_root.join(format!("{id}.{ext}")))
        .find(|path| fs::symlink_metadata(path).is_ok())
        .filter(|path| path.extension().and_then(|e| e.to_str()) != Some("py"))
}

pub(crate) fn outside(path: &Path) -> Found {
    Found::Refused {
        reason: "candidate_outside_gen",
        message: format!(
            "`{}` leads outside the candidates folder; not followed",
            path.display()
        ),
    }
}

/// Reads one candidate file: a regular file inside the gen folder, run by
/// `interpreter` or by the interpreter of its extension.
pub(crate) fn load(gen_root: &Path, path: &Path, interpreter: Option<&Vec<String>>) -> Found {
    let refused = |reason, message: String| Found::Refused { reason, message };
    let real = match fs::canonicalize(path) {
        Ok(real) => real,
        Err(e) => {
            return refused(
                "unreadable_candidate",
                format!("cannot resolve `{}`: {e}", path.display()),
            )
        }
    };
    if !real.starts_with(gen_root) {
        return outside(path);
    }
    match fs::metadata(&real) {
        Ok(meta) if !meta.is_file() => {
            return refused(
                "not_a_file",
                format!("`{}` is not a regular file", path.display()),
            )
        }
        Ok(meta) if meta.len() > MAX_CANDIDATE_BYTES => return Found::TooLarge(meta.len()),
        Ok(_) => {}
        Err(e) => {
            return refused(
                "unreadable_candidate",
                format!("cannot read `{}`: {e}", path.display()),
            )
        }
    }
    let interpreter = match interpreter {
        Some(words) => words.clone(),
        None => {
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            match spec::interpreter_for_extension(ext) {
                Some(words) => words,
                None => {
                    return refused(
                        "unknown_extension",
                        format!(
                            "no interpreter for `{}` (.{}); pass --interpreter, or add the extension in sbx.toml ([languages.EXT])",
                            path.display(),
                            spec::languages::candidate_extensions().join(", .")
                        ),
                    )
                }
            }
        }
    };
    // Opened here only to know it can be read: it is streamed to staging
    // later, never held in memory.
    match crate::signals::open_regular(&real) {
        Ok(_) => Found::Ready {
            path: real,
            interpreter,
        },
        Err(e) => refused(
            "unreadable_candidate",
            format!("cannot read `{}`: {e}", path.display()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_are_found_by_extension_and_symlinks_stay_inside() {
        let dir = tempfile::tempdir().unwrap();
        let gen = dir.path().join("gen");
        fs::create_dir(&gen).unwrap();
        fs::write(gen.join("a.py"), "print(1)\n").unwrap();
        fs::write(gen.join("b.sh"), "echo 1\n").unwrap();
        fs::write(dir.path().join("secret.py"), "s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.py"), gen.join("c.py")).unwrap();
        std::os::unix::fs::symlink(gen.join("a.py"), gen.join("d.py")).unwrap();
        fs::create_dir(gen.join("e.py")).unwrap();
        let root = fs::canonicalize(&gen).unwrap();
        let find_candidate = |root: &Path, id: &str, interp: Option<&Vec<String>>| match find_source(
            root, id, interp,
        ) {
            Source::Single(found) => found,
            Source::Samples(s) => panic!("not samples: {s:?}"),
        };

        match find_candidate(&root, "a", None) {
            Found::Ready { path, interpreter } => {
                assert_eq!(fs::read(path).unwrap(), b"print(1)\n");
                assert_eq!(interpreter, ["python3"]);
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(find_candidate(&root, "b", None), Found::Ready { interpreter, .. } if interpreter == ["sh"])
        );
        let custom = vec!["python3".to_string(), "-u".to_string()];
        assert!(
            matches!(find_candidate(&root, "b", Some(&custom)), Found::Ready { interpreter, .. } if interpreter == custom)
        );
        assert!(matches!(
            find_candidate(&root, "c", None),
            Found::Refused {
                reason: "candidate_outside_gen",
                ..
            }
        ));
        assert!(matches!(
            find_candidate(&root, "d", None),
            Found::Ready { .. }
        ));
        assert!(matches!(
            find_candidate(&root, "e", None),
            Found::Refused {
                reason: "not_a_file",
                ..
            }
        ));
        assert!(matches!(find_candidate(&root, "zz", None), Found::Missing));
    }

    #[test]
    fn function_tests_take_python_only() {
        let dir = tempfile::tempdir().unwrap();
        let gen = dir.path();
        fs::write(gen.join("a.py"), "").unwrap();
        fs::write(gen.join("b.sh"), "").unwrap();
        fs::create_dir_all(gen.join("c")).unwrap();
        fs::write(gen.join("c/0.py"), "").unwrap();
        fs::write(gen.join("c/.hidden"), "").unwrap();
        fs::create_dir_all(gen.join("d")).unwrap();
        fs::write(gen.join("d/0.py"), "").unwrap();
        fs::write(gen.join("d/1.js"), "").unwrap();
        assert_eq!(not_python(gen, "a"), None);
        assert_eq!(not_python(gen, "b"), Some(gen.join("b.sh")));
        assert_eq!(not_python(gen, "c"), None);
        assert_eq!(not_python(gen, "d"), Some(gen.join("d/1.js")));
        assert_eq!(not_python(gen, "missing"), None);
    }

    #[test]
    fn a_folder_holds_samples_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        let gen = dir.path().join("gen");
        fs::create_dir_all(gen.join("t")).unwrap();
        fs::write(gen.join("t/b.py"), "print(2)\n").unwrap();
        fs::write(gen.join("t/a.sh"), "echo 1\n").unwrap();
        fs::write(gen.join("t/c.txt"), "?").unwrap();
        fs::write(gen.join("t/.hidden.py"), "x").unwrap();
        fs::write(dir.path().join("secret.py"), "s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.py"), gen.join("t/d.py")).unwrap();
        // A folder that leads outside is not followed either.
        fs::create_dir(dir.path().join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), gen.join("out")).unwrap();
        let root = fs::canonicalize(&gen).unwrap();

        let Source::Samples(samples) = find_source(&root, "t", None) else {
            panic!("expected samples")
        };
        let names: Vec<&str> = samples.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a.sh", "b.py", "c.txt", "d.py"]);
        assert!(
            matches!(&samples[0].1, Found::Ready { interpreter, .. } if interpreter == &["sh"])
        );
        assert!(
            matches!(&samples[1].1, Found::Ready { interpreter, .. } if interpreter == &["python3"])
        );
        assert!(matches!(
            &samples[2].1,
            Found::Refused {
                reason: "unknown_extension",
                ..
            }
        ));
        assert!(matches!(
            &samples[3].1,
            Found::Refused {
                reason: "candidate_outside_gen",
                ..
            }
        ));
        assert!(matches!(
            find_source(&root, "out", None),
            Source::Single(Found::Refused {
                reason: "candidate_outside_gen",
                ..
            })
        ));
    }
}
