//! `sbx report`'s page: one self-contained HTML file for one eval report,
//! or two side by side (A against B). Pure: the caller reads the reports
//! and writes the page.
//!
//! Everything in a report may be the candidate's (its output, its
//! traceback, even a task id), so none of it is ever written as markup:
//! the data travel as one JSON object inside `<script
//! type="application/json">`, with `<`, `>`, `&`, U+2028 and U+2029
//! written as `\u003c` and so on (so no `</script>` or `<!--` can end or
//! bend the block), and the page's script puts every string into the
//! document with `textContent` only. Before that, [`neutralise`] makes bidi
//! controls visible (`⟨U+202E⟩`) and cuts lines and strings too long to
//! show. The page's Content-Security-Policy allows only its own script and
//! style (by their SHA-256) and `data:` images: no request can leave it.
//!
//! The numbers are sbx's own: each eval's headline is the `--summary`
//! object (`gate::summary_json`), and the A/B view's verdict, test and
//! per-task scores are `sbx diff --json`'s, computed by `diff/`.

use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::summary::Summary;
use super::{gate, TaskResult};

/// The page's script and style, embedded whole.
const SCRIPT: &str = include_str!("html/page.js");
const STYLE: &str = include_str!("html/page.css");

/// Longest line shown; the rest is cut, with the line's length said.
pub(crate) const LINE_CHARS: usize = 2_000;
/// Longest string shown (after lines are cut); the rest is cut, said.
pub(crate) const TEXT_CHARS: usize = 100_000;

/// One eval: its file name (shown) and its entries.
pub(crate) struct Eval<'a> {
    pub name: &'a str,
    pub results: &'a [TaskResult],
}

/// The headline of one eval: `sbx eval --summary`'s object, without the
/// wall time (a report does not record it).
pub(crate) fn headline(results: &[TaskResult]) -> Value {
    let summary = Summary::of(results);
    let code = gate::exit_code(results, &summary, &[], &mut |_| {});
    let mut value = gate::summary_json(results, &[], code, Duration::ZERO);
    if let Some(object) = value.as_object_mut() {
        object.remove("duration_ms");
    }
    value
}

/// One eval's data: file, headline, entries.
fn eval_data(eval: &Eval, extra: &dyn Fn(&TaskResult, &mut Value)) -> Value {
    let tasks: Vec<Value> = eval
        .results
        .iter()
        .map(|r| {
            let mut v = serde_json::to_value(r).unwrap_or(Value::Null);
            extra(r, &mut v);
            v
        })
        .collect();
    json!({
        "file": eval.name,
        "summary": headline(eval.results),
        "tasks": tasks,
    })
}

/// The page of one eval. `extra` may add fields to each entry's data
/// (saved output, source) before it is neutralised.
pub(crate) fn one(eval: &Eval, extra: &dyn Fn(&TaskResult, &mut Value)) -> String {
    let mut data = json!({
        "view": "one",
        "evals": [eval_data(eval, extra)],
    });
    neutralise(&mut data);
    page(&format!("sbx report: {}", eval.name), &data)
}

/// What may be added to each entry's data, for A and for B.
pub(crate) type Extras<'a> = (
    &'a dyn Fn(&TaskResult, &mut Value),
    &'a dyn Fn(&TaskResult, &mut Value),
);

/// The page of two evals, A against B, with `sbx diff --json`'s object.
pub(crate) fn two(a: &Eval, b: &Eval, diff: Value, extra: Extras) -> String {
    let mut data = json!({
        "view": "two",
        "evals": [eval_data(a, extra.0), eval_data(b, extra.1)],
        "diff": diff,
    });
    neutralise(&mut data);
    page(&format!("sbx report: {} vs {}", a.name, b.name), &data)
}

/// Whether `c` reorders text (the bidi embedding, override and isolate
/// controls: U+202A–U+202E, U+2066–U+2069).
pub(crate) fn is_bidi(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `text` made safe to show: each bidi control replaced by its visible
/// name, each line longer than [`LINE_CHARS`] cut (its length said), and
/// the whole cut at [`TEXT_CHARS`].
pub(crate) fn shown(text: &str) -> String {
    let fits = text.len() <= LINE_CHARS && !text.chars().any(is_bidi);
    if fits {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len().min(TEXT_CHARS + 64));
    let mut total = 0usize;
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut count = 0usize;
        for c in line.chars() {
            count += 1;
            if count > LINE_CHARS {
                continue;
            }
            if is_bidi(c) {
                out.push_str(&format!("⟨U+{:04X}⟩", c as u32));
            } else {
                out.push(c);
            }
        }
        if count > LINE_CHARS {
            out.push_str(&format!(" … [line cut: {count} characters]"));
        }
        total += count.min(LINE_CHARS) + 1;
        if total > TEXT_CHARS {
            let rest = text.split('\n').count() - i - 1;
            if rest > 0 {
                out.push_str(&format!("\n… [{rest} more lines cut]"));
            }
            break;
        }
    }
    out
}

