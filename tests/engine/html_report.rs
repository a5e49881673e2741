//! `sbx report`'s HTML page, rendered in a real browser: headless Chromium
//! (Debian's `chromium`; `scripts/chromium.sh` installs it, and the full
//! test lane runs it first). Every test fails loudly when the browser is
//! missing. The reports are written by hand into each test's temp
//! directory; no engine is involved. The page is loaded from `file://` and
//! the DOM the page's script built is read back with `--dump-dom`; the URL
//! hash drives the page (`#filter=fail`, `#task=ID`), so a dump shows what
//! a person clicking would see. One test runs the example suite on the
//! real engine (it fails loudly without one) for the docs' screenshot.

use crate::common;

use std::fs;
use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tempfile::TempDir;

/// The browser, or a loud failure.
fn chromium() -> PathBuf {
    for name in ["chromium", "chromium-browser"] {
        if let Ok(out) = Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
        {
            let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if out.status.success() && !path.is_empty() {
                return PathBuf::from(path);
            }
        }
    }
    panic!("chromium is not installed: run scripts/chromium.sh (the full test lane does)");
}

fn sbx() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sbx"))
}

/// Writes `value` as `name` in `dir`.
fn write(dir: &Path, name: &str, value: &Value) -> PathBuf {
    let path = dir.join(name);
    fs::write(
        &path,
        serde_json::to_string_pretty(value).expect("as the test sets it up"),
    )
    .expect("as the test sets it up");
    path
}

