//! Compiled and other languages on the real engine, on the polyglot image
//! (`scripts/build-images.sh polyglot`): for each language a passing
//! candidate that reads its stdin, wrong output, a timeout, and a compile
//! error where there is a compile step, with the same verdicts in every
//! `--isolate` mode; a compiled program that cannot execute a copy of
//! itself from /tmp or /dev/shm nor write next to its binary, in every
//! mode; a worker reused after a compiled candidate with no trace of its
//! build; a multi-case task compiled once (counted in the engine's
//! events); a build too large to deliver, run a container per case; the
//! size rule and timeouts; a compiler missing from the image;
//! `sbx doctor`'s languages line. Without an engine or the image every
//! test panics, saying what is missing.
//!
//! Run with: `cargo test --test engine languages:: -- --test-threads 2`

use crate::common;

use std::fs;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use common::{by_id, finish, image_exists, report, try_docker, Cleanup, Out, PYTHON};

const POLYGLOT: &str = "sbx-polyglot:bookworm";
/// Bound on one sbx eval of this file (compiles of javac, rustc and go at
/// half a core each are slow on a loaded host).
const EVAL_LIMIT: Duration = Duration::from_secs(600);

fn require_polyglot() {
    common::require_engine();
    assert!(
        image_exists(POLYGLOT).unwrap_or(false),
        "the image {POLYGLOT} is missing: build it with `scripts/build-images.sh polyglot` (nothing is ever pulled)"
    );
}

/// A test's run id, scratch folder and cleanup (containers and volumes).
struct Run {
    _guard: Cleanup,
    id: String,
    dir: tempfile::TempDir,
}

impl Run {
    fn new(test: &str) -> Run {
        require_polyglot();
        let id = common::run_id("l", test);
        Run {
            _guard: Cleanup::new(&[&id]),
            dir: tempfile::Builder::new()
                .prefix("sbx-lang-")
                .tempdir()
                .expect("a scratch folder"),
            id,
        }
    }

    fn gen(&self, name: &str, text: &str) {
        let gen = self.dir.path().join("gen");
        fs::create_dir_all(&gen).expect("gen folder");
        fs::write(gen.join(name), text).expect("write candidate");
    }

    fn eval(&self, tasks: &Value, image: &str, extra: &[&str]) -> Out {
        // The compile step's limit is wall-clock time.
        let _shared = common::not_beside_load();
        let tasks_file = self.dir.path().join("tasks.json");
        fs::write(
            &tasks_file,
            serde_json::to_vec(tasks).expect("as built above"),
        )
        .expect("as built above");
        let mut cmd = common::sbx(Some(&self.id));
        cmd.current_dir(self.dir.path())
            .arg("eval")
            .arg("--tasks")
            .arg(&tasks_file)
            .arg("--gen")
            .arg(self.dir.path().join("gen"))
            .args(["--image", image, "--pull", "never"])
            .args(extra);
        finish(cmd, None, EVAL_LIMIT)
    }

    /// Build volumes of this run still on the engine.
    fn volumes(&self) -> Vec<String> {
        let out = try_docker(&[
            "volume",
            "ls",
            "-q",
            "--filter",
            &format!("label=sbx.run={}", self.id),
        ])
        .expect("docker volume ls");
        out.stdout.split_whitespace().map(str::to_string).collect()
    }

