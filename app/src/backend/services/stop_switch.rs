//! The stop switch (rules in `domain::stop_switch`): pause and resume dispatches per workflow or connector,
//! each with a reason and its audit event in one transaction. The dispatcher reads the open pauses before each
//! round and leaves what they hold in the outbox.
use super::Caller;
use super::audit::record;
use crate::api::AppError;
use crate::api::stop_switch::{PauseView, SwitchView};
use crate::backend::{AppState, db};
use crate::domain::audit::AuditEntry;
use crate::domain::holds::reason;
use crate::domain::roles::Role;
use crate::domain::stop_switch::{Scope, Stopped, departments, may_switch};
use serde_json::json;

/// What is stopped now (for the dispatcher).
pub async fn stopped(state: &AppState) -> Result<Vec<Stopped>, AppError> {
    let mut tx = state.db.connection().await?;
    let open = db::stop_switch::open(&mut tx).await?;
    Ok(open.into_iter().filter_map(|p| Some(Stopped { scope: Scope::parse(&p.scope)?, name: p.name })).collect())
}

/// The open pauses, for the board's banner.
pub async fn open(tx: &mut db::Tx) -> Result<Vec<PauseView>, AppError> {
    Ok(db::stop_switch::open(tx)
        .await?
        .into_iter()
        .map(|p| PauseView { scope: p.scope, name: p.name, paused_by: p.paused_by, paused_at: p.paused_at, reason: p.reason })
        .collect())
}

/// Checks the caller may switch this workflow or connector, and that it exists.
fn switchable(state: &AppState, caller: &Caller, scope: Scope, name: &str) -> Result<Vec<String>, AppError> {
    let known = match scope {
        Scope::Workflow => state.config.workflow(name).is_some(),
        Scope::Connector => state.config.connectors.iter().any(|c| c.name == name),
    };
    if !known {
        return Err(AppError::NotFound);
    }
    let concerned = departments(&state.config, scope, name);
    let owned: Vec<String> = if caller.user.user.has(Role::Manager) { caller.visible_departments().unwrap_or_default() } else { Vec::new() };
    if !may_switch(caller.user.user.has(Role::Admin), &owned, &concerned) {
        return Err(AppError::Forbidden);
    }
    Ok(concerned)
}

pub async fn pause(state: &AppState, caller: &Caller, scope: Scope, name: &str, why: &str) -> Result<(), AppError> {
    switch(state, caller, scope, name, why, true).await
}

pub async fn resume(state: &AppState, caller: &Caller, scope: Scope, name: &str, why: &str) -> Result<(), AppError> {
    switch(state, caller, scope, name, why, false).await
}

async fn switch(state: &AppState, caller: &Caller, scope: Scope, name: &str, why: &str, stop: bool) -> Result<(), AppError> {
    let why = reason(why).map_err(|m| AppError::invalid("reason", m))?;
    let concerned = switchable(state, caller, scope, name)?;
    let now = state.clock.now();
    let user = caller.user.user.id;
    let mut tx = state.db.begin_write().await?;
    let changed = if stop {
        db::stop_switch::pause(&mut tx, scope.as_str(), name, user, &why, now).await?
    } else {
        db::stop_switch::resume(&mut tx, scope.as_str(), name, user, &why, now).await?
    };
    if !changed {
        let (problem, detail) = if stop { ("already-paused", "it is paused already") } else { ("not-paused", "it is not paused") };
        return Err(AppError::Conflict { problem: problem.into(), detail: detail.into() });
    }
    let action = if stop { "dispatch.paused" } else { "dispatch.resumed" };
    // A workflow's pause belongs to its department; a connector's may concern several (then to none in particular).
    let department = (concerned.len() == 1).then(|| concerned[0].as_str());
    let entry = AuditEntry::new(caller.actor(), action, scope.as_str(), name)
        .department(department)
        .before(json!({"paused": !stop}))
        .after(json!({"paused": stop, "departments": concerned}))
        .reason(&why);
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    tx.commit().await?;
    if !stop {
        super::batches::respread_after_stop(state).await?;
        state.dispatch_wake.notify_one();
    }
    Ok(())
}

/// Every workflow and connector with its state and whether this caller may switch it.
pub async fn overview(state: &AppState, caller: &Caller) -> Result<Vec<SwitchView>, AppError> {
    caller.require_any(&[Role::Manager, Role::Admin])?;
    let open = {
        let mut tx = state.db.begin_read().await?;
        open(&mut tx).await?
    };
    let names = state
        .config
        .workflows
        .iter()
        .map(|w| (Scope::Workflow, w.name.clone()))
        .chain(state.config.connectors.iter().map(|c| (Scope::Connector, c.name.clone())));
    Ok(names
        .map(|(scope, name)| {
            let concerned = departments(&state.config, scope, &name);
            SwitchView {
                may_switch: switchable(state, caller, scope, &name).is_ok(),
                pause: open.iter().find(|p| p.scope == scope.as_str() && p.name == name).cloned(),
                scope,
                name,
                departments: concerned,
            }
        })
        .collect())
}