/// Every string in `value` (keys too) passed through [`shown`].
pub(crate) fn neutralise(value: &mut Value) {
    match value {
        Value::String(s) => {
            let safe = shown(s);
            if safe != *s {
                *s = safe;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(neutralise),
        Value::Object(map) => {
            let bad: Vec<String> = map.keys().filter(|k| shown(k) != **k).cloned().collect();
            for key in bad {
                if let Some(v) = map.remove(&key) {
                    map.insert(shown(&key), v);
                }
            }
            map.values_mut().for_each(neutralise);
        }
        _ => {}
    }
}

/// `value` as JSON that can sit inside `<script type="application/json">`:
/// `<`, `>`, `&`, U+2028 and U+2029 written as `\u` escapes (valid JSON,
/// the same value), so nothing in it can close the block or open a comment.
pub(crate) fn script_json(value: &Value) -> String {
    let text = serde_json::to_string(value).unwrap_or_else(|_| "null".into());
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// `'sha256-…'`: the CSP source that allows exactly `text`.
fn csp_hash(text: &str) -> String {
    format!("'sha256-{}'", base64(&Sha256::digest(text.as_bytes())))
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The Content-Security-Policy of the page: its one script and one style,
/// `data:` images, nothing else (no `connect-src`: no request leaves).
pub(crate) fn csp() -> String {
    format!(
        "default-src 'none'; script-src {}; style-src {}; img-src data:; base-uri 'none'; form-action 'none'",
        csp_hash(SCRIPT),
        csp_hash(STYLE)
    )
}

/// The whole page. `title` is escaped for HTML text.
fn page(title: &str, data: &Value) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <div id=\"app\"><p id=\"loading\">Loading the report…</p></div>\n\
         <script type=\"application/json\" id=\"data\">{data}</script>\n\
         <script>{SCRIPT}</script>\n</body>\n</html>\n",
        csp = csp(),
        title = html_text(&shown(title)),
        data = script_json(data),
    )
}

/// `text` escaped for HTML text and attribute values.
fn html_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Status;

    #[test]
    fn script_json_cannot_close_the_block() {
        let value = json!({"out": "</script><script>alert(1)</script><!-- & \u{2028}\u{2029}"});
        let text = script_json(&value);
        for bad in ["<", ">", "&", "\u{2028}", "\u{2029}"] {
            assert!(!text.contains(bad), "{bad:?} left in {text}");
        }
        assert!(text.contains("\\u003c/script\\u003e"));
        let back: Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(back, value);
    }

    #[test]
    fn shown_makes_bidi_visible_and_cuts_long_lines() {
        assert_eq!(shown("plain"), "plain");
        assert_eq!(shown("a\u{202E}b\u{2066}c"), "a⟨U+202E⟩b⟨U+2066⟩c");
        let long = "x".repeat(LINE_CHARS + 5);
        let cut = shown(&format!("head\n{long}\ntail"));
        assert!(cut.starts_with("head\n"));
        assert!(cut.contains(&format!("[line cut: {} characters]", LINE_CHARS + 5)));
        assert!(cut.ends_with("\ntail"));
        let many = "y\n".repeat(TEXT_CHARS);
        let cut = shown(&many);
        assert!(cut.len() < TEXT_CHARS + 100);
        assert!(cut.contains("more lines cut]"));
    }

    #[test]
    fn neutralise_reaches_keys_and_nested_strings() {
        let mut v = json!({"a\u{202E}": ["\u{2067}x", {"y": "\u{202A}"}]});
        neutralise(&mut v);
        let text = v.to_string();
        assert!(!text.chars().any(is_bidi), "{text}");
        assert!(text.contains("⟨U+2067⟩x"));
    }

    #[test]
    fn base64_matches_the_standard() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn page_has_a_strict_csp_and_escaped_data() {
        let mut r = TaskResult::bare("</script><img src=x onerror=alert(1)>", Status::Fail);
        r.stderr_tail = "</script><script>document.title='pwned'</script>".into();
        let results = [r];
        let html = one(
            &Eval {
                name: "<b>a.json</b>",
                results: &results,
            },
            &|_, _| {},
        );
        assert_eq!(html.matches("</script>").count(), 2, "only the page's own");
        assert!(!html.contains("<img"));
        assert!(!html.contains("<b>"));
        assert!(html.contains("default-src 'none'; script-src 'sha256-"));
        assert!(!html.contains("connect-src"));
        assert!(html.contains(&csp_hash(SCRIPT)));
    }
}
