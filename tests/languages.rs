//! Compiled and other languages on the real engine, on the polyglot image
//! (`scripts/build-images.sh polyglot`): for each language a passing
//! candidate that reads its stdin, wrong output, a timeout, and a compile
//! error where there is a compile step; a compiled program that cannot
//! execute a copy of itself from /tmp nor write its build; a multi-case
//! task compiled once (counted in the engine's events); a compiler missing
//! from the image; `sbx doctor`'s languages line. Without an engine or the
//! image every test panics, saying what is missing.
//!
//! Run with: `cargo test --test languages -- --test-threads 2`

mod common;

use std::fs;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use common::{finish, image_exists, report, try_docker, Cleanup, Out, PYTHON};

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

fn by_id(entries: &[Value]) -> std::collections::BTreeMap<String, Value> {
    entries
        .iter()
        .map(|e| {
            (
                e["id"].as_str().expect("as built above").to_string(),
                e.clone(),
            )
        })
        .collect()
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

#[test]
fn every_language_passes_fails_times_out_and_reports_compile_errors() {
    let run = Run::new("all");
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
        add("timeout", endless, 3, "fail", "timeout");
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

    let started = std::time::Instant::now();
    let out = run.eval(&Value::Array(tasks), POLYGLOT, &["-j", "2"]);
    eprintln!(
        "eval of {} candidates took {:?}",
        want.len(),
        started.elapsed()
    );
    let results = by_id(&report(&out));
    for (id, status, reason) in &want {
        let r = &results[id];
        assert_eq!(r["status"], *status, "{id}: {r}\n{}", out.stderr);
        if !reason.is_empty() {
            assert_eq!(r["reason"], *reason, "{id}: {r}");
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
        assert!(tail.contains(needle), "{id}: {tail:?}");
    }
    assert_eq!(out.code(), 1, "{}", out.stderr);
    run.assert_clean();
}

#[test]
fn a_compiled_program_cannot_execute_what_it_writes_nor_write_its_build() {
    let run = Run::new("noexec");
    run.gen(
        "escape.c",
        r#"#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>
int main(void) {
    FILE *in = fopen("/proc/self/exe", "rb"), *out = fopen("/tmp/copy", "wb");
    if (!in || !out) { printf("cannot copy\n"); return 0; }
    char buf[65536]; size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
    fclose(in); fclose(out);
    chmod("/tmp/copy", 0755);
    printf("copied\n");
    fflush(stdout);
    char *argv[] = {"/tmp/copy", NULL};
    execv("/tmp/copy", argv);
    printf("execv: %s\n", strerror(errno));
    FILE *w = fopen("/sbx/build/planted", "wb");
    printf(w ? "build writable\n" : "build read-only\n");
    return 0;
}
"#,
    );
    let tasks = json!([{"id": "escape", "prompt": "", "stdin": "",
        "expect": "copied\nexecv: Permission denied\nbuild read-only\n", "timeout": 60}]);
    let out = run.eval(&tasks, POLYGLOT, &[]);
    let results = by_id(&report(&out));
    assert_eq!(
        results["escape"]["status"], "pass",
        "{}\n{}",
        results["escape"], out.stderr
    );
    run.assert_clean();
}

#[test]
fn a_task_with_several_cases_compiles_once() {
    let run = Run::new("once");
    run.gen("sum.c", programs()[0].1);
    let tasks = json!([{"id": "sum", "prompt": "", "timeout": 60, "cases": [
        {"stdin": "1 2\n", "expect": "3\n"},
        {"stdin": "2 2\n", "expect": "4\n"},
        {"stdin": "40 2\n", "expect": "42\n"}
    ]}]);
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("as built above")
        .as_secs_f64();
    let out = run.eval(&tasks, POLYGLOT, &[]);
    let results = by_id(&report(&out));
    assert_eq!(
        results["sum"]["status"], "pass",
        "{}\n{}",
        results["sum"], out.stderr
    );
    assert_eq!(results["sum"]["cases_passed"], 3);
    let created = run.created_since(since);
    let compiles = created.iter().filter(|n| n.contains("-compile-")).count();
    let runs = created.len() - compiles;
    assert_eq!((compiles, runs), (1, 3), "containers created: {created:?}");
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
