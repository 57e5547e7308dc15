//! The stop switch: reruns to a broken system are stopped in one click, per workflow or per outside system
//! (connector), with a reason; resuming needs a reason too. A paused rerun waits in the outbox: nothing is lost,
//! nothing is sent. Ingestion and the sweeper are not affected.
use super::configuration::Config;
use super::rights::{Act, Person};
use super::roles::Role;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Workflow,
    Connector,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Workflow => "workflow",
            Scope::Connector => "connector",
        }
    }

    /// What the trail records a pause or a resumption of.
    pub fn object_type(self) -> super::audit::ObjectType {
        match self {
            Scope::Workflow => super::audit::ObjectType::Workflow,
            Scope::Connector => super::audit::ObjectType::Connector,
        }
    }

    pub fn parse(s: &str) -> Option<Scope> {
        [Scope::Workflow, Scope::Connector].into_iter().find(|scope| scope.as_str() == s)
    }
}

/// An open pause: what is stopped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stopped {
    pub scope: Scope,
    pub name: String,
}

/// The pause that holds a rerun of `workflow` whose planned steps use `connectors`, if any: a paused connector
/// holds only the reruns that would call it.
pub fn holding<'a>(pauses: &'a [Stopped], workflow: &str, connectors: &[&str]) -> Option<&'a Stopped> {
    pauses.iter().find(|p| match p.scope {
        Scope::Workflow => p.name == workflow,
        Scope::Connector => connectors.contains(&p.name.as_str()),
    })
}

/// The departments a pause concerns: a workflow's own, or those of every workflow calling the connector.
pub fn departments(config: &Config, scope: Scope, name: &str) -> Vec<String> {
    let mut departments: Vec<String> = config
        .workflows
        .iter()
        .filter(|w| match scope {
            Scope::Workflow => w.name == name,
            Scope::Connector => w.steps.iter().any(|s| s.connector.as_deref() == Some(name)),
        })
        .map(|w| w.department.clone())
        .collect();
    departments.sort();
    departments.dedup();
    departments
}

/// Who may pause: an admin anything; a manager who is a member of a department the pause concerns. The pause then
/// belongs to those of the concerned departments the person may switch for (none, for an admin of none of them).
/// `None`: not allowed.
pub fn may_pause(person: &Person, concerned: &[String]) -> Option<Vec<String>> {
    let own: Vec<String> = concerned.iter().filter(|d| person.may_act(Act::SwitchDispatches, d)).cloned().collect();
    (person.has(Role::Admin) || !own.is_empty()).then_some(own)
}

/// Who may resume: an admin, or an owner of a department the pause belongs to (whose owner set it).
pub fn may_resume(person: &Person, set_for: &[String]) -> bool {
    person.has(Role::Admin) || set_for.iter().any(|d| person.may_act(Act::SwitchDispatches, d))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stopped(scope: Scope, name: &str) -> Stopped {
        Stopped { scope, name: name.into() }
    }

    #[test]
    fn a_paused_workflow_holds_all_its_reruns_and_a_paused_connector_only_those_that_call_it() {
        let pauses = [stopped(Scope::Workflow, "monthly-billing"), stopped(Scope::Connector, "ai-summary")];
        assert!(holding(&pauses, "monthly-billing", &[]).is_some());
        assert_eq!(holding(&pauses, "order-intake", &["order-api", "ai-summary"]).unwrap().name, "ai-summary");
        assert!(holding(&pauses, "order-intake", &["order-api"]).is_none());
        assert!(holding(&[], "order-intake", &["ai-summary"]).is_none());
    }

    fn person(roles: &[Role], departments: &[&str]) -> Person {
        let departments: Vec<String> = departments.iter().map(|d| d.to_string()).collect();
        Person { id: 1, access: crate::membership::Access::granted(roles, &departments) }
    }

    #[test]
    fn owners_pause_what_concerns_their_department_and_admins_everything() {
        let both = ["sales".to_string(), "billing".to_string()];
        let sales_owner = person(&[Role::Manager], &["sales"]);
        assert_eq!(may_pause(&sales_owner, &both), Some(vec!["sales".to_string()]));
        assert_eq!(may_pause(&sales_owner, &both[1..]), None);
        assert_eq!(may_pause(&person(&[Role::Admin], &[]), &both[1..]), Some(vec![]));
        assert_eq!(may_pause(&sales_owner, &[]), None, "an unknown name concerns nobody");
        assert_eq!(
            may_pause(&person(&[Role::Auditor, Role::Staff], &["sales"]), &both),
            None,
            "staff and auditors do not switch"
        );
    }

    #[test]
    fn a_pause_is_resumed_by_an_owner_of_the_department_that_set_it_or_an_admin() {
        let set_for = ["sales".to_string()];
        assert!(may_resume(&person(&[Role::Manager], &["sales"]), &set_for));
        assert!(!may_resume(&person(&[Role::Manager], &["billing"]), &set_for), "another department it concerns");
        assert!(!may_resume(&person(&[Role::Auditor, Role::Manager], &["billing"]), &set_for));
        assert!(may_resume(&person(&[Role::Admin], &[]), &set_for));
        assert!(!may_resume(&person(&[Role::Manager], &["sales"]), &[]), "an admin's pause is resumed by an admin");
    }

    #[test]
    fn scopes_read_back() {
        assert_eq!(Scope::parse("connector"), Some(Scope::Connector));
        assert_eq!(Scope::parse("department"), None);
    }
}
