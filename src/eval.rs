//! `sbx eval`: the eval_loop.py driver. Tasks in (validated before anything
//! runs), candidates through the same sandbox as `sbx run`, results out in
//! task order.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::fs;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cache::{Cache, KeyInput};
use crate::cli::EvalArgs;
use crate::config;
use crate::console;
use crate::docker::events::{self, ContainerRecord};
use crate::docker::process::{Ended, Finished, OutputSink, StdinSource};
use crate::engines::pool::{Member, Ping, Setup};
use crate::engines::spec::EngineSpec;
use crate::engines::{self, bake, clean, pool};
use crate::error::{Error, Result};
use crate::exit;
use crate::judge::matcher::{Matcher, Tolerance};
use crate::judge::outcome::{self, FailReason, Verdict};
use crate::report::result::{tail, STDERR_TAIL_CHARS};
use crate::report::{self, Requeue, Status, TaskResult};
use crate::session::Sandbox;
use crate::session::{Candidate, Session, Staged};
use crate::signals;
use crate::spec::{self, CompareMode as Mode, DeliverChoice};

/// The fields a task may have.
const TASK_FIELDS: [&str; 8] = [
    "id", "prompt", "stdin", "expect", "cases", "timeout", "image", "compare",
];
/// The fields of one case of `cases`.
const CASE_FIELDS: [&str; 2] = ["stdin", "expect"];

/// One validated task.
#[derive(Debug, Clone)]
pub struct Task {
    pub id: String,
    /// One case for a task with `stdin`/`expect`, several with `cases`.
    pub cases: Vec<Case>,
    /// Whether the task gave `cases` (its report entry then counts them).
    pub multi_case: bool,
    pub timeout: Duration,
    pub image: String,
}

/// One input and what must come out of it.
#[derive(Debug, Clone)]
pub struct Case {
    pub stdin: Arc<[u8]>,
    pub matcher: Matcher,
}

/// A validated `sbx eval` request.
#[derive(Debug, Clone)]
pub struct EvalRequest {
    pub tasks: Vec<Task>,
    pub gen: PathBuf,
    pub jobs: usize,
    pub interpreter: Option<Vec<String>>,
    pub max_output: usize,
    /// Stop a multi-case task at its first failing case.
    pub fail_fast: bool,
    /// The k of pass@k for multi-sample tasks (empty: 1, and 10 where n >= 10).
    pub ks: Vec<usize>,
    /// Where judged results are cached, if anywhere.
    pub cache: Option<PathBuf>,
    pub junit: Option<PathBuf>,
    /// The engines to spread the tasks over (empty: the current context).
    pub engines: Vec<EngineSpec>,
    pub deliver: DeliverChoice,
    pub sandbox: Sandbox,
}

/// Defaults that a task's own fields override.
#[derive(Debug, Clone)]
pub struct TaskDefaults {
    pub image: String,
    pub timeout: Duration,
    pub compare: Mode,
    pub tolerance: Tolerance,
}

impl EvalRequest {
    /// Validates the options and reads and validates the whole tasks file.
    pub fn from_args(args: EvalArgs) -> Result<EvalRequest> {
        let sandbox = config::sandbox(args.sandbox)?;
        let engines = engines::spec::parse_engines(&args.engines)?;
        for (name, tol) in [("--rel-tol", args.rel_tol), ("--abs-tol", args.abs_tol)] {
            if !(tol >= 0.0 && tol.is_finite()) {
                return Err(Error::Usage(format!(
                    "invalid {name} `{tol}`: expected a number >= 0"
                )));
            }
        }
        let defaults = TaskDefaults {
            image: spec::parse_image(&args.image)?,
            timeout: spec::parse_timeout(&args.timeout)?,
            compare: args.compare,
            tolerance: Tolerance {
                rel: args.rel_tol,
                abs: args.abs_tol,
            },
        };
        let jobs = match args.jobs {
            Some(0) => return Err(Error::Usage("invalid -j `0`: expected at least 1".into())),
            Some(n) => n,
            None => default_jobs(),
        };
        let text = fs::read_to_string(&args.tasks).map_err(|e| Error::Tasks {
            path: args.tasks.clone(),
            message: e.to_string(),
        })?;
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
        Ok(EvalRequest {
            tasks,
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
            engines,
            deliver: args.deliver,
            sandbox,
        })
    }
}

/// What the machine can take: the engine saturates at a few container starts
/// at once, and each container is capped at half a core by default.
pub fn default_jobs() -> usize {
    thread::available_parallelism().map_or(2, |n| n.get()) * 2
}

