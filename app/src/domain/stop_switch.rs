//! The stop switch: reruns to a broken system are stopped in one click, per workflow or per outside system
//! (connector), with a reason; resuming needs a reason too. A paused rerun waits in the outbox: nothing is lost,
//! nothing is sent. Ingestion and the sweeper are not affected.
use super::configuration::Config;
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

/// An admin may switch anything; a department's owner (manager) what concerns their department.
pub fn may_switch(is_admin: bool, owned: &[String], concerned: &[String]) -> bool {
    is_admin || concerned.iter().any(|d| owned.contains(d))
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

    #[test]
    fn owners_switch_what_concerns_their_department_and_admins_everything() {
        let sales = vec!["sales".to_string()];
        assert!(may_switch(false, &sales, &["sales".into(), "billing".into()]));
        assert!(!may_switch(false, &sales, &["billing".into()]));
        assert!(may_switch(true, &[], &["billing".into()]));
        assert!(!may_switch(false, &sales, &[]), "an unknown name concerns nobody");
    }

    #[test]
    fn scopes_read_back() {
        assert_eq!(Scope::parse("connector"), Some(Scope::Connector));
        assert_eq!(Scope::parse("department"), None);
    }
}
