//! `sbx gc`: removes containers that sbx started and that were left behind
//! (sbx itself SIGKILLed, a crashed host), and the images it baked for
//! engines that cannot see this machine's files, and compiled candidates'
//! build volumes. Only containers and images
//! that carry the `sbx.run` label are ever listed, so nothing else can be
//! touched.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::console;
use crate::docker::argv::{self, BAKED_REPOSITORY, BASE_TAG_MARK, RUN_LABEL};
use crate::docker::process::{self, CONTROL_TIMEOUT};
use crate::docker::Docker;
use crate::engines::engine_spec::EngineSpec;
use crate::error::{Error, Result};
use crate::exit;
use crate::session;

/// One leftover container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Leftover {
    pub id: String,
    pub name: String,
    pub run_id: String,
    /// Creation time, seconds since the Unix epoch.
    pub created: Option<u64>,
    pub created_text: String,
}

/// Parses one line of `docker ps --format` as built by `argv::list_labelled_args`.
pub(crate) fn parse_line(line: &str) -> Option<Leftover> {
    let mut fields = line.split('\t');
    let id = fields.next()?.trim().to_string();
    let name = fields.next()?.trim().to_string();
    let created_text = fields.next()?.trim().to_string();
    let run_id = fields.next()?.trim().to_string();
    if id.is_empty() || run_id.is_empty() {
        return None;
    }
    Some(Leftover {
        id,
        name,
        run_id,
        created: parse_created_at(&created_text),
        created_text,
    })
}

/// Parses one line of `docker volume ls --format` as built by
/// `argv::list_labelled_volumes_args`: name, run id. A volume's creation
/// time is not listed: `--older-than` alone keeps volumes.
pub(crate) fn parse_volume_line(line: &str) -> Option<Leftover> {
    let (name, run_id) = line.split_once('\t')?;
    let (name, run_id) = (name.trim(), run_id.trim());
    if name.is_empty() || run_id.is_empty() {
        return None;
    }
    Some(Leftover {
        id: name.to_string(),
        name: "build volume".into(),
        run_id: run_id.to_string(),
        created: None,
        created_text: "unknown".into(),
    })
}

/// Parses one line of `docker image ls --format` as built by
/// `argv::list_baked_args`: `sbx-deliver:<run id>-<n>`, creation time.
pub(crate) fn parse_baked_line(line: &str) -> Option<Leftover> {
    let (image, created_text) = line.split_once('\t')?;
    let tag = image
        .trim()
        .strip_prefix(BAKED_REPOSITORY)?
        .strip_prefix(':')?;
    let (run_id, n) = tag.rsplit_once('-')?;
    // `<run>-FROM-<k>`: the tag a bake puts on its base image for a moment
    // (upper case: never part of a run id).
    let (run_id, name) = match run_id.strip_suffix(BASE_TAG_MARK) {
        Some(run_id) => (run_id, "base tag"),
        None => (run_id, "baked image"),
    };
    if run_id.is_empty() || n.parse::<usize>().is_err() {
        return None;
    }
    let created_text = created_text.trim().to_string();
    Some(Leftover {
        id: image.trim().to_string(),
        name: name.into(),
        run_id: run_id.to_string(),
        created: parse_created_at(&created_text),
        created_text,
    })
}

/// Parses docker's `CreatedAt`, such as `2026-11-29 15:40:27 +0000 UTC`,
/// into seconds since the Unix epoch.
pub(crate) fn parse_created_at(text: &str) -> Option<u64> {
    let mut parts = text.split_whitespace();
    let date = parts.next()?;
    let time = parts.next()?;
    let offset = parts.next()?;
    let numbers = |text: &str, sep: char| -> Option<Vec<i64>> {
        text.split(sep)
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()
    };
    let (d, t) = (numbers(date, '-')?, numbers(time, ':')?);
    if d.len() != 3 || t.len() != 3 {
        return None;
    }
    // `+HHMM` / `-HHMM`, checked byte by byte: the CLI's text is not ours,
    // and a slice inside a multi-byte character would panic.
    let (sign, hhmm) = match (offset.strip_prefix('+'), offset.strip_prefix('-')) {
        (Some(rest), _) => (1, rest),
        (_, Some(rest)) => (-1, rest),
        _ => return None,
    };
    let digits: Vec<i64> = hhmm
        .bytes()
        .map(|b| b.is_ascii_digit().then(|| i64::from(b - b'0')))
        .collect::<Option<_>>()?;
    let [h1, h2, m1, m2] = digits[..] else {
        return None;
    };
    let (off_h, off_m) = (h1 * 10 + h2, m1 * 10 + m2);
    let days = days_from_civil(d[0], d[1], d[2]);
    let local = days * 86_400 + t[0] * 3600 + t[1] * 60 + t[2];
    u64::try_from(local - sign * (off_h * 3600 + off_m * 60)).ok()
}

