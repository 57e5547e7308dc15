//! The company directory (SCIM 2.0, RFC 7643/7644): where a person comes from, what the groups the directory puts
//! them in give them here (the company sign-in's own group table: `identity::access_from_groups`), and which of
//! their approvals still count once their access changed.
use super::identity::{GroupMapping, access_from_groups};
use super::membership::Access;
use super::names::named;
use super::rights::{Act, Person};

named! {
    /// Where a person's account comes from: made here (by an admin or the command line: break-glass), at their
    /// first company sign-in, or provisioned by the company directory (which then owns their memberships).
    pub enum UserSource {
        Local => "local",
        Company => "company",
        Directory => "directory",
    }
}

impl UserSource {
    pub fn of(provisioned: bool, signs_in_at_provider: bool) -> UserSource {
        match (provisioned, signs_in_at_provider) {
            (true, _) => UserSource::Directory,
            (false, true) => UserSource::Company,
            (false, false) => UserSource::Local,
        }
    }
}

named! {
    /// What a bearer token is for: the ingestion API (scoped to departments), or the directory's provisioning.
    pub enum ClientPurpose {
        Ingestion => "ingestion",
        Directory => "directory",
    }
}

/// A group as the directory names it: a mapping names either its `displayName` or its `externalId` (Entra ID
/// sends the group's object ID there, the same ID its tokens' `groups` claim carries).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirectoryGroup {
    pub display_name: String,
    pub external_id: Option<String>,
}

impl DirectoryGroup {
    fn names(&self) -> impl Iterator<Item = String> + '_ {
        std::iter::once(self.display_name.clone()).chain(self.external_id.clone())
    }

    /// Whether some mapping names this group: a group that maps to nothing is refused, so that a directory
    /// never provisions a group that silently gives nobody anything.
    pub fn is_mapped(&self, mappings: &[GroupMapping]) -> bool {
        access_from_groups(mappings, &self.names().collect::<Vec<_>>()).is_some()
    }
}

/// What a provisioned person holds: what their groups give, each mapping's own pairs (the same rule as at the
/// company sign-in); nothing when they are in no mapped group.
pub fn access_of_groups(mappings: &[GroupMapping], groups: &[DirectoryGroup]) -> Access {
    let names: Vec<String> = groups.iter().flat_map(DirectoryGroup::names).collect();
    access_from_groups(mappings, &names).unwrap_or_default()
}

/// An approval counts only while the person who gave it may still decide in the department: once they were
/// removed from the directory, disabled, or are no longer a manager there, the request waits for another approver.
pub fn approval_still_counts(giver: &Person, department: &str) -> bool {
    giver.may_act(Act::Decide, department)
}

/// `true`/`false`, or as Entra ID sends them in a PATCH, the strings `"True"`/`"False"` (any case).
pub fn scim_boolean(text: &str) -> Option<bool> {
    match text.to_ascii_lowercase().as_str() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// What the company directory last said of a person's `active` in the resource it sent (absent: active, RFC 7643).
pub fn says_active(resource: Option<&serde_json::Value>) -> bool {
    resource.and_then(|r| r.get("active")).and_then(serde_json::Value::as_bool).unwrap_or(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roles::Role::{Manager, Staff};

    fn mapping(group: &str, role: crate::roles::Role, department: &str) -> GroupMapping {
        GroupMapping { group: group.into(), roles: vec![role], departments: vec![department.into()] }
    }

    fn group(name: &str, external: Option<&str>) -> DirectoryGroup {
        DirectoryGroup { display_name: name.into(), external_id: external.map(Into::into) }
    }

    #[test]
    fn a_group_maps_by_its_name_or_its_external_id_and_two_mappings_never_combine() {
        let mappings = [mapping("sales-approvers", Manager, "sales"), mapping("0f1e-guid", Staff, "support")];
        assert!(group("sales-approvers", None).is_mapped(&mappings));
        assert!(group("Support team", Some("0f1e-guid")).is_mapped(&mappings));
        assert!(!group("everyone", Some("other-guid")).is_mapped(&mappings));
        let access = access_of_groups(&mappings, &[group("sales-approvers", None), group("x", Some("0f1e-guid"))]);
        let held: Vec<(String, crate::roles::Role)> =
            access.memberships.iter().map(|m| (m.department.clone(), m.role)).collect();
        assert_eq!(held, vec![("sales".into(), Manager), ("support".into(), Staff)]);
        assert_eq!(access_of_groups(&mappings, &[group("everyone", None)]), Access::default());
    }

    #[test]
    fn an_approval_counts_only_while_its_giver_is_a_manager_of_the_department() {
        let manager = Person { id: 7, access: Access::granted(&[Manager], &["sales".to_string()]) };
        assert!(approval_still_counts(&manager, "sales"));
        assert!(!approval_still_counts(&manager, "support"));
        assert!(!approval_still_counts(&Person { id: 7, access: Access::default() }, "sales"));
    }

    #[test]
    fn entra_s_string_booleans_read_as_booleans() {
        assert_eq!(scim_boolean("False"), Some(false));
        assert_eq!(scim_boolean("TRUE"), Some(true));
        assert_eq!(scim_boolean("no"), None);
    }

    #[test]
    fn a_provisioned_person_is_the_directory_s_whatever_else() {
        assert_eq!(UserSource::of(true, true), UserSource::Directory);
        assert_eq!(UserSource::of(false, true), UserSource::Company);
        assert_eq!(UserSource::of(false, false), UserSource::Local);
    }
}
