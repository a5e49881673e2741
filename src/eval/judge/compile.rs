//! The compile step of a compiled candidate, once for all its cases, in
//! its own sandboxed container: the source on stdin, the output into a
//! build volume of the candidate's own (labelled with the run), which the
//! runs then mount read-only (`--isolate case`). For the runner modes the
//! compile container also writes the build to its stdout as a tar archive
//! (`pack`), which is delivered to the runner with the candidate
//! (`build_archive`, `isolate`). It works the same on every engine: nothing
//! but the engine's own volumes is shared, and a volume lives on the engine
//! that runs the candidate.

use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use sbx_runner::protocol::BuildFile;

use super::build_archive::{self, MAX_BUILD};
use crate::docker::argv::{self, Container, Mount, NAME_PREFIX, TOOLCHAIN_MISSING_MARK};
use crate::docker::events::{self, ContainerRecord};
use crate::docker::process::{self, Ended, OutputSink, StdinSource, CONTROL_TIMEOUT};
use crate::docker::Docker;
use crate::engines::pool::Member;
use crate::error::Error;
use crate::report::result::{tail, STDERR_TAIL_CHARS};
use crate::report::{Status, TaskResult};
use crate::session::{ContainerArgs, Session, Staged};
use crate::spec::languages::{self, CompileLimits, Language};
use crate::spec::{Limits, Pull};
use crate::verdict::outcome;

/// The compile container's pids limit: javac and go build run many
/// threads.
pub(crate) const COMPILE_PIDS_LIMIT: &str = "256";
/// `cases::ENGINE_LOST` (cases uses this module, not the reverse): the
/// unit is run again when its engine still answers.
const ENGINE_LOST: &str = "engine_lost";
/// The largest source sbx hands to a compiler.
pub(crate) const MAX_SOURCE: u64 = 16 << 20;
/// The most a compiler may write (stdout and stderr each) before its
/// compile is a `compile_error`.
const COMPILER_OUTPUT: usize = 1 << 20;
/// What a build's archive adds to its files (headers, padding).
const ARCHIVE_SLACK: usize = 4 << 20;

/// A candidate's build volume on one engine; removed when dropped.
#[derive(Debug)]
pub(crate) struct BuildVolume<'a> {
    docker: &'a Docker,
    pub name: String,
}

impl Drop for BuildVolume<'_> {
    fn drop(&mut self) {
        // The last run's container may still be on its way out (`--rm`):
        // a volume in use cannot be removed yet. What stays is removed with
        // the run's containers at the end (`engines::clean`) or by `sbx gc`.
        for attempt in 0..5 {
            let args = argv::volume_remove_args(std::slice::from_ref(&self.name));
            match process::control(self.docker, &args, CONTROL_TIMEOUT) {
                Ok(done) if done.success() => return,
                Ok(_) if attempt < 4 => std::thread::sleep(Duration::from_millis(200)),
                _ => return,
            }
        }
    }
}

/// A compiled candidate, ready to run.
#[derive(Debug)]
pub(crate) struct Build<'a> {
    pub volume: BuildVolume<'a>,
    /// The run command, placeholders filled.
    pub run: Vec<String>,
    /// How long the compile step took.
    pub compile_ms: u64,
    /// The build's files for the runner (asked for with `pack`), or why
    /// there are none (no `tar` in the image, a build above `MAX_BUILD`, an
    /// archive that does not read): then it runs from `volume`, a
    /// container per case.
    pub files: Result<Vec<BuildFile>, String>,
}

impl Build<'_> {
    /// A run container's arguments turned into this build's run.
    pub(crate) fn apply(&self, container: ContainerArgs) -> ContainerArgs {
        ContainerArgs {
            create: argv::with_build_volume(&container.create, &self.volume.name, &self.run),
            ..container
        }
    }
}

/// What the compile step gave: a build, or the task's result (the
/// compiler's refusal, or why sbx could not compile); `None` when
/// interrupted.
pub(crate) type Compiled<'a> = Option<Result<Build<'a>, TaskResult>>;

