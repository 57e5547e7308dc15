//! Services: the rules applied to the data, one transaction each, the audit event in the same transaction.
pub mod ai_attempts;
pub mod api_clients;
pub mod approvals;
pub mod audit;
pub mod audit_trail;
pub mod batches;
pub mod board;
pub mod departments;
pub mod dispatcher;
pub mod drills;
pub mod evidence;
pub mod holds;
pub mod idempotency;
pub mod incidents;
pub mod known_patterns;
pub mod known_steps;
pub mod notifications;
pub mod operations;
pub mod reconciliation;
pub mod rerun_requests;
pub mod reviews;
pub mod sign_in;
pub mod step_events;
pub mod stop_switch;
pub mod sweeper;
pub mod users;
pub mod webhooks;

use crate::api::AppError;
use crate::backend::auth::SessionUser;
use crate::domain::audit::Actor;
use crate::domain::roles::Role;

impl From<sqlx::Error> for AppError {
    fn from(error: sqlx::Error) -> Self {
        crate::backend::auth::internal("database", error)
    }
}

impl From<anyhow::Error> for AppError {
    fn from(error: anyhow::Error) -> Self {
        crate::backend::auth::internal("server", error)
    }
}

/// Who is acting, and from which request: every service call takes one.
#[derive(Clone, Debug)]
pub struct Caller {
    pub user: SessionUser,
    pub request_id: Option<String>,
}

impl Caller {
    pub fn actor(&self) -> Actor {
        Actor::user(self.user.user.id, &self.user.user.username)
    }

    /// The departments whose objects this caller may see; `None` means all (auditors read everything).
    pub fn visible_departments(&self) -> Option<Vec<String>> {
        if self.user.user.has(Role::Auditor) {
            return None;
        }
        Some(self.user.user.departments.iter().map(|d| d.code.clone()).collect())
    }

    pub fn may_see(&self, department: &str) -> bool {
        self.visible_departments().is_none_or(|list| list.iter().any(|d| d == department))
    }

    /// Refusals are security events: logged with the user (the request ID is on the span).
    pub fn require(&self, role: Role) -> Result<(), AppError> {
        if self.user.user.has(role) {
            return Ok(());
        }
        tracing::warn!(user = %self.user.user.username, needed = %role, "access denied");
        Err(AppError::Forbidden)
    }

    pub fn require_any(&self, roles: &[Role]) -> Result<(), AppError> {
        match roles.iter().find(|r| self.user.user.has(**r)) {
            Some(_) => Ok(()),
            None => self.require(roles[0]),
        }
    }
}