/// Parses and validates a tasks file: a JSON list of task objects.
pub fn parse_tasks(text: &str, defaults: &TaskDefaults) -> Result<Vec<Task>, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let Value::Array(items) = value else {
        return Err("expected a JSON list of tasks".into());
    };
    let mut seen = HashSet::new();
    let mut tasks = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let n = i + 1;
        let Value::Object(fields) = item else {
            return Err(format!("task #{n} is not a JSON object"));
        };
        let id = match fields.get("id") {
            Some(Value::String(id)) => id.clone(),
            Some(_) => return Err(format!("task #{n}: field `id` must be a string")),
            None => return Err(format!("task #{n}: missing field `id`")),
        };
        let at = format!("task `{}` (#{n})", id.escape_debug());
        validate_id(&id).map_err(|why| format!("{at}: {why}"))?;
        if !seen.insert(id.clone()) {
            return Err(format!("{at}: duplicate id"));
        }
        if let Some(unknown) = fields.keys().find(|k| !TASK_FIELDS.contains(&k.as_str())) {
            return Err(format!("{at}: unknown field `{}`", unknown.escape_debug()));
        }
        let string = |name: &str| string_field(fields, name, &at);
        string("prompt")?;
        let image = match string("image")? {
            Some(image) => spec::parse_image(&image).map_err(|e| format!("{at}: {e}"))?,
            None => defaults.image.clone(),
        };
        let timeout = match fields.get("timeout") {
            None => Ok(defaults.timeout),
            Some(Value::Number(n)) => spec::parse_timeout(&n.to_string()),
            Some(Value::String(s)) => spec::parse_timeout(s),
            Some(_) => return Err(format!("{at}: field `timeout` must be a number of seconds")),
        }
        .map_err(|e| format!("{at}: {e}"))?;
        let mode = match string("compare")? {
            None => defaults.compare,
            Some(m) => <Mode as clap::ValueEnum>::from_str(&m, false).map_err(|_| {
                format!(
                    "{at}: unknown compare mode `{}` (exact, trim, tokens, float, regex)",
                    m.escape_debug()
                )
            })?,
        };
        let case = |fields: &serde_json::Map<String, Value>, at: &str| -> Result<Case, String> {
            if let Some(missing) = CASE_FIELDS.iter().find(|f| !fields.contains_key(**f)) {
                return Err(format!("{at}: missing field `{missing}`"));
            }
            let stdin = string_field(fields, "stdin", at)?.unwrap_or_default();
            let expect = string_field(fields, "expect", at)?.unwrap_or_default();
            Ok(Case {
                stdin: Arc::from(stdin.into_bytes()),
                matcher: Matcher::new(mode, &expect, defaults.tolerance)
                    .map_err(|e| format!("{at}: {e}"))?,
            })
        };
        let multi_case = fields.contains_key("cases");
        let cases = match fields.get("cases") {
            None => vec![case(fields, &at)?],
            Some(_) if fields.contains_key("stdin") || fields.contains_key("expect") => {
                return Err(format!(
                    "{at}: give either `cases` or `stdin`/`expect`, not both"
                ))
            }
            Some(Value::Array(list)) if !list.is_empty() => {
                let mut cases = Vec::with_capacity(list.len());
                for (k, item) in list.iter().enumerate() {
                    let at = format!("{at}, case {}", k + 1);
                    let Value::Object(case_fields) = item else {
                        return Err(format!("{at}: not a JSON object"));
                    };
                    if let Some(unknown) = case_fields
                        .keys()
                        .find(|k| !CASE_FIELDS.contains(&k.as_str()))
                    {
                        return Err(format!("{at}: unknown field `{}`", unknown.escape_debug()));
                    }
                    cases.push(case(case_fields, &at)?);
                }
                cases
            }
            Some(_) => return Err(format!("{at}: `cases` must be a non-empty list")),
        };
        tasks.push(Task {
            id,
            cases,
            multi_case,
            timeout,
            image,
        });
    }
    Ok(tasks)
}

/// A field that must be a string when present.
fn string_field(
    fields: &serde_json::Map<String, Value>,
    name: &str,
    at: &str,
) -> Result<Option<String>, String> {
    match fields.get(name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("{at}: field `{name}` must be a string")),
    }
}

/// An id names a file in the gen folder: a plain file name only.
fn validate_id(id: &str) -> Result<(), &'static str> {
    if id.is_empty() {
        Err("id is empty")
    } else if id.starts_with('.') {
        Err("id must not start with `.`")
    } else if id.contains(['/', '\\']) {
        Err("id must not contain `/` or `\\`")
    } else if id.chars().any(char::is_control) {
        Err("id must not contain control characters")
    } else if id.len() > 200 {
        Err("id is longer than 200 bytes")
    } else {
        Ok(())
    }
}

/// What was found for a task in the gen folder.
#[derive(Debug)]
enum Found {
    Missing,
    Refused {
        reason: &'static str,
        message: String,
    },
    Ready {
        bytes: Vec<u8>,
        interpreter: Vec<String>,
    },
}

/// Where a task's candidates are.
#[derive(Debug)]
enum Source {
    /// `gen/<id>.py` (or `.sh`, `.js`): one candidate, judged as the task.
    Single(Found),
    /// `gen/<id>/`: several samples of the task, by file name, sorted.
    Samples(Vec<(String, Found)>),
}

/// A folder `gen/<id>/` holds samples; otherwise `<id>.py`, `<id>.sh`,
/// `<id>.js` in that order. Nothing that leads outside the gen folder is
/// followed or read.
fn find_source(gen_root: &Path, id: &str, interpreter: Option<&Vec<String>>) -> Source {
    let dir = gen_root.join(id);
    if fs::symlink_metadata(&dir).is_ok() {
        match fs::canonicalize(&dir) {
            Ok(real) if real.is_dir() && !real.starts_with(gen_root) => {
                return Source::Single(outside(&dir))
            }
            Ok(real) if real.is_dir() => {
                return Source::Samples(samples_in(gen_root, &real, interpreter))
            }
            _ => {}
        }
    }
    for ext in spec::CANDIDATE_EXTENSIONS {
        let path = gen_root.join(format!("{id}.{ext}"));
        if fs::symlink_metadata(&path).is_ok() {
            return Source::Single(load(gen_root, &path, interpreter));
        }
    }
    Source::Single(Found::Missing)
}

