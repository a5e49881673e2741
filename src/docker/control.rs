//! Short docker commands around a run: is the image here (pull it when
//! allowed), create a run's container, remove what a run left. Each is one `process::control` call on an argv from `argv`.

use std::ffi::OsString;
use std::time::Duration;

use super::argv::{self, Docker};
use super::process::{self, Control, CONTROL_TIMEOUT};
use crate::console;
use crate::error::{Error, Result};
use crate::spec::Pull;

/// How long a pull may take (it happens before any run's clock starts).
const PULL_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Makes sure `image` is present locally before any clock starts, pulling it
/// when allowed. Returns the image ID.
pub(crate) fn ensure_image(docker: &Docker, image: &str, pull: Pull) -> Result<String> {
    let inspect = || {
        process::control_interruptible(docker, &argv::image_inspect_args(image), CONTROL_TIMEOUT)
    };
    let found = inspect()?;
    if found.success() {
        return Ok(found.stdout.trim().to_string());
    }
    if !is_missing_image(&found) {
        return Err(Error::EngineUnreachable(found.stderr_line()));
    }
    pull_missing(docker, image, pull)?;
    let again = inspect()?;
    if again.success() {
        Ok(again.stdout.trim().to_string())
    } else {
        Err(Error::PullFailed {
            image: image.to_string(),
            message: again.stderr_line(),
        })
    }
}

/// Pulls a missing image if `pull` allows it (interruptible: no container
/// exists yet).
fn pull_missing(docker: &Docker, image: &str, pull: Pull) -> Result<()> {
    if pull == Pull::Never {
        return Err(Error::ImageMissing(image.to_string()));
    }
    console::note(&format!(
        "sbx: image `{image}` is not present locally; pulling it before the clock starts"
    ));
    let pulled = process::control_interruptible(docker, &argv::pull_args(image), PULL_TIMEOUT)?;
    if pulled.success() {
        Ok(())
    } else {
        Err(Error::PullFailed {
            image: image.to_string(),
            message: pulled.stderr_line(),
        })
    }
}

/// `docker create` of a run's container, before its clock starts. A missing
/// image is pulled first when allowed. Not interruptible: a create killed
/// half-way can still complete in the engine; it takes milliseconds, and the
/// caller looks for signals right after.
pub(crate) fn create_container(
    docker: &Docker,
    args: &[OsString],
    image: &str,
    pull: Pull,
) -> Result<()> {
    let created = process::control(docker, args, CONTROL_TIMEOUT)?;
    if created.success() {
        return Ok(());
    }
    if !is_missing_image(&created) {
        return Err(create_error(&created));
    }
    pull_missing(docker, image, pull)?;
    let again = process::control(docker, args, CONTROL_TIMEOUT)?;
    if again.success() {
        Ok(())
    } else {
        Err(create_error(&again))
    }
}

fn create_error(created: &Control) -> Error {
    let line = created.stderr_line();
    if line.contains("Cannot connect to the Docker daemon")
        || line.contains("Is the docker daemon running")
    {
        Error::EngineUnreachable(line)
    } else {
        Error::CreateFailed(line)
    }
}

/// Whether a failed `image inspect` or `create` says "no such image" (as
/// opposed to an engine that did not answer).
fn is_missing_image(failed: &Control) -> bool {
    !failed.success() && failed.stderr.to_ascii_lowercase().contains("no such image")
}

/// Removes every volume that carries the label of `run_id` (compiled
/// candidates' builds). Returns how many were found.
pub(crate) fn remove_run_volumes(docker: &Docker, run_id: &str) -> Result<usize> {
    let listed = process::control(
        docker,
        &argv::list_run_volumes_args(run_id),
        CONTROL_TIMEOUT,
    )?;
    if !listed.success() {
        return Err(Error::EngineUnreachable(listed.stderr_line()));
    }
    let names: Vec<String> = listed
        .stdout
        .split_whitespace()
        .map(str::to_string)
        .collect();
    if !names.is_empty() {
        let removed = process::control(docker, &argv::volume_remove_args(&names), CONTROL_TIMEOUT)?;
        if !removed.success() {
            return Err(Error::EngineUnreachable(removed.stderr_line()));
        }
    }
    Ok(names.len())
}

/// Removes every container that carries the label of `run_id`, whatever its
/// state. Returns how many were found.
pub(crate) fn remove_run(docker: &Docker, run_id: &str) -> Result<usize> {
    let listed = process::control(docker, &argv::list_run_args(run_id), CONTROL_TIMEOUT)?;
    if !listed.success() {
        return Err(Error::EngineUnreachable(listed.stderr_line()));
    }
    let ids: Vec<String> = listed
        .stdout
        .split_whitespace()
        .map(str::to_string)
        .collect();
    process::remove_containers(docker, &ids);
    Ok(ids.len())
}