/// Which leftovers to remove: of the given run (if any), old enough (if asked).
pub(crate) fn select(
    leftovers: Vec<Leftover>,
    run_id: Option<&str>,
    older_than: Option<Duration>,
    now: u64,
) -> Vec<Leftover> {
    leftovers
        .into_iter()
        .filter(|l| run_id.is_none_or(|id| l.run_id == id))
        .filter(|l| match older_than {
            None => true,
            // Unknown age: kept, since we cannot tell it is old enough.
            Some(age) => l
                .created
                .is_some_and(|c| now.saturating_sub(c) >= age.as_secs()),
        })
        .collect()
}

/// What to collect.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Filter<'a> {
    pub run_id: Option<&'a str>,
    pub older_than: Option<Duration>,
    pub dry_run: bool,
}

impl Filter<'_> {
    /// `dry` in a dry run, `wet` otherwise.
    fn say(&self, dry: &'static str, wet: &'static str) -> &'static str {
        if self.dry_run {
            dry
        } else {
            wet
        }
    }
}

/// Lists (and unless `dry_run`, removes) the leftovers on each engine (the
/// current context when `engines` is empty); returns the exit code. An
/// engine that cannot be cleaned is reported and the others still are.
pub(crate) fn gc(docker_cli: &Docker, engines: &[EngineSpec], filter: Filter<'_>) -> Result<i32> {
    // Run locks only exist on this machine: on an engine elsewhere, a live
    // run of another host would look like a leftover.
    let unfiltered = filter.run_id.is_none() && filter.older_than.is_none();
    let elsewhere = |spec: Option<&EngineSpec>, label: &str| -> Result<()> {
        let local = match crate::engines::pool::is_local(docker_cli, spec) {
            Ok(local) => local,
            // A docker CLI that is missing or cannot start is that (127/126),
            // not an engine elsewhere.
            Err(e @ (Error::DockerNotFound(_) | Error::DockerSpawn { .. })) => return Err(e),
            Err(_) => false,
        };
        if unfiltered && !local {
            return Err(Error::Usage(format!(
                "engine `{label}` is not on this machine, so sbx cannot tell another host's live runs from leftovers there: give --run RUN_ID or --older-than DURATION"
            )));
        }
        Ok(())
    };
    if engines.is_empty() {
        elsewhere(None, "the current context")?;
        gc_staging(filter)?;
        return gc_one(docker_cli, "", filter);
    }
    let mut first_error = None;
    for spec in engines {
        elsewhere(Some(spec), &spec.label)?;
    }
    gc_staging(filter)?;
    for spec in engines {
        let prefix = format!("engine {}: ", spec.label);
        if let Err(e) = gc_one(&docker_cli.at(&spec.endpoint), &prefix, filter) {
            // Reported here, once, with its engine: not again by the caller.
            console::note(&format!("sbx gc: {prefix}{e}"));
            first_error.get_or_insert(e);
        }
    }
    Ok(first_error.map_or(exit::SUCCESS, |e| e.exit_code()))
}