/// The samples of a folder: every entry but hidden ones, by name.
fn samples_in(
    gen_root: &Path,
    dir: &Path,
    interpreter: Option<&Vec<String>>,
) -> Vec<(String, Found)> {
    let mut names: Vec<String> = match fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| !name.starts_with('.'))
            .collect(),
        Err(e) => {
            let message = format!("cannot read the samples folder `{}`: {e}", dir.display());
            let found = Found::Refused {
                reason: "unreadable_candidate",
                message,
            };
            return vec![(".".to_string(), found)];
        }
    };
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let found = load(gen_root, &dir.join(&name), interpreter);
            (name, found)
        })
        .collect()
}

fn outside(path: &Path) -> Found {
    Found::Refused {
        reason: "candidate_outside_gen",
        message: format!(
            "`{}` leads outside the candidates folder; not followed",
            path.display()
        ),
    }
}

/// Reads one candidate file: a regular file inside the gen folder, run by
/// `interpreter` or by the interpreter of its extension.
fn load(gen_root: &Path, path: &Path, interpreter: Option<&Vec<String>>) -> Found {
    let refused = |reason, message: String| Found::Refused { reason, message };
    let real = match fs::canonicalize(path) {
        Ok(real) => real,
        Err(e) => {
            return refused(
                "unreadable_candidate",
                format!("cannot resolve `{}`: {e}", path.display()),
            )
        }
    };
    if !real.starts_with(gen_root) {
        return outside(path);
    }
    if !real.is_file() {
        return refused(
            "not_a_file",
            format!("`{}` is not a regular file", path.display()),
        );
    }
    let interpreter = match interpreter {
        Some(words) => words.clone(),
        None => {
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            match spec::interpreter_for_extension(ext) {
                Some(words) => words,
                None => {
                    return refused(
                        "unknown_extension",
                        format!(
                            "no interpreter for `{}` (.py, .sh, .js); pass --interpreter",
                            path.display()
                        ),
                    )
                }
            }
        }
    };
    match fs::read(&real) {
        Ok(bytes) => Found::Ready { bytes, interpreter },
        Err(e) => refused(
            "unreadable_candidate",
            format!("cannot read `{}`: {e}", path.display()),
        ),
    }
}

/// What sbx does for one task: an answer already known, or candidates to run.
#[derive(Debug)]
enum Plan {
    Known(Box<TaskResult>),
    /// One candidate: the run of `units[index]` is the task's entry.
    Single(usize),
    /// Samples: each one's answer, known or the run of `units[index]`.
    Samples(Vec<(String, Result<TaskResult, usize>)>),
}

/// One candidate to run against every case of a task.
#[derive(Debug)]
struct Unit {
    task: usize,
    bytes: Vec<u8>,
    interpreter: Vec<String>,
}

/// The plan of every task and the units to run, in task order.
/// An image's ID, or why it cannot be used (error code, message).
type ImageCheck = std::result::Result<String, (String, String)>;

fn plan(
    req: &EvalRequest,
    gen_root: &Path,
    images: &BTreeMap<&str, ImageCheck>,
) -> (Vec<Plan>, Vec<Unit>) {
    let mut units = Vec::new();
    let mut unit = |task: usize, bytes: Vec<u8>, interpreter: Vec<String>| {
        units.push(Unit {
            task,
            bytes,
            interpreter,
        });
        units.len() - 1
    };
    let known = |id: &str, found: Found| match found {
        Found::Missing => TaskResult::missing(id),
        Found::Refused { reason, message } => TaskResult::error(id, reason, message),
        Found::Ready { .. } => unreachable!("ready candidates become units"),
    };
    let mut plans = Vec::with_capacity(req.tasks.len());
    for (i, task) in req.tasks.iter().enumerate() {
        if let Err((code, message)) = &images[task.image.as_str()] {
            plans.push(Plan::Known(Box::new(TaskResult::error(
                &task.id,
                code,
                message.clone(),
            ))));
            continue;
        }
        plans.push(
            match find_source(gen_root, &task.id, req.interpreter.as_ref()) {
                Source::Single(Found::Ready { bytes, interpreter }) => {
                    Plan::Single(unit(i, bytes, interpreter))
                }
                Source::Single(other) => Plan::Known(Box::new(known(&task.id, other))),
                Source::Samples(samples) => Plan::Samples(
                    samples
                        .into_iter()
                        .map(|(name, found)| {
                            let answer = match found {
                                Found::Ready { bytes, interpreter } => {
                                    Err(unit(i, bytes, interpreter))
                                }
                                other => Ok(known(&task.id, other)),
                            };
                            (name, answer)
                        })
                        .collect(),
                ),
            },
        );
    }
    (plans, units)
}

