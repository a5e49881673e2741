//! `sbx diff`'s text: the totals table, the shared tasks' transitions,
//! the lists (regressions, fixes, not judged, one side only), pass@1 or the
//! pass@k gate, and the test's line. Everything from a report is escaped
//! and cut ([`crate::escape::cut`]): a report is data.

use crate::escape::cut;

use super::compare::{tasks_word, Comparison, PassAt1, PassAt1Change, PassAtK, Totals};
use super::parse::{Side, ID_COLUMN};
use super::stats::{format_p, RESAMPLES};

/// Two reports without a task in common, said in one line rather than
/// every task of each listed as "only in": they are of different suites
/// (or one is empty), and there is nothing to compare.
fn unrelated(cmp: &Comparison, old_name: &str, new_name: &str) -> Option<String> {
    if cmp.shared > 0 || cmp.only_old.is_empty() || cmp.only_new.is_empty() {
        return None;
    }
    Some(format!(
        "{old_name} and {new_name} share no task ({} only in {old_name}, {} only in {new_name}, such as `{}` and `{}`): reports of different suites, nothing to compare\n",
        cmp.only_old.len(),
        cmp.only_new.len(),
        crate::escape::line(&cmp.only_old[0].id),
        crate::escape::line(&cmp.only_new[0].id),
    ))
}

/// Characters of a reason's detail kept.
const DETAIL_CHARS: usize = 100;

/// The text output: table, lists, then pass@1 and McNemar (one sample per
/// task) or the pass@k gate and its sign-flip test (several).
pub(crate) fn render(cmp: &Comparison, old_name: &str, new_name: &str) -> String {
    if let Some(line) = unrelated(cmp, old_name, new_name) {
        return line;
    }
    let gate = cmp.pass_at_k.as_ref();
    let mut out = table(cmp, old_name, new_name, gate);
    match gate {
        None => out += &format!(
            "\n{} shared: {} pass on both, {} fail on both, {} pass→fail, {} fail→pass, {} not judged\n",
            tasks_word(cmp.shared),
            cmp.both_pass,
            cmp.both_fail,
            cmp.regressions.len(),
            cmp.fixes.len(),
            cmp.not_judged.len(),
        ),
        Some(g) => {
            let k = g.k;
            out += &format!(
                "\nmean pass@{k} over {} judged on both sides: {}",
                tasks_word(g.tasks),
                match (g.old_mean, g.new_mean) {
                    (Some(o), Some(n)) => format!("{o:.3} → {n:.3} ({:+.3})", n - o),
                    _ => "n/a".into(),
                }
            );
            out += if g.fell() {
                ": NEW regressed\n"
            } else {
                "\n"
            };
            out += &format!(
                "{} shared: pass@{k} rose on {}, fell on {}, unchanged on {} ({} of them at 1.000), {} not judged\n",
                tasks_word(cmp.shared),
                cmp.fixes.len(),
                cmp.regressions.len(),
                cmp.both_pass + cmp.both_fail,
                cmp.both_pass,
                cmp.not_judged.len(),
            );
        }
    }
    if let (None, Some(p)) = (gate, &cmp.pass_at_1) {
        out += &format!(
            "mean pass@1 over {} with pass@1 on both sides: {:.3} → {:.3} ({:+.3})\n",
            tasks_word(p.tasks),
            p.old_mean,
            p.new_mean,
            p.new_mean - p.old_mean
        );
    }

    let width = cmp
        .regressions
        .iter()
        .chain(&cmp.fixes)
        .chain(&cmp.not_judged)
        .map(|p| p.id.as_str())
        .chain(
            cmp.only_old
                .iter()
                .chain(&cmp.only_new)
                .map(|e| e.id.as_str()),
        )
        .map(|id| cut(id, ID_COLUMN).chars().count())
        .max()
        .unwrap_or(0)
        .min(ID_COLUMN);
    let line = |id: &str, what: String| format!("  {:<width$}  {what}\n", cut(id, ID_COLUMN));

    match gate {
        None => {
            if !cmp.regressions.is_empty() {
                out += &format!(
                    "\npass→fail ({}), NEW's status and reason:\n",
                    cmp.regressions.len()
                );
                for p in &cmp.regressions {
                    out += &line(&p.id, describe(&p.new));
                }
            }
            if !cmp.fixes.is_empty() {
                out += &format!(
                    "\nfail→pass ({}), OLD's status and reason:\n",
                    cmp.fixes.len()
                );
                for p in &cmp.fixes {
                    out += &line(&p.id, describe(&p.old));
                }
            }
        }
        Some(g) => {
            let score = |id: &str| {
                g.per_task
                    .iter()
                    .find(|t| t.id == id)
                    .map(|t| format!("{:.3} → {:.3} ({:+.3})", t.old, t.new, t.new - t.old))
                    .unwrap_or_default()
            };
            if !cmp.regressions.is_empty() {
                out += &format!(
                    "\npass@{} fell ({}), old → new, NEW's status and reason:\n",
                    g.k,
                    cmp.regressions.len()
                );
                for p in &cmp.regressions {
                    out += &line(&p.id, format!("{}, {}", score(&p.id), describe(&p.new)));
                }
            }
            if !cmp.fixes.is_empty() {
                out += &format!("\npass@{} rose ({}), old → new:\n", g.k, cmp.fixes.len());
                for p in &cmp.fixes {
                    out += &line(&p.id, score(&p.id));
                }
            }
        }
    }
    if !cmp.not_judged.is_empty() {
        out += &format!(
            "\nnot judged ({}), `error` or samples not judged on a side (not a regression, not tested):\n",
            cmp.not_judged.len()
        );
        for p in &cmp.not_judged {
            let errored = if p.new.judged() { &p.old } else { &p.new };
            let word = |side: &Side| match side.errors.filter(|&e| e > 0) {
                Some(e) => format!("{} ({e} samples not judged)", side.status.name()),
                None => side.status.name().to_string(),
            };
            let mut what = format!("{} → {}", word(&p.old), word(&p.new));
            if let Some(why) = reason_text(errored) {
                what += &format!(", {why}");
            }
            out += &line(&p.id, what);
        }
    }
    for (label, only) in [("OLD", &cmp.only_old), ("NEW", &cmp.only_new)] {
        if !only.is_empty() {
            out += &format!("\nonly in {label} ({}):\n", only.len());
            for e in only {
                out += &line(&e.id, describe(&e.side));
            }
        }
    }
    match gate {
        None => {
            if let Some(p) = &cmp.pass_at_1 {
                out += &pass_at_1_changes(p);
            }
            let m = &cmp.mcnemar;
            out += &format!(
                "\nMcNemar exact p = {} ({} pass→fail, {} fail→pass): {}\n",
                format_p(m.p),
                m.b,
                m.c,
                m.interpretation()
            );
        }
        Some(g) => {
            let t = &g.test;
            let how = if t.exact {
                "exact".to_string()
            } else {
                format!("{RESAMPLES} random sign patterns")
            };
            out += &format!(
                "\n{} on per-task pass@{} differences ({how}): p = {} ({} rose, {} fell): {}\n",
                t.method,
                g.k,
                format_p(t.p),
                t.rose,
                t.fell,
                t.interpretation()
            );
        }
    }
    out
}

