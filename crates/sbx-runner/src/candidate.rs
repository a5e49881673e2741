//! The loaded candidate: `Load` writes its build, `Reset` and `Unload`
//! check (and empty) what `/work` and the build mount hold, and each case
//! writes its file to `/work` afresh.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::pid1::Runner;
use super::protocol::{valid_build_path, BuildFile, Candidate, Message, BUILD_DIR, BUILD_MOUNT};
use super::reset;
use super::shebang;

/// Where the candidate is, as the seed script shows it (a root-owned
/// tmpfs of its own, mode 0755; the file is mode 0444).
pub(crate) const WORK_DIR: &str = "/work";

/// A loaded candidate: where its bytes go and how it runs.
pub(crate) struct Loaded {
    pub(crate) file_name: String,
    pub(crate) program: Vec<u8>,
    pub(crate) interpreter: Vec<String>,
    /// A compiled candidate's build as written under `BUILD_DIR`: the
    /// interpreter is then the whole command (no file appended).
    pub(crate) build: Option<Built>,
}

/// What `BUILD_MOUNT` holds once a build is written: each path (relative
/// to `BUILD_MOUNT`) and its size, `None` for a directory.
pub(crate) type Built = BTreeMap<PathBuf, Option<u64>>;

impl Runner {
    pub(crate) fn load(&mut self, c: Candidate) -> Message {
        let name = &c.file_name;
        if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
            return Message::Internal(format!("bad candidate file name `{}`", name.escape_debug()));
        }
        // No process of an earlier case may see what is loaded next.
        if !self.clean {
            return Message::Internal("a load needs a clean reset before it".into());
        }
        // The previous candidate and its build go first, whatever comes next.
        self.candidate = None;
        if let Err(e) = clear_build() {
            return Message::Internal(format!("remove the previous build: {e}"));
        }
        let given_command = c.interpreter.is_some();
        let interpreter = match c.interpreter {
            Some(words) if words.is_empty() => {
                return Message::Internal("empty interpreter".into())
            }
            Some(words) => words,
            None => match shebang::parse(&c.program) {
                Ok(words) => words,
                Err(message) => {
                    self.candidate = None;
                    return Message::Refused(message);
                }
            },
        };
        let build = match c.build {
            None => None,
            Some(_) if !given_command => {
                return Message::Internal("a build needs its run command".into())
            }
            Some(files) => match write_build(&files) {
                Ok(built) => Some(built),
                Err(e) => {
                    // Nothing half-written stays for the next candidate.
                    let _ = clear_build();
                    return Message::Internal(format!("write the build: {e}"));
                }
            },
        };
        self.candidate = Some(Loaded {
            file_name: c.file_name,
            program: c.program,
            interpreter,
            build,
        });
        Message::Loaded
    }

    /// `Reset` (`unload` false: the candidate stays loaded for its next
    /// case) or `Unload` (between candidates: the candidate, its file and
    /// its build go too, and the reset verifies that they are gone).
    pub(crate) fn reset(&mut self, unload: bool) -> Message {
        // Processes first (they could change the posture again), then the
        // posture, which a candidate may have changed from outside.
        let spare = self.spare();
        let done = reset::reset(&mut self.dirs, &self.wiper, spare);
        let posture = self.posture.restore();
        let dropped = if unload {
            self.candidate = None;
            clear_build()
                .and_then(|()| clear_dir(Path::new(WORK_DIR)))
                .map_err(|e| format!("unload the candidate: {e}"))
        } else {
            Ok(())
        };
        // Nobody but the runner can write /work and the build: they hold
        // the loaded candidate only (nothing once it is unloaded).
        let work = self.work_holds_only_the_program();
        let build = build_is_as_loaded(self.candidate.as_ref().and_then(|c| c.build.as_ref()));
        let held = if self.outlived {
            Err(
                "a process of an earlier case outlived the kill; the container is not reused"
                    .into(),
            )
        } else {
            Ok(())
        };
        let done = done.and(dropped).and(work).and(build).and(held);
        let done = match (done, posture) {
            (Ok(()), Ok(())) => Ok(()),
            (Err(e), Ok(())) | (Ok(()), Err(e)) => Err(e),
            (Err(a), Err(b)) => Err(format!("{a}; {b}")),
        };
        match done {
            Ok(()) => {
                self.clean = true;
                Message::ResetDone {
                    clean: true,
                    message: String::new(),
                }
            }
            Err(message) => {
                self.clean = false;
                Message::ResetDone {
                    clean: false,
                    message,
                }
            }
        }
    }

    fn work_holds_only_the_program(&self) -> Result<(), String> {
        let entries = fs::read_dir(WORK_DIR).map_err(|e| format!("{WORK_DIR}: {e}"))?;
        for entry in entries {
            let name = entry.map_err(|e| format!("{WORK_DIR}: {e}"))?.file_name();
            if self.candidate.as_ref().map(|c| c.file_name.as_str()) != name.to_str() {
                return Err(format!("{WORK_DIR} holds `{}`", name.to_string_lossy()));
            }
        }
        Ok(())
    }
}