/// Runs the eval and returns the exit code. The report goes to stdout.
pub fn eval(req: EvalRequest) -> Result<i32> {
    let clock = Instant::now();
    let gen_root = fs::canonicalize(&req.gen)
        .map_err(|e| Error::Usage(format!("candidates folder `{}`: {e}", req.gen.display())))?;
    let session = Session::new(req.sandbox.clone())?;
    let cache = req.cache.clone().map(Cache::open).transpose()?;
    // Every engine is set up, and each image checked (and pulled if allowed)
    // on each, before any clock; an image's ID is part of every cache key.
    let mut distinct: Vec<&str> = Vec::new();
    for task in &req.tasks {
        if !distinct.contains(&task.image.as_str()) {
            distinct.push(&task.image);
        }
    }
    let explicit = !req.engines.is_empty();
    let mut setups = pool::set_up_all(
        &session.sandbox.docker,
        &req.engines,
        req.jobs,
        req.deliver,
        &distinct,
        session.sandbox.pull,
    )?;
    let images = combine(&distinct, &setups, explicit);
    let (plans, units) = plan(&req, &gen_root, &images);
    let staged = units
        .iter()
        .map(|unit| session.stage(&unit.bytes))
        .collect::<Result<Vec<Staged>>>()?;
    let baked = if units.is_empty() {
        Ok(())
    } else {
        bake_all(&session, &mut setups, explicit)
    };
    let mut refusals = BTreeMap::new();
    let members: Vec<Member> = setups
        .into_iter()
        .filter(|s| s.left_out.is_none())
        .map(|s| {
            refusals.insert(s.member.label.clone(), s.refused);
            s.member
        })
        .collect();
    if let Err(e) = baked {
        // Interrupted while baking: what was baked already goes too.
        let _ = clean_all(&members, &session.run_id);
        return Err(e);
    }

    let tallies: Vec<Mutex<Tally>> = units.iter().map(|_| Mutex::default()).collect();
    let queue = Mutex::new(Queue {
        pending: (0..units.len()).collect(),
        in_flight: 0,
    });
    let wake = Condvar::new();
    let done = AtomicUsize::new(0);
    let progress = std::io::stderr().is_terminal();
    let total = units.len();
    let image_of = |i: usize| req.tasks[units[i].task].image.as_str();
    thread::scope(|scope| {
        for member in &members {
            for _ in 0..member.jobs.min(total) {
                scope.spawn(|| {
                    while let Some(i) = take(&queue, &wake, member, image_of) {
                        // Gives the unit back (or marks it done) however this
                        // iteration ends, a panic included.
                        let mut taken = Taken {
                            queue: &queue,
                            wake: &wake,
                            unit: i,
                            again: false,
                        };
                        let step = run_unit(
                            &session,
                            &req,
                            cache.as_ref(),
                            &images,
                            (&units[i], &staged[i]),
                            member,
                        );
                        let mut tally = lock(&tallies[i]);
                        let moved = |tally: &mut Tally, reason: String| {
                            tally.requeued.push(Requeue {
                                engine: member.label.clone(),
                                reason,
                            });
                        };
                        let keep = |tally: &mut Tally, mut result: Box<TaskResult>| {
                            if explicit && result.cached.is_none() {
                                result.engine = Some(member.label.clone());
                            }
                            tally.result = Some(*result);
                        };
                        taken.again = match step {
                            Step::Judged(result) => {
                                keep(&mut tally, result);
                                false
                            }
                            Step::Interrupted => false,
                            Step::EngineDown(reason) => {
                                member.mark_down(reason.clone());
                                moved(&mut tally, reason);
                                true
                            }
                            Step::Retry(result) => {
                                // Moves off engines that went down do not count.
                                tally.lost += 1;
                                if tally.lost < MAX_ATTEMPTS {
                                    moved(&mut tally, result.message.clone().unwrap_or_default());
                                    true
                                } else {
                                    keep(&mut tally, result);
                                    false
                                }
                            }
                        };
                        drop(tally);
                        let again = taken.again;
                        drop(taken);
                        if again {
                            continue;
                        }
                        let finished = done.fetch_add(1, Ordering::SeqCst) + 1;
                        if progress {
                            console::progress(&format!(
                                "\r\x1b[Ksbx: {finished}/{total} candidates judged"
                            ));
                        }
                    }
                });
            }
        }
    });
    if progress {
        console::progress("\r\x1b[K");
    }
    // Whatever happened, nothing of this run stays on any engine that answers.
    let cleaned = clean_all(&members, &session.run_id);
    if let Some(signal) = signals::received() {
        let removed = match cleaned {
            Ok(n) => format!("{n} leftover containers removed"),
            Err(e) => format!("cleanup failed: {e}"),
        };
        console::note(&format!(
            "sbx: interrupted; every container of this eval was stopped ({removed})"
        ));
        return Ok(exit::for_signal(signal));
    }
    if let Err(e) = cleaned {
        console::note(&format!(
            "sbx: could not clean up {e}; `sbx gc --engine ENGINE --run {}` removes what is left once it answers",
            session.run_id
        ));
    }
    let why_not = |image: &str| -> String {
        let reasons: Vec<String> = members
            .iter()
            .map(|m| match m.down_reason() {
                Some(reason) => format!("engine `{}` stopped answering: {reason}", m.label),
                None => match refusals.get(&m.label).and_then(|r| r.get(image)) {
                    Some((_, message)) => format!("engine `{}`: {message}", m.label),
                    None => format!("engine `{}` did not run it", m.label),
                },
            })
            .collect();
        if reasons.is_empty() {
            "no engine could be used".to_string()
        } else {
            format!("no engine left to run it ({})", reasons.join("; "))
        }
    };
    let mut tallies: Vec<Tally> = tallies
        .into_iter()
        .map(|tally| tally.into_inner().unwrap_or_else(|p| p.into_inner()))
        .collect();
    let mut take = |index: usize, task: &Task| {
        let tally = &mut tallies[index];
        let mut result = tally
            .result
            .take()
            .unwrap_or_else(|| TaskResult::error(&task.id, "no_engine", why_not(&task.image)));
        result.requeued = std::mem::take(&mut tally.requeued);
        result
    };
    let results: Vec<TaskResult> = plans
        .into_iter()
        .zip(&req.tasks)
        .map(|(plan, task)| match plan {
            Plan::Known(result) => *result,
            Plan::Single(index) => take(index, task),
            Plan::Samples(samples) => {
                let samples = samples
                    .into_iter()
                    .map(|(name, answer)| {
                        let mut result = answer.unwrap_or_else(|index| take(index, task));
                        result.sample = Some(name);
                        result
                    })
                    .collect();
                report::passk::samples_entry(&task.id, samples, &req.ks)
            }
        })
        .collect();
    // The report first: a JUnit file that cannot be written must not cost
    // the user the results.
    report::json::write_json(&results)?;
    if let Some(path) = &req.junit {
        report::junit::write_junit(path, &results, clock.elapsed())?;
    }
    let summary = report::summary::Summary::of(&results);
    let mut line = summary.line(clock.elapsed());
    for (key, mean, tasks) in report::passk::pass_at_k_means(&results) {
        line.push_str(&format!("; mean {key} {mean:.3} over {tasks} tasks"));
    }
    console::note(&line);
    Ok(summary.exit_code())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// What became of one unit over its runs.
#[derive(Debug, Default)]
struct Tally {
    /// Its result, once judged.
    result: Option<TaskResult>,
    /// Engines it was moved off, and why.
    requeued: Vec<Requeue>,
    /// Runs that lost their connection to an engine that still answered.
    lost: usize,
}

/// The one work queue of an eval, shared by every engine's workers.
#[derive(Debug)]
struct Queue {
    /// Units not yet taken, in task order (a requeued unit goes first).
    pending: VecDeque<usize>,
    /// Units being run; one may still come back.
    in_flight: usize,
}

/// A unit taken from the queue: when dropped, it is no longer in flight,
/// and goes back to the front of the queue if `again`.
struct Taken<'a> {
    queue: &'a Mutex<Queue>,
    wake: &'a Condvar,
    unit: usize,
    again: bool,
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        {
            let mut q = lock(self.queue);
            q.in_flight -= 1;
            if self.again {
                q.pending.push_front(self.unit);
            }
        }
        self.wake.notify_all();
    }
}

