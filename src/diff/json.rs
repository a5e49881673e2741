//! `sbx diff --json`: the comparison as one object, with the file names,
//! the test's interpretation, whether NEW regressed and why the gate is not
//! green. One sample per task: the object has `mcnemar`; several: `mcnemar`
//! is null and `pass_at_k` holds the gate and its sign-flip test.

use serde::Serialize;

use crate::error::{Error, Result};

use super::compare::{Change, Comparison, Pair, PassAt1, PassAtK, Totals};
use super::parse::Entry;
use super::stats::{McNemar, SignFlip};

/// The JSON output, pretty-printed, ending in a newline.
pub(crate) fn render(
    cmp: &Comparison,
    old_name: &str,
    new_name: &str,
    allow_missing: bool,
) -> Result<String> {
    #[derive(Serialize)]
    struct Named<'a> {
        file: &'a str,
        #[serde(flatten)]
        totals: &'a Totals,
    }
    #[derive(Serialize)]
    struct Test<'a> {
        #[serde(flatten)]
        mcnemar: &'a McNemar,
        interpretation: String,
    }
    #[derive(Serialize)]
    struct FlipTest<'a> {
        #[serde(flatten)]
        test: &'a SignFlip,
        interpretation: String,
    }
    #[derive(Serialize)]
    struct Gate<'a> {
        k: usize,
        tasks: usize,
        old_mean: Option<f64>,
        new_mean: Option<f64>,
        change: Option<f64>,
        per_task: &'a [super::compare::ScoreChange],
        test: FlipTest<'a>,
    }
    #[derive(Serialize)]
    struct View<'a> {
        old: Named<'a>,
        new: Named<'a>,
        change: &'a Change,
        shared: usize,
        both_pass: usize,
        both_fail: usize,
        regressions: &'a [Pair],
        fixes: &'a [Pair],
        not_judged: &'a [Pair],
        only_old: &'a [Entry],
        only_new: &'a [Entry],
        pass_at_1: &'a Option<PassAt1>,
        mcnemar: Option<Test<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pass_at_k: Option<Gate<'a>>,
        regressed: bool,
        /// Why the gate is not green without a regression (exit 2).
        not_green: Vec<String>,
    }
    fn gate(g: &PassAtK) -> Gate<'_> {
        Gate {
            k: g.k,
            tasks: g.tasks,
            old_mean: g.old_mean,
            new_mean: g.new_mean,
            change: g.change,
            per_task: &g.per_task,
            test: FlipTest {
                test: &g.test,
                interpretation: g.test.interpretation(),
            },
        }
    }
    let view = View {
        old: Named {
            file: old_name,
            totals: &cmp.old,
        },
        new: Named {
            file: new_name,
            totals: &cmp.new,
        },
        change: &cmp.change,
        shared: cmp.shared,
        both_pass: cmp.both_pass,
        both_fail: cmp.both_fail,
        regressions: &cmp.regressions,
        fixes: &cmp.fixes,
        not_judged: &cmp.not_judged,
        only_old: &cmp.only_old,
        only_new: &cmp.only_new,
        pass_at_1: &cmp.pass_at_1,
        mcnemar: cmp.pass_at_k.is_none().then(|| Test {
            mcnemar: &cmp.mcnemar,
            interpretation: cmp.mcnemar.interpretation(),
        }),
        pass_at_k: cmp.pass_at_k.as_ref().map(gate),
        regressed: cmp.regressed(),
        not_green: cmp.not_green(allow_missing),
    };
    serde_json::to_string_pretty(&view)
        .map(|s| s + "\n")
        .map_err(|e| Error::Write {
            what: "the diff as JSON".into(),
            source: e.into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::compare::sample;
    use serde_json::{json, Value};

    #[test]
    fn json_has_every_field() {
        let cmp = sample();
        let value: Value =
            serde_json::from_str(&render(&cmp, "a.json", "b.json", false).unwrap()).unwrap();
        assert_eq!(value["old"]["file"], "a.json");
        assert_eq!(value["old"]["tasks"], 5);
        assert_eq!(value["new"]["passed"], 2);
        assert_eq!(value["new"]["pass_rate"], 0.4);
        assert_eq!(value["change"]["passed"], -2);
        assert_eq!(value["shared"], 4);
        assert_eq!(
            value["regressions"],
            json!([{"id": "reverse", "old": {"status": "pass"},
                    "new": {"status": "fail", "reason": "wrong_output", "detail": "line 1:\n\x1b[31mx"}}])
        );
        assert_eq!(value["fixes"][0]["id"], "spin");
        assert_eq!(value["not_judged"][0]["new"]["status"], "error");
        assert_eq!(value["only_old"], json!([{"id": "gone", "status": "pass"}]));
        assert_eq!(
            value["only_new"],
            json!([{"id": "added", "status": "missing"}])
        );
        assert_eq!(value["pass_at_1"], Value::Null);
        assert_eq!(value["mcnemar"]["b"], 1);
        assert_eq!(value["mcnemar"]["c"], 1);
        assert_eq!(value["mcnemar"]["n"], 2);
        assert_eq!(value["mcnemar"]["p"], 1.0);
        assert!(value["mcnemar"]["interpretation"].is_string());
        assert_eq!(value["regressed"], true);
    }
}
