//! Baked delivery: the candidates built into a throwaway image per engine
//! (for engines that cannot see this machine's files), and removing it.

use std::collections::BTreeMap;
use std::time::Duration;

use super::pool::{Member, Refusal};
use crate::docker::argv::{self, BAKED_REPOSITORY, BASE_TAG_MARK};
use crate::docker::process::{self, CONTROL_TIMEOUT};
use crate::docker::Docker;
use crate::error::{Error, Result};
use crate::session::{Delivery, Session};
use crate::signals;

/// How long building a baked image may take.
const BUILD_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// What a baked image adds to its task image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Payload {
    /// Every staged candidate, under `BAKED_DIR` (`--isolate case`).
    Candidates,
    /// Only the runner, at `argv::RUNNER_PATH` (runner modes: candidates
    /// travel over the protocol, so no candidate can read another's code).
    Runner,
}

/// Bakes, for an engine that gets images, one image per task image it has:
/// that exact image plus `payload` (see `bake_image`). An image that cannot be
/// baked is dropped from the engine's images, with the reason.
pub(crate) fn bake(
    session: &Session,
    member: &mut Member,
    refused: &mut BTreeMap<String, Refusal>,
    payload: Payload,
) -> Result<()> {
    let Delivery::Image(baked) = &mut member.delivery else {
        return Ok(());
    };
    let images: Vec<(String, String)> = member
        .images
        .iter()
        .map(|(image, id)| (image.clone(), id.clone()))
        .collect();
    for (image, id) in images {
        match bake_image(session, &member.docker, &id, payload) {
            Ok(tag) => {
                baked.insert(image, tag);
            }
            Err(Error::Interrupted(signal)) => return Err(Error::Interrupted(signal)),
            Err(e) => {
                member.images.remove(&image);
                refused.insert(
                    image.clone(),
                    (
                        "bake_failed".into(),
                        match payload {
                            Payload::Candidates => {
                                format!("could not bake the candidates into `{image}`: {e}")
                            }
                            Payload::Runner => {
                                format!("could not bake the runner into `{image}`: {e}")
                            }
                        },
                    ),
                );
            }
        }
    }
    Ok(())
}

/// Builds `sbx-deliver:<run id>-<k>` on the engine: the image `id` plus
/// every candidate staged so far, under `/work/tasks/`, or only the runner
/// (with a build context that holds nothing else). Returns the tag.
///
/// The build starts `FROM` a tag of sbx's own on that image ID (BuildKit
/// reads a bare `sha256:` ID as a repository name), removed again after the
/// build; with `--network none`, and refused for an image with `ONBUILD`
/// triggers, which a build would run outside the sandbox.
pub(crate) fn bake_image(
    session: &Session,
    docker: &Docker,
    id: &str,
    payload: Payload,
) -> Result<String> {
    let k = session.next_bake();
    let tag = format!("{BAKED_REPOSITORY}:{}-{k}", session.run_id);
    let base = format!("{BAKED_REPOSITORY}:{}{BASE_TAG_MARK}-{k}", session.run_id);
    let refuse = |why: String| Err(Error::CreateFailed(why));
    let inspected =
        process::control_interruptible(docker, &argv::bake_inspect_args(id), CONTROL_TIMEOUT)?;
    if !inspected.success() {
        return refuse(format!(
            "`docker image inspect {id}`: {}",
            inspected.stderr_line()
        ));
    }
    let fields: Vec<&str> = inspected.stdout.trim().split('\t').collect();
    let [onbuild, tags, digests] = fields[..] else {
        return refuse(format!(
            "unexpected `docker image inspect` output: {:?}",
            inspected.stdout.trim()
        ));
    };
    if !matches!(onbuild.trim(), "null" | "[]") {
        return refuse(format!(
            "the image has ONBUILD triggers ({onbuild}), which a build would run outside the sandbox; use --deliver bind on an engine on this machine"
        ));
    }
    if tags.trim() == "0" && digests.trim() == "0" {
        return refuse(
            "an image with neither tag nor digest cannot be baked from (sbx's tag would be its only name); tag it first"
                .into(),
        );
    }
    let tagged = process::control(docker, &argv::tag_args(id, &base), CONTROL_TIMEOUT)?;
    if !tagged.success() {
        return refuse(format!("`docker tag`: {}", tagged.stderr_line()));
    }
    let (dockerfile, context) = match payload {
        Payload::Candidates => (
            session.dockerfile(k, &base),
            session.stage_dir().to_path_buf(),
        ),
        Payload::Runner => (session.runner_dockerfile(k, &base), session.runner_dir()),
    };
    // Not interruptible: an engine finishes (and tags) a build whose client
    // was killed, after any removal sbx could try; a Ctrl-C waits for it.
    let built = dockerfile.and_then(|dockerfile| {
        let args = argv::build_args(&tag, &session.run_id, &dockerfile, &context);
        process::control(docker, &args, BUILD_TIMEOUT)
    });
    let built = match (built, signals::received()) {
        (Ok(c), Some(signal)) if c.success() => {
            remove_baked(docker, std::slice::from_ref(&tag));
            Err(Error::Interrupted(signal))
        }
        (built, _) => built,
    };
    // Untagged only while the image keeps another name; else `sbx gc`
    // reports it (its image is not sbx's to remove).
    let names = process::control(docker, &argv::tag_count_args(&base), CONTROL_TIMEOUT);
    let others = match names {
        Ok(c) if c.success() => c.stdout.trim().parse::<usize>().is_ok_and(|n| n > 1),
        _ => false,
    };
    if others || digests.trim() != "0" {
        let _ = process::control(docker, &argv::untag_args(&base), CONTROL_TIMEOUT);
    }
    match built {
        Ok(c) if c.success() => Ok(tag),
        failed => {
            // A build cut short may still complete in the engine.
            remove_baked(docker, std::slice::from_ref(&tag));
            match failed {
                Ok(c) => refuse(format!("`docker build` of {tag}: {}", c.stderr_line())),
                Err(e) => Err(e),
            }
        }
    }
}

/// Removes baked images by tag (best effort: `sbx gc` finds any that stay).
pub(crate) fn remove_baked(docker: &Docker, tags: &[String]) -> bool {
    tags.is_empty()
        || matches!(
            process::control(docker, &argv::remove_images_args(tags), CONTROL_TIMEOUT),
            Ok(c) if c.success()
        )
}
