//! Services: the rules applied to the data, one transaction each, the audit event in the same transaction.
pub mod ai_attempts;
pub mod api_clients;
pub mod approvals;
pub mod audit;
pub mod audit_memory;
pub mod audit_page;
pub mod audit_proof;
pub mod audit_trail;
pub mod audit_tree;
pub mod backup;
pub mod batches;
pub mod board;
pub mod chat;
pub mod company_sign_in;
pub mod conformance;
mod decisions;
pub mod departments;
pub mod directory;
pub mod dispatcher;
pub mod drills;
pub mod evidence;
pub mod holds;
pub mod idempotency;
pub mod inbox;
pub mod incidents;
pub mod key_alone;
pub mod known_patterns;
pub mod known_steps;
mod makers;
pub mod metrics;
mod names;
pub mod notifications;
pub mod operations;
pub mod reconciliation;
pub mod registration;
pub mod rerun_post;
pub mod rerun_requests;
pub mod reviews;
pub mod session_users;
pub mod sign_in;
mod stalls;
pub mod step_events;
pub mod stop_switch;
pub mod sweeper;
pub mod users;
pub mod webhooks;

use crate::AppState;
use contract::{AppError, CurrentUser};
use domain::audit::Actor;
use domain::identity::{Authentication, fresh_enough};
use domain::membership::Access;
use domain::rights::{self, Act, Person};
use domain::roles::Role;
use session_users::SessionUser;
use words::i18n::Locale;

/// Who is acting, and from which request: every service call takes one.
#[derive(Clone, Debug)]
pub struct Caller {
    pub session: SessionUser,
    pub request_id: Option<String>,
    /// The language the caller reads: the words a service puts into a view are in it.
    pub locale: Locale,
    /// When and how the caller last proved who they are (decisions need it recent: `fresh_sign_in`).
    pub authentication: Option<Authentication>,
}

impl Caller {
    /// Whether the caller reads English (names with an English form use it).
    pub fn reads_english(&self) -> bool {
        self.locale == Locale::en
    }

    pub fn user(&self) -> &CurrentUser {
        &self.session.user
    }

    pub fn user_id(&self) -> i64 {
        self.user().id
    }

    pub fn actor(&self) -> Actor {
        Actor::user(self.user_id(), &self.user().username)
    }

    /// A decision (approving, rejecting, stopping or resuming dispatches, administering users) is given by the
    /// person now: their sign-in must be within the configured window, else they are asked to sign in again.
    /// What it returns goes into the decision's audit event.
    pub fn fresh_sign_in(&self, state: &AppState) -> Result<&Authentication, AppError> {
        let window = state.config.sign_in.fresh_window();
        let strength = state.config.sign_in.oidc.as_ref().map(|oidc| &oidc.decision);
        match &self.authentication {
            Some(authentication)
                if fresh_enough(authentication, state.clock.now(), window)
                    && strength.is_none_or(|s| s.met_by(&authentication.method)) =>
            {
                Ok(authentication)
            }
            _ => Err(AppError::SignInAgain),
        }
    }

    /// The caller as the rules of `domain::rights` and `domain::approval` see them, as of this request.
    pub fn person(&self) -> Person {
        person_of(self.user())
    }

    /// The departments whose objects this caller reads; `None` means all (auditors read everything).
    pub fn readable_departments(&self) -> Option<Vec<String>> {
        self.person().readable_departments()
    }

    pub fn may_read(&self, department: &str) -> bool {
        self.person().may_read(department)
    }

    /// The write rule, for what a page offers: membership of the department with a role that may do the act.
    pub fn may_act(&self, act: Act, department: &str) -> bool {
        self.person().may_act(act, department)
    }

    /// The write rule, for every service that changes something: another department's object is not found, one
    /// the caller only reads is forbidden (a security event, logged).
    pub fn check_act(&self, act: Act, department: &str) -> Result<(), AppError> {
        self.person().check_act(act, department).map_err(|refusal| self.act_refused(refusal, act, department))
    }

    /// A refused act as the caller hears it (`object` names what it was about, for the log).
    pub fn act_refused(&self, refusal: rights::Refusal, act: Act, object: &str) -> AppError {
        match refusal {
            rights::Refusal::Unseen => AppError::NotFound,
            rights::Refusal::NotAllowed => {
                tracing::warn!(user = %self.user().username, ?act, object, "access denied");
                AppError::Forbidden
            }
        }
    }

    /// The departments in which the caller may do the act.
    pub fn acting_departments(&self, act: Act) -> Vec<String> {
        self.person().acting_departments(act)
    }

    /// Refusals are security events: logged with the user (the request ID is on the span).
    pub fn require(&self, role: Role) -> Result<(), AppError> {
        if self.user().has(role) {
            return Ok(());
        }
        tracing::warn!(user = %self.user().username, needed = %role, "access denied");
        Err(AppError::Forbidden)
    }

    pub fn require_any(&self, roles: &[Role]) -> Result<(), AppError> {
        match roles.iter().find(|r| self.user().has(**r)) {
            Some(_) => Ok(()),
            None => self.require(roles[0]),
        }
    }
}

/// A signed-in person as the rules of `domain::rights` and `domain::approval` see them.
fn person_of(user: &CurrentUser) -> Person {
    let roles = user.roles.iter().copied().filter(|r| !r.is_departmental()).collect();
    Person { id: user.id, access: Access { roles, memberships: user.memberships.iter().cloned().collect() } }
}
