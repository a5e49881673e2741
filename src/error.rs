//! The one error type of sbx: each variant says what was being done, and
//! maps to a documented exit code.

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::exit;

/// Everything that can stop sbx before or instead of judging a program.
#[derive(Debug)]
pub enum Error {
    /// A bad argument (exit 2).
    Usage(String),
    /// An option's value that sbx refuses (exit 2): `invalid OPTION VALUE:
    /// REASON`, and where the value was written when a settings file gave it.
    InvalidOption(Box<InvalidOption>),
    /// `run`: FILE is not a regular file (exit 64, the seed's message).
    NoSuchFile(PathBuf),
    /// `run`: FILE exists but cannot be read (exit 64).
    Unreadable { path: PathBuf, source: io::Error },
    /// `run`: FILE has no `#!` line and no interpreter was given (exit 126).
    NotExecutable(PathBuf),
    /// The docker CLI could not be found (exit 127).
    DockerNotFound(OsString),
    /// The docker CLI could not be started for another reason (exit 126).
    DockerSpawn { docker: OsString, source: io::Error },
    /// The engine did not answer (exit 125).
    EngineUnreachable(String),
    /// The image is not present and may not be pulled (exit 125).
    ImageMissing(String),
    /// Pulling the image failed (exit 125).
    PullFailed { image: String, message: String },
    /// `docker create` refused the container (exit 125).
    CreateFailed(String),
    /// A docker control command did not answer in time (exit 125).
    EngineTimeout(String),
    /// Local setup failed: temp dir, staging copy (exit 125).
    Setup { what: String, source: io::Error },
    /// `eval`: the tasks file is missing, unreadable or malformed (exit 2).
    Tasks { path: PathBuf, message: String },
    /// Writing a report failed (exit 2).
    Write { what: String, source: io::Error },
    /// `diff`: a report is missing, unreadable or malformed (exit 2).
    Report { path: PathBuf, message: String },
    /// The settings file (`sbx.toml`, `--config`) is unreadable or has an
    /// unknown table or key, or a bad value (exit 2).
    Settings { path: PathBuf, message: String },
    /// `run`: TIMEOUT is one GNU `timeout` refuses (exit 125, as the seed
    /// script's `timeout` exits).
    TimeoutRefused(String),
    /// SIGINT, SIGTERM, SIGHUP or SIGQUIT arrived before any program started
    /// (exit 128 + the signal: 130, 143, 129, 131).
    Interrupted(i32),
    /// A thread of sbx panicked (a bug in sbx): what it was doing, and the
    /// panic's message (exit 125).
    Panicked { what: String, message: String },
    /// `eval`: no engine can run an image that tasks with candidates need
    /// (the engine unreachable, the image missing or not pullable), found
    /// before any task started. `exit_code` is that cause's, as `sbx run`
    /// would end with it (125, or 127 without a docker CLI).
    CannotJudge { why: String, exit_code: i32 },
}

/// An option's value that sbx refuses, as [`Error::InvalidOption`] holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidOption {
    /// The option as the message names it: `--cpus`, `-j`, or a word such
    /// as `timeout` or `image reference` where the same value also comes
    /// from elsewhere (a tasks file, a positional argument).
    pub option: String,
    /// The value as the message shows it: quoted (`console::quote`), or as
    /// written out for a value with a part of its own (`seccomp=PATH`).
    pub value: String,
    /// Why it is refused: `expected a positive integer such as 64`.
    pub reason: String,
    /// Where a settings file wrote it, when one did (see `sbx_toml::blame`).
    pub from: Option<Origin>,
}

/// The settings file, table and key a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub file: PathBuf,
    pub table: String,
    pub key: String,
}

impl InvalidOption {
    /// The settings-file key this option is written as: its first word,
    /// without `--` (`--memory` is `memory`, `image reference` is `image`).
    pub fn key(&self) -> &str {
        let first = self.option.split(' ').next().unwrap_or_default();
        first.strip_prefix("--").unwrap_or(first)
    }
}

impl fmt::Display for InvalidOption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {} {}: {}", self.option, self.value, self.reason)?;
        if let Some(from) = &self.from {
            write!(
                f,
                " (from `{}`, [{}] {})",
                from.file.display(),
                from.table,
                from.key
            )?;
        }
        Ok(())
    }
}

impl Error {
    /// `option`'s value refused for `reason`; `value` is the value as the
    /// message shows it (quoted and cut by `console::quote`, as a rule).
    pub fn invalid(option: impl Into<String>, value: String, reason: impl Into<String>) -> Error {
        Error::InvalidOption(Box::new(InvalidOption {
            option: option.into(),
            value,
            reason: reason.into(),
            from: None,
        }))
    }

