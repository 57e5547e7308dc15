//! The stop switch (rules in `domain::stop_switch`): pause and resume dispatches per workflow or connector,
//! each with a reason and its audit event in one transaction. The dispatcher reads the open pauses before each
//! round and leaves what they hold in the outbox.
use super::Caller;
use super::audit::record;
use crate::db::stop_switch::{PauseRow, Pauser};
use crate::{AppState, db};
use contract::AppError;
use contract::stop_switch::{PauseView, SwitchView};
use domain::audit::{AuditEntry, SystemActor};
use domain::audit_action::AuditAction;
use domain::conflict::Conflict;
use domain::holds::reason;
use domain::invalid::Field;
use domain::roles::Role;
use domain::stop_switch::{Scope, Stopped, departments, may_pause, may_resume};
use serde_json::json;

/// What is stopped now (for the dispatcher).
pub async fn stopped(state: &AppState) -> Result<Vec<Stopped>, AppError> {
    let mut tx = state.db.connection().await?;
    let open = db::stop_switch::open(&mut tx).await?;
    Ok(open.into_iter().filter_map(|p| Some(Stopped { scope: Scope::parse(&p.scope)?, name: p.name })).collect())
}

/// The open pauses that concern the departments this caller reads, for the board's banner.
pub async fn open(state: &AppState, tx: &mut db::Conn, caller: &Caller) -> Result<Vec<PauseView>, AppError> {
    let readable = caller.readable_departments();
    Ok(db::stop_switch::open(tx)
        .await?
        .into_iter()
        .filter(|p| {
            let concerned =
                Scope::parse(&p.scope).map(|scope| departments(&state.config, scope, &p.name)).unwrap_or_default();
            readable.as_ref().is_none_or(|mine| concerned.iter().any(|d| mine.contains(d)))
        })
        .map(|p| view(state, caller, &p))
        .collect())
}

fn view(state: &AppState, caller: &Caller, p: &PauseRow) -> PauseView {
    PauseView {
        scope: p.scope.clone(),
        name: p.name.clone(),
        title: title(state, caller, &p.scope, &p.name),
        paused_by: match (&p.paused_by, p.paused_by_system.as_deref().and_then(SystemActor::parse)) {
            (Some(person), _) => person.clone(),
            (None, Some(part)) => words::audit::system_actor_label_in(caller.locale, part).to_string(),
            (None, None) => p.paused_by_system.clone().unwrap_or_default(),
        },
        paused_at: p.paused_at,
        // A person's reason as written; the system's (a failed stage) in the reader's words.
        reason: words::audit::reason_label_in(caller.locale, Some(p.reason.clone()))
            .map(|r| r.text)
            .unwrap_or_default(),
    }
}

/// What the caller calls a workflow (its title) or a connector (its name).
fn title(state: &AppState, caller: &Caller, scope: &str, name: &str) -> String {
    match Scope::parse(scope) {
        Some(Scope::Workflow) => state.config.workflow_name(name, caller.reads_english()),
        _ => name.to_string(),
    }
}

/// The departments a workflow or connector concerns; an unknown name is not found.
fn concerned(state: &AppState, scope: Scope, name: &str) -> Result<Vec<String>, AppError> {
    let known = match scope {
        Scope::Workflow => state.config.workflow(name).is_some(),
        Scope::Connector => state.config.connectors.iter().any(|c| c.name == name),
    };
    if !known {
        return Err(AppError::NotFound);
    }
    Ok(departments(&state.config, scope, name))
}

/// The departments an open pause belongs to; one set before that was recorded, to every one it concerns.
fn set_for(pause: &PauseRow, concerned: &[String]) -> Vec<String> {
    pause.set_for.as_deref().and_then(|json| serde_json::from_str(json).ok()).unwrap_or_else(|| concerned.to_vec())
}

fn forbidden(caller: &Caller, scope: Scope, name: &str) -> AppError {
    tracing::warn!(user = %caller.user().username, scope = scope.as_str(), name, "stop switch refused");
    AppError::Forbidden
}

pub async fn pause(state: &AppState, caller: &Caller, scope: Scope, name: &str, why: &str) -> Result<(), AppError> {
    switch(state, caller, scope, name, why, true).await
}

pub async fn resume(state: &AppState, caller: &Caller, scope: Scope, name: &str, why: &str) -> Result<(), AppError> {
    switch(state, caller, scope, name, why, false).await
}

async fn switch(
    state: &AppState,
    caller: &Caller,
    scope: Scope,
    name: &str,
    why: &str,
    stop: bool,
) -> Result<(), AppError> {
    let why = reason(why).map_err(|m| AppError::invalid(Field::Reason, m))?;
    let authenticated = caller.fresh_sign_in(state)?;
    let concerned = concerned(state, scope, name)?;
    let person = caller.person();
    let now = state.clock.now();
    let user = caller.user_id();
    let mut tx = state.db.begin_write().await?;
    let changed = if stop {
        let set_for = may_pause(&person, &concerned).ok_or_else(|| forbidden(caller, scope, name))?;
        let set_for = serde_json::to_string(&set_for).map_err(|e| AppError::internal("pause", e))?;
        db::stop_switch::pause(&mut tx, (scope.as_str(), name), Pauser::Person(user), &why, &set_for, now).await?
    } else {
        match db::stop_switch::open_one(&mut tx, scope.as_str(), name).await? {
            Some(open) if !may_resume(&person, &set_for(&open, &concerned)) => {
                return Err(forbidden(caller, scope, name));
            }
            Some(_) => db::stop_switch::resume(&mut tx, scope.as_str(), name, user, &why, now).await?,
            None if may_pause(&person, &concerned).is_none() => return Err(forbidden(caller, scope, name)),
            None => false,
        }
    };
    if !changed {
        let (problem, detail) = if stop {
            (Conflict::AlreadyPaused, "it is paused already")
        } else {
            (Conflict::NotPaused, "it is not paused")
        };
        return Err(AppError::conflict(problem, detail));
    }
    let action = if stop { AuditAction::DispatchPaused } else { AuditAction::DispatchResumed };
    // A workflow's pause belongs to its department; a connector's may concern several (then to none in particular).
    let department = (concerned.len() == 1).then(|| concerned[0].as_str());
    let entry = AuditEntry::new(caller.actor(), action, scope.object_type(), name)
        .department(department)
        .before(json!({"paused": !stop}))
        .after(json!({"paused": stop, "departments": concerned}))
        .authenticated(authenticated)
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
        db::stop_switch::open(&mut tx).await?
    };
    let person = caller.person();
    let names = state
        .config
        .workflows
        .iter()
        .map(|w| (Scope::Workflow, w.name.clone()))
        .chain(state.config.connectors.iter().map(|c| (Scope::Connector, c.name.clone())));
    Ok(names
        .map(|(scope, name)| {
            let concerned = departments(&state.config, scope, &name);
            let pause = open.iter().find(|p| p.scope == scope.as_str() && p.name == name);
            SwitchView {
                may_switch: match pause {
                    Some(p) => may_resume(&person, &set_for(p, &concerned)),
                    None => may_pause(&person, &concerned).is_some(),
                },
                pause: pause.map(|p| view(state, caller, p)),
                title: title(state, caller, scope.as_str(), &name),
                scope,
                name,
                departments: concerned
                    .iter()
                    .map(|d| state.config.department_name(d, caller.reads_english()))
                    .collect(),
            }
        })
        .collect())
}
