//! Who holds which role where (SPEC "People and roles"): staff and manager are roles *in a department* — a
//! membership, `(department, role)` — and count only there; auditor and admin are organisation-wide. The write
//! rules (`rights`) ask for the pair.
use super::roles::Role;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// A role held in one department.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Membership {
    pub department: String,
    pub role: Role,
}

impl Membership {
    /// `sales:manager`, as the command line takes it (`--member`).
    pub fn parse(text: &str) -> Result<Membership, String> {
        let (department, role) =
            text.split_once(':').ok_or_else(|| format!("'{text}' is not DEPARTMENT:ROLE (e.g. sales:manager)"))?;
        let role: Role = role.trim().parse()?;
        if !role.is_departmental() {
            return Err(format!("{role} is held in the whole organisation, not in a department: use --role {role}"));
        }
        let department = department.trim();
        if department.is_empty() {
            return Err(format!("'{text}' names no department"));
        }
        Ok(Membership { department: department.to_string(), role })
    }
}

/// Everything a person holds: organisation-wide roles and memberships.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Access {
    /// Auditor and admin only.
    pub roles: BTreeSet<Role>,
    pub memberships: BTreeSet<Membership>,
}

impl Access {
    /// The pairs of one grant — one `server user add --role … --department …`, one group mapping: each
    /// departmental role in each of its departments, organisation-wide roles as they are. Two grants are never
    /// crossed: staff of sales by one and manager of billing by another makes no manager of sales.
    pub fn granted(roles: &[Role], departments: &[String]) -> Access {
        let (departmental, organisation): (Vec<Role>, Vec<Role>) = roles.iter().partition(|r| r.is_departmental());
        let memberships = departmental
            .iter()
            .flat_map(|role| departments.iter().map(|d| Membership { department: d.clone(), role: *role }))
            .collect();
        Access { roles: organisation.into_iter().collect(), memberships }
    }

    /// Both grants, side by side.
    pub fn with(mut self, other: Access) -> Access {
        self.roles.extend(other.roles);
        self.memberships.extend(other.memberships);
        self
    }

    /// Every role held anywhere (what a route's gate asks: may this person reach the approvals page at all).
    pub fn all_roles(&self) -> Vec<Role> {
        let mut roles: Vec<Role> = self.roles.iter().copied().chain(self.memberships.iter().map(|m| m.role)).collect();
        roles.sort();
        roles.dedup();
        roles
    }

    /// The departments the person is a member of, in code order.
    pub fn departments(&self) -> Vec<String> {
        let mut codes: Vec<String> = self.memberships.iter().map(|m| m.department.clone()).collect();
        codes.dedup();
        codes
    }

    pub fn is_empty(&self) -> bool {
        self.roles.is_empty() && self.memberships.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Role::{Admin, Auditor, Manager, Staff};

    fn codes(list: &[&str]) -> Vec<String> {
        list.iter().map(|d| d.to_string()).collect()
    }

    #[test]
    fn a_grant_gives_each_departmental_role_in_each_of_its_departments() {
        let access = Access::granted(&[Staff, Manager, Auditor], &codes(&["sales", "billing"]));
        assert_eq!(access.roles, BTreeSet::from([Auditor]));
        assert_eq!(access.memberships.len(), 4);
        assert_eq!(access.all_roles(), vec![Staff, Manager, Auditor]);
        assert_eq!(access.departments(), codes(&["billing", "sales"]));
    }

    #[test]
    fn two_grants_are_never_crossed() {
        let staff_here = Access::granted(&[Staff], &codes(&["sales"]));
        let manager_there = Access::granted(&[Manager], &codes(&["billing"]));
        let both = staff_here.with(manager_there);
        let sales_manager = Membership { department: "sales".into(), role: Manager };
        assert!(!both.memberships.contains(&sales_manager), "no manager of sales");
        assert_eq!(both.memberships.len(), 2);
    }

    #[test]
    fn a_membership_reads_from_department_and_role() {
        assert_eq!(Membership::parse("sales:manager"), Ok(Membership { department: "sales".into(), role: Manager }));
        assert!(Membership::parse("sales").unwrap_err().contains("DEPARTMENT:ROLE"));
        assert!(Membership::parse("sales:admin").unwrap_err().contains("--role admin"));
        assert!(Membership::parse(":staff").is_err());
        assert!(Membership::parse("sales:owner").unwrap_err().contains("staff, manager, auditor or admin"));
        assert!(Access::granted(&[Admin], &[]).memberships.is_empty());
    }
}