/// The totals table: counts and the pass rate, or each side's mean pass@k
/// under the pass@k gate.
fn table(cmp: &Comparison, old_name: &str, new_name: &str, gate: Option<&PassAtK>) -> String {
    let mut out = String::new();
    // Wider when a side's mean is a range (`0.500–1.000`).
    let bounded = [&cmp.old, &cmp.new]
        .iter()
        .any(|t| gate.is_some() && t.mean_pass_at_k_bounds.is_some());
    let width = if bounded { 13 } else { 10 };
    let row = |label: &str, cells: [String; 6], file: &str| {
        let [tasks, pass, fail, missing, error, rate] = cells;
        let line = format!(
            "{label:<7}{tasks:>6}{pass:>6}{fail:>6}{missing:>9}{error:>7}{rate:>width$}  {file}"
        );
        format!("{}\n", line.trim_end())
    };
    let score = |t: &Totals| match gate {
        None => t.pass_rate.map_or("n/a".into(), percent),
        // Not final while an entry is not judged: the bounds.
        Some(_) => match t.mean_pass_at_k_bounds {
            Some(b) => format!("{:.3}–{:.3}", b.lower, b.upper),
            None => t.mean_pass_at_k.map_or("n/a".into(), |m| format!("{m:.3}")),
        },
    };
    let counts = |t: &Totals| {
        [
            t.tasks.to_string(),
            t.passed.to_string(),
            t.failed.to_string(),
            t.missing.to_string(),
            t.errors.to_string(),
            score(t),
        ]
    };
    let last = match gate {
        None => "rate".to_string(),
        Some(g) => format!("pass@{}", g.k),
    };
    out += &row(
        "",
        [
            "tasks".into(),
            "pass".into(),
            "fail".into(),
            "missing".into(),
            "error".into(),
            last,
        ],
        "",
    );
    out += &row("OLD", counts(&cmp.old), &cut(old_name, usize::MAX));
    out += &row("NEW", counts(&cmp.new), &cut(new_name, usize::MAX));
    let (o, n) = (&cmp.old, &cmp.new);
    let change = match gate {
        None => cmp.change.pass_rate.map_or("n/a".into(), points),
        Some(_) if o.mean_pass_at_k_bounds.is_some() || n.mean_pass_at_k_bounds.is_some() => {
            "not final".into()
        }
        Some(_) => cmp
            .change
            .mean_pass_at_k
            .map_or("n/a".into(), |d| format!("{d:+.3}")),
    };
    out += &row(
        "change",
        [
            signed(o.tasks, n.tasks),
            signed(o.passed, n.passed),
            signed(o.failed, n.failed),
            signed(o.missing, n.missing),
            signed(o.errors, n.errors),
            change,
        ],
        "",
    );
    if let Some(g) = gate {
        for (label, t) in [("OLD", o), ("NEW", n)] {
            if let Some(b) = t.mean_pass_at_k_bounds {
                out += &format!(
                    "{label}'s mean pass@{} is not final: {} not judged; between {:.3} (counted as failures) and {:.3} (as passes)\n",
                    g.k,
                    tasks_word(b.not_judged),
                    b.lower,
                    b.upper
                );
            }
        }
    }
    out
}