/// The next unit `member` can run; `None` when it has nothing left to do
/// (nothing pending it can run and nothing in flight that could come back),
/// when it is down, or on a signal.
fn take<'a>(
    queue: &Mutex<Queue>,
    wake: &Condvar,
    member: &Member,
    image_of: impl Fn(usize) -> &'a str,
) -> Option<usize> {
    let mut q = lock(queue);
    loop {
        if signals::received().is_some() || member.is_down() {
            return None;
        }
        if let Some(pos) = q.pending.iter().position(|&i| member.runs(image_of(i))) {
            let i = q.pending.remove(pos)?;
            q.in_flight += 1;
            return Some(i);
        }
        if q.in_flight == 0 {
            return None;
        }
        q = wake
            .wait_timeout(q, Duration::from_millis(200))
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
}

/// The `reason` of a result whose run lost its engine: never the
/// candidate's failure.
const ENGINE_LOST: &str = "engine_lost";
/// Runs of one unit at most when its engine keeps answering but its runs
/// keep losing the connection.
const MAX_ATTEMPTS: usize = 3;

/// What became of one unit on one engine.
enum Step {
    Judged(Box<TaskResult>),
    Interrupted,
    /// The engine stopped answering: nothing it returned is judged.
    EngineDown(String),
    /// The engine answers, but the run lost its connection to it: run it
    /// again (this result stands only after `MAX_ATTEMPTS`).
    Retry(Box<TaskResult>),
}

/// A unit's result: from the cache when it holds one, else judged on
/// `member` (and stored). A result that is not a pass is only kept once the
/// engine has answered after it: a dying engine's exit codes and timeouts
/// are not the candidate's failures.
fn run_unit(
    session: &Session,
    req: &EvalRequest,
    cache: Option<&Cache>,
    images: &BTreeMap<&str, ImageCheck>,
    (unit, staged): (&Unit, &Staged),
    member: &Member,
) -> Step {
    let task = &req.tasks[unit.task];
    let key = cache.map(|cache| {
        // The ID on the engine that runs it (engines may disagree).
        let image_id = member
            .images
            .get(&task.image)
            .map(String::as_str)
            .or(images[task.image.as_str()].as_deref().ok())
            .unwrap_or("");
        KeyInput::new(
            cache.build(),
            task,
            &unit.bytes,
            &unit.interpreter,
            image_id,
            &session.sandbox,
            req.max_output,
            req.fail_fast,
        )
        .key()
    });
    if let (Some(cache), Some(key)) = (cache, &key) {
        if let Some(hit) = cache.get(key, &task.id) {
            return Step::Judged(Box::new(hit));
        }
    }
    let Some(result) = judge(session, req, task, unit, staged, member) else {
        return Step::Interrupted;
    };
    if result.status != Status::Pass {
        match member.ping() {
            Err(Ping::Interrupted) => return Step::Interrupted,
            Err(Ping::Down(why)) => return Step::EngineDown(why),
            Ok(()) if result.reason.as_deref() == Some(ENGINE_LOST) => {
                return Step::Retry(Box::new(result))
            }
            Ok(()) => {}
        }
    }
    if let (Some(cache), Some(key)) = (cache, &key) {
        cache.put(key, &result);
    }
    Step::Judged(Box::new(result))
}

/// Each image's ID (from the first engine that has it), or why no engine
/// can run it. Engines that disagree on an image's ID are pointed out.
fn combine<'a>(
    distinct: &[&'a str],
    setups: &[Setup],
    explicit: bool,
) -> BTreeMap<&'a str, ImageCheck> {
    let named = |label: &str, message: &str| {
        if explicit {
            format!("engine `{label}`: {message}")
        } else {
            message.to_string()
        }
    };
    for setup in setups.iter().filter(|_| explicit) {
        let label = &setup.member.label;
        if let Some((_, why)) = &setup.left_out {
            console::note(&format!("sbx: engine `{label}` left out: {why}"));
        }
        for (image, (_, why)) in &setup.refused {
            console::note(&format!(
                "sbx: engine `{label}` cannot run tasks of image `{image}`, which run on the other engines: {why}"
            ));
        }
    }
    let mut images = BTreeMap::new();
    for &image in distinct {
        let ids: Vec<(&str, &String)> = setups
            .iter()
            .filter(|s| s.left_out.is_none())
            .filter_map(|s| {
                s.member
                    .images
                    .get(image)
                    .map(|id| (s.member.label.as_str(), id))
            })
            .collect();
        let check = match ids.first() {
            Some((_, id)) => {
                if ids.iter().any(|(_, other)| other != id) {
                    let list: Vec<String> =
                        ids.iter().map(|(l, id)| format!("{l}: {id}")).collect();
                    console::note(&format!(
                        "sbx: image `{image}` is not the same on every engine ({}); results may depend on the engine",
                        list.join(", ")
                    ));
                }
                Ok((*id).clone())
            }
            None => Err(setups
                .iter()
                .find_map(|s| {
                    let (code, message) = s.left_out.as_ref().or_else(|| s.refused.get(image))?;
                    Some((code.clone(), named(&s.member.label, message)))
                })
                .unwrap_or_else(|| ("no_engine".into(), "no engine was given".into()))),
        };
        images.insert(image, check);
    }
    images
}

