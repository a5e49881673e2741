//! The loaded candidate's files: its build, written under the build mount
//! at `Load`, its file, written to `/work` afresh for each case, and the
//! checks (and the emptying) of both that `Reset` and `Unload` make (the
//! lifecycle itself is `lifecycle`'s).

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::protocol::{valid_build_path, BuildFile, BUILD_DIR, BUILD_MOUNT};

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

impl Loaded {
    /// Where each case finds the candidate's file.
    pub(crate) fn path(&self) -> PathBuf {
        Path::new(WORK_DIR).join(&self.file_name)
    }
}

/// What `BUILD_MOUNT` holds once a build is written: each path (relative
/// to `BUILD_MOUNT`) and its size, `None` for a directory.
pub(crate) type Built = BTreeMap<PathBuf, Option<u64>>;

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
pub(crate) fn clear_dir(dir: &Path) -> io::Result<()> {
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

pub(crate) fn clear_build() -> io::Result<()> {
    clear_dir(Path::new(BUILD_MOUNT))
}

/// Writes a compiled candidate's build under `BUILD_DIR`: directories mode
/// 0755, files 0555, all root's, in the exec-allowed `BUILD_MOUNT`, which
/// must be root's and writable by nobody else (so the candidate's uid can
/// execute the build but never write there). Returns what it wrote.
pub(crate) fn write_build(files: &[BuildFile]) -> io::Result<Built> {
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
pub(crate) fn build_is_as_loaded(built: Option<&Built>) -> Result<(), String> {
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