/// The tasks whose reported pass@1 changed (one sample per task).
fn pass_at_1_changes(p: &PassAt1) -> String {
    let changed: Vec<&PassAt1Change> = p
        .per_task
        .iter()
        .filter(|t| (t.new - t.old).abs() > 1e-12)
        .collect();
    let unchanged = p.per_task.len() - changed.len();
    let mut out = format!(
        "\npass@1 old → new ({} changed, {unchanged} unchanged):\n",
        changed.len()
    );
    let width = changed
        .iter()
        .map(|t| cut(&t.id, ID_COLUMN).chars().count())
        .max()
        .unwrap_or(0);
    for t in changed {
        out += &format!(
            "  {:<width$}  {:.3} → {:.3} ({:+.3})\n",
            cut(&t.id, ID_COLUMN),
            t.old,
            t.new,
            t.new - t.old
        );
    }
    out
}

/// `62.5%`.
fn percent(rate: f64) -> String {
    format!("{:.1}%", rate * 100.0)
}

/// `+12.5 pp` (a change of rate in percentage points; never `-0.0`).
fn points(delta: f64) -> String {
    let pp = delta * 100.0;
    if pp.abs() < 0.05 {
        "+0.0 pp".into()
    } else {
        format!("{pp:+.1} pp")
    }
}

/// `new - old` with its sign: `+2`, `-1`, `+0`.
fn signed(old: usize, new: usize) -> String {
    if new >= old {
        format!("+{}", new - old)
    } else {
        format!("-{}", old - new)
    }
}

/// `fail, wrong_output: line 1: ...`: a side's status with its reason.
fn describe(side: &Side) -> String {
    match reason_text(side) {
        Some(why) => format!("{}, {why}", side.status.name()),
        None => side.status.name().to_string(),
    }
}