    /// The documented exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_)
            | Error::InvalidOption(_)
            | Error::Tasks { .. }
            | Error::Write { .. }
            | Error::Report { .. }
            | Error::Settings { .. } => exit::USAGE,
            Error::Interrupted(signal) => exit::for_signal(*signal),
            Error::NoSuchFile(_) | Error::Unreadable { .. } => exit::NO_SUCH_FILE,
            Error::NotExecutable(_) | Error::DockerSpawn { .. } => exit::CANNOT_EXECUTE,
            Error::DockerNotFound(_) => exit::NOT_FOUND,
            Error::EngineUnreachable(_)
            | Error::ImageMissing(_)
            | Error::PullFailed { .. }
            | Error::CreateFailed(_)
            | Error::EngineTimeout(_)
            | Error::Setup { .. }
            | Error::Panicked { .. } => exit::ENGINE,
            Error::TimeoutRefused(_) => exit::TIMEOUT_REFUSED,
            Error::CannotJudge { exit_code, .. } => *exit_code,
        }
    }

    /// A short machine-readable code, used as the `reason` of `error` results.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Usage(_) | Error::InvalidOption(_) => "usage",
            Error::NoSuchFile(_) => "no_such_file",
            Error::Unreadable { .. } => "unreadable",
            Error::NotExecutable(_) => "not_executable",
            Error::DockerNotFound(_) => "docker_not_found",
            Error::DockerSpawn { .. } => "docker_spawn",
            Error::EngineUnreachable(_) => "engine_unreachable",
            Error::ImageMissing(_) => "image_missing",
            Error::PullFailed { .. } => "pull_failed",
            Error::CreateFailed(_) => "create_failed",
            Error::EngineTimeout(_) => "engine_timeout",
            Error::Setup { .. } => "setup",
            Error::Panicked { .. } => "panicked",
            Error::Tasks { .. } => "tasks",
            Error::Write { .. } => "write",
            Error::Report { .. } => "report",
            Error::Settings { .. } => "settings",
            Error::TimeoutRefused(_) => "timeout_refused",
            Error::Interrupted(_) => "interrupted",
            Error::CannotJudge { .. } => "cannot_judge",
        }
    }

    /// The line printed on stderr. `NoSuchFile` keeps the seed script's exact
    /// message so that callers matching on it keep working.
    pub fn to_line(&self) -> String {
        match self {
            Error::NoSuchFile(_) => self.to_string(),
            // One line, whatever a name in it holds (a newline, a bidi
            // control): see `escape`.
            _ => format!("sbx: {}", crate::escape::line(&self.to_string())),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(msg) => write!(f, "{msg}"),
            Error::InvalidOption(invalid) => write!(f, "{invalid}"),
            Error::NoSuchFile(path) => write!(f, "No such file: {}", path.display()),
            Error::Unreadable { path, source } => {
                write!(f, "cannot read `{}`: {source}", path.display())
            }
            Error::NotExecutable(path) => write!(
                f,
                "`{}` has no `#!` line, so the container cannot execute it; pass --interpreter (for example `--interpreter python3`)",
                path.display()
            ),
            Error::DockerNotFound(docker) => write!(
                f,
                "docker CLI `{}` not found; install docker or set SBX_DOCKER / --docker",
                docker.to_string_lossy()
            ),
            Error::DockerSpawn { docker, source } => write!(
                f,
                "failed to start docker CLI `{}`: {source}",
                docker.to_string_lossy()
            ),
            Error::EngineUnreachable(msg) => write!(f, "docker engine unreachable: {msg}"),
            Error::ImageMissing(image) => write!(
                f,
                "image `{image}` is not present locally and --pull never forbids pulling it; build or pull it first"
            ),
            Error::PullFailed { image, message } => {
                write!(f, "image `{image}` is not present locally and pulling it failed: {message}")
            }
            Error::CreateFailed(line) => write!(f, "docker could not create the container: {line}"),
            Error::EngineTimeout(what) => write!(f, "docker did not answer in time: {what}"),
            Error::Setup { what, source } => write!(f, "failed to {what}: {source}"),
            Error::Panicked { what, message } => {
                write!(f, "{what} panicked (a bug in sbx): {message}")
            }
            Error::Tasks { path, message } => {
                write!(f, "bad tasks file `{}`: {message}", path.display())
            }
            Error::Write { what, source } => write!(f, "failed to write {what}: {source}"),
            Error::Report { path, message } => {
                write!(f, "report `{}`: {message}", path.display())
            }
            Error::Settings { path, message } => {
                write!(f, "config file `{}`: {message}", path.display())
            }
            Error::TimeoutRefused(message) => write!(f, "{message} (as GNU timeout)"),
            Error::Interrupted(signal) => write!(
                f,
                "interrupted by signal {signal} before any program started; nothing is left running"
            ),
            Error::CannotJudge { why, .. } => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Unreadable { source, .. }
            | Error::DockerSpawn { source, .. }
            | Error::Setup { source, .. }
            | Error::Write { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Shorthand for results in sbx.
pub type Result<T, E = Error> = std::result::Result<T, E>;
