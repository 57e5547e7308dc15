//! Who may read a department's objects and who may act on them (QUALITY 10, 11, 32): two rules with two
//! names, called by every service. Reading: a member of the department, or an auditor (auditors read
//! everything). Acting: a member of the object's department who holds a role that may do the act. The auditor
//! role grants reading only, never a write, whatever other roles the person holds.
use super::membership::{Access, Membership};
use super::roles::Role;

/// A person as the rules see them: who, with which organisation-wide roles and memberships (at this moment).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Person {
    pub id: i64,
    pub access: Access,
}

/// Something a person does to an object of a department.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    /// Ask the outside systems again.
    Reconcile,
    Hold,
    Release,
    /// Record a verdict found out by hand (the provider's support confirmed it).
    RecordVerdict,
    /// Adopt one AI generation as the step's result.
    AdoptResult,
    /// Start, check, submit or withdraw a rerun request.
    RequestRerun,
    /// Create, request, check, submit, pause, resume or cancel a bulk rerun.
    RunBulkRerun,
    /// File, edit or link an incident report, its prevention actions and known patterns.
    ReportIncident,
    /// Approve or reject a rerun request or a bulk rerun.
    Decide,
    /// Pause or resume dispatches with the stop switch.
    SwitchDispatches,
    SignOffReview,
}

impl Act {
    /// The roles that may do it (in the object's department).
    pub fn roles(self) -> &'static [Role] {
        match self {
            Act::RecordVerdict | Act::Decide | Act::SwitchDispatches | Act::SignOffReview => &[Role::Manager],
            Act::Reconcile
            | Act::Hold
            | Act::Release
            | Act::AdoptResult
            | Act::RequestRerun
            | Act::RunBulkRerun
            | Act::ReportIncident => &[Role::Staff, Role::Manager],
        }
    }
}

/// Why an act is refused: an object the person cannot even read does not exist for them (404); one they read
/// but may not change is forbidden (403).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    Unseen,
    NotAllowed,
}

impl Person {
    /// A role held anywhere: organisation-wide, or in at least one department.
    pub fn has(&self, role: Role) -> bool {
        self.access.roles.contains(&role) || self.access.memberships.iter().any(|m| m.role == role)
    }

    pub fn is_member(&self, department: &str) -> bool {
        self.access.memberships.iter().any(|m| m.department == department)
    }

    /// The departments whose objects this person reads; `None` means all (auditors).
    pub fn readable_departments(&self) -> Option<Vec<String>> {
        if self.has(Role::Auditor) { None } else { Some(self.access.departments()) }
    }

    pub fn may_read(&self, department: &str) -> bool {
        self.has(Role::Auditor) || self.is_member(department)
    }

    /// The write rule: a membership of the object's department whose role may do the act. A role held in
    /// another department counts for nothing here.
    pub fn may_act(&self, act: Act, department: &str) -> bool {
        self.access
            .memberships
            .iter()
            .any(|Membership { department: d, role }| d == department && act.roles().contains(role))
    }

    pub fn check_act(&self, act: Act, department: &str) -> Result<(), Refusal> {
        match (self.may_act(act, department), self.may_read(department)) {
            (true, _) => Ok(()),
            (false, true) => Err(Refusal::NotAllowed),
            (false, false) => Err(Refusal::Unseen),
        }
    }

    /// The departments in which this person may do the act (where a bulk rerun may select, whose requests
    /// wait in a manager's inbox).
    pub fn acting_departments(&self, act: Act) -> Vec<String> {
        self.access.departments().into_iter().filter(|d| self.may_act(act, d)).collect()
    }
}

/// No self-granted rights: a person's roles and departments are changed by another admin, never by themselves
/// (an admin who made themselves a manager could approve reruns; one who dropped their own admin role would lock
/// the organisation out).
pub fn may_change_access(changer_id: i64, person_id: i64) -> bool {
    changer_id != person_id
}

#[cfg(test)]
mod tests {
    use super::*;
    use Role::{Admin, Auditor, Manager, Staff};

    fn person(roles: &[Role], departments: &[&str]) -> Person {
        let departments: Vec<String> = departments.iter().map(|d| d.to_string()).collect();
        Person { id: 1, access: Access::granted(roles, &departments) }
    }

    #[test]
    fn an_auditor_reads_every_department_and_acts_in_none_of_the_others() {
        let mixed = person(&[Auditor, Staff], &["sales"]);
        assert!(mixed.may_read("billing"));
        assert_eq!(mixed.readable_departments(), None);
        for act in [Act::Hold, Act::Release, Act::Reconcile, Act::RequestRerun, Act::ReportIncident] {
            assert!(!mixed.may_act(act, "billing"), "{act:?} in another department");
            assert_eq!(mixed.check_act(act, "billing"), Err(Refusal::NotAllowed));
            assert!(mixed.may_act(act, "sales"), "{act:?} in their own department, as staff");
        }
        assert!(!person(&[Auditor], &["sales"]).may_act(Act::Hold, "sales"), "the auditor role alone writes nothing");
    }

    #[test]
    fn a_manager_decides_only_in_the_departments_they_belong_to() {
        let owner = person(&[Auditor, Manager], &["sales"]);
        assert!(owner.may_act(Act::Decide, "sales"));
        assert!(!owner.may_act(Act::Decide, "billing"));
        assert!(!owner.may_act(Act::RecordVerdict, "billing"));
        assert!(!person(&[Staff], &["sales"]).may_act(Act::Decide, "sales"), "staff do not decide");
        assert_eq!(person(&[Manager], &["sales", "billing"]).acting_departments(Act::Decide), vec!["billing", "sales"]);
    }

    #[test]
    fn another_departments_object_is_unseen_and_an_admin_is_no_member_of_any() {
        let staff = person(&[Staff], &["sales"]);
        assert_eq!(staff.check_act(Act::Hold, "billing"), Err(Refusal::Unseen));
        assert_eq!(staff.readable_departments(), Some(vec!["sales".to_string()]));
        assert!(!person(&[Admin], &[]).may_act(Act::Hold, "sales"));
    }

    #[test]
    fn nobody_changes_their_own_access() {
        assert!(!may_change_access(3, 3));
        assert!(may_change_access(3, 4));
    }

    #[test]
    fn a_manager_of_billing_who_is_staff_of_sales_decides_only_in_billing() {
        let staff_here = Access::granted(&[Staff], &["sales".to_string()]);
        let both = Person { id: 1, access: staff_here.with(Access::granted(&[Manager], &["billing".to_string()])) };
        assert!(both.may_act(Act::Decide, "billing"));
        assert_eq!(both.check_act(Act::Decide, "sales"), Err(Refusal::NotAllowed), "only staff in sales");
        assert!(both.may_act(Act::RequestRerun, "sales"));
        assert_eq!(both.acting_departments(Act::Decide), vec!["billing"]);
    }
}
