//! Files that others may have touched: directories checked to be private
//! to this user (the run locks, the result cache), files read only when
//! they are regular files of bounded size and never through a symlink, and
//! files written whole (a temporary file in the same folder, renamed into
//! place) so a reader, a second writer or a kill never sees half of one;
//! and a regular file's SHA-256, read in a stream.

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::escape;

/// Who may not write (or read) a private directory: the bits of its mode
/// that must be clear.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Private {
    /// Nobody else may read or write it (mode `0700`): the run locks.
    Whole,
    /// Nobody else may write it (`0755` is fine): the result cache, which
    /// older releases created with the umask's mode.
    Writes,
}

impl Private {
    fn mask(self) -> u32 {
        match self {
            Private::Whole => 0o077,
            Private::Writes => 0o022,
        }
    }
}

/// Creates `dir` (mode `0700`; its parent must exist) if it does not
/// exist, then checks it: a real directory (not a symlink), owned by the
/// user sbx runs as, whose mode leaves nobody else `who` access. Refused
/// with one line (exit 2) that names `what` it is for and says `fix`.
pub(crate) fn private_dir(dir: &Path, what: &str, who: Private, fix: &str) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let shown = escape::path(dir);
    if fs::symlink_metadata(dir).is_err() {
        match fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(source) => {
                return Err(Error::Usage(format!(
                    "cannot create the {what} `{shown}`: {source}; {fix}"
                )))
            }
        }
    }
    let refuse = |why: String| {
        Err(Error::Usage(format!(
            "refusing the {what} `{shown}`: {why}; {fix}"
        )))
    };
    let meta = match fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(e) => return refuse(e.to_string()),
    };
    if meta.file_type().is_symlink() {
        return refuse("it is a symlink".into());
    }
    if !meta.file_type().is_dir() {
        return refuse("it is not a directory".into());
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return refuse(format!(
            "it is owned by uid {}, not by uid {me}",
            meta.uid()
        ));
    }
    if meta.mode() & who.mask() != 0 {
        let open_to = match who {
            Private::Whole => "open to other users",
            Private::Writes => "writable by other users",
        };
        return refuse(format!(
            "its mode is {:o}, {open_to} (sbx creates it 0700)",
            meta.mode() & 0o7777
        ));
    }
    Ok(())
}

/// The bytes of `path` if it is a regular file (a symlink is not followed:
/// `O_NOFOLLOW`) of at most `max` bytes. The open never blocks (a FIFO), and
/// the type and size are checked on the open file, then the read is
/// bounded too (a file that grows meanwhile).
pub(crate) fn read_regular_bounded(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
                io::Error::new(io::ErrorKind::InvalidInput, "a symlink, not followed")
            } else {
                e
            }
        })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    if meta.len() > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} bytes, more than the {max} allowed", meta.len()),
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("more than the {max} bytes allowed"),
        ));
    }
    Ok(bytes)
}

/// Why [`write_whole`] stopped without replacing the file.
#[derive(Debug)]
pub(crate) enum WriteStop {
    /// Writing failed.
    Io(io::Error),
    /// The writer gave up (a signal arrived): the old file is untouched.
    Interrupted(i32),
}

impl From<io::Error> for WriteStop {
    fn from(e: io::Error) -> WriteStop {
        WriteStop::Io(e)
    }
}

/// The error of a [`write_whole`] that stopped (an interruption as
/// `Interrupted`).
pub(crate) fn stop_error(stop: WriteStop) -> io::Error {
    match stop {
        WriteStop::Io(e) => e,
        WriteStop::Interrupted(signal) => io::Error::new(
            io::ErrorKind::Interrupted,
            format!("interrupted by signal {signal}; the file was left as it was"),
        ),
    }
}

/// Writes `path` whole: `write` fills a temporary file in the same folder
/// (mode `0666` less the umask, as a plain create), which is flushed to
/// disk and renamed over `path`. A reader, a concurrent writer or a kill
/// sees the old file or the new one, never half of one, and a symlink at
/// `path` is replaced by the file, never written through. On any failure
/// the temporary file is removed and `path` is left as it was.
pub(crate) fn write_whole(
    path: &Path,
    write: impl FnOnce(&mut io::BufWriter<&fs::File>) -> std::result::Result<(), WriteStop>,
) -> std::result::Result<(), WriteStop> {
    use std::os::unix::fs::PermissionsExt;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(
        path.file_name()
            .unwrap_or_else(|| std::ffi::OsStr::new("sbx")),
    );
    prefix.push(".");
    let tmp = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".tmp")
        .permissions(fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)?;
    {
        let mut out = io::BufWriter::new(tmp.as_file());
        write(&mut out)?;
        out.flush()?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| WriteStop::Io(e.error))?;
    Ok(())
}

/// The SHA-256 (lower-case hex) of the regular file at `path`, read in a
/// stream: a candidate's cache key or digest never needs it in memory.
pub(crate) fn sha256(path: &Path) -> io::Result<String> {
    let mut file = crate::signals::open_regular(path)?;
    let mut hasher = Sha256::new();
    io::copy(&mut file, &mut hasher)?;
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn private_dirs_are_created_0700_and_checked() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a");
        private_dir(&dir, "cache", Private::Writes, "fix it").unwrap();
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        private_dir(&dir, "cache", Private::Writes, "fix it").unwrap();
        let e = private_dir(&dir, "lock dir", Private::Whole, "fix it").unwrap_err();
        assert!(e.to_string().contains("mode is 755"), "{e}");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        let e = private_dir(&dir, "cache", Private::Writes, "fix it").unwrap_err();
        assert!(e.to_string().contains("writable by other users"), "{e}");
        assert!(e.to_string().ends_with("; fix it"), "{e}");
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        let e = private_dir(&link, "cache", Private::Writes, "fix").unwrap_err();
        assert!(e.to_string().contains("symlink"), "{e}");
    }

    #[test]
    fn a_regular_file_s_sha256_is_its_bytes_digest_in_hex() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("f");
        fs::write(&file, "abc").unwrap();
        assert_eq!(
            sha256(&file).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(sha256(root.path()).is_err(), "a directory has no digest");
    }

    #[test]
    fn reads_only_small_regular_files_never_through_links() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("f");
        fs::write(&file, "12345").unwrap();
        assert_eq!(read_regular_bounded(&file, 5).unwrap(), b"12345");
        assert!(read_regular_bounded(&file, 4).is_err());
        let link = root.path().join("l");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(read_regular_bounded(&link, 100).is_err());
        assert!(read_regular_bounded(root.path(), 100).is_err());
    }

    #[test]
    fn writes_replace_links_and_keep_the_old_file_on_failure() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("target");
        fs::write(&target, "precious").unwrap();
        let out = root.path().join("out.json");
        std::os::unix::fs::symlink(&target, &out).unwrap();
        write_whole(&out, |w| Ok(w.write_all(b"new")?)).unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "precious");
        assert!(!fs::symlink_metadata(&out).unwrap().file_type().is_symlink());
        assert_eq!(fs::read_to_string(&out).unwrap(), "new");
        let stopped = write_whole(&out, |w| {
            w.write_all(b"half")?;
            Err(WriteStop::Interrupted(15))
        });
        assert!(matches!(stopped, Err(WriteStop::Interrupted(15))));
        assert_eq!(fs::read_to_string(&out).unwrap(), "new");
        // No temporary file is left behind.
        assert_eq!(fs::read_dir(root.path()).unwrap().count(), 2);
    }
}
