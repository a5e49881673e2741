//! `sbx diff OLD.json NEW.json`: reads both reports, compares them, prints
//! the comparison and returns the gate's exit code. The work is `diff/`'s:
//! reading (`parse`), the tests (`stats`), the verdict (`compare`) and the
//! two renderings (`text`, `json`).

use crate::console;
use crate::diff::{compare, json, load, text};
use crate::error::{Error, Result};
use crate::requests::DiffRequest;

/// `sbx diff`: prints the comparison (text, or JSON with `json`) and
/// returns 0 without a regression, 1 with one, 2 when the gate cannot
/// tell. `k` is the pass@k the gate reads for multi-sample reports. A
/// closed stdout ends quietly.
pub(crate) fn diff(req: DiffRequest) -> Result<i32> {
    let DiffRequest {
        old,
        new,
        json,
        allow_missing,
        k,
    } = req;
    let old_entries = load(&old)?;
    let new_entries = load(&new)?;
    let name = |p: &std::path::Path| crate::escape::os_name(p.as_os_str());
    let (old_name, new_name) = (name(&old), name(&new));
    let cmp =
        compare(&old_entries, &new_entries, k, (&old_name, &new_name)).map_err(Error::Usage)?;
    let out = if json {
        json::render(&cmp, &old_name, &new_name, allow_missing)?
    } else {
        text::render(&cmp, &old_name, &new_name)
    };
    console::out(&out, "the diff to stdout")?;
    if !cmp.regressed() {
        for why in cmp.not_green(allow_missing) {
            eprintln!("sbx diff: not green: {why}");
        }
    }
    Ok(cmp.exit_code(allow_missing))
}
