//! What a run left on an engine, removed: its containers, its build
//! volumes and its baked images.

use super::bake::remove_baked;
use super::pool::{Member, Ping};
use crate::docker::control;
use crate::session::Delivery;

/// Removes what this eval left on an engine: its containers, and its baked
/// images. An engine marked down is only cleaned if it answers again.
/// Returns how many containers were found, or why it could not be cleaned.
pub(crate) fn clean(member: &Member, run_id: &str) -> std::result::Result<usize, String> {
    if member.is_down() {
        match member.ping() {
            Ok(()) => {}
            Err(Ping::Down(why)) => return Err(why),
            Err(Ping::Interrupted) => return Err("interrupted".into()),
        }
    }
    let removed = control::remove_run(&member.docker, run_id).map_err(|e| e.to_string())?;
    if let Delivery::Image(baked) = &member.delivery {
        let tags: Vec<String> = baked.values().cloned().collect();
        if !remove_baked(&member.docker, &tags) {
            return Err(format!("could not remove the baked images {tags:?}"));
        }
    }
    Ok(removed)
}

/// Removes the build volumes of this eval's compiled candidates left on an
/// engine (each is removed after its candidate; this catches the ones that
/// were still in use then). Call after `clean`: a volume a container still
/// mounts cannot be removed. Only for evals that compiled something, so
/// that the others cost no docker process more.
pub(crate) fn clean_volumes(member: &Member, run_id: &str) -> std::result::Result<usize, String> {
    if member.is_down() {
        return Err("the engine stopped answering".into());
    }
    control::remove_run_volumes(&member.docker, run_id)
        .map_err(|e| format!("could not remove the build volumes: {e}"))
}