fn gc_one(docker_cli: &Docker, prefix: &str, filter: Filter<'_>) -> Result<i32> {
    let list = |args: Vec<std::ffi::OsString>, parse: fn(&str) -> Option<Leftover>| {
        let listed = process::control(docker_cli, &args, CONTROL_TIMEOUT)?;
        if !listed.success() {
            return Err(Error::EngineUnreachable(listed.stderr_line()));
        }
        // A label is anyone's text: only a valid run id may become part of
        // a host path (its lock file) or of a docker argument.
        let (valid, invalid): (Vec<Leftover>, Vec<Leftover>) = listed
            .stdout
            .lines()
            .filter_map(parse)
            .partition(|l| session::validate_run_id(&l.run_id).is_ok());
        for l in &invalid {
            console::note(&format!(
                "sbx gc: {prefix}skipping {} ({}): its {RUN_LABEL} label {} is not a run id sbx gives",
                l.id,
                l.name,
                crate::console::quote(&l.run_id)
            ));
        }
        Ok::<Vec<Leftover>, Error>(valid)
    };
    let containers = list(argv::list_labelled_args(), parse_line)?;
    let images = list(argv::list_baked_args(), parse_baked_line)?;
    let volumes = list(argv::list_labelled_volumes_args(), parse_volume_line)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let pick = |leftovers: Vec<Leftover>| -> Vec<Leftover> {
        let (live, chosen): (Vec<Leftover>, Vec<Leftover>) =
            select(leftovers, filter.run_id, filter.older_than, now)
                .into_iter()
                .partition(|l| session::run_is_live(&l.run_id));
        for l in &live {
            console::note(&format!(
                "sbx gc: {prefix}keeping {} ({}): its sbx process (run {}) is still running on this host",
                l.id, l.name, l.run_id
            ));
        }
        chosen
    };
    let containers = pick(containers);
    let images = pick(images);
    let volumes = pick(volumes);
    // A baked image is sbx's only if it carries its own tag as its bake
    // label and the run of its tag as its run label: a name alone (a
    // `docker commit` or `docker tag` to `sbx-deliver:...`) never counts.
    let (bases, baked): (Vec<Leftover>, Vec<Leftover>) = images
        .into_iter()
        .partition(|l| l.id.contains(BASE_TAG_MARK));
    let baked = ours(docker_cli, prefix, baked)?;
    // A `-FROM-` tag sits on a task image, which is not sbx's: it is only
    // untagged (plain `rmi`), and kept when it is that image's last name.
    // Decided before the listing, so that a dry run says the same.
    let mut untag = Vec::new();
    for base in bases {
        let count = process::control(docker_cli, &argv::tag_count_args(&base.id), CONTROL_TIMEOUT)?;
        if count.success() && count.stdout.trim().parse::<usize>().is_ok_and(|n| n > 1) {
            untag.push(base);
        } else {
            let verb = filter.say("would keep", "keeping");
            console::note(&format!(
                "sbx gc: {prefix}{verb} {}: it is the last tag of its image, which is not sbx's; `docker rmi {}` if that image is not wanted",
                base.id, base.id
            ));
        }
    }
    let images: Vec<Leftover> = baked.into_iter().chain(untag).collect();
    let verb = filter.say("would remove", "removing");
    let listing: String = containers
        .iter()
        .chain(&images)
        .chain(&volumes)
        .map(|l| {
            // A base tag's image carries no label of sbx's: say whose tag.
            let run = if l.id.contains(BASE_TAG_MARK) {
                format!("tag of run {}", l.run_id)
            } else {
                format!("{RUN_LABEL}={}", l.run_id)
            };
            format!(
                "{prefix}{verb} {} ({} {run}, created {})\n",
                l.id, l.name, l.created_text
            )
        })
        .collect();
    console::out(&listing, "the list of leftovers")?;
    let counts = format!(
        "{} container(s) and {} baked image(s) (and {} build volume(s))",
        containers.len(),
        images.len(),
        volumes.len()
    );
    if filter.dry_run || (containers.is_empty() && images.is_empty() && volumes.is_empty()) {
        let what = filter.say("would be removed", "to remove");
        console::note(&format!("sbx gc: {prefix}{counts} {what}"));
        return Ok(exit::SUCCESS);
    }
    let ids: Vec<String> = containers.iter().map(|l| l.id.clone()).collect();
    if !ids.is_empty() && !process::remove_containers(docker_cli, &ids) {
        return Err(Error::EngineUnreachable(
            "`docker rm -f` of the leftovers failed".into(),
        ));
    }
    // Build volumes after the containers that mounted them.
    let names: Vec<String> = volumes.iter().map(|l| l.id.clone()).collect();
    if !names.is_empty() {
        remove(
            docker_cli,
            &argv::volume_remove_args(&names),
            "`docker volume rm` of the leftovers",
        )?;
    }
    // Baked images go with `rmi -f`; a `-FROM-` tag with a plain `rmi`.
    let (untag, tags): (Vec<String>, Vec<String>) = images
        .iter()
        .map(|l| l.id.clone())
        .partition(|id| id.contains(BASE_TAG_MARK));
    // (A lone `rmi -- TAG` is three words: an empty list is what is skipped.)
    for (list, args, what) in [
        (&tags, argv::remove_images_args(&tags), "rmi -f"),
        (&untag, argv::rmi_args(&untag), "rmi"),
    ] {
        if list.is_empty() {
            continue;
        }
        remove(
            docker_cli,
            &args,
            &format!("`docker {what}` of sbx's images"),
        )?;
    }
    for l in containers.iter().chain(&images).chain(&volumes) {
        session::forget_run(&l.run_id);
    }
    console::note(&format!(
        "sbx gc: {prefix}{} container(s) and {} baked image(s) removed (and {} build volume(s))",
        containers.len(),
        images.len(),
        volumes.len()
    ));
    Ok(exit::SUCCESS)
}