/// Compiles `staged` (task `id`, image `image`) in `language` on `member`,
/// once. Counted in the engine's events as one container named
/// `sbx-<run>-compile-<n>`. With `pack`, the build also comes back on the
/// compile container's stdout, for the runner (`Build::files`).
#[expect(
    clippy::too_many_arguments,
    reason = "the compile's parts, each needed once; a struct would only rename them"
)]
pub(crate) fn compile<'a>(
    session: &Session,
    member: &'a Member,
    id: &str,
    image: &str,
    language: &Language,
    staged: &Staged,
    limits: &CompileLimits,
    pack: bool,
) -> Compiled<'a> {
    let compile_words = language
        .compile
        .expect("only compiled languages are compiled");
    let source = match read_source(staged) {
        Ok(Ok(source)) => source,
        Ok(Err(too_big)) => {
            let mut result = TaskResult::bare(id, Status::Fail);
            result.reason = Some("compile_error".into());
            result.stderr_tail = too_big;
            return Some(Err(result));
        }
        Err(message) => return Some(Err(refused(id, message))),
    };
    let names = languages::names_for(language, &source);
    let command = languages::substitute(compile_words, &names);
    let run = languages::substitute(language.run, &names);

    let n = session.next_container();
    let volume_name = format!("{NAME_PREFIX}{}-build-{n}", session.run_id);
    let created = process::control(
        &member.docker,
        &argv::volume_create_args(&volume_name, &session.run_id),
        CONTROL_TIMEOUT,
    );
    match created {
        Ok(c) if c.success() => {}
        Ok(c) => {
            return Some(Err(TaskResult::error(
                id,
                "start_failed",
                format!("cannot create the build volume: {}", c.stderr_line()),
            )))
        }
        Err(e) => return Some(Err(TaskResult::error(id, e.code(), e.to_string()))),
    }
    let volume = BuildVolume {
        docker: &member.docker,
        name: volume_name,
    };

    let name = format!("{NAME_PREFIX}{}-compile-{n}", session.run_id);
    let compile_limits = Limits {
        memory: limits.memory.clone(),
        pids_limit: COMPILE_PIDS_LIMIT.into(),
        ..session.sandbox.limits.clone()
    };
    let create = argv::compile_create_args(
        &Container {
            name: &name,
            run_id: &session.run_id,
            interactive: true,
            mount: Mount::InImage(""),
            image,
            limits: &compile_limits,
            hardening: &session.sandbox.hardening,
            interpreter: &[],
        },
        &volume.name,
        &names.source,
        &command,
        pack,
    );
    let container = ContainerArgs {
        name: name.clone(),
        image: image.to_string(),
        // The image was checked (and pulled if allowed) before any clock.
        pull: Pull::Never,
        create,
        start: argv::start_args(&name, true),
    };
    let finished = match session.execute(
        &member.docker,
        container,
        StdinSource::Bytes(Arc::from(source)),
        // The compiler's words are capped at COMPILER_OUTPUT in every
        // mode; packed, stdout is the build's archive, with a cap of its own.
        if pack {
            OutputSink::CaptureEach {
                stdout: MAX_BUILD + ARCHIVE_SLACK,
                stderr: COMPILER_OUTPUT,
            }
        } else {
            OutputSink::Capture {
                max: COMPILER_OUTPUT,
            }
        },
        limits.timeout,
    ) {
        Ok(finished) => finished,
        Err(e) => return Some(Err(TaskResult::error(id, e.code(), e.to_string()))),
    };
    let record = ContainerRecord::new(member.events.as_ref(), &name);
    let mut said = String::from_utf8_lossy(&finished.stderr.bytes).into_owned();
    // Packed, stdout is the build's archive (the compiler's went to stderr).
    if !pack {
        said.push_str(&String::from_utf8_lossy(&finished.stdout.bytes));
    }
    let too_talkative = finished.stderr.total > COMPILER_OUTPUT as u64
        || (!pack && finished.stdout.total > COMPILER_OUTPUT as u64);
    let compile_ms = u64::try_from(finished.duration.as_millis()).unwrap_or(u64::MAX);
    let failed = |reason: &str, message: String| {
        let mut result = TaskResult::bare(id, Status::Fail);
        result.reason = Some(reason.to_string());
        result.stderr_tail = tail(&message, STDERR_TAIL_CHARS);
        result.compile_ms = Some(compile_ms);
        Some(Err(result))
    };
    let status = match finished.ended {
        Ended::Interrupted(_) => return None,
        Ended::TimedOut if record.oom_killed() => {
            return failed("compile_oom", out_of_memory(limits));
        }
        // Without the engine's record, a timeout could have been a memory
        // kill or a lost connection.
        Ended::TimedOut if record.seen().is_none() => {
            return Some(Err(TaskResult::error(
                id,
                ENGINE_LOST,
                record.why_unknown(),
            )));
        }
        Ended::TimedOut => {
            return failed(
                "compile_timeout",
                format!(
                    "{said}\nsbx: the compile took more than {} s (--compile-timeout)",
                    limits.timeout.as_secs_f64()
                ),
            )
        }
        Ended::OutputLimit | Ended::Exited(_) if too_talkative => {
            return failed(
                "compile_error",
                format!("{said}\nsbx: the compiler wrote more than 1 MiB"),
            )
        }
        // The archive comes only after the compiler succeeded: a build too
        // large to deliver runs from its volume.
        Ended::OutputLimit => {
            return Some(Ok(Build {
                volume,
                run,
                compile_ms,
                files: Err(format!("the build is larger than {} MiB", MAX_BUILD >> 20)),
            }))
        }
        Ended::Exited(status) => status,
    };
    if let Some(failure) = outcome::docker_failure(&finished, &record) {
        // No /bin/sh in the image: the compile step cannot run at all.
        let missing = failure.code == crate::exit::NOT_FOUND;
        return Some(Err(if missing {
            toolchain_missing(id, image, language, "/bin/sh")
        } else {
            TaskResult::error(id, "start_failed", failure.message)
        }));
    }
    // A failure is the model's only once the engine recorded the
    // compiler's exit: a cut connection also ends the client.
    if status.code() != Some(0) {
        if let Err(why) = events::confirm_exit(&record, status.code()) {
            return Some(Err(TaskResult::error(id, ENGINE_LOST, why)));
        }
    }
    match status.code() {
        Some(0) => {
            let files = match (pack, finished.stdout.bytes.is_empty()) {
                (false, _) => Err("not asked for".into()),
                (true, true) => Err(format!("image `{image}` has no `tar`")),
                (true, false) => build_archive::read(&finished.stdout.bytes),
            };
            Some(Ok(Build {
                volume,
                run,
                compile_ms,
                files,
            }))
        }
        // The script looks for `setpriv` before anything else runs.
        Some(127) if said.starts_with(&format!("{TOOLCHAIN_MISSING_MARK} setpriv\n")) => {
            Some(Err(toolchain_missing(id, image, language, "setpriv")))
        }
        Some(127) if said.contains(TOOLCHAIN_MISSING_MARK) => {
            Some(Err(toolchain_missing(id, image, language, &command[0])))
        }
        _ if record.oom_killed() => failed("compile_oom", out_of_memory(limits)),
        _ if went_past_disk_limit(&said) => failed(
            "compile_disk_limit",
            format!(
                "{said}\nsbx: the compile went past its disk limit ({} MiB for the build and for any file it writes; its /tmp holds {})",
                argv::COMPILE_DISK_MIB,
                session.sandbox.limits.tmpfs_size
            ),
        ),
        _ => failed("compile_error", said),
    }
}

