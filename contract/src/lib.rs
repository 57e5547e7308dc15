//! What crosses the wire between the pages and the server: the views the server functions return, their
//! inputs, and the one client-facing error type. Both builds compile it; services build these views, the server
//! functions (`api`) send them, the pages (`ui`) show them.
pub mod admin;
pub mod audit;
pub mod batches;
pub mod board;
pub mod chat;
pub mod drills;
pub mod error;
pub mod incidents;
pub mod names;
pub mod notifications;
pub mod operations;
pub mod rerun_call;
pub mod reruns;
pub mod reviews;
pub mod stop_switch;
pub mod wire_time;

pub use error::{AppError, Conflict, FieldError};

/// The per-response CSP nonce: the server's CSP middleware puts it into the request, the page's shell hands it to
/// the hydration scripts.
#[cfg(feature = "ssr")]
#[derive(Clone, Debug)]
pub struct CspNonce(pub String);

use serde::{Deserialize, Serialize};

use domain::membership::Membership;
use domain::roles::Role;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DepartmentDto {
    pub code: String,
    pub name: String,
    /// Its name in English, when the configuration gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_en: Option<String>,
}

impl DepartmentDto {
    /// The name a reader of the page's language reads.
    pub fn name_for(&self, english: bool) -> &str {
        domain::configuration::name_for(&self.name, self.name_en.as_deref(), english)
    }
}

/// The signed-in user as the pages see them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CurrentUser {
    pub id: i64,
    pub username: String,
    pub display_name: String,
    /// Every role held, in the organisation or in a department.
    pub roles: Vec<Role>,
    /// The departments the person belongs to (in any role).
    pub departments: Vec<DepartmentDto>,
    /// Staff and manager as held: each in its department.
    pub memberships: Vec<Membership>,
    /// The pages' language (`ja`, `en`) and time zone (IANA name).
    pub language: String,
    pub time_zone: String,
}

impl CurrentUser {
    pub fn has(&self, role: Role) -> bool {
        self.roles.contains(&role)
    }
}