/// Writes the program as `file` in `WORK_DIR`, read-only and owned by the
/// runner (root), alone there: whatever was there goes first (root without
/// `CAP_DAC_OVERRIDE` cannot open a mode-0444 file for writing).
pub(crate) fn write_task(file: &Path, program: &[u8]) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for entry in fs::read_dir(WORK_DIR)? {
        fs::remove_file(entry?.path())?;
    }
    fs::write(file, program)?;
    fs::set_permissions(file, fs::Permissions::from_mode(0o444))
}

/// Removes everything in `dir` (the runner's own: `/work`, or the build
/// mount, which only the runner can write). A missing `dir` is empty.
fn clear_dir(dir: &Path) -> io::Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let path = entry?.path();
        if fs::symlink_metadata(&path)?.is_dir() {
            fs::remove_dir_all(&path)?;
        } else {
            fs::remove_file(&path)?;
        }
    }
    Ok(())
}

fn clear_build() -> io::Result<()> {
    clear_dir(Path::new(BUILD_MOUNT))
}

/// Writes a compiled candidate's build under `BUILD_DIR`: directories mode
/// 0755, files 0555, all root's, in the exec-allowed `BUILD_MOUNT`, which
/// must be root's and writable by nobody else (so the candidate's uid can
/// execute the build but never write there). Returns what it wrote.
fn write_build(files: &[BuildFile]) -> io::Result<Built> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
    let mount = Path::new(BUILD_MOUNT);
    let meta = fs::symlink_metadata(mount)
        .map_err(|e| io::Error::new(e.kind(), format!("{BUILD_MOUNT} (the build's mount): {e}")))?;
    if !meta.is_dir() || meta.uid() != 0 || meta.mode() & 0o022 != 0 {
        return Err(io::Error::other(format!(
            "{BUILD_MOUNT} must be a directory of root's that only root can write"
        )));
    }
    let base = Path::new(BUILD_DIR);
    let rel = |p: &Path| p.strip_prefix(mount).unwrap_or(p).to_path_buf();
    let mut built = Built::new();
    let mkdir = |dir: &Path, built: &mut Built| -> io::Result<()> {
        if built.contains_key(&rel(dir)) {
            return Ok(());
        }
        fs::create_dir(dir)?;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o755))?;
        built.insert(rel(dir), None);
        Ok(())
    };
    mkdir(base, &mut built)?;
    for file in files {
        if !valid_build_path(&file.path) {
            return Err(io::Error::other(format!(
                "bad build path `{}`",
                file.path.escape_debug()
            )));
        }
        let path = base.join(&file.path);
        let mut dir = base.to_path_buf();
        let parts: Vec<&str> = file.path.split('/').collect();
        for part in &parts[..parts.len() - 1] {
            dir.push(part);
            mkdir(&dir, &mut built)?;
        }
        // A path given twice, or a file where a directory is: refused.
        let mut out = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o500)
            .open(&path)?;
        out.write_all(&file.bytes)?;
        drop(out);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o555))?;
        built.insert(rel(&path), Some(file.bytes.len() as u64));
    }
    Ok(built)
}

/// Checks that `BUILD_MOUNT` holds exactly `built` (nothing when `None`),
/// each entry root's, with its mode (0755 directories, 0555 files) and its
/// size: the candidate cannot write there, so any difference is the
/// runner's and makes the reset dirty.
fn build_is_as_loaded(built: Option<&Built>) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let mount = Path::new(BUILD_MOUNT);
    let empty = Built::new();
    let want = built.unwrap_or(&empty);
    let mut seen = Built::new();
    let mut stack = vec![mount.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound && dir == mount => break,
            Err(e) => return Err(format!("{}: {e}", dir.display())),
        };
        for entry in entries {
            let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
            let meta =
                fs::symlink_metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let rel = path.strip_prefix(mount).unwrap_or(&path).to_path_buf();
            let (mode, size) = if meta.is_dir() {
                stack.push(path.clone());
                (0o755, None)
            } else {
                (0o555, Some(meta.len()))
            };
            let kind_ok = meta.is_dir() || meta.is_file();
            if !kind_ok || meta.uid() != 0 || meta.mode() & 0o7777 != mode {
                return Err(format!("{} is not as the runner wrote it", path.display()));
            }
            seen.insert(rel, size);
        }
    }
    if &seen != want {
        let extra: Vec<String> = seen
            .iter()
            .filter(|(p, s)| want.get(*p) != Some(s))
            .map(|(p, _)| p.display().to_string())
            .collect();
        return Err(format!(
            "{BUILD_MOUNT} does not hold the loaded build (differs: {})",
            if extra.is_empty() {
                "entries missing".into()
            } else {
                extra.join(" ")
            }
        ));
    }
    Ok(())
}
