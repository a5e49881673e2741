//! SIGINT, SIGTERM, SIGHUP and SIGQUIT: recorded, never acted on in the
//! handler. Supervision polls `received()` and cleans up before sbx exits
//! with 128 + the signal (130, 143, 129, 131). A closed terminal (SIGHUP)
//! must not leave a container running either.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};

static RECEIVED: OnceLock<Arc<AtomicUsize>> = OnceLock::new();

/// Installs the handlers (once). Until this is called, `received()` is `None`.
pub fn install() -> std::io::Result<()> {
    let flag = RECEIVED.get_or_init(|| Arc::new(AtomicUsize::new(0)));
    for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] {
        signal_hook::flag::register_usize(signal, Arc::clone(flag), signal as usize)?;
    }
    Ok(())
}

/// The signal that asked sbx to stop, if one arrived.
pub fn received() -> Option<i32> {
    let value = RECEIVED.get()?.load(Ordering::SeqCst);
    i32::try_from(value).ok().filter(|&s| s != 0)
}