/// `reason: detail`, either part alone, or nothing.
fn reason_text(side: &Side) -> Option<String> {
    let reason = side.reason.as_deref().map(|r| cut(r, DETAIL_CHARS));
    let detail = side.detail.as_deref().map(|d| cut(d, DETAIL_CHARS));
    match (reason, detail) {
        (Some(r), Some(d)) => Some(format!("{r}: {d}")),
        (r, d) => r.or(d),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::compare::{compare_reports, sample};
    use crate::diff::parse::Entry;
    use crate::report::Status;

    fn close(actual: f64, expected: f64) -> bool {
        (actual - expected).abs() <= 1e-12 * expected.abs().max(1e-300)
    }

    // -- Output -------------------------------------------------------------------

    /// A side with a sample not judged shows its mean as a range, the
    /// change as `not final`, and a line saying why.
    #[test]
    fn an_unjudged_side_shows_bounds() {
        use crate::diff::parse::{Entry, Side};
        use crate::report::Status;
        let sampled = |id: &str, c: u64| Entry {
            id: id.into(),
            side: Side {
                n: Some(1),
                c: Some(c),
                errors: Some(0),
                ..Side::of(if c == 1 { Status::Pass } else { Status::Fail })
            },
        };
        let lost = Entry {
            id: "B".into(),
            side: Side {
                n: Some(0),
                c: Some(0),
                errors: Some(1),
                ..Side::of(Status::Error)
            },
        };
        let old = vec![sampled("A", 1), sampled("B", 0)];
        let new = vec![sampled("A", 1), lost];
        let cmp = crate::diff::compare(&old, &new, 1, ("old", "new")).unwrap();
        let text = render(&cmp, "old", "new");
        for want in [
            "        tasks  pass  fail  missing  error       pass@1\n",
            "OLD         2     1     1        0      0        0.500  old\n",
            "NEW         2     1     0        0      1  0.500–1.000  new\n",
            "change     +0    +0    -1       +0     +1    not final\n",
            "NEW's mean pass@1 is not final: 1 task not judged; between 0.500 (counted as failures) and 1.000 (as passes)\n",
        ] {
            assert!(text.contains(want), "missing {want:?} in\n{text}");
        }
    }

    #[test]
    fn text_lists_every_section() {
        let text = render(&sample(), "a.json", "b.json");
        for want in [
            "OLD         5     4     1        0      0     80.0%  a.json",
            "NEW         5     2     1        1      1     40.0%  b.json",
            "change     +0    -2    +0       +1     +1  -40.0 pp",
            "4 tasks shared: 1 pass on both, 0 fail on both, 1 pass→fail, 1 fail→pass, 1 not judged",
            "pass→fail (1), NEW's status and reason:\n  reverse  fail, wrong_output: line 1:\\n\\u{1b}[31mx",
            "fail→pass (1), OLD's status and reason:\n  spin     fail, timeout: stopped at 2 s",
            "  img      pass → error, image_missing: no image",
            "only in OLD (1):\n  gone     pass",
            "only in NEW (1):\n  added    missing",
            "McNemar exact p = 1 (1 pass→fail, 1 fail→pass): too few changed tasks (2)",
        ] {
            assert!(text.contains(want), "missing {want:?} in\n{text}");
        }
        assert!(!text.contains('\x1b'), "{text}");
        assert!(!text.contains("pass@1"), "{text}");
    }

    #[test]
    fn signs_and_points() {
        assert_eq!(signed(3, 5), "+2");
        assert_eq!(signed(5, 3), "-2");
        assert_eq!(signed(4, 4), "+0");
        assert_eq!(points(0.125), "+12.5 pp");
        assert_eq!(points(-0.0001), "+0.0 pp");
        assert_eq!(percent(0.625), "62.5%");
    }

    #[test]
    fn empty_reports() {
        let cmp = compare_reports(&[], &[]);
        assert_eq!(cmp.old.pass_rate, None);
        assert_eq!(cmp.change.pass_rate, None);
        assert_eq!(cmp.exit_code(true), 0);
        let text = render(&cmp, "a.json", "b.json");
        assert!(text.contains("n/a"), "{text}");
    }

    #[test]
    fn pass_at_1_over_tasks_with_it_on_both_sides() {
        let with = |id: &str, status, p: Option<f64>| Entry {
            id: id.into(),
            side: Side {
                pass_at_1: p,
                ..Side::of(status)
            },
        };
        let old = [
            with("a", Status::Pass, Some(0.8)),
            with("b", Status::Fail, Some(0.2)),
            with("c", Status::Pass, None),
        ];
        let new = [
            with("a", Status::Fail, Some(0.4)),
            with("b", Status::Fail, Some(0.2)),
            with("c", Status::Pass, Some(1.0)),
        ];
        let cmp = compare_reports(&old, &new);
        let p = cmp.pass_at_1.as_ref().unwrap();
        assert_eq!(p.tasks, 2);
        assert!(close(p.old_mean, 0.5) && close(p.new_mean, 0.3), "{p:?}");
        let text = render(&cmp, "a.json", "b.json");
        assert!(text.contains("0.500 → 0.300 (-0.200)"), "{text}");
        assert!(text.contains("(1 changed, 1 unchanged)"), "{text}");
        assert!(text.contains("0.800 → 0.400 (-0.400)"), "{text}");
        assert!(compare_reports(&old[2..], &new[2..]).pass_at_1.is_none());
    }
}
