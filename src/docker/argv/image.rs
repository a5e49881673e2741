//! Images: inspect and pull, and the images baked for a remote engine
//! (build, tag, untag, list, remove).

use super::*;

/// `docker image inspect`: prints the image ID when the image is present.
pub fn image_inspect_args(image: &str) -> Vec<OsString> {
    to_os(&["image", "inspect", "--format", "{{.Id}}", "--", image])
}

/// `docker pull`, run before any clock starts.
pub fn pull_args(image: &str) -> Vec<OsString> {
    to_os(&["pull", "--", image])
}

/// The repository of the images sbx bakes for engines that cannot see this
/// machine's files; the tag is `<run id>-<n>`.
pub const BAKED_REPOSITORY: &str = "sbx-deliver";

/// The label of a baked image: its own tag, so that `sbx gc` removes only
/// images sbx built under that very name (a label is inherited by images
/// built or committed from it, a tag's value is not theirs).
pub const BAKE_LABEL: &str = "sbx.bake";

/// `docker build` of a baked image: the task image plus every staged
/// candidate, labelled with the run id so that it can always be found and
/// with its own tag ([`BAKE_LABEL`]); its intermediate containers are
/// removed even when the build fails.
pub fn build_args(tag: &str, run_id: &str, dockerfile: &Path, context: &Path) -> Vec<OsString> {
    let mut args = to_os(&[
        "build",
        "--quiet",
        "--force-rm",
        "--network",
        "none",
        "--label",
        &format!("{RUN_LABEL}={run_id}"),
        "--label",
        &format!("{BAKE_LABEL}={tag}"),
        "--tag",
        tag,
        "--file",
    ]);
    args.push(dockerfile.into());
    args.push("--".into());
    args.push(context.into());
    args
}

/// What marks the tag a bake puts on its base image for a moment:
/// `sbx-deliver:<run>-FROM-<n>` (upper case never appears in a run id).
pub const BASE_TAG_MARK: &str = "-FROM";

/// `docker image inspect` of how many tags an image has.
pub fn tag_count_args(image: &str) -> Vec<OsString> {
    to_os(&[
        "image",
        "inspect",
        "--format",
        "{{len .RepoTags}}",
        "--",
        image,
    ])
}

/// `docker tag SOURCE TARGET`.
pub fn tag_args(source: &str, target: &str) -> Vec<OsString> {
    to_os(&["tag", source, target])
}

/// `docker image inspect` of what baking needs to know of an image: its
/// `ONBUILD` triggers (JSON) and how many tags and digests it has,
/// tab-separated.
pub fn bake_inspect_args(image: &str) -> Vec<OsString> {
    to_os(&[
        "image",
        "inspect",
        "--format",
        "{{json .Config.OnBuild}}\t{{len .RepoTags}}\t{{len .RepoDigests}}",
        "--",
        image,
    ])
}

/// `docker rmi` of a tag (never `-f`: an image that is still in use, or
/// whose last tag this is, stays).
pub fn untag_args(tag: &str) -> Vec<OsString> {
    to_os(&["rmi", "--no-prune", "--", tag])
}

/// `docker rmi` of images by name (never `-f`).
pub fn rmi_args(images: &[String]) -> Vec<OsString> {
    let mut args = to_os(&["rmi", "--"]);
    args.extend(images.iter().map(OsString::from));
    args
}

/// `docker rmi -f` of images by name.
pub fn remove_images_args(images: &[String]) -> Vec<OsString> {
    let mut args = to_os(&["rmi", "-f", "--"]);
    args.extend(images.iter().map(OsString::from));
    args
}

/// `docker image inspect` of the labels that make a baked image sbx's,
/// one line per image found: its [`BAKE_LABEL`] (its own tag when sbx
/// baked it) and its `sbx.run` label, tab-separated.
pub fn baked_labels_args(tags: &[String]) -> Vec<OsString> {
    let mut args = to_os(&[
        "image",
        "inspect",
        "--format",
        &format!(
            "{{{{index .Config.Labels \"{BAKE_LABEL}\"}}}}\t{{{{index .Config.Labels \"{RUN_LABEL}\"}}}}"
        ),
        "--",
    ]);
    args.extend(tags.iter().map(OsString::from));
    args
}

/// `docker image ls` of sbx's baked images and of the tags a bake puts on
/// its base for a moment (the repository is sbx's own), one tab-separated
/// line each: repository:tag, creation time.
pub fn list_baked_args() -> Vec<OsString> {
    to_os(&[
        "image",
        "ls",
        "--filter",
        &format!("reference={BAKED_REPOSITORY}"),
        "--format",
        "{{.Repository}}:{{.Tag}}\t{{.CreatedAt}}",
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baked_images_carry_their_own_tag_and_gc_reads_it() {
        let args = build_args(
            "sbx-deliver:r1-0",
            "r1",
            Path::new("/s/Dockerfile"),
            Path::new("/s"),
        );
        assert_eq!(
            strings(&args),
            [
                "build",
                "--quiet",
                "--force-rm",
                "--network",
                "none",
                "--label",
                "sbx.run=r1",
                "--label",
                "sbx.bake=sbx-deliver:r1-0",
                "--tag",
                "sbx-deliver:r1-0",
                "--file",
                "/s/Dockerfile",
                "--",
                "/s"
            ]
        );
        assert_eq!(
            strings(&baked_labels_args(&[
                "sbx-deliver:r1-0".into(),
                "sbx-deliver:r1-1".into()
            ])),
            [
                "image",
                "inspect",
                "--format",
                "{{index .Config.Labels \"sbx.bake\"}}\t{{index .Config.Labels \"sbx.run\"}}",
                "--",
                "sbx-deliver:r1-0",
                "sbx-deliver:r1-1"
            ]
        );
    }
}
