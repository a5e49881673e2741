//! Build volumes: create, remove, list by label.

use super::*;

/// `docker volume create` of a candidate's build volume, labelled with the
/// run id so that it can always be found and removed.
pub fn volume_create_args(name: &str, run_id: &str) -> Vec<OsString> {
    to_os(&[
        "volume",
        "create",
        "--label",
        &format!("{RUN_LABEL}={run_id}"),
        "--",
        name,
    ])
}

/// `docker volume rm -f NAME...`.
pub fn volume_remove_args(names: &[String]) -> Vec<OsString> {
    let mut args = to_os(&["volume", "rm", "-f", "--"]);
    args.extend(names.iter().map(OsString::from));
    args
}

/// `docker volume ls` of the volumes carrying the label of `run_id`.
pub fn list_run_volumes_args(run_id: &str) -> Vec<OsString> {
    to_os(&[
        "volume",
        "ls",
        "-q",
        "--filter",
        &format!("label={RUN_LABEL}={run_id}"),
    ])
}

/// `docker volume ls` of every volume that carries the `sbx.run` label,
/// one tab-separated line each: name, run id.
pub fn list_labelled_volumes_args() -> Vec<OsString> {
    to_os(&[
        "volume",
        "ls",
        "--filter",
        &format!("label={RUN_LABEL}"),
        "--format",
        &format!("{{{{.Name}}}}\t{{{{.Label \"{RUN_LABEL}\"}}}}"),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volume_commands() {
        assert_eq!(
            strings(&volume_create_args("sbx-r-build-0", "r")),
            [
                "volume",
                "create",
                "--label",
                "sbx.run=r",
                "--",
                "sbx-r-build-0"
            ]
        );
        assert_eq!(
            strings(&volume_remove_args(&["a".into(), "b".into()])),
            ["volume", "rm", "-f", "--", "a", "b"]
        );
        assert_eq!(
            strings(&list_run_volumes_args("r")),
            ["volume", "ls", "-q", "--filter", "label=sbx.run=r"]
        );
        assert_eq!(
            strings(&list_labelled_volumes_args()),
            [
                "volume",
                "ls",
                "--filter",
                "label=sbx.run",
                "--format",
                "{{.Name}}\t{{.Label \"sbx.run\"}}"
            ]
        );
    }
}
