//! What a run left on an engine, removed: its containers, its build
//! volumes and its baked images.

use super::bake::remove_baked;
use super::pool::{Member, Ping};
use crate::docker::control;
use crate::session::Delivery;

/// Removes what this eval left on an engine: its containers, and its baked
/// images. An engine marked down is only cleaned if it answers again.
/// Returns how many containers were found, or why it could not be cleaned.
pub fn clean(member: &Member, run_id: &str) -> std::result::Result<usize, String> {
    if member.is_down() {
        match member.ping() {
            Ok(()) => {}
            Err(Ping::Down(why)) => return Err(why),
            Err(Ping::Interrupted) => return Err("interrupted".into()),
        }
    }
    let removed = control::remove_run(&member.docker, run_id).map_err(|e| e.to_string())?;
    // After the containers: a volume still mounted cannot be removed.
    control::remove_run_volumes(&member.docker, run_id)
        .map_err(|e| format!("could not remove the build volumes: {e}"))?;
    if let Delivery::Image(baked) = &member.delivery {
        let tags: Vec<String> = baked.values().cloned().collect();
        if !remove_baked(&member.docker, &tags) {
            return Err(format!("could not remove the baked images {tags:?}"));
        }
    }
    Ok(removed)
}