/// Bakes the candidates into a throwaway image on every engine that gets
/// them that way, all engines at once.
fn bake_all(session: &Session, setups: &mut [Setup], explicit: bool) -> Result<()> {
    let baking = setups.iter_mut().filter(|s| s.left_out.is_none());
    let results = pool::at_once(
        baking,
        |s| bake::bake(session, &mut s.member, &mut s.refused),
        || Ok(()),
    );
    for result in results {
        result?;
    }
    for setup in setups.iter().filter(|_| explicit) {
        for (code, why) in setup.refused.values() {
            if code == "bake_failed" {
                console::note(&format!("sbx: engine `{}`: {why}", setup.member.label));
            }
        }
    }
    Ok(())
}

/// Removes this eval's containers and baked images from every engine that
/// answers, all at once. The containers found, or the first failure.
fn clean_all(members: &[Member], run_id: &str) -> std::result::Result<usize, String> {
    let results = pool::at_once(
        members,
        |m| clean::clean(m, run_id).map_err(|e| format!("engine `{}`: {e}", m.label)),
        || Ok(0),
    );
    let mut found = 0;
    for result in results {
        found += result?;
    }
    Ok(found)
}

/// A result filled from a run; the caller sets status and reason.
fn result_from_run(id: &str, finished: &Finished) -> TaskResult {
    let exit_code = match finished.ended {
        Ended::Exited(status) => status.code(),
        _ => None,
    };
    TaskResult {
        stderr_tail: tail(
            &String::from_utf8_lossy(&finished.stderr.bytes),
            STDERR_TAIL_CHARS,
        ),
        exit_code,
        duration_ms: u64::try_from(finished.duration.as_millis()).unwrap_or(u64::MAX),
        ..TaskResult::bare(id, Status::Fail)
    }
}

/// Judges one candidate against each case of its task, each in a fresh
/// container. `None` when the eval was interrupted during a run.
fn judge(
    session: &Session,
    req: &EvalRequest,
    task: &Task,
    unit: &Unit,
    staged: &Staged,
    member: &Member,
) -> Option<TaskResult> {
    let run_case = |case: &Case| {
        let candidate = Candidate {
            staged,
            image: &task.image,
            interpreter: &unit.interpreter,
            interactive: true,
        };
        judge_case(session, req, task, &candidate, member, case)
    };
    if !task.multi_case {
        return run_case(&task.cases[0]);
    }
    // Several cases: the task passes when every case passes. The entry
    // carries the first failing case's details; an `error` in any case
    // makes the task an `error` (sbx could not judge it).
    let mut passed = 0;
    let mut duration_ms = 0;
    let mut first_failure: Option<TaskResult> = None;
    let mut last_pass: Option<TaskResult> = None;
    for (k, case) in task.cases.iter().enumerate() {
        let mut result = run_case(case)?;
        duration_ms += result.duration_ms;
        result.case = Some(k + 1);
        match result.status {
            Status::Pass => {
                passed += 1;
                last_pass = Some(result);
            }
            Status::Error => {
                first_failure = Some(result);
                break;
            }
            Status::Fail | Status::Missing => {
                first_failure.get_or_insert(result);
                if req.fail_fast {
                    break;
                }
            }
        }
    }
    let mut result = match first_failure.or(last_pass) {
        Some(result) => result,
        None => TaskResult::error(&task.id, "no_case", "the task has no case".into()),
    };
    if result.status == Status::Pass {
        result.case = None;
    }
    result.cases_passed = Some(passed);
    result.cases_total = Some(task.cases.len());
    result.duration_ms = duration_ms;
    Some(result)
}

