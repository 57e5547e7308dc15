use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// What a user may do. Staff and manager are held per department (`membership::Membership`), auditor and admin
/// organisation-wide; a person may hold several (SPEC "People and roles").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Staff,
    Manager,
    Auditor,
    Admin,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Staff, Role::Manager, Role::Auditor, Role::Admin];
    /// Who reads evidence (an operation's bundle, an event's proof): auditors every department's, staff and
    /// managers their own.
    pub const EVIDENCE_READERS: &[Role] = &[Role::Staff, Role::Manager, Role::Auditor];

    /// Staff and manager are held in a department (a membership); auditor and admin in the whole organisation.
    pub fn is_departmental(self) -> bool {
        matches!(self, Role::Staff | Role::Manager)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Staff => "staff",
            Role::Manager => "manager",
            Role::Auditor => "auditor",
            Role::Admin => "admin",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| format!("unknown role '{s}' (expected staff, manager, auditor or admin)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_role_reads_back_from_its_name() {
        for role in Role::ALL {
            assert_eq!(role.as_str().parse::<Role>(), Ok(role));
        }
    }

    #[test]
    fn an_unknown_role_is_refused_with_the_choices() {
        let err = "owner".parse::<Role>().unwrap_err();
        assert!(err.contains("staff, manager, auditor or admin"), "{err}");
    }
}