/// `sbx report REPORTS… -o page.html`: the page's path.
fn page(dir: &Path, reports: &[&Path], name: &str) -> PathBuf {
    let out = dir.join(name);
    let status = sbx()
        .arg("report")
        .args(reports)
        .arg("-o")
        .arg(&out)
        .output()
        .expect("sbx runs");
    assert!(
        status.status.success(),
        "sbx report failed: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    out
}

/// The DOM of `page` (with `hash`) once its script ran.
fn dom(dir: &Path, page: &Path, hash: &str) -> String {
    let profile = dir.join(format!("profile-{}", NEXT.fetch_add(1, Ordering::SeqCst)));
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}{hash}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("a UTF-8 DOM");
    assert!(
        text.contains("data-ready=\"1\""),
        "the page's script did not finish: {}",
        &text[..text.len().min(2000)]
    );
    text
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// How often `needle` occurs in `hay`.
fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// A card's number: `<div … data-count="passed"><b>2</b>`.
fn card(dom: &str, key: &str) -> String {
    let at = dom
        .find(&format!("data-count=\"{key}\"><b>"))
        .unwrap_or_else(|| panic!("no card {key}"));
    let rest = &dom[at..];
    let start = rest.find("<b>").expect("as the test sets it up") + 3;
    let end = rest.find("</b>").expect("as the test sets it up");
    rest[start..end].to_string()
}

/// A multi-sample task: `c` of `n` samples passed, `errors` unjudged.
fn sampled(id: &str, n: usize, c: usize, errors: usize) -> Value {
    let mut samples = Vec::new();
    for i in 0..n + errors {
        let status = if i < c {
            "pass"
        } else if i < n {
            "fail"
        } else {
            "error"
        };
        samples.push(json!({
            "id": id, "status": status, "stderr_tail": "", "exit_code": 0,
            "duration_ms": 10, "sample": format!("{i}.py"),
            "reason": if status == "fail" { json!("wrong_output") } else { json!(null) },
        }));
    }
    let mut task = json!({
        "id": id,
        "status": if errors > 0 { "error" } else if c == n { "pass" } else { "fail" },
        "stderr_tail": "", "exit_code": null, "duration_ms": 10 * (n + errors) as u64,
        "n": n, "c": c, "errors": errors, "samples": samples,
    });
    if errors == 0 {
        task["pass@1"] = json!(c as f64 / n as f64);
    } else {
        task["incomplete"] = json!(true);
        task["pass_at_k_bounds"] = json!({"pass@1": {
            "lower": c as f64 / (n + errors) as f64,
            "upper": (c + errors) as f64 / (n + errors) as f64}});
    }
    task
}

fn single(id: &str, status: &str, reason: Option<&str>) -> Value {
    json!({"id": id, "status": status, "stderr_tail": "", "reason": reason,
           "exit_code": 0, "duration_ms": 5, "cpu_ms": 3, "max_rss_kib": 9000})
}

#[test]
fn one_eval_headline_task_count_filter_and_link() {
    let tmp = TempDir::new().expect("as the test sets it up");
    let report = json!([
        sampled("HumanEval/0", 4, 4, 0),
        sampled("HumanEval/1", 4, 1, 0),
        sampled("HumanEval/12", 4, 0, 0),
        sampled("HumanEval/3", 4, 2, 0),
    ]);
    let a = write(tmp.path(), "a.json", &report);
    let html = page(tmp.path(), &[&a], "one.html");

    let whole = dom(tmp.path(), &html, "");
    // The summary's numbers: 1 pass, 3 fail, mean pass@1 (1 + .25 + 0 + .5) / 4.
    assert_eq!(card(&whole, "tasks"), "4");
    assert_eq!(card(&whole, "passed"), "1");
    assert_eq!(card(&whole, "failed"), "3");
    assert_eq!(card(&whole, "errors"), "0");
    assert!(
        whole.contains("data-mean=\"pass@1\"><b class=\"mean\">0.438</b><span class=\"muted\">mean pass@1 over 4 tasks</span>"),
        "{whole}"
    );
    assert!(whole.contains("data-shown=\"4\""));
    assert_eq!(count(&whole, "<tr class=\"task "), 4);

    let failed = dom(tmp.path(), &html, "#filter=fail");
    assert!(failed.contains("data-shown=\"3\""));
    assert_eq!(count(&failed, "<tr class=\"task "), 3);
    assert!(
        !failed.contains("data-id=\"HumanEval/0\""),
        "a pass shown under fail"
    );

    let linked = dom(tmp.path(), &html, "#task=HumanEval/12");
    assert_eq!(count(&linked, "class=\"detail-row\""), 1);
    let row = linked
        .find("data-id=\"HumanEval/12\"")
        .expect("the task's row");
    let detail = linked
        .find("class=\"detail-row\"")
        .expect("as the test sets it up");
    assert!(detail > row, "the detail follows its task's row");
    assert!(linked[row..].contains("4 samples"));
}

#[test]
fn unjudged_samples_show_their_bounds() {
    let tmp = TempDir::new().expect("as the test sets it up");
    let report = json!([sampled("A", 2, 1, 0), sampled("B", 1, 1, 1)]);
    let a = write(tmp.path(), "a.json", &report);
    let html = page(tmp.path(), &[&a], "one.html");
    let d = dom(tmp.path(), &html, "");
    assert!(
        d.contains("Not final: 1 sample(s) not judged, in 1 task(s) (B)"),
        "{d}"
    );
    // Lower: (0.5 + 0.5) / 2; upper: (0.5 + 1) / 2.
    assert!(
        d.contains("mean pass@1 between 0.500 and 0.750 over 2 tasks"),
        "{d}"
    );
}

#[test]
fn two_evals_list_the_flipped_tasks_first() {
    let tmp = TempDir::new().expect("as the test sets it up");
    let a = json!([
        single("same", "pass", None),
        single("broke", "pass", None),
        single("mended", "fail", Some("wrong_output")),
        single("still", "fail", Some("timeout")),
    ]);
    let b = json!([
        single("same", "pass", None),
        single("broke", "fail", Some("wrong_output")),
        single("mended", "pass", None),
        single("still", "fail", Some("timeout")),
    ]);
    let (pa, pb) = (
        write(tmp.path(), "a.json", &a),
        write(tmp.path(), "b.json", &b),
    );
    let html = page(tmp.path(), &[&pa, &pb], "two.html");
    let d = dom(tmp.path(), &html, "");
    assert!(d.contains("B regressed against A."), "{d}");
    assert!(
        d.contains("exact McNemar") || d.contains("p = 1.0000"),
        "{d}"
    );
    assert_eq!(card(&d, "regressions"), "1");
    assert_eq!(card(&d, "fixes"), "1");
    let order: Vec<&str> = d
        .split("<tr class=\"task ")
        .skip(1)
        .map(|row| {
            let at = row.find("data-id=\"").expect("as the test sets it up") + 9;
            &row[at..at + row[at..].find('"').expect("as the test sets it up")]
        })
        .collect();
    assert_eq!(&order[..2], ["broke", "mended"], "flipped first: {order:?}");
    assert!(d.contains("<tr class=\"task flip\" data-id=\"broke\""));
    let flipped = dom(tmp.path(), &html, "#filter=flipped");
    assert!(flipped.contains("data-shown=\"2\""));
}

/// `text` with every byte but ASCII letters and digits percent-encoded.
fn percent(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// What a hostile candidate prints: markup, a script end, bidi controls and
/// a 10 MB line.
fn hostile() -> Value {
    let evil = "</script><script>document.title='pwned'</script>\
                <img src=x onerror=\"document.title='pwned'\">\
                <style>body{display:none}</style><!--";
    let bidi = "access\u{202E}nimda\u{2066}x\u{2069}\u{202A}";
    let huge = "A".repeat(10_000_000);
    json!([
        {"id": format!("t{evil}"), "status": "fail", "stderr_tail": format!("{evil}\n{bidi}"),
         "reason": "wrong_output", "exit_code": 1, "duration_ms": 1,
         "message": format!("{huge}\n{evil}"), "diff": bidi},
        single("ok", "pass", None),
    ])
}

#[test]
fn hostile_output_renders_as_text_and_runs_nothing() {
    let tmp = TempDir::new().expect("as the test sets it up");
    let a = write(tmp.path(), "a.json", &hostile());
    let html = page(tmp.path(), &[&a], "one.html");
    let size = fs::metadata(&html).expect("as the test sets it up").len();
    assert!(
        size < 1 << 20,
        "the 10 MB line was cut: the page is {size} bytes"
    );
    // The link to the hostile task: its whole id, percent-encoded.
    let id = format!(
        "#task={}",
        percent(hostile()[0]["id"].as_str().expect("as the test sets it up"))
    );
    for hash in ["", &id, "#filter=fail"] {
        let d = dom(tmp.path(), &html, hash);
        assert!(d.contains("a.json</title>"), "the title stands ({hash})");
        assert!(!d.contains("pwned</title>"));
        assert!(!d.contains("<img"), "an img element was made ({hash})");
        assert_eq!(count(&d, "<script"), 2, "only the page's two scripts");
        assert_eq!(count(&d, "<style"), 1, "only the page's style");
        assert!(!d
            .chars()
            .any(|c| matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')));
        assert_eq!(
            count(&d, "<tr class=\"task "),
            if hash == "#filter=fail" { 1 } else { 2 }
        );
    }
    // The hostile task opened: its text shown escaped, the controls named,
    // the huge line cut with its length.
    let d = dom(tmp.path(), &html, "#filter=fail&q=pwned");
    assert_eq!(count(&d, "<tr class=\"task "), 1);
    let opened = dom(tmp.path(), &html, &id);
    assert_eq!(
        count(&opened, "class=\"detail-row\""),
        1,
        "the link opened it"
    );
    assert!(opened.contains("&lt;img src=x onerror=\"document.title='pwned'\"&gt;"));
    assert!(opened.contains("access⟨U+202E⟩nimda⟨U+2066⟩x⟨U+2069⟩⟨U+202A⟩"));
    assert!(opened.contains("[line cut: 10000000 characters]"));
}

/// The CSP holds: a page with a request injected (as if escaping failed)
/// sends nothing to a loopback listener; without the CSP, the same page
/// does (so the check can fail).
#[test]
fn no_request_leaves_the_page() {
    let tmp = TempDir::new().expect("as the test sets it up");
    let a = write(tmp.path(), "a.json", &json!([single("ok", "pass", None)]));
    let html = page(tmp.path(), &[&a], "one.html");
    let text = fs::read_to_string(&html).expect("as the test sets it up");
    assert!(text.contains("Content-Security-Policy"));

    let hits = |page_text: &str, name: &str| -> usize {
        let listener = TcpListener::bind("127.0.0.1:0").expect("as the test sets it up");
        let port = listener
            .local_addr()
            .expect("as the test sets it up")
            .port();
        listener
            .set_nonblocking(true)
            .expect("as the test sets it up");
        let seen = Arc::new(AtomicUsize::new(0));
        let counter = seen.clone();
        let done = Arc::new(AtomicUsize::new(0));
        let stop = done.clone();
        let thread = std::thread::spawn(move || {
            while stop.load(Ordering::SeqCst) == 0 {
                match listener.accept() {
                    Ok((mut s, _)) => {
                        // A request, not a bare preconnect (the browser may
                        // open a connection for a URL in markup and never
                        // use it; the page itself has no URL in markup).
                        let _ = s.set_nonblocking(false);
                        let mut buf = [0u8; 1024];
                        let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
                        if matches!(s.read(&mut buf), Ok(n) if n > 0) {
                            counter.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        let url = format!("http://127.0.0.1:{port}");
        let injected = page_text.replace(
            "<div id=\"app\">",
            &format!(
                "<img src=\"{url}/img\"><link rel=\"stylesheet\" href=\"{url}/css\">\
                 <iframe src=\"{url}/frame\"></iframe><div id=\"app\">"
            ),
        );
        let path = tmp.path().join(name);
        fs::write(&path, injected).expect("as the test sets it up");
        let _ = dom(tmp.path(), &path, "");
        std::thread::sleep(Duration::from_millis(300));
        done.store(1, Ordering::SeqCst);
        thread.join().expect("as the test sets it up");
        seen.load(Ordering::SeqCst)
    };
    assert_eq!(hits(&text, "csp.html"), 0, "a request left the page");
    let start = text
        .find("<meta http-equiv=\"Content-Security-Policy\"")
        .expect("as the test sets it up");
    let end = start + text[start..].find('>').expect("as the test sets it up") + 1;
    let open = format!("{}{}", &text[..start], &text[end..]);
    assert!(
        hits(&open, "open.html") > 0,
        "without the CSP the request is made"
    );
}

/// A screenshot of each view, kept under target/ as the run's artifact.
#[test]
fn screenshots() {
    let tmp = TempDir::new().expect("as the test sets it up");
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/html-report");
    fs::create_dir_all(&dir).expect("as the test sets it up");
    let ids = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
    let mk = |shift: usize| -> Value {
        ids.iter()
            .map(|i| sampled(&format!("HumanEval/{i}"), 5, (i * 7 + shift) % 6, 0))
            .collect()
    };
    let a = write(tmp.path(), "model-a.json", &mk(0));
    let b = write(tmp.path(), "model-b.json", &mk(2));
    let one = page(tmp.path(), &[&a], "one.html");
    let two = page(tmp.path(), &[&a, &b], "two.html");
    for (page, hash, name) in [
        (&one, "#task=HumanEval/3", "one.png"),
        (&two, "", "two.png"),
    ] {
        let shot = dir.join(name);
        let _ = fs::remove_file(&shot);
        let out = Command::new(chromium())
            .args([
                "--headless",
                "--disable-gpu",
                "--no-sandbox",
                "--hide-scrollbars",
            ])
            .arg(format!(
                "--user-data-dir={}",
                tmp.path().join(name).with_extension("profile").display()
            ))
            .arg("--window-size=1280,1000")
            .arg(format!("--screenshot={}", shot.display()))
            .arg(format!("file://{}{hash}", page.display()))
            .output()
            .expect("chromium runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let png = fs::read(&shot).expect("a screenshot");
        assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000, "{name}");
    }
}

/// The example suite judged on the real engine (`sbx eval --save-output`),
/// its page (`sbx report --gen gen`): the headline equals the report, and
/// the screenshot kept in target/html-report/example.png is the one the
/// README shows (docs/report.png is a copy).
#[test]
fn screenshot_of_the_example_suite_from_a_real_run() {
    let id = common::run_id("t", "html_example");
    let _guard = common::Cleanup::new(&[&id]);
    let tmp = TempDir::new().expect("a temp directory");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = common::sbx(Some(&id))
        .current_dir(&root)
        .args(["eval", "--format", "json", "-o"])
        .arg(tmp.path().join("run.json"))
        .arg("--save-output")
        .arg(tmp.path().join("out"))
        .output()
        .expect("sbx runs");
    assert_eq!(
        out.status.code(),
        Some(1),
        "the example suite has failures: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value =
        serde_json::from_slice(&fs::read(tmp.path().join("run.json")).expect("the report"))
            .expect("a JSON report");
    let passed = report
        .as_array()
        .expect("a list")
        .iter()
        .filter(|e| e["status"] == "pass")
        .count();
    let made = sbx()
        .current_dir(tmp.path())
        .args(["report", "--gen"])
        .arg(root.join("gen"))
        .args(["run.json", "-o", "run.html"])
        .output()
        .expect("sbx runs");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let html = tmp.path().join("run.html");
    let d = dom(tmp.path(), &html, "#task=reverse");
    assert_eq!(card(&d, "passed"), passed.to_string());
    assert!(d.contains("xobdnas"), "the diff of reverse is shown");
    assert!(d.contains("reversed(line.split())"), "its source is shown");
    let shot = root.join("target/html-report/example.png");
    fs::create_dir_all(shot.parent().expect("a folder")).expect("the artifact folder");
    let _ = fs::remove_file(&shot);
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--hide-scrollbars",
        ])
        .arg(format!(
            "--user-data-dir={}",
            tmp.path().join("shot").display()
        ))
        .arg("--window-size=1100,1250")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}#task=reverse", html.display()))
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let png = fs::read(&shot).expect("a screenshot");
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000);
}

/// A long report is drawn 200 rows at a time; a link to a task further
/// down draws up to it and opens it; sorting by a column reorders.
#[test]
fn rows_are_drawn_lazily_and_a_link_reaches_any_task() {
    let tmp = TempDir::new().expect("a temp directory");
    let report: Value = (0..500)
        .map(|i| {
            let mut t = single(
                &format!("T{i}"),
                if i % 3 == 0 { "fail" } else { "pass" },
                None,
            );
            t["duration_ms"] = json!(i);
            t
        })
        .collect();
    let a = write(tmp.path(), "a.json", &report);
    let html = page(tmp.path(), &[&a], "one.html");
    let d = dom(tmp.path(), &html, "");
    assert!(d.contains("data-shown=\"500\""));
    assert_eq!(count(&d, "<tr class=\"task "), 200, "the first batch only");
    // Drawn up to the task (and, the end of the table then in view, on).
    let d = dom(tmp.path(), &html, "#task=T450");
    let rows = count(&d, "<tr class=\"task ");
    assert!((451..=500).contains(&rows), "{rows} rows drawn");
    assert_eq!(count(&d, "class=\"detail-row\""), 1);
    let d = dom(tmp.path(), &html, "#sort=-time");
    let first = d.find("<tr class=\"task ").expect("a row");
    assert!(
        d[first..].starts_with("<tr class=\"task \" data-id=\"T499\""),
        "longest first: {}",
        &d[first..first + 80]
    );
}