/// Runs the removal `args`; `what` names it in the error when it fails.
fn remove(docker_cli: &Docker, args: &[std::ffi::OsString], what: &str) -> Result<()> {
    let removed = process::control(docker_cli, args, CONTROL_TIMEOUT)?;
    if removed.success() {
        return Ok(());
    }
    Err(Error::EngineUnreachable(format!(
        "{what} failed: {}",
        removed.stderr_line()
    )))
}

/// The baked images of `listed` that are sbx's: their bake label is their
/// own tag and their run label the run of that tag (one `docker image
/// inspect` for all). The others are reported and kept.
fn ours(docker_cli: &Docker, prefix: &str, listed: Vec<Leftover>) -> Result<Vec<Leftover>> {
    if listed.is_empty() {
        return Ok(listed);
    }
    let tags: Vec<String> = listed.iter().map(|l| l.id.clone()).collect();
    // An image removed meanwhile fails the inspect but prints the others:
    // its lines, not its status, say which are sbx's.
    let inspected = process::control(docker_cli, &argv::baked_labels_args(&tags), CONTROL_TIMEOUT)?;
    let labelled: Vec<(&str, &str)> = inspected
        .stdout
        .lines()
        .filter_map(|line| line.split_once('\t'))
        .collect();
    let (ours, theirs): (Vec<Leftover>, Vec<Leftover>) = listed.into_iter().partition(|l| {
        labelled
            .iter()
            .any(|&(bake, run)| bake == l.id && run == l.run_id)
    });
    for l in &theirs {
        console::note(&format!(
            "sbx gc: {prefix}skipping {}: it does not carry the labels of an image sbx baked ({}={}, {RUN_LABEL}={}), whatever its name",
            l.id, argv::BAKE_LABEL, l.id, l.run_id
        ));
    }
    Ok(ours)
}