/// Whether a failed compile says it ran out of room: a file past the size
/// limit (the signal, or `EFBIG`) or a full tmpfs (`ENOSPC`). Read from
/// the compiler's words, so a candidate that makes its compiler print them
/// gets this reason instead of `compile_error`: a failure of its own
/// either way.
fn went_past_disk_limit(said: &str) -> bool {
    [
        "File size limit exceeded",
        "File too large",
        "No space left on device",
    ]
    .iter()
    .any(|words| said.contains(words))
}

fn out_of_memory(limits: &CompileLimits) -> String {
    format!(
        "sbx: the compiler ran out of memory ({} of --compile-memory)",
        limits.memory
    )
}

/// sbx's error, not the model's: the image lacks the language's compiler.
fn toolchain_missing(id: &str, image: &str, language: &Language, program: &str) -> TaskResult {
    TaskResult::error(
        id,
        "toolchain_missing",
        format!(
            "image `{image}` has no `{program}`, which {} (.{}) candidates need; use an image with the toolchain, such as sbx-polyglot:bookworm (`scripts/build-images.sh polyglot`)",
            language.name, language.extension
        ),
    )
}

fn refused(id: &str, message: String) -> TaskResult {
    TaskResult::error(id, "unreadable_candidate", message)
}

/// The staged source, or why it is too big for a compiler (the model's
/// fault); `Err` when it cannot be read (sbx's).
fn read_source(staged: &Staged) -> Result<Result<Vec<u8>, String>, String> {
    let file = crate::session::open_candidate(&staged.path).map_err(|e: Error| e.to_string())?;
    let mut source = Vec::new();
    file.take(MAX_SOURCE + 1)
        .read_to_end(&mut source)
        .map_err(|e| format!("cannot read the staged candidate: {e}"))?;
    if source.len() as u64 > MAX_SOURCE {
        return Ok(Err(format!(
            "sbx: the source is larger than {} MiB, more than sbx hands to a compiler",
            MAX_SOURCE >> 20
        )));
    }
    Ok(Ok(source))
}
