//! Server functions: each short, actor -> service -> DTO.
pub mod admin;
pub mod audit;
pub mod batches;
pub mod board;
pub mod drills;
pub mod auth;
pub mod error;
pub mod incidents;
pub mod notifications;
pub mod operations;
pub mod reruns;
pub mod reviews;
pub mod stop_switch;
#[cfg(feature = "ssr")]
pub(crate) mod context;
#[cfg(feature = "ssr")]
pub use context::ReadOnce;

pub use error::{AppError, Conflict, FieldError};

use serde::{Deserialize, Serialize};

use crate::domain::roles::Role;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DepartmentDto {
    pub code: String,
    pub name: String,
}

/// The signed-in user as the pages see them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CurrentUser {
    pub id: i64,
    pub username: String,
    pub display_name: String,
    pub roles: Vec<Role>,
    pub departments: Vec<DepartmentDto>,
    /// The pages' language (`ja`, `en`) and time zone (IANA name).
    pub language: String,
    pub time_zone: String,
}

impl CurrentUser {
    pub fn has(&self, role: Role) -> bool {
        self.roles.contains(&role)
    }
}