/// Removes (or, dry, lists) this user's staging directories
/// (`$TMPDIR/sbx-<run>-stage-XXXXXX`, see `session::staging`) whose run is
/// gone: its sbx no longer holds its run lock (a SIGKILLed sbx cannot
/// remove its own). Only real directories owned by this user, of a valid
/// run id, of the `--run` asked for, old enough for `--older-than` (by
/// modification time).
fn gc_staging(filter: Filter<'_>) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let dir = std::env::temp_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(());
    };
    let me = rustix::process::geteuid().as_raw();
    let now = SystemTime::now();
    let mut found: Vec<(std::path::PathBuf, String)> = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(run_id) = name.to_str().and_then(session::staging_run_id) else {
            continue;
        };
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let old_enough = filter.older_than.is_none_or(|age| {
            meta.modified()
                .ok()
                .and_then(|m| now.duration_since(m).ok())
                .is_some_and(|d| d >= age)
        });
        if !meta.file_type().is_dir()
            || meta.uid() != me
            || filter.run_id.is_some_and(|id| id != run_id)
            || !old_enough
            || session::run_is_live(&run_id)
        {
            continue;
        }
        found.push((path, run_id));
    }
    found.sort();
    let verb = filter.say("would remove", "removing");
    let mut removed = 0;
    for (path, run_id) in &found {
        console::out(
            &format!(
                "{verb} {} (staging directory, {RUN_LABEL}={run_id})\n",
                path.display()
            ),
            "the list of leftovers",
        )?;
        if filter.dry_run {
            continue;
        }
        match std::fs::remove_dir_all(path) {
            Ok(()) => removed += 1,
            Err(e) => console::note(&format!(
                "sbx gc: could not remove the staging directory `{}`: {e}",
                path.display()
            )),
        }
    }
    if filter.dry_run && !found.is_empty() {
        console::note(&format!(
            "sbx gc: {} staging director{} would be removed",
            found.len(),
            if found.len() == 1 { "y" } else { "ies" }
        ));
    } else if removed > 0 {
        console::note(&format!(
            "sbx gc: {removed} staging director{} removed",
            if removed == 1 { "y" } else { "ies" }
        ));
    }
    Ok(())
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_at_parses_with_offsets() {
        assert_eq!(parse_created_at("1970-01-01 00:00:00 +0000 UTC"), Some(0));
        assert_eq!(
            parse_created_at("2026-11-29 15:40:27 +0000 UTC"),
            Some(1_795_966_827)
        );
        assert_eq!(
            parse_created_at("2026-11-29 16:40:27 +0100 CET"),
            Some(1_795_966_827)
        );
        assert_eq!(
            parse_created_at("2000-02-29 12:00:00 -0230 X"),
            Some(951_834_600)
        );
        assert_eq!(parse_created_at("garbage"), None);
        assert_eq!(parse_created_at("2026-11-29 15:40 +0000 UTC"), None);
        // Whatever the CLI prints, never a panic.
        for odd in ["+0é0", "+é00", "+000é", "é0000", "+00", "+00000", "+0a00"] {
            let text = format!("2026-11-29 15:40:27 {odd} UTC");
            assert_eq!(parse_created_at(&text), None, "{text}");
        }
    }

    #[test]
    fn lines_and_selection() {
        let line = "abc123\tsbx-r1-0\t2026-11-29 15:40:27 +0000 UTC\tr1";
        let l = parse_line(line).unwrap();
        assert_eq!(
            (l.id.as_str(), l.name.as_str(), l.run_id.as_str()),
            ("abc123", "sbx-r1-0", "r1")
        );
        // No label value: not ours to touch.
        assert!(parse_line("abc\tname\t2026-11-29 15:40:27 +0000 UTC\t").is_none());
        let created = l.created.unwrap();
        let young = select(
            vec![l.clone()],
            None,
            Some(Duration::from_secs(3600)),
            created + 60,
        );
        assert!(young.is_empty());
        let old = select(
            vec![l.clone()],
            None,
            Some(Duration::from_secs(3600)),
            created + 3600,
        );
        assert_eq!(old.len(), 1);
        assert_eq!(select(vec![l.clone()], Some("r1"), None, 0).len(), 1);
        assert!(select(vec![l.clone()], Some("r2"), None, 0).is_empty());
        assert_eq!(select(vec![l], None, None, 0).len(), 1);
    }

    #[test]
    fn volume_lines() {
        let l = parse_volume_line("sbx-abc-build-3\tabc").unwrap();
        assert_eq!(
            (l.id.as_str(), l.run_id.as_str(), l.created),
            ("sbx-abc-build-3", "abc", None)
        );
        assert!(parse_volume_line("sbx-abc-build-3\t").is_none());
        assert!(parse_volume_line("no tab").is_none());
    }

    #[test]
    fn baked_image_lines() {
        let l = parse_baked_line("sbx-deliver:r-1.x-3\t2026-11-29 15:40:27 +0000 UTC").unwrap();
        assert_eq!(
            (l.id.as_str(), l.run_id.as_str()),
            ("sbx-deliver:r-1.x-3", "r-1.x")
        );
        assert_eq!(l.created, Some(1_795_966_827));
        let base =
            parse_baked_line("sbx-deliver:r1-FROM-0\t2026-11-29 15:40:27 +0000 UTC").unwrap();
        assert_eq!(base.run_id, "r1");
        // A run id may end in `-from`: only the upper-case mark is a base tag.
        let run = parse_baked_line("sbx-deliver:r1-from-0\t2026-11-29 15:40:27 +0000 UTC").unwrap();
        assert_eq!(run.run_id, "r1-from");
        for other in [
            "python:3\t2026-11-29 15:40:27 +0000 UTC",
            "sbx-deliverx:r-1\t2026-11-29 15:40:27 +0000 UTC",
            "sbx-deliver:r\t2026-11-29 15:40:27 +0000 UTC",
            "sbx-deliver:-1\t2026-11-29 15:40:27 +0000 UTC",
            "sbx-deliver:<none>\t2026-11-29 15:40:27 +0000 UTC",
        ] {
            assert!(parse_baked_line(other).is_none(), "{other}");
        }
    }
}
