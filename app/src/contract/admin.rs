//! The admin's people pages.
use crate::domain::roles::Role;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserSummary {
    pub id: i64,
    pub username: String,
    pub display_name: String,
    pub roles: Vec<Role>,
    pub departments: Vec<String>,
    pub disabled: bool,
    pub email: Option<String>,
    /// Signs in through the company's identity provider: roles and departments follow their groups there.
    pub from_provider: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewUser {
    pub username: String,
    pub display_name: String,
    pub password: String,
    pub roles: Vec<Role>,
    pub departments: Vec<String>,
    /// For e-mail notifications; empty: none.
    #[serde(default)]
    pub email: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiClientSummary {
    pub id: i64,
    pub name: String,
    pub departments: Vec<String>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub revoked: bool,
}
