//! SIGINT, SIGTERM, SIGHUP and SIGQUIT: recorded, never acted on in the
//! handler. Supervision polls `received()` and cleans up before sbx exits
//! with 128 + the signal (130, 143, 129, 131). A closed terminal (SIGHUP)
//! must not leave a container running either.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};

static RECEIVED: OnceLock<Arc<AtomicUsize>> = OnceLock::new();

/// Installs the handlers (once). Until this is called, `received()` is `None`.
pub(crate) fn install() -> std::io::Result<()> {
    let flag = RECEIVED.get_or_init(|| Arc::new(AtomicUsize::new(0)));
    for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] {
        signal_hook::flag::register_usize(signal, Arc::clone(flag), signal as usize)?;
    }
    Ok(())
}

/// The signal that asked sbx to stop, if one arrived.
pub(crate) fn received() -> Option<i32> {
    let value = RECEIVED.get()?.load(Ordering::SeqCst);
    i32::try_from(value).ok().filter(|&s| s != 0)
}

/// How often a wait on a helper thread looks for a signal.
const POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// Reads the whole of `path`, which may be a pipe or a FIFO (`--tasks
/// /dev/stdin`, a report given as `<(...)`). Opening and reading happen on
/// a helper thread while this one polls for a signal, so a writer that
/// never comes cannot keep sbx from ending on SIGINT or SIGTERM: then
/// `Err(signal)`, and the helper is left blocked until sbx exits.
pub(crate) fn read_interruptibly(path: &std::path::Path) -> Result<std::io::Result<Vec<u8>>, i32> {
    use std::sync::mpsc::{channel, RecvTimeoutError};
    let (tx, rx) = channel();
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(std::fs::read(path));
    });
    loop {
        match rx.recv_timeout(POLL) {
            Ok(read) => return Ok(read),
            Err(RecvTimeoutError::Timeout) => {
                if let Some(signal) = received() {
                    return Err(signal);
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Ok(Err(std::io::Error::other("the reading thread failed")))
            }
        }
    }
}

/// Opens `path` for reading only if it is a regular file (symlinks
/// followed). The open never blocks (`O_NONBLOCK`: a FIFO with no writer
/// would block it), and the type is checked on the open file, so a read of
/// what is expected to be a file (a candidate, a cache entry) can never
/// wait for ever.
pub(crate) fn open_regular(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)?;
    if file.metadata()?.is_file() {
        Ok(file)
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ))
    }
}
