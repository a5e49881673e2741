//! Before judging: the sealed prepare step (`seal`: each image's function
//! tests read once in a trusted container) and, at the same time in
//! `worker` mode, the workers' first runner containers starting (`Warm`).

use std::sync::{Arc, Mutex};
use std::thread;

use super::queue::lock;
use crate::console;
use crate::docker::events::EventStream;
use crate::engines::pool::Setup;
use crate::error::Result;
use crate::eval::humaneval::in_process;
use crate::eval::input::request::EvalRequest;
use crate::eval::input::tasks::Function;
use crate::eval::judge::isolate::WorkerRunner;
use crate::eval::sealed;
use crate::eval::sealed::harness::Sealed;
use crate::eval::sealed::prepare::TestShape;
use crate::session::Session;
use crate::spec::IsolateMode;

/// Runner containers started ahead, by engine label, for the workers'
/// first candidates.
#[derive(Debug, Default)]
pub(crate) struct Warm(Mutex<Vec<(String, WorkerRunner)>>);

impl Warm {
    /// A started container for a worker of engine `label`, or an empty slot.
    pub(crate) fn take(&self, label: &str) -> WorkerRunner {
        let mut slots = lock(&self.0);
        match slots.iter().position(|(l, _)| l == label) {
            Some(at) => slots.swap_remove(at).1,
            None => WorkerRunner::default(),
        }
    }

    /// Closes those no worker took.
    pub(crate) fn close(&self) {
        for (_, mut slot) in lock(&self.0).drain(..) {
            slot.close();
        }
    }
}

/// The sealed prepare step (`seal`; each task's sealed plan, if it made
/// one) with, at the same time in `worker`
/// mode, each worker's first runner container starting: both are
/// container starts, and neither needs the other. Only when a prepare
/// step runs (function tests): otherwise nothing would hide the starts,
/// and a run judged from the cache needs none. Each engine's event stream
/// starts first, as before any of its containers.
pub(crate) fn warm_while_sealing(
    req: &EvalRequest,
    session: &Session,
    setups: &mut [Setup],
    images: &[String],
) -> Result<(Warm, Vec<Option<Arc<Sealed>>>)> {
    let functions = req.tasks.iter().filter(|t| t.function.is_some()).count();
    let samples = req
        .human_eval
        .as_ref()
        .map_or(functions, |files| files.samples.len());
    let first = req
        .tasks
        .iter()
        .find(|t| t.function.is_some())
        .map(|t| t.image.clone());
    let warmable = |s: &Setup| {
        s.left_out.is_none()
            && s.member.isolate == IsolateMode::Worker
            && matches!(s.member.delivery, crate::session::Delivery::Bind)
    };
    let Some(image) = first.filter(|_| samples > 0 && setups.iter().any(warmable)) else {
        return Ok((Warm::default(), seal(req, session, setups, images)));
    };
    for setup in setups.iter_mut().filter(|s| warmable(s)) {
        setup.member.events = Some(EventStream::start(&setup.member.docker, &session.run_id)?);
    }
    let setups = &*setups;
    let (slots, sealed) = thread::scope(|scope| {
        let starting: Vec<_> = setups
            .iter()
            .filter(|s| warmable(s) && s.member.images.contains_key(image.as_str()))
            .flat_map(|s| (0..s.member.jobs.min(samples)).map(move |_| s))
            .map(|s| {
                let image = image.as_str();
                (
                    s.member.label.clone(),
                    scope.spawn(move || WorkerRunner::warm(session, &s.member, image)),
                )
            })
            .collect();
        let sealed = seal(req, session, setups, images);
        let slots = starting
            .into_iter()
            .filter_map(|(label, started)| Some((label, started.join().ok()?)))
            .collect();
        (slots, sealed)
    });
    Ok((Warm(Mutex::new(slots)), sealed))
}

/// The sealed prepare step: once per image, before judging, the function
/// tests of that image are read in one trusted container, and each one
/// that has the shape gets its sealed plan (one answer per task, `None`
/// for the others). An image whose step fails judges its function tests
/// in-process, with a note.
fn seal(
    req: &EvalRequest,
    session: &Session,
    setups: &[Setup],
    images: &[String],
) -> Vec<Option<Arc<Sealed>>> {
    let mut sealed = vec![None; req.tasks.len()];
    let python = req
        .interpreter
        .clone()
        .unwrap_or_else(|| vec!["python3".to_string()]);
    for image in images {
        let Some(setup) = setups
            .iter()
            .find(|s| s.left_out.is_none() && s.member.images.contains_key(image.as_str()))
        else {
            continue;
        };
        let tasks: Vec<usize> = (0..req.tasks.len())
            .filter(|&i| req.tasks[i].function.is_some() && req.tasks[i].image == *image)
            .collect();
        let shapes: Vec<TestShape<'_>> = tasks
            .iter()
            .filter_map(|&i| match (&req.tasks[i].function, &req.human_eval) {
                (Some(Function::Test { test, entry_point }), _) => Some(match entry_point {
                    Some(entry_point) => TestShape::Check { test, entry_point },
                    None => TestShape::Module { test },
                }),
                (Some(Function::Assembled), Some(files)) => {
                    Some(in_process::test_shape(&files.problems[i]))
                }
                _ => None,
            })
            .collect();
        if shapes.is_empty() || shapes.len() != tasks.len() {
            continue;
        }
        match sealed::prepare::run_prepare(session, &setup.member.docker, image, &python, &shapes) {
            Ok(prepared) => {
                for (&i, answer) in tasks.iter().zip(prepared) {
                    if let sealed::prepare::Prepared::Sealed(plan) = answer {
                        sealed[i] = Some(plan);
                    }
                }
            }
            Err(why) => console::note(&format!(
                "sbx: function tests of image `{image}` run in-process: the sealed prepare step failed: {why}"
            )),
        }
    }
    sealed
}