    /// Container names created under this run's label since `since`.
    fn created_since(&self, since: f64) -> Vec<String> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("as built above")
            .as_secs_f64();
        let out = try_docker(&[
            "events",
            "--since",
            &format!("{:.3}", since - 1.0),
            "--until",
            &format!("{:.3}", now + 0.5),
            "--filter",
            &format!("label=sbx.run={}", self.id),
            "--filter",
            "event=create",
            "--format",
            "{{.Actor.Attributes.name}}",
        ])
        .expect("docker events");
        out.stdout.lines().map(str::to_string).collect()
    }

    fn assert_clean(&self) {
        common::assert_nothing_left(&self.id, "");
        assert_eq!(self.volumes(), Vec::<String>::new(), "build volumes left");
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        // Containers go with the guard; volumes by label here (after it
        // would be too late only if a container still held one: retried).
        for _ in 0..3 {
            let Ok(out) = try_docker(&[
                "volume",
                "ls",
                "-q",
                "--filter",
                &format!("label=sbx.run={}", self.id),
            ]) else {
                return;
            };
            let names: Vec<&str> = out.stdout.split_whitespace().collect();
            if names.is_empty() {
                return;
            }
            let mut args = vec!["volume", "rm", "-f", "--"];
            args.extend(names);
            let _ = try_docker(&args);
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

/// (extension, passing program reading two numbers from stdin and printing
/// their sum, wrong program, endless program, program that does not compile)
fn programs() -> Vec<(
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    Option<&'static str>,
)> {
    vec![
        (
            "c",
            "#include <stdio.h>\nint main(void){int a,b;if(scanf(\"%d %d\",&a,&b)!=2)return 3;printf(\"%d\\n\",a+b);return 0;}\n",
            "#include <stdio.h>\nint main(void){printf(\"6\\n\");return 0;}\n",
            "int main(void){volatile int x=0;for(;;)x++;}\n",
            Some("int main(void){ return undefined_name; }\n"),
        ),
        (
            "cpp",
            "#include <iostream>\nint main(){int a,b;if(!(std::cin>>a>>b))return 3;std::cout<<a+b<<\"\\n\";}\n",
            "#include <iostream>\nint main(){std::cout<<6<<\"\\n\";}\n",
            "int main(){volatile int x=0;for(;;)x++;}\n",
            Some("#include <vector>\nint main(){ std::vector<int> v = 3; }\n"),
        ),
        (
            "go",
            "package main\nimport \"fmt\"\nfunc main(){var a,b int\nif _,err:=fmt.Scan(&a,&b);err!=nil{panic(err)}\nfmt.Println(a+b)}\n",
            "package main\nimport \"fmt\"\nfunc main(){fmt.Println(6)}\n",
            "package main\nfunc main(){for{}}\n",
            Some("package main\nfunc main(){ x := 1 }\n"),
        ),
        (
            "rs",
            "use std::io::Read;\nfn main(){let mut s=String::new();std::io::stdin().read_to_string(&mut s).unwrap();let n:Vec<i64>=s.split_whitespace().map(|w|w.parse().unwrap()).collect();println!(\"{}\",n[0]+n[1]);}\n",
            "fn main(){println!(\"6\");}\n",
            "fn main(){loop{std::thread::sleep(std::time::Duration::from_millis(50));}}\n",
            Some("fn main(){ let x: u32 = \"no\"; }\n"),
        ),
        (
            "java",
            // A public class not named Main, in a file not named after it.
            "import java.util.Scanner;\npublic class Solution { public static void main(String[] a){ Scanner s=new Scanner(System.in); int x=s.nextInt(), y=s.nextInt(); System.out.println(x+y);} }\n",
            "public class Main { public static void main(String[] a){ System.out.println(6);} }\n",
            "public class Main { public static void main(String[] a){ long x=0; while(true){x++;} } }\n",
            Some("public class Main { public static void main(String[] a){ int x = \"no\"; } }\n"),
        ),
        (
            "js",
            "const d=require('fs').readFileSync(0,'utf8').trim().split(/\\s+/).map(Number);console.log(d[0]+d[1]);\n",
            "console.log(6);\n",
            "for(;;){}\n",
            None,
        ),
        (
            "rb",
            "a,b=STDIN.read.split.map(&:to_i)\nputs a+b\n",
            "puts 6\n",
            "loop {}\n",
            None,
        ),
        (
            "sh",
            "read a b\necho $((a+b))\n",
            "echo 6\n",
            "while :; do :; done\n",
            None,
        ),
        (
            "py",
            "a,b=map(int,input().split())\nprint(a+b)\n",
            "print(6)\n",
            "while True: pass\n",
            None,
        ),
    ]
}

/// The languages suite: for each language a passing, a wrong and an
/// endless candidate, and one that does not compile where there is a
/// compile step; the tasks and what each must give.
fn languages_suite(run: &Run) -> (Value, Vec<(String, &'static str, &'static str)>) {
    let mut tasks = Vec::new();
    let mut want: Vec<(String, &str, &str)> = Vec::new();
    for (ext, pass, wrong, endless, broken) in programs() {
        let mut add = |kind: &str,
                       text: &str,
                       timeout: u64,
                       status: &'static str,
                       reason: &'static str| {
            let id = format!("{ext}_{kind}");
            run.gen(&format!("{id}.{ext}"), text);
            tasks.push(json!({"id": id, "prompt": "", "stdin": "2 3\n", "expect": "5\n", "timeout": timeout}));
            want.push((id, status, reason));
        };
        // Generous for programs that should finish (the JVM's start on a
        // loaded host); short for the endless ones.
        add("pass", pass, 60, "pass", "");
        add("wrong", wrong, 60, "fail", "wrong_output");
        // Rust's endless program sleeps in a loop: stuck, not slow, so the
        // wall-clock backstop stops it (`wall_timeout`); the others spin
        // and reach the CPU-time limit (`timeout`).
        let stuck = if ext == "rs" {
            "wall_timeout"
        } else {
            "timeout"
        };
        add("timeout", endless, 3, "fail", stuck);
        if let Some(broken) = broken {
            add("cerr", broken, 60, "fail", "compile_error");
        }
    }
    // .cc is C++ too.
    let cc = programs()[1].1;
    run.gen("cc_pass.cc", cc);
    tasks.push(
        json!({"id": "cc_pass", "prompt": "", "stdin": "2 3\n", "expect": "5\n", "timeout": 60}),
    );
    want.push(("cc_pass".into(), "pass", ""));
    (Value::Array(tasks), want)
}

/// A task's id, status and reason.
type Verdict = (String, Value, Value);

#[test]
fn every_language_passes_fails_times_out_and_reports_compile_errors_in_every_mode() {
    // Every language runs in the runner in `candidate` and `worker` modes
    // (compiled ones from their delivered build): the same statuses and
    // reasons as a container per case.
    let run = Run::new("all");
    let (tasks, want) = languages_suite(&run);
    let mut seen: Vec<(&str, Vec<Verdict>)> = Vec::new();
    for mode in ["case", "candidate", "worker"] {
        let started = std::time::Instant::now();
        let out = run.eval(&tasks, POLYGLOT, &["-j", "2", "--isolate", mode]);
        eprintln!(
            "{mode}: eval of {} candidates took {:?}",
            want.len(),
            started.elapsed()
        );
        let results = by_id(&report(&out));
        for (id, status, reason) in &want {
            let r = &results[id];
            assert_eq!(r["status"], *status, "{mode} {id}: {r}\n{}", out.stderr);
            if !reason.is_empty() {
                assert_eq!(r["reason"], *reason, "{mode} {id}: {r}");
            }
        }
        // The compiler's own message is in stderr_tail.
        for (id, needle) in [
            ("c_cerr", "undefined_name"),
            ("cpp_cerr", "conversion"),
            ("go_cerr", "declared"),
            ("rs_cerr", "expected `u32`"),
            ("java_cerr", "incompatible types"),
        ] {
            let tail = results[id]["stderr_tail"].as_str().expect("as built above");
            assert!(tail.contains(needle), "{mode} {id}: {tail:?}");
        }
        // A compiled candidate's entry has its compile time in every mode.
        assert!(
            results["cpp_pass"]["compile_ms"].as_u64().is_some(),
            "{mode}: {}",
            results["cpp_pass"]
        );
        assert_eq!(out.code(), 1, "{mode}: {}", out.stderr);
        run.assert_clean();
        let verdicts = want
            .iter()
            .map(|(id, _, _)| {
                let r = &results[id];
                (id.clone(), r["status"].clone(), r["reason"].clone())
            })
            .collect();
        seen.push((mode, verdicts));
    }
    for (mode, verdicts) in &seen[1..] {
        assert_eq!(verdicts, &seen[0].1, "{mode} against case");
    }
}

/// A C program that copies its own binary to `dir` and executes the copy;
/// it prints what each step gave.
fn write_then_exec(dir: &str) -> String {
    format!(
        r#"#include <stdio.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
int main(int argc, char **argv) {{
    if (argc > 1) {{ printf("the copy ran\n"); return 0; }}
    FILE *in = fopen("/proc/self/exe", "rb"), *out = fopen("{dir}/copy", "wb");
    if (!out) {{ printf("write: refused\n"); return 0; }}
    char buf[65536]; size_t n;
    while (in && (n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
    fclose(out);
    chmod("{dir}/copy", 0755);
    printf("write: done\n");
    fflush(stdout);
    char *args[] = {{"{dir}/copy", "again", NULL}};
    execv("{dir}/copy", args);
    printf("exec: %s\n", strerror(errno));
    return 0;
}}
"#
    )
}

/// A C program that copies its own binary to an anonymous memory file and
/// executes the copy with `fexecve`; it prints what each step gave.
const MEMFD_THEN_EXEC: &str = r#"#define _GNU_SOURCE
#include <stdio.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
extern char **environ;
int main(int argc, char **argv) {
    if (argc > 1) { printf("the copy ran\n"); return 0; }
    int fd = memfd_create("copy", 0);
    if (fd < 0) { printf("memfd: %s\n", strerror(errno)); return 0; }
    int self = open("/proc/self/exe", O_RDONLY);
    char buf[65536]; ssize_t n;
    while ((n = read(self, buf, sizeof buf)) > 0) write(fd, buf, n);
    char *args[] = {"copy", "again", NULL};
    fexecve(fd, args, environ);
    printf("exec: %s\n", strerror(errno));
    return 0;
}
"#;

#[test]
fn a_compiled_program_cannot_execute_what_it_writes_in_any_mode() {
    // Next to its binary (the build: read-only in `case` mode, root's in
    // the runner's) it cannot write; in /tmp and /dev/shm it can, but not
    // execute. The runner's build place is the one exec-allowed place,
    // and not the candidate's to write, nor is its parent.
    let run = Run::new("noexec");
    let places = [
        ("build", "/sbx/build", "write: refused\n"),
        ("buildparent", "/sbx", "write: refused\n"),
        ("tmp", "/tmp", "write: done\nexec: Permission denied\n"),
        ("shm", "/dev/shm", "write: done\nexec: Permission denied\n"),
    ];
    let mut tasks = Vec::new();
    for (id, dir, expect) in places {
        run.gen(&format!("{id}.c"), &write_then_exec(dir));
        tasks.push(json!({"id": id, "prompt": "", "stdin": "", "expect": expect, "timeout": 60}));
    }
    // An anonymous memory file: refused by the kernel (sbx's seccomp
    // filter), so nothing is written that could run.
    run.gen("memfd.c", MEMFD_THEN_EXEC);
    tasks.push(json!({"id": "memfd", "prompt": "", "stdin": "", "expect": "memfd: Function not implemented\n", "timeout": 60}));
    let tasks = Value::Array(tasks);
    for mode in ["case", "candidate", "worker"] {
        let out = run.eval(&tasks, POLYGLOT, &["--isolate", mode, "-j", "2"]);
        let results = by_id(&report(&out));
        for id in places.iter().map(|p| p.0).chain(["memfd"]) {
            assert_eq!(
                results[id]["status"], "pass",
                "{mode} {id}: {}\n{}",
                results[id], out.stderr
            );
        }
        assert_eq!(out.code(), 0, "{mode}: {}", out.stderr);
        run.assert_clean();
    }
}

#[test]
fn a_worker_reused_after_a_compiled_candidate_holds_no_trace_of_its_build() {
    // One worker, one container: a compiled candidate, then a shell one
    // that looks for the build and for the source in /work. The reset
    // between them removed both (and verified it).
    let run = Run::new("unload");
    run.gen("a_sum.c", programs()[0].1);
    run.gen(
        "b_look.sh",
        "ls -A /sbx /work; test -e /sbx/build/main && echo build left; echo end\n",
    );
    let tasks = json!([
        {"id": "a_sum", "prompt": "", "stdin": "2 3\n", "expect": "5\n", "timeout": 60},
        {"id": "b_look", "prompt": "", "stdin": "", "expect": "/sbx:\n\n/work:\ntask\nend\n", "timeout": 60}
    ]);
    let since = now();
    let out = run.eval(&tasks, POLYGLOT, &["--isolate", "worker", "-j", "1"]);
    let results = by_id(&report(&out));
    for id in ["a_sum", "b_look"] {
        assert_eq!(
            results[id]["status"], "pass",
            "{id}: {}\n{}",
            results[id], out.stderr
        );
    }
    let created = run.created_since(since);
    let compiles = created.iter().filter(|n| n.contains("-compile-")).count();
    assert_eq!(
        (compiles, created.len() - compiles),
        (1, 1),
        "one compile, one runner container: {created:?}"
    );
    run.assert_clean();
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("as built above")
        .as_secs_f64()
}

#[test]
fn a_task_with_several_cases_compiles_once_in_every_mode() {
    // One compile container in every mode; then a container per case
    // (`case`), or one runner container for all of them.
    let tasks = json!([{"id": "sum", "prompt": "", "timeout": 60, "cases": [
        {"stdin": "1 2\n", "expect": "3\n"},
        {"stdin": "2 2\n", "expect": "4\n"},
        {"stdin": "40 2\n", "expect": "42\n"}
    ]}]);
    for (mode, runs) in [("case", 3), ("candidate", 1), ("worker", 1)] {
        // A run of its own per mode: the events are read with a second of
        // slack, which would count the previous mode's last containers.
        let run = Run::new(&format!("once-{mode}"));
        run.gen("sum.c", programs()[0].1);
        let since = now();
        let out = run.eval(&tasks, POLYGLOT, &["--isolate", mode]);
        let results = by_id(&report(&out));
        assert_eq!(
            results["sum"]["status"], "pass",
            "{mode}: {}\n{}",
            results["sum"], out.stderr
        );
        assert_eq!(results["sum"]["cases_passed"], 3);
        let created = run.created_since(since);
        let compiles = created.iter().filter(|n| n.contains("-compile-")).count();
        assert_eq!(
            (compiles, created.len() - compiles),
            (1, runs),
            "{mode}: containers created: {created:?}"
        );
        run.assert_clean();
    }
}

#[test]
fn the_size_rule_and_timeouts_hold_for_compiled_candidates_in_every_mode() {
    // A source above 8 MiB is never compiled nor run; a compiled program
    // stopped at its timeout in its second case is `timeout` there.
    let run = Run::new("limits");
    let mut big = String::from("int main(void){return 0;}\n/*");
    big.push_str(&"x".repeat(9 << 20));
    big.push_str("*/\n");
    run.gen("big.c", &big);
    run.gen(
        "slow.c",
        "#include <stdio.h>\nint main(void){int n=0;if(scanf(\"%d\",&n)!=1)return 3;if(n==2)for(volatile int x=0;;x++);printf(\"%d\\n\",n);return 0;}\n",
    );
    let tasks = json!([
        {"id": "big", "prompt": "", "stdin": "", "expect": "", "timeout": 60},
        {"id": "slow", "prompt": "", "timeout": 5, "cases": [
            {"stdin": "1\n", "expect": "1\n"},
            {"stdin": "2\n", "expect": "2\n"},
            {"stdin": "3\n", "expect": "3\n"}
        ]}
    ]);
    for mode in ["case", "candidate", "worker"] {
        let out = run.eval(&tasks, POLYGLOT, &["--isolate", mode, "-j", "2"]);
        let results = by_id(&report(&out));
        let big = &results["big"];
        assert_eq!(
            (big["status"].as_str(), big["reason"].as_str()),
            (Some("fail"), Some("candidate_too_large")),
            "{mode}: {big}"
        );
        assert!(
            big.get("compile_ms").is_none(),
            "{mode}: never compiled: {big}"
        );
        let slow = &results["slow"];
        assert_eq!(
            (slow["status"].as_str(), slow["reason"].as_str()),
            (Some("fail"), Some("timeout")),
            "{mode}: {slow}\n{}",
            out.stderr
        );
        // Fail-fast (the default): the third case never ran.
        assert_eq!(
            (slow["case"].as_u64(), slow["cases_passed"].as_u64()),
            (Some(2), Some(1)),
            "{mode}: {slow}"
        );
        assert_eq!(out.code(), 1, "{mode}: {}", out.stderr);
        run.assert_clean();
    }
}

#[test]
fn a_build_too_large_to_deliver_runs_a_container_per_case_with_the_same_verdict() {
    // A "compiler" (sh, on the busybox image) whose build is a script and a
    // pad: 50 MiB is more than sbx delivers to the runner (48 MiB: the
    // archive is refused), 60 MiB more than it reads of the archive at all
    // (the compile's stdout is cut). Either way the cases run from the
    // build volume, a container each, and pass.
    let run = Run::new("bigbuild");
    fs::write(
        run.dir.path().join("sbx.toml"),
        r#"
[languages.gen]
source = "gen.sh"
compile = ["sh", "{src}", "{out}"]
run = ["sh", "{out}/main"]
"#,
    )
    .expect("write sbx.toml");
    for (id, mib) in [("fifty", 50), ("sixty", 60)] {
        run.gen(
            &format!("{id}.gen"),
            &format!(
                "head -c {} /dev/zero > \"$1/pad\"\nprintf 'read n; echo $((n * 2))\\n' > \"$1/main\"\n",
                mib << 20
            ),
        );
    }
    let cases = json!([
        {"stdin": "1\n", "expect": "2\n"},
        {"stdin": "2\n", "expect": "4\n"},
        {"stdin": "21\n", "expect": "42\n"}
    ]);
    let tasks = json!([
        {"id": "fifty", "prompt": "", "timeout": 60, "cases": cases},
        {"id": "sixty", "prompt": "", "timeout": 60, "cases": cases}
    ]);
    let since = now();
    // Writing 60 MiB, copying it into the volume and packing it takes
    // seconds, and more on a loaded host: the compile's timeout is not
    // what this test is about.
    let out = run.eval(
        &tasks,
        common::BUSYBOX,
        &["--isolate", "worker", "-j", "1", "--compile-timeout", "120"],
    );
    let results = by_id(&report(&out));
    for id in ["fifty", "sixty"] {
        assert_eq!(
            (
                results[id]["status"].as_str(),
                results[id]["cases_passed"].as_u64()
            ),
            (Some("pass"), Some(3)),
            "{id}: {}\n{}",
            results[id],
            out.stderr
        );
        assert!(
            results[id]["compile_ms"].as_u64().is_some(),
            "{}",
            results[id]
        );
    }
    let created = run.created_since(since);
    let compiles = created.iter().filter(|n| n.contains("-compile-")).count();
    assert_eq!(
        (compiles, created.len() - compiles),
        (2, 6),
        "two compiles, then a container per case: {created:?}"
    );
    run.assert_clean();
}

#[test]
fn a_compiler_missing_from_the_image_is_sbx_error() {
    let run = Run::new("missing");
    run.gen("m.c", programs()[0].1);
    let tasks =
        json!([{"id": "m", "prompt": "", "stdin": "2 3\n", "expect": "5\n", "timeout": 30}]);
    let out = run.eval(&tasks, PYTHON, &[]);
    let results = by_id(&report(&out));
    let m = &results["m"];
    assert_eq!(m["status"], "error", "{m}");
    assert_eq!(m["reason"], "toolchain_missing", "{m}");
    let message = m["message"].as_str().expect("as built above");
    assert!(
        message.contains(PYTHON) && message.contains("C (.c)") && message.contains("gcc"),
        "{message}"
    );
    run.assert_clean();
}

#[test]
fn doctor_reports_the_languages_of_the_image() {
    let run = Run::new("doctor");
    let mut cmd = common::sbx(Some(&run.id));
    cmd.args(["doctor", "--image", POLYGLOT, "--json"]);
    let out = finish(cmd, None, Duration::from_secs(180));
    let doc: Value = serde_json::from_str(&out.stdout).expect("doctor JSON");
    let languages = doc["checks"]
        .as_array()
        .expect("as built above")
        .iter()
        .find(|c| c["name"] == "languages")
        .expect("a languages check")
        .clone();
    assert_eq!(languages["state"], "ok");
    assert_eq!(
        languages["detail"],
        "compile and run: C (.c), C++ (.cpp), C++ (.cc), Go (.go), Rust (.rs), Java (.java); run: Python (.py), shell (.sh), JavaScript (.js), Ruby (.rb); missing: none"
    );
    // The python image runs Python and shell only.
    let mut cmd = common::sbx(Some(&run.id));
    cmd.args(["doctor", "--image", PYTHON, "--json"]);
    let out = finish(cmd, None, Duration::from_secs(180));
    let doc: Value = serde_json::from_str(&out.stdout).expect("doctor JSON");
    let detail = doc["checks"]
        .as_array()
        .expect("as built above")
        .iter()
        .find(|c| c["name"] == "languages")
        .expect("as built above")["detail"]
        .as_str()
        .expect("as built above")
        .to_string();
    assert!(
        detail.starts_with("compile and run: none; run: Python (.py), shell (.sh); missing: "),
        "{detail}"
    );
    run.assert_clean();
}

#[test]
fn compiled_candidates_work_with_baked_images_too() {
    // `--deliver image` is how remote engines get candidates; forced here
    // on the local engine: the compile step does not depend on it.
    let run = Run::new("deliver");
    run.gen("sum.c", programs()[0].1);
    run.gen("hello.java", programs()[4].1);
    let tasks = json!([
        {"id": "sum", "prompt": "", "timeout": 60, "cases": [
            {"stdin": "1 2\n", "expect": "3\n"},
            {"stdin": "40 2\n", "expect": "42\n"}
        ]},
        {"id": "hello", "prompt": "", "stdin": "20 22\n", "expect": "42\n", "timeout": 60}
    ]);
    let out = run.eval(&tasks, POLYGLOT, &["--deliver", "image", "-j", "2"]);
    let results = by_id(&report(&out));
    for id in ["sum", "hello"] {
        assert_eq!(
            results[id]["status"], "pass",
            "{}\n{}",
            results[id], out.stderr
        );
        assert!(
            results[id]["compile_ms"].as_u64().is_some(),
            "{}",
            results[id]
        );
    }
    run.assert_clean();
}

#[test]
fn gc_removes_build_volumes_left_behind() {
    let run = Run::new("gc");
    let name = format!("sbx-{}-build-0", run.id);
    let created = try_docker(&[
        "volume",
        "create",
        "--label",
        &format!("sbx.run={}", run.id),
        "--",
        &name,
    ])
    .expect("docker volume create");
    assert_eq!(created.code(), 0, "{}", created.stderr);
    assert_eq!(run.volumes(), std::slice::from_ref(&name));
    let mut cmd = common::sbx(None);
    cmd.args(["gc", "--run", &run.id]);
    let out = finish(cmd, None, Duration::from_secs(60));
    assert_eq!(out.code(), 0, "{}", out.stderr);
    assert!(out.stdout.contains(&name), "{}", out.stdout);
    assert!(
        out.stderr.contains("(and 1 build volume(s))"),
        "{}",
        out.stderr
    );
    run.assert_clean();
}

#[test]
fn sbx_toml_overrides_and_adds_languages() {
    let run = Run::new("toml");
    fs::write(
        run.dir.path().join("sbx.toml"),
        r#"
[languages.c]
compile = ["gcc", "-O0", "-DANSWER=42", "-o", "{out}/main", "{src}"]

[languages.c99]
name = "C99"
source = "prog.c"
compile = "gcc -std=c99 -o {out}/prog {src}"
run = ["{out}/prog"]
"#,
    )
    .expect("write sbx.toml");
    run.gen(
        "answer.c",
        "#include <stdio.h>\nint main(void){printf(\"%d\\n\", ANSWER);return 0;}\n",
    );
    run.gen(
        "loop.c99",
        "#include <stdio.h>\nint main(void){for(int i=0;i<3;i++)printf(\"%d\",i);puts(\"\");return 0;}\n",
    );
    let tasks = json!([
        {"id": "answer", "prompt": "", "stdin": "", "expect": "42\n", "timeout": 60},
        {"id": "loop", "prompt": "", "stdin": "", "expect": "012\n", "timeout": 60}
    ]);
    let out = run.eval(&tasks, POLYGLOT, &["-j", "2"]);
    let results = by_id(&report(&out));
    for id in ["answer", "loop"] {
        assert_eq!(
            results[id]["status"], "pass",
            "{}\n{}",
            results[id], out.stderr
        );
    }
    run.assert_clean();

    // A bad entry stops sbx before anything runs: exit 2, one line.
    fs::write(
        run.dir.path().join("sbx.toml"),
        "[languages.c]\ncompile = [\"gcc\", \"main.c\"]\n",
    )
    .expect("write sbx.toml");
    let out = run.eval(&tasks, POLYGLOT, &[]);
    assert_eq!(out.code(), 2, "{}", out.stderr);
    assert_eq!(
        out.stderr.trim(),
        "sbx: config file `sbx.toml`: [languages.c] compile: must name the source `{src}` and the build directory `{out}`"
    );
}

#[test]
fn the_strict_profile_runs_the_build_as_its_user() {
    // The compile writes the fresh volume as the image's user; the run is
    // --user 65534 (and the strict profile's no-swap limit fits both).
    let run = Run::new("strict");
    run.gen(
        "uid.c",
        "#include <stdio.h>\n#include <unistd.h>\nint main(void){printf(\"%d\\n\",(int)getuid());return 0;}\n",
    );
    run.gen("hello.java", programs()[4].2);
    let tasks = json!([
        {"id": "uid", "prompt": "", "stdin": "", "expect": "65534\n", "timeout": 60},
        {"id": "hello", "prompt": "", "stdin": "", "expect": "6\n", "timeout": 60}
    ]);
    let out = run.eval(&tasks, POLYGLOT, &["--profile", "strict", "-j", "2"]);
    let results = by_id(&report(&out));
    for id in ["uid", "hello"] {
        assert_eq!(
            results[id]["status"], "pass",
            "{}\n{}",
            results[id], out.stderr
        );
    }
    run.assert_clean();
}

/// Issue 36, item 7, in every mode: eight data sections aligned at 2^28
/// (a program of about 2 GiB, which the linker used to write into the
/// build volume: 1.5–1.8 GiB on the engine's disk per job) stop at the
/// compile's disk limit with a reason of their own, at once, and leave
/// no volume; a compiler that floods more than 1 MiB of warnings is
/// `compile_error` at once in every mode (the runner modes kept up to
/// 48 MiB of it and ended in `compile_timeout`); a Java candidate with a
/// `package` line passes; `#include "/etc/shadow"` and Rust's
/// `include_str!` of it are refused (the compiler runs as the candidates'
/// uid) and show nothing of the file.
#[test]
fn the_compile_step_is_bounded_and_java_packages_run() {
    let run = Run::new("compilebound");
    run.gen(
        "huge.c",
        "#define S(n) __attribute__((section(\".d\" #n), aligned(1 << 28))) char d##n[1] = {1};\n\
         S(1) S(2) S(3) S(4) S(5) S(6) S(7) S(8)\n\
         int main(void) { return d1[0] + d8[0] - 2; }\n",
    );
    // 10^4 warnings of about 200 bytes each: 2 MiB and more.
    run.gen(
        "flood.c",
        "#define A(x) x x x x x x x x x x\n#define B(x) A(A(A(A(x))))\n\
         int main(void) { B(int u = 1 << 40;) return 0; }\n",
    );
    run.gen(
        "packaged.java",
        "package sol.inner;\n\nimport java.util.Scanner;\n\n\
         public class Adder {\n  public static void main(String[] a) {\n\
         Scanner s = new Scanner(System.in);\n    System.out.println(s.nextInt() + s.nextInt());\n  }\n}\n",
    );
    // Root-only files of the image: the compiler runs as the candidates'
    // uid, so they stay unread.
    run.gen(
        "shadow.c",
        "#include \"/etc/shadow\"\nint main(void) { return 0; }\n",
    );
    run.gen(
        "shadowrs.rs",
        "fn main() { print!(\"{}\", include_str!(\"/etc/shadow\")); }\n",
    );
    let tasks = json!([
        {"id": "shadow", "prompt": "", "stdin": "", "expect": "", "timeout": 30},
        {"id": "shadowrs", "prompt": "", "stdin": "", "expect": "", "timeout": 30},
        {"id": "huge", "prompt": "", "stdin": "", "expect": "", "timeout": 30},
        {"id": "flood", "prompt": "", "stdin": "", "expect": "", "timeout": 30},
        {"id": "packaged", "prompt": "", "stdin": "2 3\n", "expect": "5\n", "timeout": 30}
    ]);
    for mode in ["case", "candidate", "worker"] {
        // A compile timeout well above what these take: a flood that ran
        // into it would show.
        let out = run.eval(
            &tasks,
            POLYGLOT,
            &["--isolate", mode, "-j", "2", "--compile-timeout", "120"],
        );
        let results = by_id(&report(&out));
        let verdict = |id: &str| {
            (
                results[id]["status"].as_str().map(str::to_string),
                results[id]["reason"].as_str().map(str::to_string),
            )
        };
        assert_eq!(
            verdict("huge"),
            (Some("fail".into()), Some("compile_disk_limit".into())),
            "{mode}: {}\n{}",
            results["huge"],
            out.stderr
        );
        assert!(
            results["huge"]["stderr_tail"]
                .as_str()
                .is_some_and(|t| t.contains("sbx: the compile went past its disk limit (128 MiB")),
            "{mode}: {}",
            results["huge"]
        );
        assert_eq!(
            verdict("flood"),
            (Some("fail".into()), Some("compile_error".into())),
            "{mode}: {}\n{}",
            results["flood"],
            out.stderr
        );
        assert!(
            results["flood"]["stderr_tail"]
                .as_str()
                .is_some_and(|t| t.ends_with("sbx: the compiler wrote more than 1 MiB")),
            "{mode}: {}",
            results["flood"]
        );
        for id in ["huge", "flood"] {
            let ms = results[id]["compile_ms"].as_u64().unwrap_or(u64::MAX);
            assert!(ms < 60_000, "{mode}: {id} took {ms} ms to compile");
        }
        for id in ["shadow", "shadowrs"] {
            assert_eq!(
                verdict(id),
                (Some("fail".into()), Some("compile_error".into())),
                "{mode}: {}",
                results[id]
            );
            let tail = results[id]["stderr_tail"].as_str().unwrap_or_default();
            // rustc's words about the file fall out of the 300-character tail.
            let refused = id == "shadowrs" || tail.contains("Permission denied");
            assert!(refused && !tail.contains("root:"), "{mode}: {id}: {tail}");
        }
        assert_eq!(
            verdict("packaged"),
            (Some("pass".into()), None),
            "{mode}: {}\n{}",
            results["packaged"],
            out.stderr
        );
        assert_eq!(out.code(), 1, "{mode}: {}", out.stderr);
        run.assert_clean();
    }
}