/// Runs one case of a task in its own container and judges it. `None` when
/// the eval was interrupted during the run.
fn judge_case(
    session: &Session,
    req: &EvalRequest,
    task: &Task,
    candidate: &Candidate<'_>,
    member: &Member,
    case: &Case,
) -> Option<TaskResult> {
    let run = session
        .prepare(candidate, &member.delivery)
        .and_then(|prepared| {
            let name = prepared.name.clone();
            session
                .execute(
                    &member.docker,
                    prepared,
                    StdinSource::Bytes(Arc::clone(&case.stdin)),
                    OutputSink::Capture {
                        max: req.max_output,
                    },
                    task.timeout,
                )
                .map(|finished| (name, finished))
        });
    let (name, finished) = match run {
        Ok(run) => run,
        Err(e) => return Some(TaskResult::error(&task.id, e.code(), e.to_string())),
    };
    let mut result = result_from_run(&task.id, &finished);
    let record = ContainerRecord {
        docker: &member.docker,
        name: &name,
        since: finished.started,
        offset: member.offset,
    };
    let verdict = outcome::judge(&finished, |stdout| case.matcher.mismatch(stdout), &record);
    // A failure on the program's own exit is kept only if the engine
    // recorded that exit: a cut connection also ends the client.
    if let (Verdict::Fail(reason), Ended::Exited(status)) = (&verdict, finished.ended) {
        if !matches!(reason, FailReason::Oom) {
            if let Err(why) = events::confirm_exit(&record, status.code()) {
                return Some(TaskResult::error(&task.id, ENGINE_LOST, why));
            }
        }
    }
    match verdict {
        Verdict::Interrupted => return None,
        Verdict::DockerError(message) => {
            return Some(TaskResult::error(&task.id, "start_failed", message))
        }
        Verdict::Pass => {
            result.status = Status::Pass;
            result.stderr_tail.clear();
        }
        Verdict::Fail(reason) => {
            result.status = Status::Fail;
            result.reason = Some(reason.code().to_string());
            if let FailReason::WrongOutput(diff) = reason {
                result.diff = Some(diff);
            }
        }
    }
    Some(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> TaskDefaults {
        TaskDefaults {
            image: "python:3.12-slim".into(),
            timeout: Duration::from_secs(10),
            compare: Mode::Exact,
            tolerance: Tolerance::default(),
        }
    }

    fn parse(text: &str) -> Result<Vec<Task>, String> {
        parse_tasks(text, &defaults())
    }

    #[test]
    fn original_schema_parses() {
        let tasks =
            parse(r#"[{"id": "fizzbuzz", "prompt": "p", "stdin": "", "expect": "1\n"}]"#).unwrap();
        assert_eq!(tasks.len(), 1);
        assert_eq!(tasks[0].id, "fizzbuzz");
        assert_eq!(tasks[0].timeout, Duration::from_secs(10));
        assert_eq!(tasks[0].image, "python:3.12-slim");
        assert!(!tasks[0].multi_case);
        assert!(tasks[0].cases[0].matcher.mismatch("1\n").is_none());
    }

    #[test]
    fn task_overrides() {
        let tasks = parse(
            r#"[{"id": "a", "stdin": "x", "expect": "1 2", "timeout": 2.5, "image": "sbx-busybox:latest", "compare": "tokens"},
                {"id": "b", "stdin": "", "expect": "", "timeout": "1m"}]"#,
        )
        .unwrap();
        assert_eq!(tasks[0].timeout, Duration::from_millis(2500));
        assert_eq!(tasks[0].image, "sbx-busybox:latest");
        assert_eq!(&*tasks[0].cases[0].stdin, b"x");
        assert!(tasks[0].cases[0].matcher.mismatch("1\n2\n").is_none());
        assert_eq!(tasks[1].timeout, Duration::from_secs(60));
    }

    #[test]
    fn cases_parse_with_the_task_compare_mode() {
        let tasks = parse(
            r#"[{"id": "a", "compare": "trim", "cases": [
                {"stdin": "1", "expect": "one"},
                {"stdin": "2", "expect": "two  "}
            ]}]"#,
        )
        .unwrap();
        assert!(tasks[0].multi_case);
        assert_eq!(tasks[0].cases.len(), 2);
        assert_eq!(&*tasks[0].cases[1].stdin, b"2");
        assert!(tasks[0].cases[1].matcher.mismatch("two\n").is_none());
    }

    #[test]
    fn bad_files_are_refused_with_a_reason() {
        for (text, needle) in [
            ("", "not valid JSON"),
            ("{", "not valid JSON"),
            (r#"{"id": "a"}"#, "expected a JSON list"),
            ("[1]", "task #1 is not a JSON object"),
            (
                r#"[{"stdin": "", "expect": ""}]"#,
                "task #1: missing field `id`",
            ),
            (
                r#"[{"id": 3, "stdin": "", "expect": ""}]"#,
                "`id` must be a string",
            ),
            (
                r#"[{"id": "a", "expect": ""}]"#,
                "task `a` (#1): missing field `stdin`",
            ),
            (r#"[{"id": "a", "stdin": ""}]"#, "missing field `expect`"),
            (
                r#"[{"id": "a", "stdin": "", "expect": "", "extra": 1}]"#,
                "task `a` (#1): unknown field `extra`",
            ),
            (
                r#"[{"id": "a", "stdin": "", "expect": ""}, {"id": "a", "stdin": "", "expect": ""}]"#,
                "task `a` (#2): duplicate id",
            ),
            (
                r#"[{"id": "../etc/passwd", "stdin": "", "expect": ""}]"#,
                "must not start with `.`",
            ),
            (
                r#"[{"id": "a/b", "stdin": "", "expect": ""}]"#,
                "must not contain `/`",
            ),
            (
                r#"[{"id": ".hidden", "stdin": "", "expect": ""}]"#,
                "must not start with `.`",
            ),
            (
                r#"[{"id": "..", "stdin": "", "expect": ""}]"#,
                "must not start with `.`",
            ),
            (r#"[{"id": "", "stdin": "", "expect": ""}]"#, "id is empty"),
            (
                r#"[{"id": "a", "stdin": 1, "expect": ""}]"#,
                "`stdin` must be a string",
            ),
            (
                r#"[{"id": "a", "stdin": "", "expect": "", "timeout": 0}]"#,
                "invalid timeout",
            ),
            (
                r#"[{"id": "a", "stdin": "", "expect": "", "timeout": true}]"#,
                "`timeout` must be a number",
            ),
            (
                r#"[{"id": "a", "stdin": "", "expect": "", "image": "--privileged"}]"#,
                "invalid image reference",
            ),
            (
                r#"[{"id": "a", "stdin": "", "expect": "", "compare": "fuzzy"}]"#,
                "unknown compare mode `fuzzy`",
            ),
            (
                r#"[{"id": "a", "stdin": "", "expect": "(", "compare": "regex"}]"#,
                "invalid regex",
            ),
            (
                r#"[{"id": "a", "stdin": "", "expect": "", "cases": [{"stdin": "", "expect": ""}]}]"#,
                "either `cases` or `stdin`/`expect`, not both",
            ),
            (
                r#"[{"id": "a", "cases": []}]"#,
                "`cases` must be a non-empty list",
            ),
            (
                r#"[{"id": "a", "cases": {}}]"#,
                "`cases` must be a non-empty list",
            ),
            (
                r#"[{"id": "a", "cases": [1]}]"#,
                "task `a` (#1), case 1: not a JSON object",
            ),
            (
                r#"[{"id": "a", "cases": [{"stdin": ""}]}]"#,
                "task `a` (#1), case 1: missing field `expect`",
            ),
            (
                r#"[{"id": "a", "cases": [{"stdin": "", "expect": "", "x": 1}]}]"#,
                "case 1: unknown field `x`",
            ),
            (
                r#"[{"id": "a", "compare": "regex", "cases": [{"stdin": "", "expect": "("}]}]"#,
                "case 1: invalid regex",
            ),
        ] {
            let err = parse(text).expect_err(text);
            assert!(
                err.contains(needle),
                "{text}: {err} should contain {needle}"
            );
        }
    }

    #[test]
    fn candidates_are_found_by_extension_and_symlinks_stay_inside() {
        let dir = tempfile::tempdir().unwrap();
        let gen = dir.path().join("gen");
        fs::create_dir(&gen).unwrap();
        fs::write(gen.join("a.py"), "print(1)\n").unwrap();
        fs::write(gen.join("b.sh"), "echo 1\n").unwrap();
        fs::write(dir.path().join("secret.py"), "s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.py"), gen.join("c.py")).unwrap();
        std::os::unix::fs::symlink(gen.join("a.py"), gen.join("d.py")).unwrap();
        fs::create_dir(gen.join("e.py")).unwrap();
        let root = fs::canonicalize(&gen).unwrap();
        let find_candidate = |root: &Path, id: &str, interp: Option<&Vec<String>>| match find_source(
            root, id, interp,
        ) {
            Source::Single(found) => found,
            Source::Samples(s) => panic!("not samples: {s:?}"),
        };

        match find_candidate(&root, "a", None) {
            Found::Ready { bytes, interpreter } => {
                assert_eq!(bytes, b"print(1)\n");
                assert_eq!(interpreter, ["python3"]);
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(find_candidate(&root, "b", None), Found::Ready { interpreter, .. } if interpreter == ["sh"])
        );
        let custom = vec!["python3".to_string(), "-u".to_string()];
        assert!(
            matches!(find_candidate(&root, "b", Some(&custom)), Found::Ready { interpreter, .. } if interpreter == custom)
        );
        assert!(matches!(
            find_candidate(&root, "c", None),
            Found::Refused {
                reason: "candidate_outside_gen",
                ..
            }
        ));
        assert!(matches!(
            find_candidate(&root, "d", None),
            Found::Ready { .. }
        ));
        assert!(matches!(
            find_candidate(&root, "e", None),
            Found::Refused {
                reason: "not_a_file",
                ..
            }
        ));
        assert!(matches!(find_candidate(&root, "zz", None), Found::Missing));
    }

    #[test]
    fn a_folder_holds_samples_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        let gen = dir.path().join("gen");
        fs::create_dir_all(gen.join("t")).unwrap();
        fs::write(gen.join("t/b.py"), "print(2)\n").unwrap();
        fs::write(gen.join("t/a.sh"), "echo 1\n").unwrap();
        fs::write(gen.join("t/c.txt"), "?").unwrap();
        fs::write(gen.join("t/.hidden.py"), "x").unwrap();
        fs::write(dir.path().join("secret.py"), "s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.py"), gen.join("t/d.py")).unwrap();
        // A folder that leads outside is not followed either.
        fs::create_dir(dir.path().join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), gen.join("out")).unwrap();
        let root = fs::canonicalize(&gen).unwrap();

        let Source::Samples(samples) = find_source(&root, "t", None) else {
            panic!("expected samples")
        };
        let names: Vec<&str> = samples.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a.sh", "b.py", "c.txt", "d.py"]);
        assert!(
            matches!(&samples[0].1, Found::Ready { interpreter, .. } if interpreter == &["sh"])
        );
        assert!(
            matches!(&samples[1].1, Found::Ready { interpreter, .. } if interpreter == &["python3"])
        );
        assert!(matches!(
            &samples[2].1,
            Found::Refused {
                reason: "unknown_extension",
                ..
            }
        ));
        assert!(matches!(
            &samples[3].1,
            Found::Refused {
                reason: "candidate_outside_gen",
                ..
            }
        ));
        assert!(matches!(
            find_source(&root, "out", None),
            Source::Single(Found::Refused {
                reason: "candidate_outside_gen",
                ..
            })
        ));
    }
}
