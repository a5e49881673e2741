//! Short queries of the engine: its containers by label, its event stream,
//! its versions and set-up, a context's address.

use super::*;

/// `docker ps -a` of the containers carrying the label of `run_id`.
pub fn list_run_args(run_id: &str) -> Vec<OsString> {
    to_os(&[
        "ps",
        "-a",
        "-q",
        "--no-trunc",
        "--filter",
        &format!("label={RUN_LABEL}={run_id}"),
    ])
}

/// `docker ps -a` of every container that carries the `sbx.run` label, one
/// tab-separated line each: ID, name, creation time, run id.
pub fn list_labelled_args() -> Vec<OsString> {
    to_os(&[
        "ps",
        "-a",
        "--no-trunc",
        "--filter",
        &format!("label={RUN_LABEL}"),
        "--format",
        &format!("{{{{.ID}}}}\t{{{{.Names}}}}\t{{{{.CreatedAt}}}}\t{{{{.Label \"{RUN_LABEL}\"}}}}"),
    ])
}

/// `docker events` of every container labelled with `run_id`, from `since`
/// (Unix seconds on the engine's clock; the daemon replays what it logged
/// since then) and for as long as it runs: one JSON event per line.
pub fn events_stream_args(run_id: &str, since: f64) -> Vec<OsString> {
    to_os(&[
        "events",
        "--since",
        &format!("{since:.9}"),
        "--filter",
        &format!("label={RUN_LABEL}={run_id}"),
        "--filter",
        "type=container",
        "--format",
        "{{json .}}",
    ])
}

/// `docker version` of the engine only: answers when the engine does.
pub fn ping_args() -> Vec<OsString> {
    to_os(&["version", "--format", "{{.Server.Version}}"])
}

/// `docker context inspect` of the engine address of a context (the current
/// one when `name` is `None`).
pub fn context_host_args(name: Option<&str>) -> Vec<OsString> {
    let mut args = to_os(&[
        "context",
        "inspect",
        "--format",
        "{{.Endpoints.docker.Host}}",
    ]);
    if let Some(name) = name {
        args.push("--".into());
        args.push(name.into());
    }
    args
}

/// `docker version`: the CLI's and the engine's versions, `CLI|ENGINE`.
pub fn version_args() -> Vec<OsString> {
    to_os(&[
        "version",
        "--format",
        "{{.Client.Version}}|{{.Server.Version}}",
    ])
}

/// `docker info`: the cgroup version, default runtime, storage driver, the
/// engine host's kernel release and the runtimes the engine knows.
pub fn info_args() -> Vec<OsString> {
    to_os(&[
        "info",
        "--format",
        "{{.CgroupVersion}}|{{.DefaultRuntime}}|{{.Driver}}|{{.KernelVersion}}|{{range $k, $v := .Runtimes}}{{$k}} {{end}}",
    ])
}

/// The log driver the engine recorded for container `name`.
pub fn log_driver_args(name: &str) -> Vec<OsString> {
    to_os(&[
        "inspect",
        "--format",
        "{{.HostConfig.LogConfig.Type}}",
        "--",
        name,
    ])
}

/// The ID of container `name` (exactly that name), in any state: empty
/// output when it does not exist.
pub fn container_exists_args(name: &str) -> Vec<OsString> {
    to_os(&["ps", "-a", "-q", "--filter", &format!("name=^/{name}$")])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_commands() {
        assert_eq!(
            strings(&image_inspect_args("img")),
            ["image", "inspect", "--format", "{{.Id}}", "--", "img"]
        );
        assert_eq!(strings(&pull_args("img")), ["pull", "--", "img"]);
        assert_eq!(
            strings(&remove_args(&["a".into(), "b".into()])),
            ["rm", "-f", "--", "a", "b"]
        );
        assert_eq!(
            strings(&list_run_args("r1")),
            [
                "ps",
                "-a",
                "-q",
                "--no-trunc",
                "--filter",
                "label=sbx.run=r1"
            ]
        );
        assert_eq!(
            strings(&list_labelled_args()),
            [
                "ps",
                "-a",
                "--no-trunc",
                "--filter",
                "label=sbx.run",
                "--format",
                "{{.ID}}\t{{.Names}}\t{{.CreatedAt}}\t{{.Label \"sbx.run\"}}"
            ]
        );
        assert_eq!(
            strings(&events_stream_args("r1", 1.5)),
            [
                "events",
                "--since",
                "1.500000000",
                "--filter",
                "label=sbx.run=r1",
                "--filter",
                "type=container",
                "--format",
                "{{json .}}"
            ]
        );
    }

    #[test]
    fn doctor_query_argv_is_exact() {
        assert_eq!(
            strings(&version_args()),
            [
                "version",
                "--format",
                "{{.Client.Version}}|{{.Server.Version}}"
            ]
        );
        assert_eq!(
            strings(&info_args()),
            [
                "info",
                "--format",
                "{{.CgroupVersion}}|{{.DefaultRuntime}}|{{.Driver}}|{{.KernelVersion}}|{{range $k, $v := .Runtimes}}{{$k}} {{end}}"
            ]
        );
        assert_eq!(
            strings(&log_driver_args("sbx-x")),
            [
                "inspect",
                "--format",
                "{{.HostConfig.LogConfig.Type}}",
                "--",
                "sbx-x"
            ]
        );
        assert_eq!(
            strings(&container_exists_args("sbx-x")),
            ["ps", "-a", "-q", "--filter", "name=^/sbx-x$"]
        );
    }
}
