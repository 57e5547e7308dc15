//! The admin's people pages.
use domain::membership::Membership;
use domain::roles::Role;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserSummary {
    pub id: i64,
    pub username: String,
    pub display_name: String,
    /// Organisation-wide roles (auditor, admin).
    pub roles: Vec<Role>,
    /// The departments they belong to, in any role.
    pub departments: Vec<String>,
    /// Staff and manager, each in its department.
    pub memberships: Vec<Membership>,
    /// What they held before roles were per department, while it waits for an admin's review (their manager role
    /// now counts in several departments, or a department of theirs had no role).
    pub held_before: Option<HeldBefore>,
    pub disabled: bool,
    pub email: Option<String>,
    /// Made here (break-glass), at their first company sign-in (roles follow their groups at each sign-in), or
    /// provisioned by the company directory (which owns their roles and whether they are active).
    pub source: domain::directory::UserSource,
    /// When the company directory last changed them.
    pub provisioned_at: Option<chrono::DateTime<chrono::Utc>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewUser {
    pub username: String,
    pub display_name: String,
    pub password: String,
    /// Organisation-wide roles, and staff or manager in each of `departments` (one grant's pairs).
    pub roles: Vec<Role>,
    pub departments: Vec<String>,
    /// Staff or manager in one department each, beside the pairs above.
    #[serde(default)]
    pub memberships: Vec<Membership>,
    /// For e-mail notifications; empty: none.
    #[serde(default)]
    pub email: String,
}

/// Roles and departments as held before memberships (every role counted in every department).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldBefore {
    pub roles: Vec<String>,
    pub departments: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiClientSummary {
    pub id: i64,
    pub name: String,
    pub departments: Vec<String>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub revoked: bool,
    /// The company directory's token (SCIM provisioning), not the ingestion API's.
    #[serde(default)]
    pub directory: bool,
}

/// A conformance check of a workflow's rerun endpoint: where the test calls went and what each showed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiverCheck {
    pub workflow: String,
    pub url: String,
    pub results: Vec<domain::conformance::ProbeResult>,
}

impl ReceiverCheck {
    pub fn all_met(&self) -> bool {
        self.results.iter().all(|r| r.met)
    }
}
